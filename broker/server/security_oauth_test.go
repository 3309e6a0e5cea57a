package server_test

import (
	"bufio"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// jwtSigner signs test tokens with an RSA and an EC key that the broker's
// JWKS file holds.
type jwtSigner struct {
	rsa *rsa.PrivateKey
	ec  *ecdsa.PrivateKey
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func (s *jwtSigner) jwks() []byte {
	ecPub := s.ec.PublicKey
	x, y := make([]byte, 32), make([]byte, 32)
	ecPub.X.FillBytes(x)
	ecPub.Y.FillBytes(y)
	keys := []map[string]string{
		{"kty": "RSA", "kid": "rsa1", "use": "sig", "alg": "RS256", "n": b64(s.rsa.N.Bytes()), "e": b64(big.NewInt(int64(s.rsa.E)).Bytes())},
		{"kty": "EC", "kid": "ec1", "crv": "P-256", "x": b64(x), "y": b64(y)},
	}
	data, _ := json.Marshal(map[string]any{"keys": keys})
	return data
}

// token signs claims with alg (RS256 or ES256) under kid, using key (the
// signer's own when nil).
func (s *jwtSigner) token(t *testing.T, alg, kid string, claims map[string]any, key crypto.Signer) string {
	t.Helper()
	hdr, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT", "kid": kid})
	body, _ := json.Marshal(claims)
	input := b64(hdr) + "." + b64(body)
	digest := sha256.Sum256([]byte(input))
	var sig []byte
	var err error
	switch alg {
	case "RS256":
		if key == nil {
			key = s.rsa
		}
		sig, err = key.(*rsa.PrivateKey).Sign(rand.Reader, digest[:], crypto.SHA256)
	case "ES256":
		if key == nil {
			key = s.ec
		}
		r, ss, e := ecdsa.Sign(rand.Reader, key.(*ecdsa.PrivateKey), digest[:])
		sig, err = append(r.FillBytes(make([]byte, 32)), ss.FillBytes(make([]byte, 32))...), e
	}
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + b64(sig)
}

func claims(sub string, exp time.Duration, extra ...any) map[string]any {
	now := time.Now()
	c := map[string]any{"sub": sub, "iat": now.Unix(), "exp": now.Add(exp).Unix(), "aud": "tributary", "iss": "https://idp.test"}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i].(string)] = extra[i+1]
	}
	return c
}

