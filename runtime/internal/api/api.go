package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Backend answers the API's requests. Every answer is a value that
// encoding/json renders (the CLI's --json shapes); an error that is an
// *Error is sent with its status, any other is a 500 that is logged (a
// failure of the server or of Redis, never of the request).
type Backend interface {
	// Submit enqueues s; warning, when not "", is what the client should
	// know of the job it made (no live worker takes its route).
	Submit(ctx context.Context, s Submission) (id, warning string, err error)
	// SubmitBatch checks every job and enqueues them all, returning their
	// ids in order, or none: refused lists the jobs the API refused already
	// (their Submission is zero), and the backend checks the others all the
	// same, so that a *BatchError names every refused job.
	SubmitBatch(ctx context.Context, jobs []Submission, refused []BatchRefusal) (ids []string, err error)
	Jobs(ctx context.Context, q JobQuery) (any, error)
	Job(ctx context.Context, id string) (any, error)
	// Result waits up to wait for job id to finish; done is false when it
	// has not finished by then.
	Result(ctx context.Context, id string, wait time.Duration) (v any, done bool, err error)
	Cancel(ctx context.Context, id string) (any, error)
	Delete(ctx context.Context, id string) error
	Tasks(ctx context.Context) (any, error)
	Queues(ctx context.Context) (any, error)
	Pause(ctx context.Context, route string) error
	Resume(ctx context.Context, route string) error
	Dead(ctx context.Context, q JobQuery) (any, error)
	Replay(ctx context.Context, id string) error
	ReplayDead(ctx context.Context, task string) (int, error)
	PurgeDead(ctx context.Context, task string, olderThan time.Duration) (int, error)
	Cron(ctx context.Context) (any, error)
	// RunCron enqueues one job of cron entry name now, its schedule left
	// alone, and returns its id.
	RunCron(ctx context.Context, name string) (id string, err error)
	Workers(ctx context.Context) (any, error)
	Stats(ctx context.Context, window time.Duration) (any, error)
	OpenAPI(ctx context.Context) ([]byte, error)
	// Ready reports whether the backend can serve (Redis answers).
	Ready(ctx context.Context) error
}

// Submission is the body of POST /api/v1/jobs.
type Submission struct {
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args"`
	Route    string          `json:"route,omitempty"`
	Priority string          `json:"priority,omitempty"`
	// Delay is a Go duration ("90s", "1h30m"), the wait before the job is due.
	Delay string `json:"delay,omitempty"`
}

// JobQuery is the query of a job listing (GET /api/v1/jobs, GET /api/v1/dlq).
type JobQuery struct {
	Route, State, Task, Text, Cursor string
	Limit                            int
	Newest                           bool
}

// Config is how the server behaves.
type Config struct {
	// Token, when set, is required as "Authorization: Bearer <token>" on every
	// /api call and on /metrics. Without it the server answers loopback Host
	// names only (127.0.0.1, localhost, [::1]): a name that resolves to
	// 127.0.0.1 under an attacker's control (DNS rebinding) is refused.
	Token string
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
}

// MaxResultWait caps ?wait= of GET /api/v1/jobs/{id}/result.
const MaxResultWait = 5 * time.Minute

// New returns the API's handler.
func New(b Backend, cfg Config) http.Handler {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 2 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &server{b: b, cfg: cfg, mux: http.NewServeMux()}
	if cfg.Token != "" {
		sum := sha256.Sum256([]byte(cfg.Token))
		s.tokenSum = sum[:]
	}
	s.routes()
	return s
}

type server struct {
	b        Backend
	cfg      Config
	mux      *http.ServeMux
	tokenSum []byte
}

