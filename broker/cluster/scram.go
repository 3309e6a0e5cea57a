package cluster

import (
	"fmt"
	"maps"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/auth"
)

// SCRAM credentials are metadata, as in KRaft (UserScramCredentialRecord):
// every broker learns them from the metadata log, so a user created on one
// broker authenticates on all of them.

// ScramRecord sets (Credential non-nil) or removes one user's credential
// for one mechanism.
type ScramRecord struct {
	User       string                `json:"user"`
	Mechanism  string                `json:"mechanism"`
	Credential *auth.ScramCredential `json:"credential,omitempty"`
}

func (n *Image) applyScram(r *ScramRecord) error {
	if _, ok := auth.ScramMechanismByName(r.Mechanism); !ok {
		return fmt.Errorf("cluster: SCRAM record of unknown mechanism %q", r.Mechanism)
	}
	// Copy on write: the image this one was cloned from shares the maps.
	users := maps.Clone(n.Scram)
	if users == nil {
		users = map[string]map[string]auth.ScramCredential{}
	}
	mechs := maps.Clone(users[r.User])
	if mechs == nil {
		mechs = map[string]auth.ScramCredential{}
	}
	if r.Credential == nil {
		delete(mechs, r.Mechanism)
	} else {
		mechs[r.Mechanism] = *r.Credential
	}
	if len(mechs) == 0 {
		delete(users, r.User)
	} else {
		users[r.User] = mechs
	}
	n.Scram = users
	return nil
}

// ScramCredential is a user's credential for a mechanism.
func (img *Image) ScramCredential(user string, m auth.ScramMechanism) (auth.ScramCredential, bool) {
	c, ok := img.Scram[user][m.Name]
	return c, ok
}

// ScramUsers are the users with SCRAM credentials, sorted.
func (img *Image) ScramUsers() []string {
	out := make([]string, 0, len(img.Scram))
	for u := range img.Scram {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// maxScramSalt bounds the salt (and salted password) of a credential.
const maxScramSalt = 1024

// ScramBootstrapRecord is the marker of Image.ScramBootstrapped.
type ScramBootstrapRecord struct{}

func (img *Image) scramRecords() []Record {
	var rs []Record
	if img.ScramBootstrapped {
		rs = append(rs, Record{ScramBootstrap: &ScramBootstrapRecord{}})
	}
	for _, u := range img.ScramUsers() {
		mechs := img.Scram[u]
		names := make([]string, 0, len(mechs))
		for m := range mechs {
			names = append(names, m)
		}
		sort.Strings(names)
		for _, m := range names {
			c := mechs[m]
			rs = append(rs, Record{Scram: &ScramRecord{User: u, Mechanism: m, Credential: &c}})
		}
	}
	return rs
}

// ScramChange is one upsertion or deletion of AlterUserScramCredentials.
type ScramChange struct {
	User      string
	Mechanism auth.ScramMechanism
	Delete    bool
	// Of an upsertion: the salt, Hi(password, salt, iterations) and the
	// iterations, as the client computed them (KIP-554).
	Salt, SaltedPassword []byte
	Iterations           int32
	// IfAbsent marks a bootstrap user (tributary broker --add-scram),
	// as KIP-900 applies them when the metadata log is formatted: applied
	// once in the cluster's life, leaving existing credentials alone, and
	// never again once applied, so that a user deleted since stays deleted.
	IfAbsent bool
}

// AlterScram applies SCRAM changes user by user: a user any of whose
// changes is refused keeps its credentials, and gets that error (Kafka's
// codes: RESOURCE_NOT_FOUND deleting what does not exist,
// UNACCEPTABLE_CREDENTIAL, DUPLICATE_RESOURCE for one mechanism twice).
// The others' changes are committed together. offset is the metadata
// offset that holds them (-1 if nothing changed).
func (c *Controller) AlterScram(changes []ScramChange) (errs map[string]error, offset int64, err error) {
	offset = -1
	err = c.change(func(img *Image) ([]Record, error) {
		errs = map[string]error{}
		seen := map[string]bool{}
		for _, ch := range changes {
			key := ch.User + "\x00" + ch.Mechanism.Name
			switch {
			case errs[ch.User] != nil:
			case ch.User == "":
				errs[ch.User] = errorf(kerr.UnacceptableCredential, "the user name is empty")
			case seen[key]:
				errs[ch.User] = errorf(kerr.DuplicateResource, "%s appears twice for user %s", ch.Mechanism.Name, ch.User)
			case ch.Delete:
				if _, ok := img.ScramCredential(ch.User, ch.Mechanism); !ok {
					errs[ch.User] = errorf(kerr.ResourceNotFound, "user %s has no %s credential", ch.User, ch.Mechanism.Name)
				}
			case ch.Iterations < auth.ScramMinIterations || ch.Iterations > auth.ScramMaxIterations:
				errs[ch.User] = errorf(kerr.UnacceptableCredential, "iterations %d is outside [%d, %d]", ch.Iterations, auth.ScramMinIterations, auth.ScramMaxIterations)
			case len(ch.Salt) == 0 || len(ch.SaltedPassword) == 0:
				errs[ch.User] = errorf(kerr.UnacceptableCredential, "the salt or salted password of user %s is empty", ch.User)
			// Every broker keeps every credential in memory and sends the
			// salt to whoever starts a login: no reason for more than a
			// few dozen bytes.
			case len(ch.Salt) > maxScramSalt || len(ch.SaltedPassword) > maxScramSalt:
				errs[ch.User] = errorf(kerr.UnacceptableCredential, "the salt or salted password of user %s is longer than %d bytes", ch.User, maxScramSalt)
			}
			seen[key] = true
		}
		var rs []Record
		bootstrap := false
		for _, ch := range changes {
			if ch.IfAbsent && img.ScramBootstrapped {
				continue
			}
			bootstrap = bootstrap || ch.IfAbsent
			if errs[ch.User] != nil {
				continue
			}
			r := &ScramRecord{User: ch.User, Mechanism: ch.Mechanism.Name}
			if !ch.Delete {
				if _, exists := img.ScramCredential(ch.User, ch.Mechanism); exists && ch.IfAbsent {
					continue
				}
				cred := ch.Mechanism.Credential(ch.SaltedPassword, ch.Salt, ch.Iterations)
				r.Credential = &cred
			}
			rs = append(rs, Record{Scram: r})
		}
		if bootstrap {
			rs = append(rs, Record{ScramBootstrap: &ScramBootstrapRecord{}})
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
