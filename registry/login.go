package registry

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ClusterLogin returns a Config.Authenticate for a registry outside the
// broker (`tributary registry`), which has no user store of its own: a
// user name and password are good when they log in to the cluster at
// brokers with SASL mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512), over
// TLS when tc is set, the way the registry itself connects. So the
// cluster's users are the registry's, as inside the broker. Each check
// opens one connection (the registry remembers a success for a minute,
// auth.go).
func ClusterLogin(brokers []string, mechanism string, tc *tls.Config) (func(user, password string) bool, error) {
	mech := func(user, pass string) sasl.Mechanism {
		switch strings.ToUpper(mechanism) {
		case "PLAIN":
			return plain.Auth{User: user, Pass: pass}.AsMechanism()
		case "SCRAM-SHA-256":
			return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
		default:
			return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
		}
	}
	switch strings.ToUpper(mechanism) {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		return nil, fmt.Errorf("registry: basic auth checks passwords by a SASL login to the cluster, which needs sasl.mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 in the client properties, not %q", mechanism)
	}
	return func(user, password string) bool {
		if user == "" {
			return false
		}
		opts := []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.SASL(mech(user, password)), kgo.RequestRetries(0)}
		if tc != nil {
			opts = append(opts, kgo.DialTLSConfig(tc.Clone()))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return false
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return cl.Ping(ctx) == nil
	}, nil
}
