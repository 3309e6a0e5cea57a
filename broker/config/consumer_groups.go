package config

import "fmt"

// consumerGroupChecks are Kafka's bounds between the group.consumer.*
// timeouts (GroupCoordinatorConfig): each value within its min and max,
// and the heartbeat interval below the session timeout.
func (b *Broker) consumerGroupChecks() []string {
	var errs []string
	for _, name := range []string{"group.consumer.session.timeout.ms", "group.consumer.heartbeat.interval.ms"} {
		base := name[len("group.consumer.") : len(name)-len(".ms")]
		lo, hi, v := b.Int("group.consumer.min."+base+".ms"), b.Int("group.consumer.max."+base+".ms"), b.Int(name)
		switch {
		case lo > hi:
			errs = append(errs, fmt.Sprintf("group.consumer.min.%s.ms=%d is larger than group.consumer.max.%s.ms=%d", base, lo, base, hi))
		case v < lo || v > hi:
			errs = append(errs, fmt.Sprintf("%s=%d must be between group.consumer.min.%s.ms=%d and group.consumer.max.%s.ms=%d", name, v, base, lo, base, hi))
		}
	}
	if hb, st := b.Int("group.consumer.heartbeat.interval.ms"), b.Int("group.consumer.session.timeout.ms"); hb >= st {
		errs = append(errs, fmt.Sprintf("group.consumer.heartbeat.interval.ms=%d must be less than group.consumer.session.timeout.ms=%d", hb, st))
	}
	return errs
}
