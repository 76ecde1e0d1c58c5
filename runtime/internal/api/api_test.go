package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/openapi"
)

// reply is what the API answered.
type reply struct {
	status int
	header http.Header
	raw    string
	body   map[string]any // when the body is an object
}

// send sends a request to h from loopback; headers are name, value pairs,
// and a body goes as application/json unless they say otherwise.
func send(t *testing.T, h http.Handler, method, target, body string, headers ...string) reply {
	t.Helper()
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.Host = "127.0.0.1:8080"
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	out := reply{status: w.Code, header: w.Header(), raw: w.Body.String()}
	_ = json.Unmarshal(w.Body.Bytes(), &out.body)
	return out
}

// refused fails t unless r is status with an error naming field.
func (r reply) refused(t *testing.T, status int, field string) {
	t.Helper()
	if r.status != status || r.body["error"] == nil || r.body["error"] == "" {
		t.Fatalf("answer %d %s, want %d with an error", r.status, r.raw, status)
	}
	if got, _ := r.body["field"].(string); got != field {
		t.Fatalf("field %q, want %q: %s", got, field, r.raw)
	}
}

func newAPI(f *fakeAdmin, cfg Config) http.Handler { return New(f, cfg) }

func TestSubmit_EnqueuesAndAnswersTheIDWithItsLocation(t *testing.T) {
	f := &fakeAdmin{}
	r := send(t, newAPI(f, Config{}), "POST", "/api/v1/jobs", `{"name": "t", "args": {"n": 1}, "route": "slow", "priority": "low", "delay": "1s"}`)
	if r.status != http.StatusCreated || r.body["id"] != "j1" || r.header.Get("Location") != "/api/v1/jobs/j1" {
		t.Fatalf("answer %d %v %s", r.status, r.header, r.raw)
	}
	want := admin.Submission{Name: "t", Args: json.RawMessage(`{"n": 1}`), Route: "slow", Priority: "low", Delay: "1s"}
	if len(f.subs) != 1 || f.subs[0].Name != want.Name || string(f.subs[0].Args) != string(want.Args) ||
		f.subs[0].Route != want.Route || f.subs[0].Priority != want.Priority || f.subs[0].Delay != want.Delay {
		t.Fatalf("submitted %+v, want %+v", f.subs, want)
	}
}

func TestSubmit_BodyThatIsNotJSONIs415(t *testing.T) {
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		f := &fakeAdmin{}
		r := send(t, newAPI(f, Config{}), "POST", "/api/v1/jobs", `{"name": "t", "args": {}}`, "Content-Type", ct)
		r.refused(t, http.StatusUnsupportedMediaType, "")
		if len(f.subs) != 0 {
			t.Fatalf("%s: submitted %v", ct, f.subs)
		}
	}
}

func TestSubmit_RefusalNamesTheField(t *testing.T) {
	for body, field := range map[string]string{
		`{"name": "t", "args": {}, "prio": "high"}`: "prio",
		`{"Name": "t", "args": {}}`:                 "Name",
		`{"name": 7, "args": {}}`:                   "name",
		`{"args": {}}`:                              "name",
		`{"name": "t", "args": {}, "delay": 5}`:     "delay",
		`[1, 2]`:                                    "",
		`null`:                                      "",
		`{"name": "t"} {"name": "u"}`:               "",
		`{"name": `:                                 "",
	} {
		f := &fakeAdmin{}
		r := send(t, newAPI(f, Config{}), "POST", "/api/v1/jobs", body)
		r.refused(t, http.StatusBadRequest, field)
		if len(f.subs) != 0 {
			t.Fatalf("%s: submitted %v", body, f.subs)
		}
	}
}

func TestSubmit_BodyOverTheLimitIs413(t *testing.T) {
	body := `{"name": "t", "args": "` + strings.Repeat("x", 2000) + `"}`
	send(t, newAPI(&fakeAdmin{}, Config{MaxBody: 1000}), "POST", "/api/v1/jobs", body).refused(t, http.StatusRequestEntityTooLarge, "")
}

