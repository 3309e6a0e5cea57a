package config

import "fmt"

// shareGroupChecks are Kafka's bounds on the group.share.* settings
// (ShareGroupConfig): each value within its min and max, and the
// heartbeat interval below the session timeout.
func (b *Broker) shareGroupChecks() []string {
	var errs []string
	for _, name := range []string{
		"group.share.record.lock.duration.ms", "group.share.delivery.count.limit",
		"group.share.partition.max.record.locks", "group.share.session.timeout.ms",
		"group.share.heartbeat.interval.ms",
	} {
		base := name[len("group.share."):]
		lo, hi, v := b.Int("group.share.min."+base), b.Int("group.share.max."+base), b.Int(name)
		switch {
		case lo > hi:
			errs = append(errs, fmt.Sprintf("group.share.min.%s=%d is larger than group.share.max.%s=%d", base, lo, base, hi))
		case v < lo || v > hi:
			errs = append(errs, fmt.Sprintf("%s=%d must be between group.share.min.%s=%d and group.share.max.%s=%d", name, v, base, lo, base, hi))
		}
	}
	if hb, st := b.Int("group.share.heartbeat.interval.ms"), b.Int("group.share.session.timeout.ms"); hb >= st {
		errs = append(errs, fmt.Sprintf("group.share.heartbeat.interval.ms=%d must be less than group.share.session.timeout.ms=%d", hb, st))
	}
	return errs
}
