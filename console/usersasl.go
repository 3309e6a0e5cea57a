package console

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// kgo.SASL appends to the client's mechanisms and kgo authenticates with
// the first one, so a user's client built on the console's options would
// sign in with the console's own credentials (-X sasl.*) whatever the user
// typed. The console's own SASL options are therefore kept out of every
// per-user client: only the transport options (TLS, dialer) are shared.

// splitSASL sorts opts into those that set SASL mechanisms and the rest.
// kgo options are opaque, so each one is applied to a client that never
// connects (kgo dials lazily) and asked what it set.
func splitSASL(opts []kgo.Opt) (transport, saslOpts []kgo.Opt, err error) {
	for _, o := range opts {
		cl, err := kgo.NewClient(o)
		if err != nil {
			return nil, nil, err
		}
		mechs := saslMechs(cl)
		cl.Close()
		if len(mechs) > 0 {
			saslOpts = append(saslOpts, o)
		} else {
			transport = append(transport, o)
		}
	}
	return transport, saslOpts, nil
}

func saslMechs(cl *kgo.Client) []sasl.Mechanism {
	m, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism)
	return m
}

// checkUserSASL refuses to start a console whose per-user client would
// carry any mechanism but the user's own.
func (s *Server) checkUserSASL() error {
	mech, _ := s.sessions.cfg.mechanism("probe", "probe")
	cl, err := kgo.NewClient(append(s.userOpts(), kgo.SASL(mech))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if n := len(saslMechs(cl)); n != 1 {
		return fmt.Errorf("a signed-in person's Kafka client would carry %d SASL mechanisms, not only their own", n)
	}
	return nil
}
