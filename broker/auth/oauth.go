package auth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// OAUTHBEARER is RFC 7628's mechanism, as Kafka serves it (KIP-255, with
// KIP-768's JWT validation against a JWKS).
const OAUTHBEARER = "OAUTHBEARER"

// OAuthSettings are a listener's sasl.oauthbearer.* settings.
type OAuthSettings struct {
	// JWKSURL is sasl.oauthbearer.jwks.endpoint.url: https://, http://
	// or file://.
	JWKSURL string
	// Refresh is sasl.oauthbearer.jwks.endpoint.refresh.ms.
	Refresh   time.Duration
	Audience  []string // sasl.oauthbearer.expected.audience
	Issuer    string   // sasl.oauthbearer.expected.issuer
	SubClaim  string   // sasl.oauthbearer.sub.claim.name
	ClockSkew time.Duration
	// Now is the clock; time.Now when nil (tests set it).
	Now func() time.Time
	// Logger hears of the keys of the set that are skipped; none when nil.
	Logger *slog.Logger
}

// OAuthValidator checks tokens against one JWKS. It is shared by every
// connection of a listener.
type OAuthValidator struct {
	set  OAuthSettings
	jwks *jwks
}

// NewOAuthValidator loads the JWKS once, so that a wrong URL or file stops
// the broker's start instead of refusing every login later.
func NewOAuthValidator(set OAuthSettings) (*OAuthValidator, error) {
	if set.JWKSURL == "" {
		return nil, errors.New("OAUTHBEARER needs sasl.oauthbearer.jwks.endpoint.url (the identity provider's JWKS, https:// or file://): Tributary does not accept Kafka's unsecured test tokens")
	}
	u, err := url.Parse(set.JWKSURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "file") {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %q is not an https://, http:// or file:// URL", set.JWKSURL)
	}
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		// Whoever can change the set on its way can sign any token.
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %s is http:// to another host: anyone on the network path could replace the keys and log in as anyone; use https:// (http:// is accepted on loopback only)", u.Redacted())
	}
	if set.SubClaim == "" {
		set.SubClaim = "sub"
	}
	if set.Now == nil {
		set.Now = time.Now
	}
	if set.Refresh <= 0 {
		set.Refresh = time.Hour
	}
	v := &OAuthValidator{set: set, jwks: &jwks{url: u, refresh: set.Refresh, logger: set.Logger}}
	if err := v.jwks.load(); err != nil {
		return nil, err
	}
	return v, nil
}

// jwks is a key set, re-read every refresh and when a token names a key it
// does not hold (an identity provider rotating its keys), at most once per
// jwksMinReload so that tokens with made-up key ids cannot make the broker
// hammer the provider.
type jwks struct {
	url     *url.URL
	refresh time.Duration
	logger  *slog.Logger

	mu     sync.Mutex
	keys   map[string]crypto.PublicKey // by kid; "" for keys without one
	loaded time.Time
	tried  time.Time
	// loading is set while one login re-reads the set.
	loading bool
}

const jwksMinReload = 10 * time.Second

// maxJWKSBytes bounds what is read of a key set.
const maxJWKSBytes = 1 << 20

func (j *jwks) load() error {
	keys, err := j.fetch()
	if err != nil {
		return err
	}
	j.keys, j.loaded = keys, time.Now()
	return nil
}

// fetch reads the set; it holds no lock, so that logins with known keys go
// on while a slow provider answers.
func (j *jwks) fetch() (map[string]crypto.PublicKey, error) {
	var r io.Reader
	switch j.url.Scheme {
	case "file":
		f, err := os.Open(j.url.Path)
		if err != nil {
			return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
		}
		defer f.Close()
		r = f
	default:
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.url.String(), nil)
		if err != nil {
			return nil, err
		}
		resp, err := j.client().Do(req)
		if err != nil {
			return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %s answered %s", j.url.Redacted(), resp.Status)
		}
		r = resp.Body
	}
	data, err := io.ReadAll(io.LimitReader(r, maxJWKSBytes))
	if err != nil {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
	}
	keys, skipped, err := parseJWKS(data)
	if err == nil && len(skipped) > 0 && j.logger != nil {
		j.logger.Warn("JWKS keys skipped: tokens signed with them are refused", "url", j.url.Redacted(), "skipped", strings.Join(skipped, "; "))
	}
	return keys, err
}

