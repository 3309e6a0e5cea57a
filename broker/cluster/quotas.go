package cluster

import (
	"errors"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/quota"
)

// Client quotas are metadata, as in KRaft (ClientQuotaRecord): every broker
// learns them from the metadata log and enforces them on its own clients.

// ClientQuotaRecord sets (Value non-nil) or removes one quota of an entity.
type ClientQuotaRecord struct {
	Entity quota.Entity `json:"entity"`
	Key    string       `json:"key"`
	Value  *float64     `json:"value,omitempty"`
}

func (n *Image) applyClientQuota(r *ClientQuotaRecord) {
	n.ClientQuotas = n.ClientQuotas.With(quota.NewEntity(r.Entity...), r.Key, r.Value)
}

func (img *Image) clientQuotaRecords() []Record {
	var rs []Record
	for _, e := range img.ClientQuotas.Entries() {
		keys := make([]string, 0, len(e.Values))
		for k := range e.Values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := e.Values[k]
			rs = append(rs, Record{ClientQuota: &ClientQuotaRecord{Entity: e.Entity, Key: k, Value: &v}})
		}
	}
	return rs
}

// QuotaAlteration is one entry of AlterClientQuotas: the entity as the
// request named it, and its operations (a nil value removes the key).
type QuotaAlteration struct {
	Entity []quota.Part
	Ops    []QuotaOp
}

// QuotaOp sets Key to *Value, or removes it.
type QuotaOp struct {
	Key   string
	Value *float64
}

// AlterClientQuotas validates and applies alterations as Kafka's
// ClientQuotaControlManager does: each entry gets its own error
// (INVALID_REQUEST with Kafka's message) and the others are committed
// together; nothing is written when validateOnly. offset is the metadata
// offset holding the change, -1 when nothing changed.
func (c *Controller) AlterClientQuotas(alts []QuotaAlteration, validateOnly bool) (errs []error, offset int64, err error) {
	offset = -1
	err = c.change(func(img *Image) ([]Record, error) {
		errs = make([]error, len(alts))
		var rs []Record
		seen := map[string]bool{}
		for i, a := range alts {
			e, verr := quota.ValidateEntity(a.Entity)
			if verr != nil {
				errs[i] = invalidRequest(verr)
				continue
			}
			// Kafka answers a repeated key, and a repeated entity, with
			// the same message; the first of a repeated entity applies.
			dupKey := false
			keys := map[string]bool{}
			for _, op := range a.Ops {
				dupKey = dupKey || keys[op.Key]
				keys[op.Key] = true
			}
			if dupKey || seen[e.Key()] {
				errs[i] = errorf(kerr.InvalidRequest, "Ignoring duplicate entity %s", e)
				continue
			}
			seen[e.Key()] = true
			current := img.ClientQuotas.Get(e)
			var mine []Record
			for _, op := range a.Ops {
				if op.Value == nil {
					if _, ok := current[op.Key]; ok {
						mine = append(mine, Record{ClientQuota: &ClientQuotaRecord{Entity: e, Key: op.Key}})
					}
					continue
				}
				if verr := quota.ValidateValue(e, op.Key, *op.Value); verr != nil {
					errs[i], mine = invalidRequest(verr), nil
					break
				}
				if v, ok := current[op.Key]; !ok || v != *op.Value {
					mine = append(mine, Record{ClientQuota: &ClientQuotaRecord{Entity: e, Key: op.Key, Value: op.Value}})
				}
			}
			rs = append(rs, mine...)
		}
		if validateOnly {
			return nil, nil
		}
		if len(rs) > 0 {
			offset = img.Offset + int64(len(rs))
		}
		return rs, nil
	})
	if err != nil {
		return nil, -1, err
	}
	return errs, offset, nil
}

func invalidRequest(err error) error {
	var ie *quota.InvalidError
	if errors.As(err, &ie) {
		return errorf(kerr.InvalidRequest, "%s", ie.Msg)
	}
	return err
}