// TestOAuthBearerAndReauth runs OAUTHBEARER (KIP-768 JWT validation against
// a JWKS file) and re-authentication (KIP-368, connections.max.reauth.ms)
// on one broker, with franz-go and raw frames.
func TestOAuthBearerAndReauth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signer := &jwtSigner{rsa: rk, ec: ek}
	jwksFile := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksFile, signer.jwks(), 0o644); err != nil {
		t.Fatal(err)
	}
	ports := [2]int{testbroker.FreePort(t), testbroker.FreePort(t)}
	plainAddr, saslAddr := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	const reauth = 1500 * time.Millisecond
	testbroker.StartConfig(t, testbroker.Config{
		Dir: dir, Port: ports[0],
		Listeners: fmt.Sprintf("PLAINTEXT://%s,SASL_PLAINTEXT://%s", plainAddr, saslAddr),
		Props: []string{
			"listener.name.sasl_plaintext.sasl.enabled.mechanisms=OAUTHBEARER",
			"listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url=file://" + jwksFile,
			"sasl.oauthbearer.expected.audience=tributary,other",
			"sasl.oauthbearer.expected.issuer=https://idp.test",
			"sasl.oauthbearer.clock.skew.seconds=5",
			fmt.Sprintf("listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms=%d", reauth.Milliseconds()),
			"connection.failed.authentication.delay.ms=0",
		},
	})
	otherRSA, _ := rsa.GenerateKey(rand.Reader, 2048)

	t.Run("valid tokens", func(t *testing.T) {
		t.Parallel()
		for _, alg := range []string{"RS256", "ES256"} {
			kid := map[string]string{"RS256": "rsa1", "ES256": "ec1"}[alg]
			tok := signer.token(t, alg, kid, claims("alice", time.Hour), nil)
			if err := roundTrip(t, saslAddr, "oauth-"+alg, kgo.SASL(oauth.Auth{Token: tok}.AsMechanism())); err != nil {
				t.Errorf("%s token: %v", alg, err)
			}
		}
	})

	t.Run("refused tokens", func(t *testing.T) {
		t.Parallel()
		refused := map[string]string{
			"expired":        signer.token(t, "RS256", "rsa1", claims("alice", -time.Minute), nil),
			"wrong audience": signer.token(t, "RS256", "rsa1", claims("alice", time.Hour, "aud", "someone-else"), nil),
			"wrong issuer":   signer.token(t, "ES256", "ec1", claims("alice", time.Hour, "iss", "https://evil.test"), nil),
			"wrong key":      signer.token(t, "RS256", "rsa1", claims("alice", time.Hour), otherRSA),
			"no sub":         signer.token(t, "RS256", "rsa1", claims("", time.Hour), nil),
			"alg none":       b64([]byte(`{"alg":"none"}`)) + "." + b64([]byte(`{"sub":"alice"}`)) + ".",
		}
		for what, tok := range refused {
			began := time.Now()
			cl, err := kgo.NewClient(kgo.SeedBrokers(saslAddr), kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()))
			if err != nil {
				t.Fatal(err)
			}
			// A refusal retried until the deadline would take all of
			// it: the bound below is half of it, with room for a loaded
			// machine.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err = cl.Ping(ctx)
			cancel()
			cl.Close()
			// franz-go shows Kafka's error challenge as the failure.
			if err == nil || !strings.Contains(err.Error(), `"status":"invalid_token"`) {
				t.Errorf("%s: got %v, want an OAUTHBEARER failure with status invalid_token", what, err)
			}
			if took := time.Since(began); took > 15*time.Second {
				t.Errorf("%s: refused after %v", what, took)
			}
		}
		// The raw exchange, as Kafka's clients see it: the challenge,
		// then SASL_AUTHENTICATION_FAILED carrying it.
		c := dialRaw(t, saslAddr)
		c.handshake(t, "OAUTHBEARER")
		resp := c.authenticate(t, "n,,\x01auth=Bearer "+refused["expired"]+"\x01\x01")
		if resp.ErrorCode != 0 || string(resp.SASLAuthBytes) != `{"status":"invalid_token"}` {
			t.Fatalf("first answer to an expired token: code %d, bytes %q", resp.ErrorCode, resp.SASLAuthBytes)
		}
		resp = c.authenticate(t, "\x01")
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != `{"status":"invalid_token"}` {
			t.Fatalf("after the client's %%x01: code %d, message %v", resp.ErrorCode, resp.ErrorMessage)
		}
	})

	t.Run("session lifetime", func(t *testing.T) {
		t.Parallel()
		msg := "n,,\x01auth=Bearer " + signer.token(t, "ES256", "ec1", claims("bob", time.Hour), nil) + "\x01\x01"
		// An expired session closes the connection at its next request.
		idle := dialRaw(t, saslAddr)
		idle.handshake(t, "OAUTHBEARER")
		if r := idle.authenticate(t, msg); r.ErrorCode != 0 || r.SessionLifetimeMillis != reauth.Milliseconds() {
			t.Fatalf("login: code %d, session_lifetime_ms %d, want %d", r.ErrorCode, r.SessionLifetimeMillis, reauth.Milliseconds())
		}
		// One that re-authenticates in time goes on being served.
		renewed := dialRaw(t, saslAddr)
		renewed.handshake(t, "OAUTHBEARER")
		renewed.authenticate(t, msg)
		// One that starts re-authenticating and never finishes is not
		// served as its old principal: after SaslHandshake only
		// SaslAuthenticate, before the session expired or after.
		stalled, halfway := dialRaw(t, saslAddr), dialRaw(t, saslAddr)
		for _, c := range []*rawConn{stalled, halfway} {
			c.handshake(t, "OAUTHBEARER")
			c.authenticate(t, msg)
		}
		halfway.handshake(t, "OAUTHBEARER")
		if err := halfway.metadata(); err == nil {
			t.Errorf("metadata between SaslHandshake and SaslAuthenticate was answered; want the connection closed")
		}
		if err := idle.metadata(); err != nil {
			t.Fatalf("metadata within the session: %v", err)
		}
		time.Sleep(reauth / 2)
		renewed.handshake(t, "OAUTHBEARER")
		if r := renewed.authenticate(t, msg); r.ErrorCode != 0 {
			t.Fatalf("re-authentication: code %d", r.ErrorCode)
		}
		time.Sleep(reauth/2 + 300*time.Millisecond)
		if err := idle.metadata(); err == nil {
			t.Errorf("metadata after the session expired was answered; want the connection closed")
		}
		if err := renewed.metadata(); err != nil {
			t.Errorf("metadata after re-authenticating: %v", err)
		}
		stalled.handshake(t, "OAUTHBEARER")
		if err := stalled.metadata(); err == nil {
			t.Errorf("metadata after the session expired and a SaslHandshake alone was answered; want the connection closed")
		}
		// Re-authenticating as someone else is refused.
		renewed.handshake(t, "OAUTHBEARER")
		other := "n,,\x01auth=Bearer " + signer.token(t, "ES256", "ec1", claims("mallory", time.Hour), nil) + "\x01\x01"
		if r := renewed.authenticate(t, other); r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Errorf("re-authentication as another principal: code %d", r.ErrorCode)
		}
	})

	t.Run("franz-go re-authenticates", func(t *testing.T) {
		t.Parallel()
		var logins atomic.Int32
		mech := oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			logins.Add(1)
			return oauth.Auth{Token: signer.token(t, "RS256", "rsa1", claims("carol", time.Hour), nil)}, nil
		})
		var dials atomic.Int32
		cl, err := kgo.NewClient(kgo.SeedBrokers(saslAddr), kgo.SASL(mech), kgo.AllowAutoTopicCreation(),
			kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
				dials.Add(1)
				return (&net.Dialer{}).DialContext(ctx, network, host)
			}))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		deadline := time.Now().Add(3 * reauth)
		for i := 0; time.Now().Before(deadline); i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "oauth-reauth", Value: []byte{byte(i)}}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		// Each connection logs in once when dialled; the produce
		// connection, busy throughout, re-authenticates in place at least
		// twice rather than reconnecting.
		if n, d := logins.Load(), dials.Load(); n-d < 2 {
			t.Errorf("%d logins on %d connections over %v with sessions of %v; want re-authentications on open connections", n, d, 3*reauth, reauth)
		}
	})
}

