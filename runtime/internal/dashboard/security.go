package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The two cookies; see the package doc for what each holds and why.
const (
	csrfCookie    = "bananas_csrf"
	sessionCookie = "bananas_session"
)

// sessionLifetime is how long a login lasts: the session cookie says until
// when, signed, so a copy of it opens nothing after that.
const sessionLifetime = 12 * time.Hour

// keys holds the per-process secret, the token's digest, the sessions ended
// by a logout and the login attempts of each client.
type keys struct {
	secret   []byte
	tokenSum []byte // nil: no token, no login
	ended    *endedSessions
	logins   *loginLimiter
}

func newKeys(token string) keys {
	k := keys{secret: make([]byte, 32), ended: &endedSessions{byNonce: map[string]time.Time{}}, logins: newLoginLimiter()}
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

// strictCookie is a cookie scripts cannot read and other sites' requests do
// not carry; Secure when r came over TLS (here, or to a proxy that says so),
// so the browser never sends it over plain HTTP.
func strictCookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	secure := r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
	return &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}
}

// csrfToken is the form token of r's nonce cookie, setting the cookie first
// when r has none.
func (k keys) csrfToken(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(csrfCookie)
	if err != nil || c.Value == "" {
		n := nonce()
		http.SetCookie(w, strictCookie(r, csrfCookie, n, 0))
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
// else when it carries a session cookie this process signed, not expired and
// not ended by a logout.
func (k keys) loggedIn(r *http.Request) bool {
	if k.tokenSum == nil {
		return true
	}
	n, _, ok := k.session(r)
	return ok && !k.ended.has(n)
}

// session is the nonce and expiry of r's session cookie; ok is false when r
// has none that this process signed and that is still within its lifetime.
func (k keys) session(r *http.Request) (nonce string, until time.Time, ok bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", time.Time{}, false
	}
	body, sig, ok := strings.Cut(c.Value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(k.mac("session", body))) {
		return "", time.Time{}, false
	}
	n, exp, ok := strings.Cut(body, "~")
	secs, err := strconv.ParseInt(exp, 10, 64)
	if !ok || err != nil {
		return "", time.Time{}, false
	}
	until = time.Unix(secs, 0)
	return n, until, time.Now().Before(until)
}

// newSession is the cookie of a new login: a nonce and its expiry, signed.
func (k keys) newSession(r *http.Request) *http.Cookie {
	body := nonce() + "~" + strconv.FormatInt(time.Now().Add(sessionLifetime).Unix(), 10)
	return strictCookie(r, sessionCookie, body+"."+k.mac("session", body), 0) // gone with the browser's session, if that ends first
}

// endSession makes r's session open nothing from now on, whoever holds a
// copy of its cookie.
func (k keys) endSession(r *http.Request) {
	if n, until, ok := k.session(r); ok {
		k.ended.add(n, until)
	}
}

// endedSessions are the sessions logged out before their expiry. Only a
// valid session can be ended, so the set grows with logouts of people who
// had the token, and each entry goes when its session would have expired.
type endedSessions struct {
	mu      sync.Mutex
	byNonce map[string]time.Time // nonce -> the session's expiry
}

func (e *endedSessions) add(nonce string, until time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	for n, exp := range e.byNonce {
		if !now.Before(exp) {
			delete(e.byNonce, n)
		}
	}
	e.byNonce[nonce] = until
}

func (e *endedSessions) has(nonce string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.byNonce[nonce]
	return ok
}

// Login attempts: each client address (an IPv6 client by its /64, which one
// host usually holds whole) has loginBurst tries, and earns one more every
// loginRefill. Guessing a token at that pace is hopeless, and an operator
// who mistypes it a few times does not notice.
const (
	loginBurst   = 10
	loginRefill  = 6 * time.Second
	loginClients = 10000 // clients tracked at most; past that, the overflow shares one budget
)

type loginLimiter struct {
	mu      sync.Mutex
	buckets map[string]*loginBucket
}

type loginBucket struct {
	tries float64
	at    time.Time
}

func newLoginLimiter() *loginLimiter { return &loginLimiter{buckets: map[string]*loginBucket{}} }

// allow takes one try of r's client, or says how long until it has one.
func (l *loginLimiter) allow(r *http.Request) (ok bool, retryAfter time.Duration) {
	key := clientKey(r)
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= loginClients {
			l.prune(now)
		}
		if len(l.buckets) >= loginClients {
			key = "overflow"
			b = l.buckets[key]
		}
	}
	if b == nil {
		b = &loginBucket{tries: loginBurst, at: now}
		l.buckets[key] = b
	}
	b.tries = min(loginBurst, b.tries+float64(now.Sub(b.at))/float64(loginRefill))
	b.at = now
	if b.tries < 1 {
		return false, time.Duration((1 - b.tries) * float64(loginRefill))
	}
	b.tries--
	return true, 0
}

// prune drops the clients whose budget is whole again: they are as if new.
func (l *loginLimiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if b.tries+float64(now.Sub(b.at))/float64(loginRefill) >= loginBurst {
			delete(l.buckets, k)
		}
	}
}

// clientKey is the address r came from: the peer of the connection, not a
// header the client could write itself.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String()
	}
	return ip.String()
}

// tokenMatches compares a token given at the login form with the configured
// one in constant time (of digests, so the length leaks nothing either).
func (k keys) tokenMatches(given string) bool {
	sum := sha256.Sum256([]byte(strings.TrimSpace(given)))
	return subtle.ConstantTimeCompare(sum[:], k.tokenSum) == 1
}
