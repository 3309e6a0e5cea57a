package config

import (
	"fmt"
	"strings"
)

// StandardAuthorizer is Kafka's KRaft authorizer class; Tributary's own
// authorizer has its semantics and answers to its name.
const StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

var aclDefs = []Def{
	{Name: "authorizer.class.name", Type: String, Default: "", Check: oneOf("", StandardAuthorizer),
		Doc: "The authorizer: " + StandardAuthorizer + " checks every request against the ACLs in the metadata log (docs/security.md); empty allows everything to everyone."},
	{Name: "super.users", Type: String, Default: "", Check: checkSuperUsers,
		Doc: "Principals allowed every operation whatever the ACLs say, separated by semicolons: User:admin;User:CN=broker,O=Example."},
	{Name: "allow.everyone.if.no.acl.found", Type: Bool, Default: "false",
		Doc: "Whether a resource that no ACL names at all is open to everyone; false denies it to all but super users."},
}

func checkSuperUsers(v string) error {
	for _, p := range SuperUsers(v) {
		if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
			return fmt.Errorf("%q is not a principal TYPE:NAME", p)
		}
	}
	return nil
}

// SuperUsers splits super.users, Kafka's semicolon-separated list.
func SuperUsers(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func init() {
	for _, d := range aclDefs {
		if _, dup := BrokerDefs[d.Name]; dup {
			panic("config: " + d.Name + " defined twice")
		}
		BrokerDefs[d.Name] = d
	}
}
