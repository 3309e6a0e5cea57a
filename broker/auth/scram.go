package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"crypto/pbkdf2"
)

// SCRAM (RFC 5802, RFC 7677) as Kafka runs it: SCRAM-SHA-256 and
// SCRAM-SHA-512, no channel binding, credentials stored as salt, iteration
// count, StoredKey and ServerKey (the password itself is never kept).

// ScramMechanism is one SCRAM hash.
type ScramMechanism struct {
	Name string
	// Type is the mechanism's number in DescribeUserScramCredentials
	// (KIP-554): 1 SHA-256, 2 SHA-512.
	Type int8
	hash func() hash.Hash
}

var (
	ScramSHA256 = ScramMechanism{Name: SCRAMSHA256, Type: 1, hash: sha256.New}
	ScramSHA512 = ScramMechanism{Name: SCRAMSHA512, Type: 2, hash: sha512.New}
)

// Kafka's bounds on a credential's iteration count.
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// ScramMechanismByName or ByType; ok is false for another mechanism.
func ScramMechanismByName(name string) (ScramMechanism, bool) {
	switch name {
	case SCRAMSHA256:
		return ScramSHA256, true
	case SCRAMSHA512:
		return ScramSHA512, true
	}
	return ScramMechanism{}, false
}

func ScramMechanismByType(t int8) (ScramMechanism, bool) {
	switch t {
	case 1:
		return ScramSHA256, true
	case 2:
		return ScramSHA512, true
	}
	return ScramMechanism{}, false
}

// ScramCredential is what the server keeps of a SCRAM password.
type ScramCredential struct {
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	Iterations int32  `json:"iterations"`
}

// SaltPassword is Hi(password, salt, i): what AlterUserScramCredentials
// carries instead of the password.
func (m ScramMechanism) SaltPassword(password string, salt []byte, iterations int) []byte {
	k, _ := pbkdf2.Key(m.hash, password, salt, iterations, m.hash().Size())
	return k
}

// Credential derives the stored form from a salted password.
func (m ScramMechanism) Credential(salted, salt []byte, iterations int32) ScramCredential {
	clientKey := m.hmac(salted, []byte("Client Key"))
	h := m.hash()
	h.Write(clientKey)
	return ScramCredential{Salt: salt, StoredKey: h.Sum(nil), ServerKey: m.hmac(salted, []byte("Server Key")), Iterations: iterations}
}

func (m ScramMechanism) hmac(key, msg []byte) []byte {
	mac := hmac.New(m.hash, key)
	mac.Write(msg)
	return mac.Sum(nil)
}

// ScramLookup finds a user's credential for a mechanism.
type ScramLookup func(user string, m ScramMechanism) (ScramCredential, bool)

type scramExchange struct {
	m      ScramMechanism
	lookup ScramLookup
	// fakeKey makes up a salt for an unknown user, the same on every
	// attempt, so that the first answer does not tell who exists.
	fakeKey []byte

	step            int
	user            string
	known           bool
	cred            ScramCredential
	gs2, clientBare string
	serverFirst     string
	nonce           string
	done            bool
}

// NewScram starts a SCRAM exchange. fakeKey is a secret from which salts
// of unknown users are made up; the same on every broker of a cluster, so
// that asking several brokers does not tell them apart from real ones.
func NewScram(m ScramMechanism, lookup ScramLookup, fakeKey []byte) Exchange {
	return &scramExchange{m: m, lookup: lookup, fakeKey: fakeKey}
}

// scramFailed is Kafka's message for a failed SCRAM authentication.
func (s *scramExchange) failed(reason string, args ...any) error {
	return authFailed("Authentication failed during authentication due to invalid credentials with SASL mechanism "+s.m.Name, reason, args...)
}

func (s *scramExchange) Step(in []byte) ([]byte, error) {
	switch s.step {
	case 0:
		s.step++
		return s.clientFirst(string(in))
	case 1:
		s.step++
		return s.clientFinal(string(in))
	}
	return nil, fmt.Errorf("%w: the SCRAM exchange is over", ErrMalformed)
}

