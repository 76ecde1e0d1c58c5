package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
)

// The two cookies; see the package doc for what each holds and why.
const (
	csrfCookie    = "bananas_csrf"
	sessionCookie = "bananas_session"
)

// keys holds the per-process secret and the token's digest.
type keys struct {
	secret   []byte
	tokenSum []byte // nil: no token, no login
}

func newKeys(token string) keys {
	k := keys{secret: make([]byte, 32)}
	if _, err := rand.Read(k.secret); err != nil {
		panic("dashboard: no randomness for the session secret: " + err.Error())
	}
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		k.tokenSum = sum[:]
	}
	return k
}

func (k keys) mac(purpose, nonce string) string {
	h := hmac.New(sha256.New, k.secret)
	h.Write([]byte(purpose + "\x00" + nonce))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

func nonce() string {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		panic("dashboard: no randomness for a nonce: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func strictCookie(name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true, SameSite: http.SameSiteStrictMode}
}

// csrfToken is the form token of r's nonce cookie, setting the cookie first
// when r has none.
func (k keys) csrfToken(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(csrfCookie)
	if err != nil || c.Value == "" {
		n := nonce()
		http.SetCookie(w, strictCookie(csrfCookie, n, 0))
		return k.mac("csrf", n)
	}
	return k.mac("csrf", c.Value)
}

// checkCSRF reports whether the form of POST r carries the token of its
// nonce cookie.
func (k keys) checkCSRF(r *http.Request) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || c.Value == "" {
		return false
	}
	return hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(k.mac("csrf", c.Value)))
}

// loggedIn reports whether r may see the dashboard: always without a token,
// else when it carries a session cookie this process signed.
func (k keys) loggedIn(r *http.Request) bool {
	if k.tokenSum == nil {
		return true
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return false
	}
	n, sig, ok := strings.Cut(c.Value, ".")
	return ok && hmac.Equal([]byte(sig), []byte(k.mac("session", n)))
}

// tokenMatches compares a token given at the login form with the configured
// one in constant time (of digests, so the length leaks nothing either).
func (k keys) tokenMatches(given string) bool {
	sum := sha256.Sum256([]byte(strings.TrimSpace(given)))
	return subtle.ConstantTimeCompare(sum[:], k.tokenSum) == 1
}

func (k keys) session() *http.Cookie {
	n := nonce()
	return strictCookie(sessionCookie, n+"."+k.mac("session", n), 0)
}
