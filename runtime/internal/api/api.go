package api

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/access"
	"github.com/bananas-go/bananas/runtime/internal/openapi"
)

// Config is how the server behaves.
type Config struct {
	// Token, when set, is required as "Authorization: Bearer <token>" on every
	// /api call and on /metrics. Without it the server answers loopback Host
	// names only (127.0.0.1, localhost, [::1]): a name that resolves to
	// 127.0.0.1 under an attacker's control (DNS rebinding) is refused.
	Token string
	// Tokens are more tokens, each with its name and role (API_TOKENS):
	// a call beyond its token's role is a 403 naming the role needed.
	// Token, when set too, is one more, named admin, of the admin role.
	Tokens []access.Token
	// ReadOnly refuses every action (403); reads are served.
	ReadOnly bool
	// MaxBody is the largest request body accepted, in bytes (413 above it).
	MaxBody int64
	// Metrics serves GET /metrics when set: without the token, unless
	// MetricsNeedToken.
	Metrics http.Handler
	// MetricsNeedToken puts GET /metrics behind the token too, when there is
	// one (the metrics are then read elsewhere, or by a scraper that holds it).
	MetricsNeedToken bool
	// Extra routes (the dashboard) mounted on the same mux: pattern -> handler.
	Extra  map[string]http.Handler
	Logger *slog.Logger
	// Redis is the address of the Redis the admin layer reads (no
	// credentials), named by the 503 answered while it does not answer.
	Redis string
}

// MaxResultWait caps ?wait= of GET /api/v1/jobs/{id}/result.
const MaxResultWait = 5 * time.Minute

// New returns the API's handler.
func New(a admin.Admin, cfg Config) http.Handler {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 2 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &server{a: a, cfg: cfg, mux: http.NewServeMux(), tokens: access.NewSet(cfg.Token, cfg.Tokens)}
	s.routes()
	return s
}

type server struct {
	a        admin.Admin
	cfg      Config
	mux      *http.ServeMux
	patterns []string    // what mux serves
	tokens   *access.Set // empty: no token asked for
}

// routes mounts the endpoints, then /metrics and the extra routes.
func (s *server) routes() {
	for _, e := range endpoints {
		s.handle(e.Pattern(), s.endpoint(e))
	}
	if s.cfg.Metrics != nil {
		// Scrapers carry no token by default; an operator who serves the
		// metrics on a listener of their own (METRICS_PORT) closes this one.
		metrics := s.cfg.Metrics
		if s.cfg.MetricsNeedToken {
			metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, err := s.authorize(r); err != nil {
					w.Header().Set("WWW-Authenticate", `Bearer realm="bananas"`)
					s.fail(w, r, err)
					return
				}
				s.cfg.Metrics.ServeHTTP(w, r)
			})
		}
		s.handle("GET /metrics", metrics)
	}
	for pattern, h := range s.cfg.Extra {
		s.handle(pattern, h)
	}
}

// handle mounts h on pattern, and keeps the pattern: what the mux serves is
// the table, /metrics and the extra routes, nothing else.
func (s *server) handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
	s.patterns = append(s.patterns, pattern)
}

// ServeHTTP routes r, answering what the mux cannot route (an unknown path, a
// method the path does not take) with the JSON error shape, and turning a
// panic anywhere below into a logged 500. Before any of that it refuses what
// a web page of another origin sent, and, without a token, a Host that is not
// a loopback name: the API and the dashboard act on what they are sent, and a
// page the operator happens to open must not be able to send it.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer s.discardBody(r, r.Body)
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.cfg.Logger.Error("bananas: api handler panicked", "method", r.Method, "path", r.URL.Path, "panic", v)
			_ = writeJSON(w, http.StatusInternalServerError, errorBody{Error: "internal error"})
		}
	}()
	if s.tokens.Empty() && !loopbackHost(r.Host) {
		_ = writeJSON(w, http.StatusMisdirectedRequest, errorBody{Error: fmt.Sprintf(
			"Host %q is not a loopback name: without API_TOKEN the server answers 127.0.0.1, localhost and [::1] only", r.Host)})
		return
	}
	if why := crossOrigin(r); why != "" {
		_ = writeJSON(w, http.StatusForbidden, errorBody{Error: "refused: the request comes from a web page of another origin (" + why + ")"})
		return
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		rec := &statusRecorder{header: http.Header{}}
		s.mux.ServeHTTP(rec, r)
		if allow := rec.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		status := rec.status
		msg := fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)
		if status == http.StatusMethodNotAllowed {
			msg = fmt.Sprintf("%s does not take %s (allowed: %s)", r.URL.Path, r.Method, rec.header.Get("Allow"))
		} else if status < 400 {
			status = http.StatusNotFound // a redirect of a cleaned path: not an API answer
		}
		_ = writeJSON(w, status, errorBody{Error: msg})
		return
	}
	s.mux.ServeHTTP(w, r)
}

// discardBody reads what is left of body (the request's own, whatever a
// handler wrapped it in) once the answer is written, up to the body limit.
// The server closes a connection the client asked to close without reading
// the rest, and a close with unread bytes is a reset that can destroy the
// answer before the client reads it: a 401 or 404 to a request the server
// never had to read must still arrive. Past the limit the connection is
// closed anyway (a 413 may be lost; the client sent more than it may).
func (s *server) discardBody(r *http.Request, body io.ReadCloser) {
	if body == nil || body == http.NoBody || r.ContentLength > s.cfg.MaxBody {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(body, s.cfg.MaxBody))
}