func TestSubmitBatch_RefusalListsEveryRefusedJobByIndex(t *testing.T) {
	f := &fakeAdmin{}
	body := `{"jobs": [{"name": "t", "args": {}}, {"nmae": "t", "args": {}}, {"name": "t", "args": {}}, {"name": ["t"], "args": {}}]}`
	r := send(t, newAPI(f, Config{}), "POST", "/api/v1/jobs/batch", body)
	if r.status != http.StatusBadRequest {
		t.Fatalf("answer %d %s", r.status, r.raw)
	}
	var got struct {
		Jobs []admin.BatchRefusal `json:"jobs"`
	}
	_ = json.Unmarshal([]byte(r.raw), &got)
	if len(got.Jobs) != 2 || got.Jobs[0].Index != 1 || got.Jobs[0].Field != "nmae" || got.Jobs[1].Index != 3 || got.Jobs[1].Field != "name" {
		t.Fatalf("refused %+v, want jobs 1 (nmae) and 3 (name): %s", got.Jobs, r.raw)
	}
	if len(f.subs) != 4 || f.subs[0].Name != "t" || f.subs[1].Name != "" {
		t.Fatalf("the admin layer got %+v: want every job, the refused ones zero", f.subs)
	}
}

func TestSubmitBatch_AnswersIDsInOrder(t *testing.T) {
	r := send(t, newAPI(&fakeAdmin{}, Config{}), "POST", "/api/v1/jobs/batch", `{"jobs": [{"name": "t", "args": {}}, {"name": "u", "args": 1}]}`)
	if r.status != http.StatusCreated || r.raw != `{"ids":["ja","jb"]}`+"\n" {
		t.Fatalf("answer %d %s", r.status, r.raw)
	}
}

func TestSubmitBatch_RefusesTheBatchItselfNamingTheField(t *testing.T) {
	jobs := strings.Repeat(`{"name": "t", "args": {}},`, admin.MaxBatch)
	for body, field := range map[string]string{
		`{"jobs": []}`: "jobs",
		`{"jobs": [` + jobs[:len(jobs)-1] + `, {"name": "t", "args": {}}]}`: "jobs",
		`{"jobs": {}}`:            "jobs",
		`{}`:                      "jobs",
		`{"jobs": [], "more": 1}`: "more",
		`[]`:                      "",
	} {
		f := &fakeAdmin{}
		send(t, newAPI(f, Config{MaxBody: 1 << 20}), "POST", "/api/v1/jobs/batch", body).refused(t, http.StatusBadRequest, field)
		if f.subs != nil {
			t.Fatalf("the admin layer was called for %.40s", body)
		}
	}
}

func TestSubmitBatch_ClassOfTheBatchErrorIsTheStatus(t *testing.T) {
	for class, status := range map[admin.Class]int{admin.BadInput: 400, admin.Conflict: 409, admin.Failure: 500} {
		f := &fakeAdmin{batchErr: &admin.BatchError{Class: class, Msg: "no", Jobs: []admin.BatchRefusal{{Index: 0, Field: "args", Error: "x"}}, IDs: []string{"j9"}}}
		r := send(t, newAPI(f, Config{}), "POST", "/api/v1/jobs/batch", `{"jobs": [{"name": "t", "args": {}}]}`)
		if r.status != status || r.raw != `{"error":"no","jobs":[{"index":0,"field":"args","error":"x"}],"ids":["j9"]}`+"\n" {
			t.Fatalf("class %v: answer %d %s, want %d", class, r.status, r.raw, status)
		}
	}
}

