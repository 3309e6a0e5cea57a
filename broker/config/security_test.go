package config

import (
	"strings"
	"testing"
)

// A listener's listener.name.<l>.* settings override the broker-wide ones
// for that listener only, and the listeners brokers use between them stay
// PLAINTEXT until they can be secured.
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
		{map[string]string{"listeners": "PLAINTEXT://:9092,SSL://:9093", "ssl.keystore.location": "/k.pem", "inter.broker.listener.name": "SSL"}, "must map to PLAINTEXT"},
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
