package cluster

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/acl"
)

// ACLs are metadata, as in KRaft (AccessControlEntryRecord and
// RemoveAccessControlEntryRecord): every broker authorizes from its own
// image, and sees a change once it has applied the record.

// AclRecord adds a binding, or removes it (Delete).
type AclRecord struct {
	Binding acl.Binding `json:"binding"`
	Delete  bool        `json:"delete,omitempty"`
}

func (n *Image) applyAcl(r *AclRecord) {
	if r.Delete {
		n.Acls = n.Acls.With(nil, []acl.Binding{r.Binding})
	} else {
		n.Acls = n.Acls.With([]acl.Binding{r.Binding}, nil)
	}
}

func (img *Image) aclRecords() []Record {
	var rs []Record
	for _, b := range img.Acls.All() {
		rs = append(rs, Record{Acl: &AclRecord{Binding: b}})
	}
	return rs
}

// maxAclChange bounds the bindings one CreateAcls or DeleteAcls changes,
// as Kafka's controller bounds a batch (MAX_RECORDS_PER_USER_OP).
const maxAclChange = 10000

// CreateAcls adds bindings; errs[i] is bs[i]'s refusal (INVALID_REQUEST),
// and a binding that exists already is accepted without a record, as in
// Kafka. offset is the metadata offset that holds the change (-1 if none).
func (c *Controller) CreateAcls(bs []acl.Binding) (errs []error, offset int64, err error) {
	offset = -1
	err = c.change(func(img *Image) ([]Record, error) {
		errs = make([]error, len(bs))
		var rs []Record
		seen := map[acl.Binding]bool{}
		for i, b := range bs {
			if verr := b.Validate(); verr != nil {
				errs[i] = errorf(kerr.InvalidRequest, "%s", verr.Error())
				continue
			}
			if img.Acls.Has(b) || seen[b] {
				continue
			}
			seen[b] = true
			rs = append(rs, Record{Acl: &AclRecord{Binding: b}})
		}
		if len(rs) > maxAclChange {
			return nil, errorf(kerr.InvalidRequest, "cannot create more than %d ACLs in one request", maxAclChange)
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

// DeleteAcls removes what each filter matches; matched[i] is what
// filters[i] removed (a binding two filters match is listed under both,
// as Kafka does), errs[i] a filter's refusal.
func (c *Controller) DeleteAcls(filters []acl.Filter) (matched [][]acl.Binding, errs []error, offset int64, err error) {
	offset = -1
	err = c.change(func(img *Image) ([]Record, error) {
		matched, errs = make([][]acl.Binding, len(filters)), make([]error, len(filters))
		var rs []Record
		removed := map[acl.Binding]bool{}
		for i, f := range filters {
			if verr := f.ValidateFilter(); verr != nil {
				errs[i] = errorf(kerr.InvalidRequest, "%s", verr.Error())
				continue
			}
			matched[i] = img.Acls.Select(f)
			for _, b := range matched[i] {
				if !removed[b] {
					removed[b] = true
					rs = append(rs, Record{Acl: &AclRecord{Binding: b, Delete: true}})
				}
			}
		}
		if len(rs) > maxAclChange {
			return nil, errorf(kerr.InvalidRequest, "cannot remove more than %d ACLs in one request", maxAclChange)
		}
		if len(rs) > 0 {
			offset = img.Offset + int64(len(rs))
		}
		return rs, nil
	})
	if err != nil {
		return nil, nil, -1, err
	}
	return matched, errs, offset, nil
}
