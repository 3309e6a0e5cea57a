package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// xdgSCRAM is the SCRAM client Sarama's own examples plug in.
type xdgSCRAM struct {
	*scram.ClientConversation
}

func (x *xdgSCRAM) Begin(user, pass, authz string) error {
	c, err := scram.SHA512.NewClient(user, pass, authz)
	if err != nil {
		return err
	}
	x.ClientConversation = c.NewConversation()
	return nil
}

func (x *xdgSCRAM) Step(challenge string) (string, error) {
	return x.ClientConversation.Step(challenge)
}
func (x *xdgSCRAM) Done() bool { return x.ClientConversation.Done() }

// saramaSecurity: Sarama over SASL_SSL with SCRAM-SHA-512 produces and
// reads back a record; a wrong password is its authentication error.
func saramaSecurity(t *testing.T, s *securedBroker) {
	cfg := func(pass string) *sarama.Config {
		c := sarama.NewConfig()
		c.Version = sarama.V3_6_0_0
		c.Net.TLS.Enable, c.Net.TLS.Config = true, s.tlsConfig()
		c.Net.SASL.Enable, c.Net.SASL.Mechanism = true, sarama.SASLTypeSCRAMSHA512
		c.Net.SASL.User, c.Net.SASL.Password = "alice", pass
		c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{} }
		c.Producer.Return.Successes = true
		c.Metadata.Retry.Max = 0
		c.Net.DialTimeout = 5 * time.Second
		return c
	}
	p, err := sarama.NewSyncProducer([]string{s.saslSSL}, cfg("alice-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	part, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: "sarama-scram", Value: sarama.StringEncoder("hello")})
	if err != nil {
		t.Fatal(err)
	}
	c, err := sarama.NewConsumer([]string{s.saslSSL}, cfg("alice-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition("sarama-scram", part, off)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	select {
	case m := <-pc.Messages():
		if string(m.Value) != "hello" {
			t.Errorf("read %q", m.Value)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("nothing read in 20 s")
	}
	began := time.Now()
	_, err = sarama.NewClient([]string{s.saslSSL}, cfg("wrong"))
	// Sarama wraps the broker's error in ErrOutOfBrokers.
	if err == nil || !strings.Contains(err.Error(), "SASL Authentication failed") {
		t.Errorf("a wrong password: %v", err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("refused after %v", took)
	}
	t.Logf("wrong password: %v", err)
}