func TestErrors_EachClassHasItsStatusAndNamesItsField(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		field  string
		msg    string
	}{
		{admin.ErrJobNotFound, 404, "", "job not found"},
		{fmt.Errorf("%w: route nowhere (known: default)", admin.ErrUnknownRoute), 404, "route", "unknown route: route nowhere (known: default)"},
		{admin.ErrWrongState, 409, "", "job is in the wrong state"},
		{admin.ErrDuplicate, 409, "", "duplicate job"},
		{admin.ErrPayloadTooLarge, 413, "args", "payload too large"},
		{admin.BadQuery("route", "route %q: bad", "x y"), 400, "route", `bad query: route "x y": bad`},
		{admin.ErrUnknownTask, 400, "name", "unknown task"},
		{errors.New("redis: connection refused"), 500, "", "redis: connection refused"},
	} {
		var logged bytes.Buffer
		h := newAPI(&fakeAdmin{err: c.err}, Config{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
		r := send(t, h, "GET", "/api/v1/jobs/j1", "")
		r.refused(t, c.status, c.field)
		if r.body["error"] != c.msg {
			t.Errorf("%v: error %q, want %q", c.err, r.body["error"], c.msg)
		}
		if (c.status == 500) != strings.Contains(logged.String(), "api request failed") {
			t.Errorf("%v: logged %q; a 500 is logged, nothing else", c.err, logged.String())
		}
	}
}

func TestDeadLetterListing_TakesFailedJobsOnly(t *testing.T) {
	f := &fakeAdmin{}
	h := newAPI(f, Config{})
	send(t, h, "GET", "/api/v1/dlq?state=pending", "").refused(t, http.StatusBadRequest, "state")
	for _, state := range []string{"", "failed", "dead"} {
		if r := send(t, h, "GET", "/api/v1/dlq?state="+state+"&task=t&limit=5&order=newest", ""); r.status != 200 {
			t.Fatalf("state %q: answer %d %s", state, r.status, r.raw)
		}
		if want := (admin.JobQuery{State: "dead", Task: "t", Limit: 5, Newest: true}); f.query != want {
			t.Fatalf("state %q: query %+v, want %+v", state, f.query, want)
		}
	}
}

func TestQuery_UnknownOrRepeatedParameterIsRefusedByName(t *testing.T) {
	h := newAPI(&fakeAdmin{}, Config{})
	for target, field := range map[string]string{
		"/api/v1/jobs?nope=1":              "nope",
		"/api/v1/jobs?route=a&route=b":     "route",
		"/api/v1/jobs?limit=0":             "limit",
		"/api/v1/jobs?order=sideways":      "order",
		"/api/v1/stats?window=2h":          "window",
		"/api/v1/jobs/j1/result?wait=10m":  "wait",
		"/api/v1/jobs/j1/result?wait=soon": "wait",
	} {
		send(t, h, "GET", target, "").refused(t, http.StatusBadRequest, field)
	}
	send(t, h, "DELETE", "/api/v1/dlq?older_than=-1h", "").refused(t, http.StatusBadRequest, "older_than")
	send(t, h, "POST", "/api/v1/jobs?x=1", `{"name":"t","args":{}}`).refused(t, http.StatusBadRequest, "x")
}

func TestResult_AcceptedUntilTheJobFinishes(t *testing.T) {
	for status, want := range map[admin.Status]int{"pending": 202, "processing": 202, "completed": 200, "failed": 200} {
		if r := send(t, newAPI(&fakeAdmin{status: status}, Config{}), "GET", "/api/v1/jobs/j1/result?wait=0s", ""); r.status != want {
			t.Errorf("%s: answer %d, want %d", status, r.status, want)
		}
	}
}

func TestReadOnly_RefusesEveryActionAndServesEveryRead(t *testing.T) {
	h := newAPI(&fakeAdmin{status: "completed"}, Config{ReadOnly: true})
	for _, e := range endpoints {
		r := send(t, h, e.Method, target(e), body(e))
		if e.Action != (r.status == http.StatusForbidden) {
			t.Errorf("%s (action %v): answer %d %s", e.Pattern(), e.Action, r.status, r.raw)
		}
	}
}

func TestToken_RequiredOnEveryEndpointButTheProbes(t *testing.T) {
	h := newAPI(&fakeAdmin{status: "completed"}, Config{Token: "s3cret"})
	for _, e := range endpoints {
		for _, auth := range []string{"", "Bearer wrong", "Basic s3cret"} {
			r := send(t, h, e.Method, target(e), body(e), "Authorization", auth)
			if e.Public {
				if r.status != http.StatusOK {
					t.Errorf("%s without the token: answer %d, want 200", e.Pattern(), r.status)
				}
				continue
			}
			r.refused(t, http.StatusUnauthorized, "")
			if r.header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s: a 401 without WWW-Authenticate", e.Pattern())
			}
		}
		if r := send(t, h, e.Method, target(e), body(e), "Authorization", "Bearer s3cret"); r.status >= 400 {
			t.Errorf("%s with the token: answer %d %s", e.Pattern(), r.status, r.raw)
		}
	}
}

func TestNoToken_AnswersLoopbackHostsOnly(t *testing.T) {
	h := newAPI(&fakeAdmin{}, Config{})
	r := httptest.NewRequest("GET", "/api/v1/tasks", nil)
	r.Host = "attacker.example:8080"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusMisdirectedRequest {
		t.Fatalf("answer %d to Host %s", w.Code, r.Host)
	}
}