// client fetches the set, following redirects only within the URL's own
// scheme and host: a redirect elsewhere (to http://, or to another
// server) would hand the keys, and so every login, to someone else.
func (j *jwks) client() *http.Client {
	return &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != j.url.Scheme || req.URL.Host != j.url.Host {
			return fmt.Errorf("redirected to %s, another scheme or host than the configured URL's: not followed", req.URL.Redacted())
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}}
}

// loopbackHost is whether host names this machine only.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// key finds the key a token names, re-reading the set when it is old or
// lacks the key. One login at a time reads it; the others use what is
// loaded meanwhile.
func (j *jwks) key(kid string, now time.Time) (crypto.PublicKey, error) {
	j.mu.Lock()
	k, ok := j.pick(kid)
	reload := (!ok || now.Sub(j.loaded) > j.refresh) && now.Sub(j.tried) >= jwksMinReload && !j.loading
	if reload {
		j.tried, j.loading = now, true
	}
	j.mu.Unlock()
	if reload {
		keys, err := j.fetch()
		j.mu.Lock()
		j.loading = false
		if err == nil {
			j.keys, j.loaded = keys, time.Now()
		}
		k, ok = j.pick(kid)
		j.mu.Unlock()
		if err != nil && !ok {
			// The old keys stay in service.
			return nil, fmt.Errorf("reloading the JWKS: %w", err)
		}
	}
	if !ok {
		return nil, fmt.Errorf("no key with kid %q in the JWKS", clipped(kid))
	}
	return k, nil
}

// pick is the key of kid; a token without a kid takes the set's only key.
func (j *jwks) pick(kid string) (crypto.PublicKey, bool) {
	if k, ok := j.keys[kid]; ok {
		return k, true
	}
	if kid == "" && len(j.keys) == 1 {
		for _, k := range j.keys {
			return k, true
		}
	}
	return nil, false
}

// ParseJWKS reads RFC 7517 key sets: RSA and EC (P-256, P-384, P-521)
// public keys meant for signatures. Other keys (encryption keys,
// symmetric keys, other curves, keys too weak or malformed) are skipped,
// so that one key the broker cannot use does not refuse the provider's
// whole set; a set without any usable key is an error.
func ParseJWKS(data []byte) (map[string]crypto.PublicKey, error) {
	keys, _, err := parseJWKS(data)
	return keys, err
}

// parseJWKS is ParseJWKS, also saying which keys it skipped and why.
func parseJWKS(data []byte) (map[string]crypto.PublicKey, []string, error) {
	var set struct {
		Keys []struct {
			Kty, Kid, Use, N, E, Crv, X, Y string
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, nil, fmt.Errorf("JWKS: %w", err)
	}
	keys := map[string]crypto.PublicKey{}
	var skipped []string
	skip := func(i int, kid, why string, args ...any) {
		skipped = append(skipped, fmt.Sprintf("key %d (%q): ", i, clipped(kid))+fmt.Sprintf(why, args...))
	}
	b64 := base64.RawURLEncoding
	for i, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		switch k.Kty {
		case "RSA":
			n, err1 := b64.DecodeString(k.N)
			e, err2 := b64.DecodeString(k.E)
			if err1 != nil || err2 != nil || len(n) < 256 || len(e) == 0 || len(e) > 4 {
				skip(i, k.Kid, "not an RSA public key of 2048 bits or more")
				continue
			}
			pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
			if pub.E < 3 || pub.E%2 == 0 {
				skip(i, k.Kid, "RSA exponent %d is not an odd number of 3 or more", pub.E)
				continue
			}
			keys[k.Kid] = pub
		case "EC":
			var c elliptic.Curve
			switch k.Crv {
			case "P-256":
				c = elliptic.P256()
			case "P-384":
				c = elliptic.P384()
			case "P-521":
				c = elliptic.P521()
			default:
				skip(i, k.Kid, "curve %q not supported", clipped(k.Crv))
				continue
			}
			x, err1 := b64.DecodeString(k.X)
			y, err2 := b64.DecodeString(k.Y)
			size := (c.Params().BitSize + 7) / 8
			if err1 != nil || err2 != nil || len(x) != size || len(y) != size {
				skip(i, k.Kid, "bad EC coordinates")
				continue
			}
			// Uncompressed point form, which ecdsa.ParseUncompressedPublicKey
			// checks is on the curve.
			pt := append(append([]byte{4}, x...), y...)
			pub, err := ecdsa.ParseUncompressedPublicKey(c, pt)
			if err != nil {
				skip(i, k.Kid, "%v", err)
				continue
			}
			keys[k.Kid] = pub
		default:
			skip(i, k.Kid, "key type %q not supported (RSA, EC)", clipped(k.Kty))
		}
	}
	if len(keys) == 0 {
		if len(skipped) > 0 {
			return nil, skipped, fmt.Errorf("JWKS has no usable RSA or EC signing key (%s)", strings.Join(skipped, "; "))
		}
		return nil, nil, errors.New("JWKS has no RSA or EC signing key")
	}
	return keys, skipped, nil
}