// loopbackHost reports whether host (a Host header) names the loopback
// interface: 127.0.0.1, localhost or [::1], with or without a port.
func loopbackHost(host string) bool {
	name := host
	if h, port, err := net.SplitHostPort(host); err == nil {
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return false
		}
		name = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		name = host[1 : len(host)-1]
	} else if strings.Contains(host, ":") {
		return false // an IPv6 address without brackets, or a bad port
	}
	switch strings.ToLower(name) {
	case "127.0.0.1", "localhost":
		return true
	case "::1":
		return strings.HasPrefix(host, "[")
	}
	return false
}

// crossOrigin says why r was sent by a web page of another origin, or "" when
// it was not: the browser says so in Sec-Fetch-Site (all current browsers),
// else in an Origin that is not the server's own (older ones). A request
// that carries neither comes from no browser (curl, the CLI, Prometheus).
// A top-level GET navigation (a link followed from another site) goes
// through: the page that linked can neither read the answer nor act.
func crossOrigin(r *http.Request) string {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "same-origin", "none":
		return ""
	case "":
	default:
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.Header.Get("Sec-Fetch-Mode") == "navigate" {
			return ""
		}
		return "Sec-Fetch-Site: " + site
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return ""
	}
	return "Origin: " + origin
}

// jsonBody refuses a body that is not declared application/json: what a
// browser sends without asking the server first (a form, a no-cors fetch)
// is text/plain, form or multipart, so this keeps such requests from acting.
func jsonBody(r *http.Request) error {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	if ct == "" {
		return &Error{Status: http.StatusUnsupportedMediaType, Msg: "the request has a body but no Content-Type: send it as application/json"}
	}
	return &Error{Status: http.StatusUnsupportedMediaType, Msg: fmt.Sprintf("Content-Type %q: a request body must be application/json", ct)}
}

// endpoint serves e: the token check, read-only mode, the query parameters
// it takes, the body's type and limit, and the error answer.
func (s *server) endpoint(e endpoint) http.Handler {
	params := make([]string, len(e.Query))
	for i, p := range e.Query {
		params[i] = p.Name
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.Public { // a probe: it reads nothing and needs no token
			if err := e.serve(s, w, r); err != nil {
				s.fail(w, r, err)
			}
			return
		}
		who, err := s.admit(r, e.Endpoint)
		if err != nil {
			if ae, ok := err.(*Error); ok && ae.Status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="bananas"`)
			}
			if ae, ok := err.(*Error); ok && ae.Role != "" {
				admin.Denied(r.Context(), s.a, who.Name, "api", e.ID, auditTarget(r, e.Endpoint), ae.Msg)
			}
			s.fail(w, r, err)
			return
		}
		if err := onlyParams(r, params...); err != nil {
			s.fail(w, r, err)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
		serving := s
		if e.Action {
			// Each action the endpoint takes is recorded in the audit log
			// as taken by the token's name.
			as := *s
			as.a = admin.Audited(s.a, who.Name, "api")
			serving = &as
		}
		if err := e.serve(serving, w, r); err != nil {
			s.fail(w, r, err)
		}
	})
}

// admit refuses r before its endpoint e reads it: without a token it
// takes, beyond its token's role, an action in read-only mode, a body that
// is not JSON.
func (s *server) admit(r *http.Request, e openapi.Endpoint) (access.Token, error) {
	who, err := s.authorize(r)
	if err != nil {
		return who, err
	}
	if need := e.Needs(); !who.Role.Allows(need) {
		return who, &Error{Status: http.StatusForbidden, Role: need, Msg: fmt.Sprintf(
			"%s needs the %s role: the token %q has the %s role", e.Pattern(), need, who.Name, who.Role)}
	}
	if e.Action && s.cfg.ReadOnly {
		return who, &Error{Status: http.StatusForbidden, Msg: "the API is read-only (API_READ_ONLY): actions are refused"}
	}
	return who, jsonBody(r)
}

// auditTarget is what request r to e acts on, for the audit log: its path
// values, else its route and task query parameters.
func auditTarget(r *http.Request, e openapi.Endpoint) string {
	var parts []string
	for _, p := range e.PathParams {
		parts = append(parts, r.PathValue(p.Name))
	}
	if len(parts) == 0 {
		for _, k := range []string{"route", "task"} {
			if v := r.URL.Query().Get(k); v != "" {
				parts = append(parts, k+"="+v)
			}
		}
	}
	return strings.Join(parts, " ")
}

// Anonymous is who calls a server that asks for no token (it answers
// loopback only): the admin role.
var Anonymous = access.Token{Name: "anonymous", Role: access.Admin}

// authorize is the token r presents, compared in constant time with every
// token the server takes; Anonymous when it takes none.
func (s *server) authorize(r *http.Request) (access.Token, error) {
	if s.tokens.Empty() {
		return Anonymous, nil
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return access.Token{}, &Error{Status: http.StatusUnauthorized, Msg: "missing Authorization: Bearer token (API_TOKEN or API_TOKENS is set)"}
	}
	who, ok := s.tokens.Match(got)
	if !ok {
		return access.Token{}, &Error{Status: http.StatusUnauthorized, Msg: "wrong bearer token"}
	}
	return who, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
	return nil
}

// statusRecorder keeps what the mux answers for a request it cannot route.
type statusRecorder struct {
	header http.Header
	status int
}

func (s *statusRecorder) Header() http.Header         { return s.header }
func (s *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusRecorder) WriteHeader(status int)      { s.status = status }
