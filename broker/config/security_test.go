package config

import (
	"strings"
	"testing"
)

// A listener's listener.name.<l>.* settings override the broker-wide ones
// for that listener only.
func TestListenerSecuritySettings(t *testing.T) {
	b, err := ParseBroker(map[string]string{
		"listeners":                                      "PLAINTEXT://:9092,SSL://:9093,SASL_SSL://:9094",
		"ssl.keystore.location":                          "/etc/broker.pem",
		"ssl.client.auth":                                "requested",
		"listener.name.ssl.ssl.client.auth":              "required",
		"listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
		"listener.name.sasl_ssl.plain.sasl.jaas.config":  `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";`,
	})
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := b.Listeners()
	if len(ls) != 3 || !ls[1].TLS() || ls[1].SASL() || !ls[2].TLS() || !ls[2].SASL() {
		t.Fatalf("listeners %+v", ls)
	}
	for _, c := range []struct{ l, name, want string }{
		{"SSL", "ssl.client.auth", "required"},
		{"SASL_SSL", "ssl.client.auth", "requested"},
		{"SASL_SSL", "ssl.keystore.location", "/etc/broker.pem"},
		{"SASL_SSL", "sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512"},
		{"SSL", "sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512"},
	} {
		if got := b.ListenerString(c.l, c.name); got != c.want {
			t.Errorf("%s %s = %q, want %q", c.l, c.name, got, c.want)
		}
	}

	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"listeners": "SASL_PLAINTEXT://:9092", "sasl.enabled.mechanisms": "PLAIN"}, "enables PLAIN but has no users"},
		{map[string]string{"listeners": "X://:9092", "listener.security.protocol.map": "X:TLS"}, "not a security protocol"},
		{map[string]string{"plain.sasl.jaas.config": "x"}, "unknown property plain.sasl.jaas.config"},
		{map[string]string{"listener.name.SSL.ssl.client.auth": "required"}, "write the listener name in lower case"},
		{map[string]string{"listener.name.sasl_sll.ssl.client.auth": "required"}, "listener.name.sasl_sll.ssl.client.auth names no listener"},
	} {
		_, err := ParseBroker(c.props)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error containing %q", c.props, err, c.want)
		}
	}
}

// Controller and inter-broker listeners may be secured only in a way that
// lets peers authenticate each other; every refusal says what to set.
func TestPeerListenerChecks(t *testing.T) {
	const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="pw" user_broker="pw";`
	const scramJaas = `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="pw";`
	base := func(extra map[string]string) map[string]string {
		m := map[string]string{
			"process.roles": "broker,controller", "node.id": "1",
			"controller.quorum.voters":                              "1@localhost:9093",
			"controller.listener.names":                             "CONTROLLER",
			"listeners":                                             "SASL_SSL://:9092,CONTROLLER://:9093",
			"listener.security.protocol.map":                        "CONTROLLER:SASL_SSL,SASL_SSL:SASL_SSL",
			"inter.broker.listener.name":                            "SASL_SSL",
			"ssl.keystore.location":                                 "/k.pem",
			"ssl.truststore.location":                               "/ca.pem",
			"listener.name.controller.sasl.enabled.mechanisms":      "PLAIN",
			"listener.name.controller.plain.sasl.jaas.config":       jaas,
			"sasl.mechanism.controller.protocol":                    "PLAIN",
			"sasl.mechanism.inter.broker.protocol":                  "SCRAM-SHA-512",
			"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": scramJaas,
		}
		for k, v := range extra {
			if v == "" {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	b, err := ParseBroker(base(nil))
	if err != nil {
		t.Fatalf("a secured cluster's config: %v", err)
	}
	cc, err := b.ControllerClient()
	if err != nil || cc.Mechanism != "PLAIN" || cc.Username != "broker" || cc.Password != "pw" || !cc.VerifyHost || cc.Listener.Protocol != "SASL_SSL" {
		t.Errorf("controller client %+v, %v", cc, err)
	}
	ib, err := b.InterBrokerClient()
	if err != nil || ib.Mechanism != "SCRAM-SHA-512" || ib.Username != "broker" || ib.Listener.Name != "SASL_SSL" {
		t.Errorf("inter-broker client %+v, %v", ib, err)
	}
	for _, c := range []struct {
		extra map[string]string
		want  string
	}{
		{map[string]string{"listener.name.controller.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512"}, "enables SCRAM"},
		{map[string]string{"listener.name.controller.sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER"}, "enables OAUTHBEARER"},
		{map[string]string{"sasl.mechanism.controller.protocol": ""}, "set sasl.mechanism.controller.protocol to one of PLAIN"},
		{map[string]string{"listener.name.controller.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_broker="pw";`}, "plain.sasl.jaas.config needs username"},
		{map[string]string{"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": ""}, "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"},
		{map[string]string{"listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-256"}, "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512 is not in listener.name.sasl_ssl.sasl.enabled.mechanisms"},
		{map[string]string{"listener.security.protocol.map": "CONTROLLER:SSL,SASL_SSL:SASL_SSL"}, "listener.name.controller.ssl.client.auth=required"},
		{map[string]string{"listener.security.protocol.map": "CONTROLLER:SASL_SSL,SASL_SSL:SSL"}, "listener.name.sasl_ssl.ssl.client.auth=required or requested"},
	} {
		_, err := ParseBroker(base(c.extra))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error containing %q", c.extra, err, c.want)
		}
	}
	// With an authorizer a PLAINTEXT controller listener is refused off
	// loopback (nothing there is judged), allowed on it.
	acls := map[string]string{
		"authorizer.class.name":          StandardAuthorizer,
		"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL",
	}
	if _, err := ParseBroker(base(acls)); err == nil || !strings.Contains(err.Error(), "PLAINTEXT controller listener on the network while authorizer.class.name is set") {
		t.Errorf("authorizer with a PLAINTEXT controller listener on every interface: %v", err)
	}
	acls["listeners"] = "SASL_SSL://:9092,CONTROLLER://127.0.0.1:9093"
	if _, err := ParseBroker(base(acls)); err != nil {
		t.Errorf("authorizer with a PLAINTEXT controller listener on loopback: %v", err)
	}
}