// Token is a validated token: whom it names and until when.
type Token struct {
	Principal string
	Expires   time.Time
}

// Validate checks a compact JWS: the signature with a key of the JWKS
// (RS256/384/512, ES256/384/512; never "none" or HMAC), exp and iat present,
// exp and nbf within the clock skew, the audience and issuer when
// expected, and a non-empty principal claim. The error is for the log
// only; the client is told invalid_token, as Kafka tells it.
func (v *OAuthValidator) Validate(tok string) (Token, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return Token{}, errors.New("not a JWS in compact form (three base64url parts)")
	}
	b64 := base64.RawURLEncoding
	hdrJSON, err := b64.DecodeString(parts[0])
	if err != nil {
		return Token{}, errors.New("header is not base64url")
	}
	var hdr struct {
		Alg, Kid string
		Crit     json.RawMessage
	}
	if err := json.Unmarshal(hdrJSON, &hdr); err != nil {
		return Token{}, errors.New("header is not JSON")
	}
	if hdr.Crit != nil {
		// RFC 7515 4.1.11: a recipient must refuse extensions it does not
		// understand, and this one understands none.
		return Token{}, errors.New("header has crit: no JWS extension is supported")
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil {
		return Token{}, errors.New("signature is not base64url")
	}
	var h hash.Hash
	var ch crypto.Hash
	switch hdr.Alg[min(2, len(hdr.Alg)):] {
	case "256":
		h, ch = sha256.New(), crypto.SHA256
	case "384":
		h, ch = sha512.New384(), crypto.SHA384
	case "512":
		h, ch = sha512.New(), crypto.SHA512
	}
	if h == nil || (!strings.HasPrefix(hdr.Alg, "RS") && !strings.HasPrefix(hdr.Alg, "ES")) {
		return Token{}, fmt.Errorf("algorithm %q not accepted (RS256, RS384, RS512, ES256, ES384, ES512)", clipped(hdr.Alg))
	}
	now := v.set.Now()
	key, err := v.jwks.key(hdr.Kid, now)
	if key == nil {
		return Token{}, err
	}
	h.Write([]byte(parts[0] + "." + parts[1]))
	digest := h.Sum(nil)
	switch k := key.(type) {
	case *rsa.PublicKey:
		if !strings.HasPrefix(hdr.Alg, "RS") || rsa.VerifyPKCS1v15(k, ch, digest, sig) != nil {
			return Token{}, fmt.Errorf("signature does not verify with key %q", clipped(hdr.Kid))
		}
	case *ecdsa.PublicKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		if !strings.HasPrefix(hdr.Alg, "ES") || len(sig) != 2*size ||
			!ecdsa.Verify(k, digest, new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])) {
			return Token{}, fmt.Errorf("signature does not verify with key %q", clipped(hdr.Kid))
		}
	}
	payload, err := b64.DecodeString(parts[1])
	if err != nil {
		return Token{}, errors.New("payload is not base64url")
	}
	var claims map[string]any
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if err := d.Decode(&claims); err != nil {
		return Token{}, errors.New("payload is not a JSON object")
	}
	exp, ok := numericDate(claims["exp"])
	if !ok {
		return Token{}, errors.New("no exp claim")
	}
	if _, ok := numericDate(claims["iat"]); !ok {
		return Token{}, errors.New("no iat claim")
	}
	if !now.Before(exp.Add(v.set.ClockSkew)) {
		return Token{}, fmt.Errorf("expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if nbf, ok := numericDate(claims["nbf"]); ok && now.Add(v.set.ClockSkew).Before(nbf) {
		return Token{}, fmt.Errorf("not valid before %s", nbf.UTC().Format(time.RFC3339))
	}
	if len(v.set.Audience) > 0 {
		var auds []string
		switch a := claims["aud"].(type) {
		case string:
			auds = []string{a}
		case []any:
			for _, x := range a {
				if s, ok := x.(string); ok {
					auds = append(auds, s)
				}
			}
		}
		if !slices.ContainsFunc(auds, func(a string) bool { return slices.Contains(v.set.Audience, a) }) {
			return Token{}, fmt.Errorf("audience %q is none of the expected %q", clippedList(auds), v.set.Audience)
		}
	}
	if v.set.Issuer != "" {
		if iss, _ := claims["iss"].(string); iss != v.set.Issuer {
			return Token{}, fmt.Errorf("issuer %q is not the expected %q", clipped(iss), v.set.Issuer)
		}
	}
	sub, _ := claims[v.set.SubClaim].(string)
	if strings.TrimSpace(sub) == "" {
		return Token{}, fmt.Errorf("no %s claim naming the principal", v.set.SubClaim)
	}
	return Token{Principal: sub, Expires: exp}, nil
}