// handlerFunc is an API endpoint: it writes its own success, or returns the
// error to send.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *server) routes() {
	read := func(pattern string, h handlerFunc) { s.mux.Handle(pattern, s.endpoint(h, false)) }
	act := func(pattern string, h handlerFunc) { s.mux.Handle(pattern, s.endpoint(h, true)) }

	act("POST /api/v1/jobs", s.submit)
	act("POST /api/v1/jobs/batch", s.submitBatch)
	read("GET /api/v1/jobs", func(w http.ResponseWriter, r *http.Request) error {
		q, err := jobQuery(r)
		if err != nil {
			return err
		}
		return answer(w, http.StatusOK)(s.b.Jobs(r.Context(), q))
	})
	read("GET /api/v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) error {
		return answer(w, http.StatusOK)(s.b.Job(r.Context(), r.PathValue("id")))
	})
	read("GET /api/v1/jobs/{id}/result", s.result)
	act("POST /api/v1/jobs/{id}/cancel", func(w http.ResponseWriter, r *http.Request) error {
		return answer(w, http.StatusOK)(s.b.Cancel(r.Context(), r.PathValue("id")))
	})
	act("DELETE /api/v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) error {
		if err := s.b.Delete(r.Context(), r.PathValue("id")); err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, map[string]string{"deleted": r.PathValue("id")})
	})
	read("GET /api/v1/tasks", func(w http.ResponseWriter, r *http.Request) error {
		return answer(w, http.StatusOK)(s.b.Tasks(r.Context()))
	})
	read("GET /api/v1/queues", func(w http.ResponseWriter, r *http.Request) error {
		return answer(w, http.StatusOK)(s.b.Queues(r.Context()))
	})
	act("POST /api/v1/routes/{route}/pause", func(w http.ResponseWriter, r *http.Request) error {
		if err := s.b.Pause(r.Context(), r.PathValue("route")); err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, map[string]any{"route": r.PathValue("route"), "paused": true})
	})
	act("POST /api/v1/routes/{route}/resume", func(w http.ResponseWriter, r *http.Request) error {
		if err := s.b.Resume(r.Context(), r.PathValue("route")); err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, map[string]any{"route": r.PathValue("route"), "paused": false})
	})
	read("GET /api/v1/dlq", func(w http.ResponseWriter, r *http.Request) error {
		q, err := jobQuery(r)
		if err != nil {
			return err
		}
		return answer(w, http.StatusOK)(s.b.Dead(r.Context(), q))
	})
	act("POST /api/v1/dlq/{id}/replay", func(w http.ResponseWriter, r *http.Request) error {
		if err := s.b.Replay(r.Context(), r.PathValue("id")); err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, map[string]string{"replayed": r.PathValue("id")})
	})
	act("POST /api/v1/dlq/replay", func(w http.ResponseWriter, r *http.Request) error {
		if err := onlyParams(r, "task"); err != nil {
			return err
		}
		n, err := s.b.ReplayDead(r.Context(), r.URL.Query().Get("task"))
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, map[string]int{"replayed": n})
	})
	act("DELETE /api/v1/dlq", func(w http.ResponseWriter, r *http.Request) error {
		if err := onlyParams(r, "task", "older_than"); err != nil {
			return err
		}
		var older time.Duration
		if v := r.URL.Query().Get("older_than"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return BadRequest("older_than", "older_than %q: want a duration such as 24h", v)
			}
			older = d
		}
		n, err := s.b.PurgeDead(r.Context(), r.URL.Query().Get("task"), older)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, map[string]int{"purged": n})
	})
	read("GET /api/v1/cron", func(w http.ResponseWriter, r *http.Request) error {
		return answer(w, http.StatusOK)(s.b.Cron(r.Context()))
	})
	act("POST /api/v1/cron/{name}/run", s.runCron)
	read("GET /api/v1/workers", func(w http.ResponseWriter, r *http.Request) error {
		return answer(w, http.StatusOK)(s.b.Workers(r.Context()))
	})
	read("GET /api/v1/stats", func(w http.ResponseWriter, r *http.Request) error {
		if err := onlyParams(r, "window"); err != nil {
			return err
		}
		window := time.Hour
		switch v := r.URL.Query().Get("window"); v {
		case "", "1h":
		case "24h":
			window = 24 * time.Hour
		default:
			return BadRequest("window", "window %q: use 1h or 24h", v)
		}
		return answer(w, http.StatusOK)(s.b.Stats(r.Context(), window))
	})
	read("GET /api/v1/openapi.json", func(w http.ResponseWriter, r *http.Request) error {
		doc, err := s.b.OpenAPI(r.Context())
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
		return nil
	})
	// Liveness needs nothing; readiness needs Redis. Neither needs the token:
	// probes carry none.
	s.mux.Handle("GET /healthz", s.probe(func(r *http.Request) error { return s.b.Ready(r.Context()) }))
	s.mux.Handle("GET /livez", s.probe(func(*http.Request) error { return nil }))
	if s.cfg.Metrics != nil {
		// Scrapers carry no token by default; an operator who serves the
		// metrics on a listener of their own (METRICS_PORT) closes this one.
		metrics := s.cfg.Metrics
		if s.cfg.MetricsNeedToken {
			metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if err := s.authorize(r); err != nil {
					w.Header().Set("WWW-Authenticate", `Bearer realm="bananas"`)
					s.fail(w, r, err)
					return
				}
				s.cfg.Metrics.ServeHTTP(w, r)
			})
		}
		s.mux.Handle("GET /metrics", metrics)
	}
	for pattern, h := range s.cfg.Extra {
		s.mux.Handle(pattern, h)
	}
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
	if s.tokenSum == nil && !loopbackHost(r.Host) {
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

// endpoint wraps h with the token check, read-only mode, the body's type and
// limit, and the error answer.
func (s *server) endpoint(h handlerFunc, action bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.authorize(r); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="bananas"`)
			s.fail(w, r, err)
			return
		}
		if action && s.cfg.ReadOnly {
			s.fail(w, r, &Error{Status: http.StatusForbidden, Msg: "the API is read-only (API_READ_ONLY): actions are refused"})
			return
		}
		if err := jsonBody(r); err != nil {
			s.fail(w, r, err)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
		if err := h(w, r); err != nil {
			s.fail(w, r, err)
		}
	})
}

func (s *server) authorize(r *http.Request) error {
	if s.tokenSum == nil {
		return nil
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return &Error{Status: http.StatusUnauthorized, Msg: "missing Authorization: Bearer token (API_TOKEN is set)"}
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
	if subtle.ConstantTimeCompare(sum[:], s.tokenSum) != 1 {
		return &Error{Status: http.StatusUnauthorized, Msg: "wrong bearer token"}
	}
	return nil
}

func (s *server) probe(check func(*http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := check(r.WithContext(ctx)); err != nil {
			// The probe needs no token: Redis's error (its address, an ACL
			// user) is for the log, not for whoever asks.
			s.cfg.Logger.Warn("bananas: readiness probe failed", "path", r.URL.Path, "err", err)
			_ = writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
			return
		}
		_ = writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}

func (s *server) submit(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	// One JSON value, read whole; its keys are then matched exactly, as a
	// batch's submissions are (parseSubmission): encoding/json alone would
	// take "Name" or "ARGS" for name and args, and a typo would pass unseen.
	var raw json.RawMessage
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&raw); err != nil {
		return bodyError(err)
	}
	if dec.More() {
		return BadRequest("", "the body holds more than one JSON value")
	}
	if string(raw) == "null" {
		return BadRequest("", "the body is null: want a JSON object")
	}
	if raw[0] != '{' {
		return BadRequest("", "the body is JSON %s: want a JSON object", clip(raw))
	}
	sub, bad := parseSubmission(raw)
	if bad != nil {
		return bad
	}
	id, warning, err := s.b.Submit(r.Context(), sub)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/jobs/"+id)
	return writeJSON(w, http.StatusCreated, submitted{ID: id, Warning: warning})
}

// submitted is the answer to a submission.
type submitted struct {
	ID      string `json:"id"`
	Warning string `json:"warning,omitempty"`
}

func (s *server) result(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "wait"); err != nil {
		return err
	}
	var wait time.Duration
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > MaxResultWait {
			return BadRequest("wait", "wait %q: want a duration from 0 to %s, such as 30s", v, MaxResultWait)
		}
		wait = d
	}
	v, done, err := s.b.Result(r.Context(), r.PathValue("id"), wait)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if !done {
		status = http.StatusAccepted // still running: ask again
	}
	return writeJSON(w, status, v)
}

// jobQuery reads the listing parameters, refusing unknown ones by name.
func jobQuery(r *http.Request) (JobQuery, error) {
	if err := onlyParams(r, "route", "state", "task", "q", "cursor", "limit", "order"); err != nil {
		return JobQuery{}, err
	}
	v := r.URL.Query()
	q := JobQuery{Route: v.Get("route"), State: v.Get("state"), Task: v.Get("task"), Text: v.Get("q"), Cursor: v.Get("cursor")}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 500 {
			return q, BadRequest("limit", "limit %q: want a number from 1 to 500", s)
		}
		q.Limit = n
	}
	switch o := v.Get("order"); o {
	case "", "oldest":
	case "newest":
		q.Newest = true
	default:
		return q, BadRequest("order", "order %q: use oldest or newest", o)
	}
	return q, nil
}

// onlyParams refuses a query parameter the endpoint does not take, or one
// given twice: a typo must not be silently ignored.
func onlyParams(r *http.Request, known ...string) error {
	for k, vs := range r.URL.Query() {
		ok := false
		for _, want := range known {
			ok = ok || k == want
		}
		if !ok {
			return BadRequest(k, "unknown query parameter %q (this endpoint takes: %s)", k, orNone(known))
		}
		if len(vs) > 1 {
			return BadRequest(k, "query parameter %q given %d times", k, len(vs))
		}
	}
	return nil
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// bodyError names what is wrong with a JSON body.
func bodyError(err error) error {
	var tooBig *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooBig):
		return &Error{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("the body is over the limit of %d bytes", tooBig.Limit)}
	case errors.Is(err, io.EOF):
		return BadRequest("", "empty body: want a JSON object")
	case errors.As(err, &syntax):
		return BadRequest("", "the body is not JSON: %v (at byte %d)", err, syntax.Offset)
	case errors.As(err, &typ):
		return BadRequest(typ.Field, "field %q: want %s, got JSON %s", typ.Field, typ.Type, typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return BadRequest(field, "unknown field %q (want name, args, route, priority, delay)", field)
	}
	return BadRequest("", "the body is not valid JSON: %v", err)
}

// Error is an answer other than success: a status, a message for people and
// the field (body key or query parameter) it is about, when there is one.
type Error struct {
	Status int
	Msg    string
	Field  string
}

func (e *Error) Error() string { return e.Msg }

// BadRequest is a 400 about field.
func BadRequest(field, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Msg: fmt.Sprintf(format, args...), Field: field}
}

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var e *Error
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &e):
	case errors.As(err, &tooBig):
		e = &Error{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("the body is over the limit of %d bytes", tooBig.Limit)}
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		return // the client left
	default:
		s.cfg.Logger.Error("bananas: api request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		e = &Error{Status: http.StatusInternalServerError, Msg: err.Error()}
	}
	_ = writeJSON(w, e.Status, errorBody{Error: e.Msg, Field: e.Field})
}

// answer writes v with status, or returns err.
func answer(w http.ResponseWriter, status int) func(v any, err error) error {
	return func(v any, err error) error {
		if err != nil {
			return err
		}
		return writeJSON(w, status, v)
	}
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