// rawConn speaks Kafka frames on one connection, for what clients hide.
type rawConn struct {
	nc   net.Conn
	r    *bufio.Reader
	corr int32
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{nc: nc, r: bufio.NewReader(nc)}
}

func (c *rawConn) do(req kmsg.Request, resp kmsg.Response) error {
	c.corr++
	hdr := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	hdr = binary.BigEndian.AppendUint16(hdr, uint16(req.GetVersion()))
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(c.corr))
	hdr = binary.BigEndian.AppendUint16(hdr, 4)
	hdr = append(hdr, "test"...)
	if req.IsFlexible() {
		hdr = append(hdr, 0)
	}
	body := req.AppendTo(hdr)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	c.nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(append(frame, body...)); err != nil {
		return err
	}
	var sz [4]byte
	if _, err := io.ReadFull(c.r, sz[:]); err != nil {
		return err
	}
	buf := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return err
	}
	buf = buf[4:] // correlation id
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() {
		buf = buf[1:]
	}
	resp.SetVersion(req.GetVersion())
	return resp.ReadFrom(buf)
}

func (c *rawConn) handshake(t *testing.T, mech string) {
	t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = 1, mech
	resp := kmsg.NewPtrSASLHandshakeResponse()
	if err := c.do(req, resp); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("SaslHandshake %s: %v, code %d", mech, err, resp.ErrorCode)
	}
}

func (c *rawConn) authenticate(t *testing.T, msg string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = 2, []byte(msg)
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	if err := c.do(req, resp); err != nil {
		t.Fatalf("SaslAuthenticate: %v", err)
	}
	return resp
}

func (c *rawConn) metadata() error {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	resp := kmsg.NewPtrMetadataResponse()
	if err := c.do(req, resp); err != nil {
		return err
	}
	if len(resp.Brokers) == 0 {
		return errors.New("no brokers in the metadata")
	}
	return nil
}
