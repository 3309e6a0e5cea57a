package auth

import (
	"errors"
	"fmt"
	"strings"
)

// Mechanism names, as SaslHandshake carries them.
const (
	PLAIN       = "PLAIN"
	SCRAMSHA256 = "SCRAM-SHA-256"
	SCRAMSHA512 = "SCRAM-SHA-512"
)

// Exchange is the server side of one SASL authentication: each
// SaslAuthenticate's bytes go to Step, whose answer goes back to the
// client. Done is true once the client has authenticated; then Principal
// names it.
type Exchange interface {
	Step(in []byte) (out []byte, err error)
	Done() bool
	Principal() Principal
}

// AuthError is a failed authentication: Message is what the client is told
// (SaslAuthenticate's error message, which clients show), Reason what the
// broker logs and the client must not learn (that the user does not exist,
// say).
type AuthError struct {
	Message string
	Reason  string
}

func (e *AuthError) Error() string { return e.Message + " (" + e.Reason + ")" }

// authFailed's args are what the client sent (user names, ids), which
// the broker logs: each is cut to 100 bytes, so that a stranger cannot
// fill the log.
func authFailed(message, reason string, args ...any) error {
	for i, a := range args {
		if s, ok := a.(string); ok && len(s) > 100 {
			args[i] = s[:100] + "..."
		}
	}
	return &AuthError{Message: message, Reason: fmt.Sprintf(reason, args...)}
}

// ErrMalformed wraps a client message that does not parse.
var ErrMalformed = errors.New("broker/auth: malformed SASL message")

// Users are PLAIN users: name to password.
type Users map[string]string

// ParsePlainJAAS reads Kafka's PlainLoginModule configuration:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required
//	    username="admin" password="admin-secret"
//	    user_admin="admin-secret" user_alice="alice-secret";
//
// user_<name>="<password>" options are the users; username and password
// are the broker's own identity in Kafka, unused here.
func ParsePlainJAAS(s string) (Users, error) {
	opts, err := parseJAAS(s)
	if err != nil {
		return nil, err
	}
	users := Users{}
	for k, v := range opts {
		if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
			users[name] = v
		}
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("plain.sasl.jaas.config has no user_<name>=\"<password>\" option")
	}
	return users, nil
}

// ParseJAAS reads a sasl.jaas.config value: the login module class and
// its options. Clients use it for username and password.
func ParseJAAS(s string) (module string, opts map[string]string, err error) {
	opts, err = parseJAAS(s)
	if err != nil {
		return "", nil, err
	}
	return strings.Fields(s)[0], opts, nil
}

// parseJAAS reads "<class> <flag> key=value ... ;" with values quoted
// ("..." or '...', backslash escapes) or bare, as Kafka's JaasConfig.
func parseJAAS(s string) (map[string]string, error) {
	s = strings.TrimSpace(s)
	if !strings.HasSuffix(s, ";") {
		return nil, fmt.Errorf("sasl.jaas.config must end with ';'")
	}
	s = strings.TrimSpace(strings.TrimSuffix(s, ";"))
	fields := strings.Fields(s)
	if len(fields) < 2 {
		return nil, fmt.Errorf("sasl.jaas.config must start with a login module class and a control flag (required)")
	}
	switch fields[1] {
	case "required", "requisite", "sufficient", "optional":
	default:
		return nil, fmt.Errorf("sasl.jaas.config: %q is not a control flag (required, requisite, sufficient, optional)", fields[1])
	}
	// The options start after the class and the flag (the class name may
	// contain the flag's word).
	afterClass := strings.Index(s, fields[0]) + len(fields[0])
	rest := strings.TrimSpace(s[afterClass+strings.Index(s[afterClass:], fields[1])+len(fields[1]):])
	opts := map[string]string{}
	for rest != "" {
		k, after, ok := strings.Cut(rest, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t\n\"") {
			return nil, fmt.Errorf("sasl.jaas.config: expected key=value at %q", truncate(rest))
		}
		after = strings.TrimLeft(after, " \t\n")
		var v strings.Builder
		if q := after[:min(1, len(after))]; q == `"` || q == "'" {
			i, closed := 1, false
			for ; i < len(after); i++ {
				c := after[i]
				if c == '\\' && i+1 < len(after) {
					i++
					v.WriteByte(after[i])
					continue
				}
				if c == q[0] {
					closed = true
					break
				}
				v.WriteByte(c)
			}
			if !closed {
				return nil, fmt.Errorf("sasl.jaas.config: unterminated quote in the value of %s", k)
			}
			rest = after[i+1:]
		} else {
			end := strings.IndexAny(after, " \t\n")
			if end < 0 {
				end = len(after)
			}
			v.WriteString(after[:end])
			rest = after[end:]
		}
		opts[k] = v.String()
		rest = strings.TrimSpace(rest)
	}
	return opts, nil
}

func truncate(s string) string {
	if len(s) > 20 {
		return s[:20] + "..."
	}
	return s
}

// plainExchange is RFC 4616: one message, authzid NUL authcid NUL passwd.
type plainExchange struct {
	users Users
	user  string
	done  bool
}

// NewPlain starts a PLAIN exchange against users.
func NewPlain(users Users) Exchange { return &plainExchange{users: users} }

// plainFailed is Kafka's message for any PLAIN failure, so that a client
// cannot tell an unknown user from a wrong password.
const plainFailed = "Authentication failed: Invalid username or password"

func (p *plainExchange) Step(in []byte) ([]byte, error) {
	if p.done {
		return nil, fmt.Errorf("%w: PLAIN takes one message", ErrMalformed)
	}
	parts := strings.Split(string(in), "\x00")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: PLAIN message is not authzid NUL authcid NUL password", ErrMalformed)
	}
	authz, user, pass := parts[0], parts[1], parts[2]
	if user == "" || pass == "" {
		return nil, authFailed(plainFailed, "empty user name or password")
	}
	if authz != "" && authz != user {
		return nil, authFailed("Authentication failed: Client requested an authorization id that is different from username", "authorization id %q is not user %q", authz, user)
	}
	want, ok := p.users[user]
	if !ok || !constantTimeEqual(want, pass) {
		return nil, authFailed(plainFailed, "PLAIN user %q: unknown user or wrong password", user)
	}
	p.user, p.done = user, true
	return nil, nil
}

func (p *plainExchange) Done() bool           { return p.done }
func (p *plainExchange) Principal() Principal { return User(p.user) }
