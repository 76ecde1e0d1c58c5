package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
)

// The bodies of the answers that are not the admin layer's views. Keys are
// in the order encoding/json writes a map's.
type (
	// submitted is the answer to a submission, or to a run of a cron entry.
	submitted struct {
		ID string `json:"id"`
		// Warning is present when the job's route is paused, or no live
		// worker takes it: the job waits until the route is resumed, or
		// until a worker takes it.
		Warning string `json:"warning,omitempty"`
		// Debounced is true when the submission debounced the waiting job
		// holding its unique key (debounce): that job, whose id this is,
		// took its args and due time (200, not 201).
		Debounced bool `json:"debounced,omitempty"`
	}
	batchCreated struct {
		IDs []string `json:"ids"` // in the order of the batch's jobs
	}
	deleted struct {
		Deleted string `json:"deleted"`
	}
	paused struct {
		Paused bool   `json:"paused"`
		Route  string `json:"route"`
	}
	replayed struct {
		Replayed string `json:"replayed"`
	}
	replayedCount struct {
		Replayed int `json:"replayed"`
	}
	purged struct {
		Purged int `json:"purged"`
	}
	probeStatus struct {
		Status string `json:"status"` // ok or unavailable
	}
)

func (s *server) jobs(w http.ResponseWriter, r *http.Request) error {
	q, err := jobQuery(r)
	if err != nil {
		return err
	}
	return answer(w, http.StatusOK)(s.a.Jobs(r.Context(), q))
}

// dead lists the dead-letter queue: failed jobs, whatever the state asked.
func (s *server) dead(w http.ResponseWriter, r *http.Request) error {
	q, err := jobQuery(r)
	if err != nil {
		return err
	}
	if q.State != "" && q.State != admin.Status("failed") && q.State != "dead" {
		return BadRequest("state", "state %q: the dead-letter queue holds failed jobs only", q.State)
	}
	q.State = "dead"
	return answer(w, http.StatusOK)(s.a.Jobs(r.Context(), q))
}

func (s *server) job(w http.ResponseWriter, r *http.Request) error {
	return answer(w, http.StatusOK)(s.a.Job(r.Context(), r.PathValue("id")))
}

// result answers 200 with a finished job, 202 with one still to finish.
func (s *server) result(w http.ResponseWriter, r *http.Request) error {
	var wait time.Duration
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > MaxResultWait {
			return BadRequest("wait", "wait %q: want a duration from 0 to %s, such as 30s", v, MaxResultWait)
		}
		wait = d
	}
	job, err := s.a.Result(r.Context(), r.PathValue("id"), wait)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if !job.Status.Finished() {
		status = http.StatusAccepted // still running: ask again
	}
	return writeJSON(w, status, job)
}

func (s *server) cancel(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	status, err := s.a.Cancel(r.Context(), id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, admin.Canceled{ID: id, Status: status})
}

func (s *server) delete(w http.ResponseWriter, r *http.Request) error {
	if err := s.a.Delete(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, deleted{Deleted: r.PathValue("id")})
}

func (s *server) tasks(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, s.a.Tasks())
}

func (s *server) queues(w http.ResponseWriter, r *http.Request) error {
	return answer(w, http.StatusOK)(array(s.a.Routes(r.Context())))
}

func (s *server) pause(w http.ResponseWriter, r *http.Request) error {
	if err := s.a.Pause(r.Context(), r.PathValue("route")); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, paused{Route: r.PathValue("route"), Paused: true})
}

func (s *server) resume(w http.ResponseWriter, r *http.Request) error {
	if err := s.a.Resume(r.Context(), r.PathValue("route")); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, paused{Route: r.PathValue("route"), Paused: false})
}

func (s *server) replay(w http.ResponseWriter, r *http.Request) error {
	if err := s.a.Replay(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, replayed{Replayed: r.PathValue("id")})
}

func (s *server) replayDead(w http.ResponseWriter, r *http.Request) error {
	n, err := s.a.ReplayDead(r.Context(), r.URL.Query().Get("route"), r.URL.Query().Get("task"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, replayedCount{Replayed: n})
}

func (s *server) purgeDead(w http.ResponseWriter, r *http.Request) error {
	var older time.Duration
	if v := r.URL.Query().Get("older_than"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return BadRequest("older_than", "older_than %q: want a duration such as 24h", v)
		}
		older = d
	}
	n, err := s.a.PurgeDead(r.Context(), r.URL.Query().Get("route"), r.URL.Query().Get("task"), older)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, purged{Purged: n})
}

func (s *server) cron(w http.ResponseWriter, r *http.Request) error {
	return answer(w, http.StatusOK)(array(s.a.Cron(r.Context())))
}

