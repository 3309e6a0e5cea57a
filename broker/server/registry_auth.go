package server

import (
	"crypto/subtle"

	"github.com/tributary-io/tributary/broker/auth"
)

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
	for _, m := range []auth.ScramMechanism{auth.ScramSHA256, auth.ScramSHA512} {
		cred, ok := s.scramLookup(user, m)
		if !ok {
			continue
		}
		got := m.Credential(m.SaltPassword(password, cred.Salt, int(cred.Iterations)), cred.Salt, cred.Iterations)
		if subtle.ConstantTimeCompare(got.StoredKey, cred.StoredKey) == 1 {
			return true
		}
	}
	for _, sec := range s.security {
		if want, ok := sec.plainUsers[user]; ok && subtle.ConstantTimeCompare([]byte(want), []byte(password)) == 1 {
			return true
		}
	}
	return false
}