func TestProbes_ReadinessFollowsTheAdminLayer(t *testing.T) {
	f := &fakeAdmin{readyErr: errors.New("redis down")}
	h := newAPI(f, Config{})
	if r := send(t, h, "GET", "/healthz", ""); r.status != 503 || r.raw != `{"status":"unavailable"}`+"\n" {
		t.Fatalf("healthz while Redis is down: %d %s", r.status, r.raw)
	}
	if r := send(t, h, "GET", "/livez", ""); r.status != 200 || r.raw != `{"status":"ok"}`+"\n" {
		t.Fatalf("livez: %d %s", r.status, r.raw)
	}
}

func TestEveryRoute_Answers(t *testing.T) {
	h := newAPI(&fakeAdmin{status: "completed"}, Config{})
	for _, e := range endpoints {
		r := send(t, h, e.Method, target(e), body(e))
		if r.status == http.StatusNotFound || r.status == http.StatusMethodNotAllowed || r.status >= 500 {
			t.Errorf("%s: answer %d %s", e.Pattern(), r.status, r.raw)
		}
		if want := e.Responses[0].Status; r.status != want {
			t.Errorf("%s: answer %d, want its first declared %d: %s", e.Pattern(), r.status, want, r.raw)
		}
	}
}

func TestAnswers_AreTheWrittenShapes(t *testing.T) {
	h := newAPI(&fakeAdmin{}, Config{})
	for target, want := range map[string]string{
		"POST /api/v1/routes/r/pause":  `{"paused":true,"route":"r"}`,
		"POST /api/v1/routes/r/resume": `{"paused":false,"route":"r"}`,
		"DELETE /api/v1/jobs/j1":       `{"deleted":"j1"}`,
		"POST /api/v1/dlq/j1/replay":   `{"replayed":"j1"}`,
		"POST /api/v1/dlq/replay":      `{"replayed":2}`,
		"DELETE /api/v1/dlq":           `{"purged":3}`,
		"POST /api/v1/jobs/j1/cancel":  `{"id":"j1","status":"canceled"}`,
		"POST /api/v1/cron/c/run":      `{"id":"j2"}`,
		"GET /api/v1/queues":           `[]`,
		"GET /api/v1/cron":             `[]`,
		"GET /api/v1/workers":          `[]`,
		"GET /api/v1/jobs":             `{"jobs":[],"next":""}`,
	} {
		method, path, _ := strings.Cut(target, " ")
		if r := send(t, h, method, path, ""); r.raw != want+"\n" {
			t.Errorf("%s: %d %s, want %s", target, r.status, r.raw, want)
		}
	}
}