func (s *scramExchange) clientFirst(msg string) ([]byte, error) {
	// gs2-header: cbind-flag "," [authzid] ","
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return nil, fmt.Errorf("%w: SCRAM client-first-message has no GS2 header", ErrMalformed)
	}
	switch {
	case flag == "n" || flag == "y":
	case strings.HasPrefix(flag, "p="):
		return nil, authFailed("Authentication failed: channel binding is not supported", "client asked for channel binding %s", flag)
	default:
		return nil, fmt.Errorf("%w: SCRAM GS2 flag %q", ErrMalformed, flag)
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, fmt.Errorf("%w: SCRAM client-first-message has no GS2 header", ErrMalformed)
	}
	s.gs2 = msg[:len(msg)-len(bare)]
	s.clientBare = bare
	attrs, err := scramAttrs(bare)
	if err != nil {
		return nil, err
	}
	if len(attrs) < 2 || attrs[0].k != 'n' || attrs[1].k != 'r' || attrs[1].v == "" {
		return nil, fmt.Errorf("%w: SCRAM client-first-message must start n=user,r=nonce", ErrMalformed)
	}
	for _, a := range attrs[2:] {
		if a.k == 't' && strings.HasPrefix(a.v, "okenauth=") || a.k == 'm' {
			// Kafka's delegation-token extension: no tokens here.
			return nil, s.failed("extension %c=%s is not supported", a.k, a.v)
		}
	}
	user, err := saslName(attrs[0].v)
	if err != nil {
		return nil, err
	}
	if authz != "" {
		if a, ok := strings.CutPrefix(authz, "a="); !ok {
			return nil, fmt.Errorf("%w: SCRAM authzid %q", ErrMalformed, authz)
		} else if name, err := saslName(a); err != nil || name != user {
			return nil, authFailed("Authentication failed: Client requested an authorization id that is different from username", "authorization id %q is not user %q", a, user)
		}
	}
	s.user = user
	s.cred, s.known = s.lookup(user, s.m)
	if !s.known {
		// As long as --add-scram's salts, with the default iterations:
		// nothing in the answer tells a made-up user from a real one.
		salt := s.m.hmac(s.fakeKey, []byte(user))[:24]
		s.cred = ScramCredential{Salt: salt, Iterations: ScramMinIterations}
	}
	var nb [18]byte
	rand.Read(nb[:])
	s.nonce = attrs[1].v + base64.RawStdEncoding.EncodeToString(nb[:])
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) + ",i=" + strconv.Itoa(int(s.cred.Iterations))
	return []byte(s.serverFirst), nil
}

func (s *scramExchange) clientFinal(msg string) ([]byte, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, fmt.Errorf("%w: SCRAM client-final-message has no proof", ErrMalformed)
	}
	withoutProof := msg[:i]
	proof, err := base64.StdEncoding.DecodeString(msg[i+3:])
	if err != nil {
		return nil, fmt.Errorf("%w: SCRAM proof is not base64", ErrMalformed)
	}
	attrs, err := scramAttrs(withoutProof)
	if err != nil {
		return nil, err
	}
	if len(attrs) < 2 || attrs[0].k != 'c' || attrs[1].k != 'r' {
		return nil, fmt.Errorf("%w: SCRAM client-final-message must start c=...,r=...", ErrMalformed)
	}
	if cb, err := base64.StdEncoding.DecodeString(attrs[0].v); err != nil || string(cb) != s.gs2 {
		return nil, s.failed("channel binding %q does not repeat the GS2 header", attrs[0].v)
	}
	if attrs[1].v != s.nonce {
		return nil, s.failed("nonce does not match")
	}
	if !s.known {
		return nil, s.failed("unknown SCRAM user %q for %s", s.user, s.m.Name)
	}
	authMessage := []byte(s.clientBare + "," + s.serverFirst + "," + withoutProof)
	sig := s.m.hmac(s.cred.StoredKey, authMessage)
	if len(proof) != len(sig) {
		return nil, s.failed("proof of %d bytes for %s", len(proof), s.m.Name)
	}
	clientKey := make([]byte, len(sig))
	subtle.XORBytes(clientKey, proof, sig)
	h := s.m.hash()
	h.Write(clientKey)
	if subtle.ConstantTimeCompare(h.Sum(nil), s.cred.StoredKey) != 1 {
		return nil, s.failed("wrong password for SCRAM user %q (%s)", s.user, s.m.Name)
	}
	s.done = true
	return []byte("v=" + base64.StdEncoding.EncodeToString(s.m.hmac(s.cred.ServerKey, authMessage))), nil
}

func (s *scramExchange) Done() bool           { return s.done }
func (s *scramExchange) Principal() Principal { return User(s.user) }

type scramAttr struct {
	k byte
	v string
}

func scramAttrs(s string) ([]scramAttr, error) {
	var out []scramAttr
	for _, p := range strings.Split(s, ",") {
		if len(p) < 2 || p[1] != '=' {
			return nil, fmt.Errorf("%w: SCRAM attribute %q", ErrMalformed, truncate(p))
		}
		out = append(out, scramAttr{p[0], p[2:]})
	}
	return out, nil
}

// saslName decodes RFC 5802's escaping of ',' and '=' in user names.
func saslName(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("%w: user name %q has a bare '='", ErrMalformed, truncate(s))
		}
		i += 2
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("%w: empty SCRAM user name", ErrMalformed)
	}
	return b.String(), nil
}

func constantTimeEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
