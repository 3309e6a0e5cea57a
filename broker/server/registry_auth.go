package server

import (
	"crypto/subtle"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/auth"
)

// dummySalt stands in for the salt of a user with no SCRAM credential, so
// that checking an unknown (or PLAIN-only) user costs a key derivation as
// a SCRAM user does: the time of an answer does not say whether the user
// exists.
var dummySalt = []byte("tributary-registry-no-such-user")

// CheckPassword says whether password is user's: a SCRAM credential of
// the cluster's metadata (either mechanism) derived from it, or the PLAIN
// password of a client listener's plain.sasl.jaas.config. The schema
// registry's basic auth asks it (schema.registry.authentication.method=
// BASIC), so that the users of the Kafka listeners are the registry's.
// Safe for concurrent use.
func (s *Server) CheckPassword(user, password string) bool {
	if user == "" {
		return false
	}
	derived := false
	for _, m := range []auth.ScramMechanism{auth.ScramSHA256, auth.ScramSHA512} {
		cred, ok := s.scramLookup(user, m)
		if !ok {
			continue
		}
		derived = true
		got := m.Credential(m.SaltPassword(password, cred.Salt, int(cred.Iterations)), cred.Salt, cred.Iterations)
		if subtle.ConstantTimeCompare(got.StoredKey, cred.StoredKey) == 1 {
			return true
		}
	}
	if !derived {
		auth.ScramSHA256.SaltPassword(password, dummySalt, 4096)
	}
	for _, sec := range s.security {
		if want, ok := sec.plainUsers[user]; ok && subtle.ConstantTimeCompare([]byte(want), []byte(password)) == 1 {
			return true
		}
	}
	return false
}

// RegistryMayWrite is the schema registry's write rule under the broker's
// authorizer (docs/registry.md): registering, deleting and changing config
// or mode need ALTER on the cluster or WRITE on the registry's topic, as
// for the principal User:<user> (User:ANONYMOUS without basic auth)
// connecting from host. Nil without an authorizer: then every user the
// registry admits may write, as a Kafka listener lets everyone do
// everything without one.
func (s *Server) RegistryMayWrite(topic string) func(user, host string) bool {
	if s.authorizer == nil {
		return nil
	}
	return func(user, host string) bool {
		p := auth.Anonymous.String()
		if user != "" {
			p = "User:" + user
		}
		r := acl.Request{Principal: p, Host: host}
		acls := s.ctrl.Image().Acls
		return s.authorizer.Authorize(acls, r, opAlter, kmsg.ACLResourceTypeCluster, acl.ClusterName) ||
			s.authorizer.Authorize(acls, r, opWrite, kmsg.ACLResourceTypeTopic, topic)
	}
}
