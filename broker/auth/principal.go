package auth

import (
	"crypto/x509"
	"fmt"
	"regexp"
	"strings"
)

// Principal is who a connection authenticated as, in Kafka's form
// (KafkaPrincipal): a type, always "User" here, and a name.
type Principal struct {
	Type, Name string
}

// Anonymous is the principal of a connection that did not authenticate:
// PLAINTEXT, or SSL without a client certificate.
var Anonymous = Principal{Type: "User", Name: "ANONYMOUS"}

// User is the principal of an authenticated user name.
func User(name string) Principal { return Principal{Type: "User", Name: name} }

// String is Kafka's "User:alice".
func (p Principal) String() string { return p.Type + ":" + p.Name }

// DN is a certificate subject's distinguished name as Kafka prints it
// (Java's X500Principal.getName(), RFC 2253): most specific first,
// CN=alice,OU=eng,O=Example,C=US.
func DN(cert *x509.Certificate) string { return cert.Subject.String() }

// PrincipalMapper applies ssl.principal.mapping.rules to a distinguished
// name.
type PrincipalMapper struct {
	rules []mappingRule
	src   string
}

type mappingRule struct {
	def         bool // DEFAULT: the name unchanged
	re          *regexp.Regexp
	replacement string
	toLower     bool
	toUpper     bool
}

// ParseMappingRules parses Kafka's rule list: "RULE:pattern/replacement/"
// with an optional L or U after the last slash (lower or upper case the
// result), and DEFAULT, separated by commas. A pattern must match the
// whole name; "\/" is a literal slash in a pattern or a replacement, and
// $1 in a replacement is the first group.
func ParseMappingRules(s string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{src: s}
	rest := strings.TrimSpace(s)
	if rest == "" {
		rest = "DEFAULT"
	}
	for rest != "" {
		var r mappingRule
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			r.def = true
			rest = rest[len("DEFAULT"):]
		case strings.HasPrefix(rest, "RULE:"):
			rest = rest[len("RULE:"):]
			pat, after, ok := cutUnescaped(rest)
			if !ok {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: rule %q has no replacement (RULE:pattern/replacement/)", "RULE:"+rest)
			}
			repl, after2, ok := cutUnescaped(after)
			if !ok {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: rule %q does not end with /", "RULE:"+rest)
			}
			re, err := regexp.Compile("^(?:" + unescapeSlash(pat) + ")$")
			if err != nil {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: pattern %q: %v", pat, err)
			}
			r.re, r.replacement = re, unescapeSlash(repl)
			rest = after2
			if strings.HasPrefix(rest, "L") {
				r.toLower, rest = true, rest[1:]
			} else if strings.HasPrefix(rest, "U") {
				r.toUpper, rest = true, rest[1:]
			}
		default:
			return nil, fmt.Errorf("ssl.principal.mapping.rules: %q is neither RULE:pattern/replacement/[LU] nor DEFAULT", rest)
		}
		m.rules = append(m.rules, r)
		rest = strings.TrimSpace(rest)
		if rest != "" {
			if rest[0] != ',' {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: expected a comma before %q", rest)
			}
			rest = strings.TrimSpace(rest[1:])
		}
	}
	return m, nil
}

// cutUnescaped splits s at its first slash not preceded by a backslash.
func cutUnescaped(s string) (before, after string, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func unescapeSlash(s string) string { return strings.ReplaceAll(s, `\/`, "/") }

// Map returns the principal name for a distinguished name: the first
// matching rule's result. A name no rule matches is an error, which fails
// the connection's authentication, as in Kafka.
func (m *PrincipalMapper) Map(dn string) (string, error) {
	for _, r := range m.rules {
		if r.def {
			return dn, nil
		}
		if !r.re.MatchString(dn) {
			continue
		}
		out := r.re.ReplaceAllString(dn, r.replacement)
		switch {
		case r.toLower:
			out = strings.ToLower(out)
		case r.toUpper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("no rule of ssl.principal.mapping.rules (%s) applies to %s", m.src, dn)
}