func numericDate(v any) (time.Time, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(f * 1000)), true
}

func clipped(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

func clippedList(l []string) string { return clipped(strings.Join(l, ",")) }

// oauthInvalidToken is the server's error challenge (RFC 7628 section
// 3.2.2) for any token the broker refuses, as Kafka sends it: the reason
// stays in the broker's log.
const oauthInvalidToken = `{"status":"invalid_token"}`

// oauthExchange is the server side: the client's initial response
// (gs2-header, then auth=Bearer <token> and extensions, \x01-separated);
// on a bad token the error challenge, which the client acknowledges with
// a lone \x01 and is then refused with the challenge as the message.
type oauthExchange struct {
	v       *OAuthValidator
	tok     Token
	done    bool
	failed  bool
	reason  string
	started bool
}

// NewOAuth starts an OAUTHBEARER exchange validated by v.
func NewOAuth(v *OAuthValidator) Exchange { return &oauthExchange{v: v} }

func (o *oauthExchange) Step(in []byte) ([]byte, error) {
	if o.failed {
		return nil, authFailed(oauthInvalidToken, "%s", o.reason)
	}
	if o.started {
		return nil, fmt.Errorf("%w: OAUTHBEARER takes one message", ErrMalformed)
	}
	o.started = true
	msg := string(in)
	gs2, rest, ok := strings.Cut(msg, "\x01")
	if !ok || !strings.HasPrefix(gs2, "n,") || !strings.HasSuffix(gs2, ",") || !strings.HasSuffix(rest, "\x01\x01") {
		return nil, fmt.Errorf("%w: OAUTHBEARER message is not gs2-header \\x01 kvpairs \\x01", ErrMalformed)
	}
	authz, _ := strings.CutPrefix(strings.TrimSuffix(strings.TrimPrefix(gs2, "n,"), ","), "a=")
	var token string
	for _, kv := range strings.Split(strings.TrimSuffix(rest, "\x01\x01"), "\x01") {
		k, v, _ := strings.Cut(kv, "=")
		if k == "auth" {
			scheme, t, _ := strings.Cut(v, " ")
			if !strings.EqualFold(scheme, "Bearer") {
				return nil, fmt.Errorf("%w: OAUTHBEARER auth is not a Bearer token", ErrMalformed)
			}
			token = strings.TrimSpace(t)
		}
	}
	if token == "" {
		return nil, fmt.Errorf("%w: OAUTHBEARER message has no auth=Bearer token", ErrMalformed)
	}
	tok, err := o.v.Validate(token)
	if err == nil && authz != "" && authz != tok.Principal {
		// Kafka refuses this at once, with its message, not with the
		// invalid_token challenge: the token itself is good.
		return nil, authFailed("Authentication failed: Client requested an authorization id that is different from the token's principal name",
			"OAUTHBEARER authorization id %q is not the token's principal %q", authz, tok.Principal)
	}
	if err != nil {
		o.failed, o.reason = true, "OAUTHBEARER token refused: "+err.Error()
		return []byte(oauthInvalidToken), nil
	}
	o.tok, o.done = tok, true
	return nil, nil
}

func (o *oauthExchange) Done() bool           { return o.done }
func (o *oauthExchange) Principal() Principal { return User(o.tok.Principal) }

// Expires is when the token expires: the session ends then (KIP-368).
func (o *oauthExchange) Expires() time.Time { return o.tok.Expires }
