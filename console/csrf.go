package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
)

// CSRF protection, the signed double-submit cookie pattern:
//
//   - the first page a browser loads sets a random seed in the cookie
//     csrfCookie (HttpOnly, SameSite=Strict: a cross-site request does not
//     even carry it);
//   - every form carries HMAC-SHA256(key, seed) in the field csrfField,
//     where key is random per console process;
//   - a POST passes only when the field matches the cookie's seed under
//     key, and its Origin, when the browser sends one, is the console's
//     own.
//
// Another site can make a browser send the cookie (SameSite aside, in old
// browsers) but cannot read it or the pages, so it cannot compute the field;
// a cookie planted by a sibling host (cookie tossing) fails the HMAC. What
// it does not protect against: script running in the console's own origin,
// which the Content-Security-Policy (no inline script, 'self' only) and
// html/template's escaping are there to prevent. A restart changes key, so
// an open page's forms fail once after it, with a message to reload.

const (
	csrfCookie = "tributary_console_csrf"
	csrfField  = "csrf"
)

type csrf struct {
	key []byte
	// secure marks the cookie Secure (Config.BehindTLSProxy).
	secure bool
}

func newCSRF() (*csrf, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("console: csrf key: %w", err)
	}
	return &csrf{key: k}, nil
}

func (c *csrf) sign(seed string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(seed))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// token is the form token for r's browser, setting its cookie when it has
// none yet.
func (c *csrf) token(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(csrfCookie); err == nil && len(ck.Value) >= 16 {
		return c.sign(ck.Value)
	}
	b := make([]byte, 18)
	rand.Read(b)
	seed := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{
		Name:     csrfCookie,
		Value:    seed,
		Path:     "/",
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
		Secure:   c.secure || r.TLS != nil,
	})
	// The request may render a form before the browser has the cookie:
	// make the token match the seed it is about to get.
	r.AddCookie(&http.Cookie{Name: csrfCookie, Value: seed})
	return c.sign(seed)
}

// check says why r fails the CSRF check, or "" when it passes. r's form
// must be parsed.
func (c *csrf) check(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return fmt.Sprintf("the request comes from another origin (%s)", o)
		}
	}
	ck, err := r.Cookie(csrfCookie)
	if err != nil || ck.Value == "" {
		return "no CSRF cookie"
	}
	got := r.PostForm.Get(csrfField)
	if got == "" {
		return "no CSRF token in the form"
	}
	if !hmac.Equal([]byte(got), []byte(c.sign(ck.Value))) {
		return "the CSRF token does not match the cookie"
	}
	return ""
}
