package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A JWKS served over HTTP (a loopback server) is read at start and again
// when a token names a key it lacks, which is how an identity provider's
// key rotation reaches the broker; the principal comes from
// sasl.oauthbearer.sub.claim.name.
func TestOAuthJWKSURLRotationAndSubClaim(t *testing.T) {
	b64 := base64.RawURLEncoding
	k1, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwk := func(kid string, k *ecdsa.PrivateKey) map[string]string {
		x, y := make([]byte, 32), make([]byte, 32)
		k.X.FillBytes(x)
		k.Y.FillBytes(y)
		return map[string]string{"kty": "EC", "crv": "P-256", "kid": kid, "x": b64.EncodeToString(x), "y": b64.EncodeToString(y)}
	}
	var keys atomic.Value
	// A key the broker cannot use (an unsupported curve) is skipped, not
	// the whole set refused.
	keys.Store([]map[string]string{jwk("k1", k1), {"kty": "EC", "crv": "secp256k1", "kid": "odd", "x": "AA", "y": "AA"}, {"kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": "AA"}})
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"keys": keys.Load()})
	}))
	defer srv.Close()
	now := time.Now()
	clock := now
	v, err := NewOAuthValidator(OAuthSettings{JWKSURL: srv.URL, SubClaim: "client_id", Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	signH := func(hdr map[string]any, k crypto.Signer, claims map[string]any) string {
		h, _ := json.Marshal(hdr)
		c, _ := json.Marshal(claims)
		in := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
		d := sha256.Sum256([]byte(in))
		r, s, _ := ecdsa.Sign(rand.Reader, k.(*ecdsa.PrivateKey), d[:])
		return in + "." + b64.EncodeToString(append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...))
	}
	sign := func(kid string, k crypto.Signer, claims map[string]any) string {
		return signH(map[string]any{"alg": "ES256", "kid": kid}, k, claims)
	}
	claims := map[string]any{"client_id": "svc-a", "sub": "ignored", "iat": now.Unix(), "exp": now.Add(time.Minute).Unix()}
	tok, err := v.Validate(sign("k1", k1, claims))
	if err != nil || tok.Principal != "svc-a" || !tok.Expires.Equal(time.Unix(now.Add(time.Minute).Unix(), 0)) {
		t.Fatalf("k1 token: %+v, %v", tok, err)
	}
	// A JWS extension marked critical is refused: none is understood.
	crit := signH(map[string]any{"alg": "ES256", "kid": "k1", "crit": []string{"exp"}, "exp": 1}, k1, claims)
	if _, err := v.Validate(crit); err == nil || !strings.Contains(err.Error(), "crit") {
		t.Errorf("token with crit: %v, want refused", err)
	}
	// The provider rotates to k2: the first token signed with it makes
	// the broker read the set again.
	keys.Store([]map[string]string{jwk("k1", k1), jwk("k2", k2)})
	clock = now.Add(jwksMinReload)
	if _, err := v.Validate(sign("k2", k2, claims)); err != nil {
		t.Fatalf("k2 token after rotation: %v", err)
	}
	// Made-up key ids do not make it fetch again and again.
	before := fetches.Load()
	for range 5 {
		if _, err := v.Validate(sign("k9", k2, claims)); err == nil || !strings.Contains(err.Error(), "k9") {
			t.Fatalf("unknown kid: %v", err)
		}
	}
	if n := fetches.Load() - before; n > 1 {
		t.Errorf("%d JWKS fetches for five tokens with an unknown kid", n)
	}
	// http:// only on loopback, and no redirect to another host.
	if _, err := NewOAuthValidator(OAuthSettings{JWKSURL: "http://idp.example/jwks"}); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("http:// JWKS off loopback: %v, want refused", err)
	}
	redirect := httptest.NewServer(http.RedirectHandler(srv.URL, http.StatusFound))
	defer redirect.Close()
	if _, err := NewOAuthValidator(OAuthSettings{JWKSURL: redirect.URL}); err == nil || !strings.Contains(err.Error(), "not followed") {
		t.Errorf("JWKS redirected to another host: %v, want refused", err)
	}
	if _, err := ParseJWKS([]byte(`{"keys":[{"kty":"EC","crv":"P-192","kid":"x","x":"AA","y":"AA"}]}`)); err == nil || !strings.Contains(err.Error(), "P-192") {
		t.Errorf("a set of unusable keys only: %v, want an error naming why", err)
	}
	// Within the clock skew, an expired token still passes; past it, not.
	v.set.ClockSkew = 30 * time.Second
	clock = now.Add(time.Minute + 20*time.Second)
	if _, err := v.Validate(sign("k1", k1, claims)); err != nil {
		t.Errorf("20 s past exp with 30 s skew: %v", err)
	}
	clock = now.Add(time.Minute + 40*time.Second)
	if _, err := v.Validate(sign("k1", k1, claims)); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("40 s past exp with 30 s skew: %v", err)
	}
}

// FuzzOAuth feeds arbitrary client messages and JWKS documents to the
// exchange and the key set parser: nothing may panic, and nothing but a
// token signed by the set's key may authenticate.
func FuzzOAuth(f *testing.F) {
	f.Add([]byte("n,,\x01auth=Bearer a.b.c\x01\x01"), []byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}`))
	f.Add([]byte("n,a=x,\x01auth=Bearer eyJhbGciOiJFUzI1NiJ9.e30.AAAA\x01k=v\x01\x01"), []byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`))
	f.Add([]byte("\x01"), []byte(`{}`))
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	x, y := make([]byte, 32), make([]byte, 32)
	k.X.FillBytes(x)
	k.Y.FillBytes(y)
	b64 := base64.RawURLEncoding
	set := `{"keys":[{"kty":"EC","crv":"P-256","x":"` + b64.EncodeToString(x) + `","y":"` + b64.EncodeToString(y) + `"}]}`
	file := filepath.Join(f.TempDir(), "jwks.json")
	os.WriteFile(file, []byte(set), 0o600)
	v, err := NewOAuthValidator(OAuthSettings{JWKSURL: "file://" + file})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, msg, jwks []byte) {
		ParseJWKS(jwks)
		ex := NewOAuth(v)
		for range 2 {
			if _, err := ex.Step(msg); err != nil {
				break
			}
		}
		if ex.Done() {
			t.Fatalf("authenticated with %q, which the fuzzer cannot have signed", msg)
		}
	})
}
