package tail

import (
	"context"
	"errors"
	"time"

	"github.com/segmentio/kafka-go"
)

// send produces msgs until the broker acknowledged all of them, retrying
// the failed ones with backoff. A call is made with sendCtx; once ctx ended
// no new attempt is (the lines stay unacknowledged and are read again by the
// next run).
func (t *Tailer) send(ctx, sendCtx context.Context, msgs []kafka.Message) error {
	backoff := defaultRetryMin
	for len(msgs) > 0 {
		err := t.p.WriteMessages(sendCtx, msgs...)
		if err == nil {
			t.countSent(msgs, nil)
			if t.warned {
				t.cfg.Logger.Info("tracker/tail: the broker acknowledges again")
				t.warned = false
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var tooLarge kafka.MessageTooLargeError
		if errors.As(err, &tooLarge) {
			// Never deliverable, so retrying would stop the file forever;
			// MaxLineBytes keeps lines below kafka-go's 1 MiB limit, so this
			// is a misconfiguration worth shouting about.
			in := tooLarge.Message.WriterData.(*input)
			t.m.errors.WithLabelValues(in.Name, ReasonTooLarge).Inc()
			t.cfg.Logger.Error("tracker/tail: dropping a record larger than a request may be", "input", in.Name, "bytes", len(tooLarge.Message.Value))
			msgs = tooLarge.Remaining
			continue
		}
		var werrs kafka.WriteErrors
		if errors.As(err, &werrs) && len(werrs) == len(msgs) {
			t.countSent(msgs, werrs)
			retry := msgs[:0:0]
			for i, e := range werrs {
				if e != nil {
					retry = append(retry, msgs[i])
				}
			}
			msgs = retry
		}
		for i := range msgs {
			t.m.errors.WithLabelValues(msgs[i].WriterData.(*input).Name, ReasonProduce).Inc()
		}
		if !t.warned {
			t.cfg.Logger.Warn("tracker/tail: broker did not acknowledge, retrying; files wait", "records", len(msgs), "err", err)
			t.warned = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, t.cfg.RetryMax)
	}
	return nil
}

func (t *Tailer) countSent(msgs []kafka.Message, werrs kafka.WriteErrors) {
	for i := range msgs {
		if werrs == nil || werrs[i] == nil {
			msgs[i].WriterData.(*input).sent.Inc()
		}
	}
}