// Each route is declared once: every entry of the table is an operation of
// the OpenAPI document and a route of the mux, and the mux serves nothing
// else but /metrics and the extra routes.
func TestEndpoints_EachIsOneOperationOfTheDocumentAndOneRouteOfTheMux(t *testing.T) {
	raw, err := openapi.Document(nil, openapi.Options{Endpoints: Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	operations := 0
	for _, item := range doc.Paths {
		operations += len(item)
	}
	if operations != len(endpoints) {
		t.Errorf("the document has %d operations, the table %d entries", operations, len(endpoints))
	}
	extra := http.NotFoundHandler()
	s := New(&fakeAdmin{}, Config{Metrics: extra, Extra: map[string]http.Handler{"GET /{$}": extra}}).(*server)
	var patterns []string
	for _, e := range endpoints {
		if doc.Paths[e.Path][strings.ToLower(e.Method)] == nil {
			t.Errorf("%s is not in the document", e.Pattern())
		}
		patterns = append(patterns, e.Pattern())
		r := httptest.NewRequest(e.Method, target(e), nil)
		if _, got := s.mux.Handler(r); got != e.Pattern() {
			t.Errorf("%s: the mux routes %s to %q", e.Pattern(), target(e), got)
		}
	}
	for _, p := range s.patterns {
		if !slices.Contains(patterns, p) && p != "GET /metrics" && p != "GET /{$}" {
			t.Errorf("the mux serves %s, which the table does not declare", p)
		}
	}
}

// target is a request target of e: its path with each parameter filled in.
func target(e endpoint) string {
	path := e.Path
	for _, p := range e.PathParams {
		path = strings.ReplaceAll(path, "{"+p.Name+"}", "x"+p.Name)
	}
	return path
}

// body is a valid body for e.
func body(e endpoint) string {
	switch e.Body {
	case openapi.OneSubmission:
		return `{"name": "t", "args": {}}`
	case openapi.Submissions:
		return `{"jobs": [{"name": "t", "args": {}}]}`
	case openapi.ShardCount:
		return `{"shards": 4}`
	case openapi.RouteLimits:
		return `{"max_running": 4, "rate": null}`
	case openapi.WorkflowSteps:
		return `{"steps": [{"id": "a", "name": "t", "args": {}}, {"id": "b", "name": "t", "after": ["a"]}]}`
	case openapi.ScheduleDef:
		return `{"name": "t", "args": {}, "cron": "@every 1s"}`
	case openapi.SignalPayload:
		return `{"by": "ana"}`
	case openapi.TimeRange:
		return `{"from": "2026-11-26T22:00:00Z", "to": "2026-11-26T23:00:00Z"}`
	}
	return ""
}

// A limits body hands the admin layer each field given, null as "" (remove
// it), and leaves out what was left out.
func TestSetLimits_NullRemovesAndOmittedStays(t *testing.T) {
	f := &fakeAdmin{}
	h := newAPI(f, Config{})
	if r := send(t, h, "PUT", "/api/v1/routes/r/limits", `{"max_running": 12, "rate": null}`); r.status != 200 {
		t.Fatalf("PUT: %d %s", r.status, r.raw)
	}
	p := f.patch
	if f.route != "r" || p.MaxRunning == nil || *p.MaxRunning != "12" || p.Rate == nil || *p.Rate != "" || p.Burst != nil {
		t.Fatalf("patch %+v for route %q, want max_running 12, rate removed, burst left", p, f.route)
	}
	for body, field := range map[string]string{`{"burst": "5"}`: "burst", `{"rate": ""}`: "rate", `{"x": 1}`: "x", `[]`: ""} {
		if r := send(t, h, "PUT", "/api/v1/routes/r/limits", body); r.status != 400 || !strings.Contains(r.raw, `"field":"`+field+`"`) && field != "" {
			t.Errorf("PUT %s: %d %s, want a 400 naming %q", body, r.status, r.raw, field)
		}
	}
}

func TestDeadLetterActions_TakeARouteAndATask(t *testing.T) {
	f := &fakeAdmin{}
	h := newAPI(f, Config{})
	if r := send(t, h, "DELETE", "/api/v1/dlq?route=mail&task=t&older_than=1h", ""); r.status != 200 || r.body["purged"] != 3.0 || f.route != "mail" || f.task != "t" || f.older != time.Hour {
		t.Fatalf("purge: answer %d %s, admin got route %q task %q older %v", r.status, r.raw, f.route, f.task, f.older)
	}
	if r := send(t, h, "POST", "/api/v1/dlq/replay?route=reports", ""); r.status != 200 || r.body["replayed"] != 2.0 || f.route != "reports" || f.task != "" {
		t.Fatalf("replay: answer %d %s, admin got route %q task %q", r.status, r.raw, f.route, f.task)
	}
}

func TestRunJobNow_AnswersTheJobOrTheRefusal(t *testing.T) {
	f := &fakeAdmin{}
	h := newAPI(f, Config{})
	if r := send(t, h, "POST", "/api/v1/jobs/j1/run", ""); r.status != 200 || r.body["run"] != "j1" {
		t.Fatalf("run: answer %d %s", r.status, r.raw)
	}
	f.err = fmt.Errorf("%w: cannot run job j1: it is failed", admin.ErrWrongState)
	if r := send(t, h, "POST", "/api/v1/jobs/j1/run", ""); r.status != http.StatusConflict || !strings.Contains(r.raw, "it is failed") {
		t.Fatalf("run of a failed job: answer %d %s; want 409 naming its state", r.status, r.raw)
	}
	if r := send(t, newAPI(f, Config{ReadOnly: true}), "POST", "/api/v1/jobs/j1/run", ""); r.status != http.StatusForbidden {
		t.Fatalf("run in read-only mode: answer %d %s; want 403", r.status, r.raw)
	}
}