// runCron enqueues one job of a cron entry: 201 {"id"}, like a submission.
func (s *server) runCron(w http.ResponseWriter, r *http.Request) error {
	id, err := s.a.RunCron(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/jobs/"+id)
	return writeJSON(w, http.StatusCreated, submitted{ID: id})
}

func (s *server) workers(w http.ResponseWriter, r *http.Request) error {
	return answer(w, http.StatusOK)(array(s.a.Workers(r.Context())))
}

func (s *server) stats(w http.ResponseWriter, r *http.Request) error {
	window := time.Hour
	switch v := r.URL.Query().Get("window"); v {
	case "", "1h":
	case "24h":
		window = 24 * time.Hour
	default:
		return BadRequest("window", "window %q: use 1h or 24h", v)
	}
	return answer(w, http.StatusOK)(s.a.Stats(r.Context(), window))
}

func (s *server) openAPI(w http.ResponseWriter, _ *http.Request) error {
	doc, err := s.a.OpenAPI()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(doc)
	return nil
}

// healthz is ready when Redis answers. Redis's error (its address, an ACL
// user) is for the log, not for whoever asks: the probe needs no token.
func (s *server) healthz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.a.Ready(ctx); err != nil {
		s.cfg.Logger.Warn("bananas: readiness probe failed", "path", r.URL.Path, "err", err)
		return writeJSON(w, http.StatusServiceUnavailable, probeStatus{Status: "unavailable"})
	}
	return writeJSON(w, http.StatusOK, probeStatus{Status: "ok"})
}

func (s *server) livez(w http.ResponseWriter, _ *http.Request) error {
	return writeJSON(w, http.StatusOK, probeStatus{Status: "ok"})
}

// limitParam reads a listing's limit parameter into limit, when it is
// given: 1 to 500 a page.
func limitParam(v url.Values, limit *int) error {
	l := v.Get("limit")
	if l == "" {
		return nil
	}
	n, err := strconv.Atoi(l)
	if err != nil || n < 1 || n > 500 {
		return BadRequest("limit", "limit %q: want a number from 1 to 500", l)
	}
	*limit = n
	return nil
}

// jobQuery reads a listing's parameters (the endpoint has refused the
// others).
func jobQuery(r *http.Request) (admin.JobQuery, error) {
	v := r.URL.Query()
	q := admin.JobQuery{Route: v.Get("route"), State: admin.Status(v.Get("state")), Task: v.Get("task"), Text: v.Get("q"), Cursor: v.Get("cursor")}
	if err := limitParam(v, &q.Limit); err != nil {
		return q, err
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

// history serves GET /api/v1/history: a page of the task history.
func (s *server) history(w http.ResponseWriter, r *http.Request) error {
	q, err := historyQuery(r)
	if err != nil {
		return err
	}
	return answer(w, http.StatusOK)(s.a.History(r.Context(), q))
}

// historyQuery reads a search of the task history from r's query; the admin
// layer checks what the values mean (the status, the limit's range).
func historyQuery(r *http.Request) (admin.HistoryQuery, error) {
	v := r.URL.Query()
	q := admin.HistoryQuery{Task: v.Get("task"), Route: v.Get("route"), Status: admin.Status(v.Get("status")), Text: v.Get("q"), Cursor: v.Get("cursor")}
	for _, f := range []struct {
		name string
		to   *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if s := v.Get(f.name); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return q, BadRequest(f.name, "%s %q: want an RFC 3339 time such as 2026-11-26T22:00:00Z", f.name, s)
			}
			*f.to = t
		}
	}
	if err := limitParam(v, &q.Limit); err != nil {
		return q, err
	}
	for k := range v {
		if path, ok := strings.CutPrefix(k, "args."); ok {
			if q.Args == nil {
				q.Args = map[string]string{}
			}
			q.Args[path] = v.Get(k)
		}
	}
	return q, nil
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

// array is xs, [] rather than null when there is none.
func array[T any](xs []T, err error) ([]T, error) {
	return admin.Map(xs, func(x T) T { return x }), err
}

// submit serves POST /api/v1/jobs: one JSON value, read whole; its keys are
// then matched exactly, as a batch's submissions are (parseSubmission):
// encoding/json alone would take "Name" or "ARGS" for name and args, and a
// typo would pass unseen.
func (s *server) submit(w http.ResponseWriter, r *http.Request) error {
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
	id, warning, err := s.a.Submit(r.Context(), sub)
	if errors.Is(err, admin.ErrDebounced) && id != "" {
		return writeJSON(w, http.StatusOK, submitted{ID: id, Debounced: true})
	}
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/jobs/"+id)
	return writeJSON(w, http.StatusCreated, submitted{ID: id, Warning: warning})
}
