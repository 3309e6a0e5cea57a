package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/quota"
)

// shareFetchQuota records a ShareFetch's handler time and record bytes
// (consumer_byte_rate, as Fetch's) before the answer is written, so that
// the answer tells the throttle the connection is then muted for (KIP-219);
// recorded after the handler, as other requests are, the sendfile answer
// carried the previous request's throttle, and share bytes were never
// charged. Unlike Fetch's, a throttled answer keeps its records: they are
// acquired for the member already, and handing them back would only
// make the next fetch acquire them again.
func (c *conn) shareFetchQuota(resp *kmsg.ShareFetchResponse, files *fileRanges) {
	if !c.s.quotas.m.Active() || c.quotaExempt() {
		return
	}
	var n int64
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			n += int64(len(p.Records))
		}
	}
	for _, sl := range files.slices {
		n += sl.Size
	}
	now := time.Now()
	c.recordQuota(quota.RequestPercentage, (time.Since(c.started)-c.waited).Seconds()*100, now)
	c.recordQuota(quota.ConsumerByteRate, float64(n), now)
}
