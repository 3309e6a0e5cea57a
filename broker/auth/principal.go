package auth

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf16"
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
// CN=alice,OU=eng,O=Example,C=US. It is formatted from the raw subject,
// not pkix.Name.String(), which regroups the attributes by type and
// knows other keywords than Java (DC and UID as OIDs, SERIALNUMBER and
// POSTALCODE as keywords): the mapping rules are written against Java's
// form.
func DN(cert *x509.Certificate) string {
	var seq []avaSET
	if rest, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil || len(rest) > 0 {
		return cert.Subject.String()
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if i < len(seq)-1 {
			b.WriteByte(',')
		}
		for j, a := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeAVA(&b, a)
		}
	}
	return b.String()
}

// avaSET is one relative distinguished name, a SET (asn1 goes by the
// name's suffix) of attributes, each value kept raw.
type avaSET []ava

type ava struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// javaKeywords are the attribute types X500Principal.getName() prints by
// name (RFC 2253's and RFC 2256's); any other is its OID.
var javaKeywords = map[string]string{
	"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O",
	"2.5.4.11": "OU", "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1": "UID",
}

// writeAVA writes TYPE=value as Java does: a known keyword with a string
// value escaped (every one of ,=+<>#;"\ and a leading or trailing space),
// anything else as OID=#hex of the value's DER encoding.
func writeAVA(b *strings.Builder, a ava) {
	kw, known := javaKeywords[a.Type.String()]
	str, isString := avaString(a.Value)
	if !known || !isString {
		b.WriteString(a.Type.String())
		b.WriteString("=#")
		b.WriteString(hex.EncodeToString(a.Value.FullBytes))
		return
	}
	b.WriteString(kw)
	b.WriteByte('=')
	for i, r := range str {
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, r),
			r == ' ' && (i == 0 || i == len(str)-1):
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
}

// avaString is a value of one of the DirectoryString types, decoded.
func avaString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, asn1.TagT61String, asn1.TagNumericString:
		return string(v.Bytes), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}

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
			r.re, r.replacement = re, javaReplacement(unescapeSlash(repl), re.NumSubexp())
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

// javaReplacement turns a replacement as Java's Matcher reads it into
// Go's: $N is group N (as many digits as name a group, so "$1_svc" is
// group 1 then "_svc", where Go would read a group named "1_svc"), \$ a
// literal dollar; any other dollar is literal too.
func javaReplacement(s string, groups int) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] == '$':
			b.WriteString("$$")
			i++
		case c == '$' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			n, j := int(s[i+1]-'0'), i+2
			for ; j < len(s) && s[j] >= '0' && s[j] <= '9' && n*10+int(s[j]-'0') <= groups; j++ {
				n = n*10 + int(s[j]-'0')
			}
			fmt.Fprintf(&b, "${%d}", n)
			i = j - 1
		case c == '$':
			b.WriteString("$$")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
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
