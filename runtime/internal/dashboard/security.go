package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bananas-go/bananas/runtime/internal/access"
)

// The two cookies; see the package doc for what each holds and why.
const (
	csrfCookie    = "bananas_csrf"
	sessionCookie = "bananas_session"
)

// sessionLifetime is how long a login lasts: the session cookie says until
// when, signed, so a copy of it opens nothing after that.
const sessionLifetime = 12 * time.Hour

// keys holds the per-process secret, the tokens the login takes, the
// sessions ended by a logout and the login attempts of each client.
type keys struct {
	secret []byte
	tokens *access.Set // empty: no token, no login
	ended  *endedSessions
	logins *loginLimiter
}

func newKeys(tokens *access.Set) keys {
	k := keys{secret: make([]byte, 32), tokens: tokens, ended: &endedSessions{byNonce: map[string]time.Time{}}, logins: newLoginLimiter()}
	if _, err := rand.Read(k.secret); err != nil {
		panic("dashboard: no randomness for the session secret: " + err.Error())
	}
	return k
}

// anonymous is who uses a dashboard that asks for no token (it answers
// loopback only): the admin role.
var anonymous = access.Token{Name: "anonymous", Role: access.Admin}

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

// loggedIn is who r is logged in as, and whether r may see the dashboard:
// always without a token (anonymous), else when it carries a session cookie
// this process signed, not expired, not ended by a logout, of a token the
// process still takes (its role read afresh from the tokens).
func (k keys) loggedIn(r *http.Request) (access.Token, bool) {
	if k.tokens.Empty() {
		return anonymous, true
	}
	n, _, name, ok := k.session(r)
	if !ok || k.ended.has(n) {
		return access.Token{}, false
	}
	return k.tokens.Named(name)
}

// session is the nonce, expiry and token name of r's session cookie; ok is
// false when r has none that this process signed and that is still within
// its lifetime.
func (k keys) session(r *http.Request) (nonce string, until time.Time, name string, ok bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", time.Time{}, "", false
	}
	// The signature is the last part: a token's name may hold a dot.
	i := strings.LastIndexByte(c.Value, '.')
	if i < 0 {
		return "", time.Time{}, "", false
	}
	body, sig := c.Value[:i], c.Value[i+1:]
	if !hmac.Equal([]byte(sig), []byte(k.mac("session", body))) {
		return "", time.Time{}, "", false
	}
	n, rest, ok1 := strings.Cut(body, "~")
	exp, name, ok2 := strings.Cut(rest, "~")
	secs, err := strconv.ParseInt(exp, 10, 64)
	if !ok1 || !ok2 || err != nil {
		return "", time.Time{}, "", false
	}
	until = time.Unix(secs, 0)
	return n, until, name, time.Now().Before(until)
}

// newSession is the cookie of a new login of the token named name: a
// nonce, its expiry and the name, signed.
func (k keys) newSession(r *http.Request, name string) *http.Cookie {
	body := nonce() + "~" + strconv.FormatInt(time.Now().Add(sessionLifetime).Unix(), 10) + "~" + name
	return strictCookie(r, sessionCookie, body+"."+k.mac("session", body), 0) // gone with the browser's session, if that ends first
}

// endSession makes r's session open nothing from now on, whoever holds a
// copy of its cookie.
func (k keys) endSession(r *http.Request) {
	if n, until, _, ok := k.session(r); ok {
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

// tokenMatches is the token given at the login form, compared with every
// token the dashboard takes in constant time (access.Set.Match).
func (k keys) tokenMatches(given string) (access.Token, bool) { return k.tokens.Match(given) }
