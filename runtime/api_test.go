package runtime_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// apiClient talks to an API server under test.
type apiClient struct {
	t     *testing.T
	url   string
	token string
}

func serveAPI(t *testing.T, in *admin.Inspector, o runtime.APIOptions) *apiClient {
	t.Helper()
	srv := httptest.NewServer(runtime.APIHandler(in, o))
	t.Cleanup(srv.Close)
	return &apiClient{t: t, url: srv.URL, token: o.Token}
}

// do sends a request and returns the status and the body decoded as JSON
// (nil when it is not JSON).
func (a *apiClient) do(method, path string, body string) (int, any) {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var v any
	if json.Unmarshal(raw, &v) != nil {
		v = string(raw)
	}
	return resp.StatusCode, v
}

func (a *apiClient) want(status int, method, path, body string) map[string]any {
	a.t.Helper()
	got, v := a.do(method, path, body)
	if got != status {
		a.t.Fatalf("%s %s %s = %d %v; want %d", method, path, body, got, v, status)
	}
	m, _ := v.(map[string]any)
	return m
}

// A job submitted over HTTP with JSON args runs on a worker, and its
// result and details read back as the JSON of their Go types.
func TestAPI_SubmitThenReadTheJobAndItsResult(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		testtasks.Register(w)
		startWorker(t, w)
		a := serveAPI(t, w.Inspector(), runtime.APIOptions{})
		id, _ := a.want(http.StatusCreated, "POST", "/api/v1/jobs", `{"name":"t_echo","args":{"Text":"hi","N":2},"priority":"high"}`)["id"].(string)
		if id == "" {
			t.Fatal("no id in the 201")
		}
		res := a.want(http.StatusOK, "GET", "/api/v1/jobs/"+id+"/result?wait=20s", "")
		if r, _ := res["result"].(map[string]any); r["Text"] != "hi" || res["status"] != "completed" {
			t.Fatalf("result = %v; want completed with {Text: hi}", res)
		}
		job := a.want(http.StatusOK, "GET", "/api/v1/jobs/"+id, "")
		if args, _ := job["args"].(map[string]any); args["Text"] != "hi" || args["N"] != float64(2) || job["priority"] != "high" || job["task"] != "t_echo" {
			t.Fatalf("job = %v", job)
		}
	})
}

// Every kind of bad input is a 4xx whose JSON names what is wrong, and
// nothing is enqueued.
func TestAPI_BadInputIs4xxNamingTheField(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		a := serveAPI(t, runtime.NewInspector(c, testtasks.Register), runtime.APIOptions{})
		big := `{"name":"t_echo","args":{"Text":"` + strings.Repeat("x", 2<<20) + `"}}`
		for _, tc := range []struct {
			method, path, body string
			status             int
			field, says        string
		}{
			{"POST", "/api/v1/jobs", `{"name":"t_echo","args":{"Text":"x"},"prio":"high"}`, 400, "prio", "unknown field"},
			{"POST", "/api/v1/jobs", `{"Name":"t_echo","args":{"Text":"x"}}`, 400, "Name", "unknown field"},
			{"POST", "/api/v1/jobs", `{"name":7,"args":{"Text":"x"}}`, 400, "name", "want a string"},
			{"POST", "/api/v1/jobs", `null`, 400, "", "null"},
			{"POST", "/api/v1/jobs", `[1]`, 400, "", "JSON"},
			{"POST", "/api/v1/jobs", `{"name":"t_echo","args":{"text":"x"}}`, 400, "args", `"text"`},
			{"POST", "/api/v1/jobs", `{"name":"t_echo","args":{"N":"two"}}`, 400, "args", "N"},
			{"POST", "/api/v1/jobs", `{"name":"t_echo","args":null}`, 400, "args", "null"},
			{"POST", "/api/v1/jobs", `{"name":"t_echo"}`, 400, "args", "no args"},
			{"POST", "/api/v1/jobs", ``, 400, "", "empty body"},
			{"POST", "/api/v1/jobs", `{"name":`, 400, "", "JSON"},
			{"POST", "/api/v1/jobs", `{"name":"t_echo","args":{}} {}`, 400, "", "more than one"},
			{"POST", "/api/v1/jobs", `{"name":"nope","args":{}}`, 400, "name", "no task named"},
			{"POST", "/api/v1/jobs", `{"args":{}}`, 400, "name", "name"},
			{"POST", "/api/v1/jobs", `{"name":"t_echo","args":{},"priority":"urgent"}`, 400, "priority", "high, normal or low"},
			{"POST", "/api/v1/jobs", `{"name":"t_echo","args":{},"delay":"soon"}`, 400, "delay", "duration"},
			{"POST", "/api/v1/jobs", `{"name":"t_echo","args":{},"route":"a b"}`, 400, "route", "route"},
			{"POST", "/api/v1/jobs", big, 413, "", "limit"},
			{"GET", "/api/v1/jobs?limit=0", "", 400, "limit", "1 to 500"},
			{"GET", "/api/v1/jobs?state=lost", "", 400, "state", "state"},
			{"GET", "/api/v1/jobs?colour=red", "", 400, "colour", "unknown query parameter"},
			{"GET", "/api/v1/jobs/nope", "", 404, "", "not found"},
			{"GET", "/api/v1/jobs/nope/result?wait=forever", "", 400, "wait", "duration"},
			{"GET", "/api/v1/stats?window=7d", "", 400, "window", "1h or 24h"},
			{"DELETE", "/api/v1/dlq?older_than=old", "", 400, "older_than", "duration"},
			{"POST", "/api/v1/routes/a%20b/pause", "", 400, "route", "route"},
			{"GET", "/api/v1/nothing", "", 404, "", "no route"},
			{"PUT", "/api/v1/jobs", "", 405, "", "does not take PUT"},
		} {
			status, v := a.do(tc.method, tc.path, tc.body)
			m, _ := v.(map[string]any)
			msg, _ := m["error"].(string)
			field, _ := m["field"].(string)
			body := tc.body
			if len(body) > 80 {
				body = body[:80] + "…"
			}
			if status != tc.status || field != tc.field || !strings.Contains(msg, tc.says) {
				t.Errorf("%s %s %s = %d %v; want %d, field %q, an error saying %q", tc.method, tc.path, body, status, v, tc.status, tc.field, tc.says)
			}
		}
		if st, v := a.do("GET", "/api/v1/jobs?state=pending", ""); st != 200 || len(v.(map[string]any)["jobs"].([]any)) != 0 {
			t.Fatalf("after bad submissions: %d %v; want no job", st, v)
		}
	})
}

// With a token every /api call needs it as a bearer token, and so does
// /metrics on the API's port; the probes do not.
func TestAPI_TokenIsRequiredOnEveryAPICall(t *testing.T) {
	c := connect(t, "mem://")
	in := runtime.NewInspector(c, testtasks.Register)
	a := serveAPI(t, in, runtime.APIOptions{Token: "s3cret"})
	a.want(http.StatusOK, "GET", "/api/v1/tasks", "")
	for _, token := range []string{"", "s3cre", "s3cret2", "S3CRET"} {
		a.token = token
		for _, p := range []string{"/api/v1/tasks", "/api/v1/queues", "/api/v1/openapi.json"} {
			if st, v := a.do("GET", p, ""); st != http.StatusUnauthorized {
				t.Errorf("GET %s with token %q = %d %v; want 401", p, token, st, v)
			}
		}
		if st, v := a.do("POST", "/api/v1/jobs", `{"name":"t_echo","args":{"Text":"x"}}`); st != http.StatusUnauthorized {
			t.Errorf("POST /api/v1/jobs with token %q = %d %v; want 401", token, st, v)
		}
	}
	a.token = ""
	a.want(http.StatusOK, "GET", "/healthz", "")
	a.want(http.StatusOK, "GET", "/livez", "")
	// Scrapers carry no token: /metrics is open by default (METRICS_PORT
	// closes it, TestAPI_MetricsNeedTheTokenWhenOneIsSetAndAsked).
	if st, body := a.do("GET", "/metrics", ""); st != http.StatusOK || !strings.Contains(fmt.Sprint(body), "bananas_") {
		t.Errorf("GET /metrics without the token = %d; want 200 and bananas_ metrics", st)
	}
	a.token = "s3cret"
}

// Read-only mode serves reads and refuses every action with 403.
func TestAPI_ReadOnlyRefusesActions(t *testing.T) {
	c := connect(t, "mem://")
	a := serveAPI(t, runtime.NewInspector(c, testtasks.Register), runtime.APIOptions{ReadOnly: true})
	a.want(http.StatusOK, "GET", "/api/v1/queues", "")
	for _, r := range [][2]string{
		{"POST", "/api/v1/jobs"}, {"POST", "/api/v1/jobs/x/cancel"}, {"DELETE", "/api/v1/jobs/x"},
		{"POST", "/api/v1/routes/default/pause"}, {"POST", "/api/v1/routes/default/resume"},
		{"POST", "/api/v1/dlq/x/replay"}, {"POST", "/api/v1/dlq/replay"}, {"DELETE", "/api/v1/dlq"},
	} {
		if st, v := a.do(r[0], r[1], `{"name":"t_echo","args":{"Text":"x"}}`); st != http.StatusForbidden {
			t.Errorf("%s %s read-only = %d %v; want 403", r[0], r[1], st, v)
		}
	}
}

// /healthz answers 503 while Redis is unreachable, and /livez still 200.
func TestAPI_HealthzFailsWhileRedisIsDown(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := connect(t, srv.URL())
	a := serveAPI(t, runtime.NewInspector(c), runtime.APIOptions{})
	a.want(http.StatusOK, "GET", "/healthz", "")
	srv.Close()
	if st, v := a.do("GET", "/healthz", ""); st != http.StatusServiceUnavailable {
		t.Fatalf("/healthz with Redis down = %d %v; want 503", st, v)
	}
	a.want(http.StatusOK, "GET", "/livez", "")
}

// The actions of the admin layer over HTTP: list, pause (workers stop taking
// the route), resume, cancel and delete waiting jobs, replay and purge dead
// ones.
func TestAPI_ActionsOnRoutesAndJobs(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, testtasks.Echo, func(_ context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			return testtasks.Reply{Text: m.Text}, nil
		})
		runtime.Handle(w, testtasks.Note, func(context.Context, testtasks.Msg) (runtime.None, error) {
			return runtime.None{}, fmt.Errorf("refused: %w", runtime.SkipRetry)
		})
		a := serveAPI(t, w.Inspector(), runtime.APIOptions{})
		a.want(http.StatusOK, "POST", "/api/v1/routes/default/pause", "")
		startWorker(t, w)
		var ids []string
		for i := 0; i < 3; i++ {
			id, _ := a.want(http.StatusCreated, "POST", "/api/v1/jobs", fmt.Sprintf(`{"name":"t_echo","args":{"Text":"p%d"}}`, i))["id"].(string)
			ids = append(ids, id)
		}
		later, _ := a.want(http.StatusCreated, "POST", "/api/v1/jobs", `{"name":"t_echo","args":{"Text":"later"},"delay":"1h"}`)["id"].(string)
		queues := func() map[string]any {
			st, v := a.do("GET", "/api/v1/queues", "")
			for _, q := range v.([]any) {
				if m := q.(map[string]any); st == 200 && m["route"] == "default" {
					return m
				}
			}
			t.Fatalf("no default route in %v", v)
			return nil
		}
		if q := queues(); q["paused"] != true || q["pending"] != float64(3) || q["scheduled"] != float64(1) || q["oldest_pending_at"] == nil {
			t.Fatalf("paused route = %v; want paused, 3 pending, 1 scheduled, an oldest pending", q)
		}
		page := a.want(http.StatusOK, "GET", "/api/v1/jobs?route=default&state=pending&limit=2", "")
		if jobs := page["jobs"].([]any); len(jobs) != 2 || page["next"] == "" {
			t.Fatalf("first page = %v; want 2 jobs and a next cursor", page)
		}
		a.want(http.StatusOK, "POST", "/api/v1/jobs/"+ids[0]+"/cancel", "")
		a.want(http.StatusOK, "DELETE", "/api/v1/jobs/"+later, "")
		if job := a.want(http.StatusOK, "GET", "/api/v1/jobs/"+ids[0], ""); job["status"] != "canceled" {
			t.Fatalf("canceled job = %v", job)
		}
		a.want(http.StatusNotFound, "GET", "/api/v1/jobs/"+later, "")
		a.want(http.StatusOK, "POST", "/api/v1/routes/default/resume", "")
		for _, id := range ids[1:] {
			if res := a.want(http.StatusOK, "GET", "/api/v1/jobs/"+id+"/result?wait=20s", ""); res["status"] != "completed" {
				t.Fatalf("after resume job %s = %v", id, res)
			}
		}
		dead, _ := a.want(http.StatusCreated, "POST", "/api/v1/jobs", `{"name":"t_note","args":{"Text":"doomed"}}`)["id"].(string)
		if res := a.want(http.StatusOK, "GET", "/api/v1/jobs/"+dead+"/result?wait=20s", ""); res["status"] != "failed" {
			t.Fatalf("dead job = %v", res)
		}
		if st, v := a.do("DELETE", "/api/v1/jobs/"+dead, ""); st != http.StatusConflict {
			t.Fatalf("DELETE of a dead job = %d %v; want 409 naming its state", st, v)
		}
		dlq := a.want(http.StatusOK, "GET", "/api/v1/dlq?task=t_note&q=refused", "")
		if jobs := dlq["jobs"].([]any); len(jobs) != 1 || jobs[0].(map[string]any)["id"] != dead {
			t.Fatalf("dlq filtered by task and error text = %v", dlq)
		}
		if n := a.want(http.StatusOK, "DELETE", "/api/v1/dlq?task=t_echo", "")["purged"]; n != float64(0) {
			t.Fatalf("purge of another task's dead jobs purged %v", n)
		}
		if n := a.want(http.StatusOK, "DELETE", "/api/v1/dlq?task=t_note", "")["purged"]; n != float64(1) {
			t.Fatalf("purge of t_note's dead jobs purged %v, want 1", n)
		}
		// The per-minute stats series saw all of it.
		sum := map[string]float64{}
		for _, p := range a.want(http.StatusOK, "GET", "/api/v1/stats?window=1h", "")["points"].([]any) {
			for k, v := range p.(map[string]any) {
				if n, ok := v.(float64); ok {
					sum[k] += n
				}
			}
		}
		if sum["enqueued"] != 5 || sum["processed"] != 2 || sum["canceled"] != 1 || sum["dead"] != 1 || sum["run_p50_ms"] == 0 {
			t.Fatalf("stats over the hour = %v; want 5 enqueued, 2 processed, 1 canceled, 1 dead and run times", sum)
		}
	})
}

// No submission, however hostile, panics the server or gets a 5xx.
func FuzzAPI_SubmitNeverFailsTheServer(f *testing.F) {
	for _, seed := range []string{
		`{"name":"t_echo","args":{"Text":"x","N":1}}`, `{"name":"t_echo","args":{"text":"x"}}`, `{}`, `null`, `[]`,
		`{"name":"t_echo","args":{"N":1e400}}`, `{"name":"t_echo","args":"\u0000"}`, `{"name":"t_echo","args":{"Text":"x"},"delay":"-1s"}`,
		`{"name":"t_echo","args":{"Text":"x"},"route":"{}"}`, `{"name":"t_tick"}`, `{"name":"t_echo","args":[[[[[[[[[[]]]]]]]]]]}`,
	} {
		f.Add(seed)
	}
	c, err := runtime.Connect(context.Background(), "mem://", runtime.WithNamespace(redistest.Namespace(f)))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })
	h := runtime.APIHandler(runtime.NewInspector(c, testtasks.Register), runtime.APIOptions{})
	f.Fuzz(func(t *testing.T, body string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "http://127.0.0.1/api/v1/jobs", bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("POST %q = %d %s", body, rec.Code, rec.Body)
		}
		var v map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatalf("POST %q answered %d with a body that is not JSON: %q", body, rec.Code, rec.Body)
		}
	})
}

// forgedCursor encodes fields the way a job listing's cursor is encoded,
// whatever they hold.
func forgedCursor(fields ...string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join(fields, "\n")))
}

// forgedCursors are listing cursors no listing gave: a position or score
// past what Redis takes, not a number, NaN or infinite, negative, a route
// the listing does not have, of another state, garbage. Each is a query
// string of GET /api/v1/jobs.
func forgedCursors() []string {
	pending := func(pos string) string {
		return "state=pending&route=default&cursor=" + url.QueryEscape(forgedCursor("1", "pending", "f", "normal", pos, "", "X", "A"))
	}
	newest := func(pos string) string {
		return "state=pending&route=default&order=newest&cursor=" + url.QueryEscape(forgedCursor("1", "pending", "n", "low", pos, "", "X", "A"))
	}
	sorted := func(state, score string) string {
		return "state=" + state + "&route=default&cursor=" + url.QueryEscape(forgedCursor("1", state, "f", "", "0", score, "X", ""))
	}
	out := []string{
		pending("9223372036854775807"), pending("100000000000000000"), pending("1e17"), pending("-1"),
		pending("abc"), pending(""), newest("9223372036854775807"), newest("100000000000000000"),
		"state=pending&route=default&cursor=" + url.QueryEscape(forgedCursor("1", "pending", "f", "urgent", "0", "", "X", "A")),
		"state=pending&route=default&cursor=" + url.QueryEscape(forgedCursor("1", "scheduled", "f", "", "0", "5", "X", "")),
		"state=pending&route=default&cursor=" + strings.Repeat("A", 4000),
		"state=pending&route=default&cursor=%25%25",
		"state=pending&cursor=nosuchroute/" + url.QueryEscape(forgedCursor("1", "pending", "f", "normal", "0", "", "X", "A")),
		"state=pending&cursor=default",
		"state=pending&cursor=default/" + url.QueryEscape(forgedCursor("1", "pending", "f", "normal", "9223372036854775807", "", "X", "A")),
		"state=scheduled&cursor=default/" + url.QueryEscape(forgedCursor("1", "scheduled", "f", "", "0", "nan", "X", "")),
		"state=active&route=default&cursor=" + url.QueryEscape(forgedCursor("1", "active", "f", "", "0", "", "X", "")),
	}
	for _, state := range []string{"scheduled", "dead"} {
		for _, score := range []string{"nan", "NaN", "inf", "-Inf", "+inf", "1e400", "-1e400", "0x1p3", "1_0", "abc", "", " 5", "5 "} {
			out = append(out, sorted(state, score))
		}
	}
	return out
}

// A listing cursor no listing gave, however forged, is a 400 naming the
// cursor, on the embedded server and on redis-server alike: it never reaches
// Redis as a command argument that fails there.
func TestAPI_ForgedListingCursorIsA400NamingCursor(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		a := serveAPI(t, runtime.NewInspector(c, testtasks.Register), runtime.APIOptions{})
		ctx := ctxT(t)
		if _, err := testtasks.Echo.With(c).Enqueue(ctx, Msg{}); err != nil {
			t.Fatal(err)
		}
		if _, err := testtasks.Echo.With(c).Enqueue(ctx, Msg{}, runtime.Delay(time.Hour)); err != nil {
			t.Fatal(err)
		}
		for _, query := range forgedCursors() {
			status, v := a.do("GET", "/api/v1/jobs?"+query, "")
			m, _ := v.(map[string]any)
			msg, _ := m["error"].(string)
			if status != http.StatusBadRequest || m["field"] != "cursor" || !strings.Contains(msg, "cursor") {
				t.Errorf("GET /api/v1/jobs?%.200s = %d %.300v; want 400 naming the cursor", query, status, v)
			}
		}
	})
}

// No listing query, a forged cursor above all, fails the server: whatever the
// parameters, GET /api/v1/jobs answers below 500 with JSON, against a real
// redis-server (where a bad command argument fails, not only in Go).
func FuzzAPI_ListingNeverFailsTheServer(f *testing.F) {
	for _, query := range forgedCursors() {
		v, err := url.ParseQuery(query)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v.Get("state"), v.Get("route"), v.Get("order") == "newest", v.Get("cursor"))
	}
	f.Add("pending", "", false, "")
	c, err := runtime.Connect(context.Background(), redistest.Shared(f).URL(), runtime.WithNamespace(redistest.Namespace(f)))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })
	if _, err := testtasks.Echo.With(c).Enqueue(context.Background(), Msg{}); err != nil {
		f.Fatal(err)
	}
	h := runtime.APIHandler(runtime.NewInspector(c, testtasks.Register), runtime.APIOptions{})
	f.Fuzz(func(t *testing.T, state, route string, newest bool, cursor string) {
		q := url.Values{"state": {state}, "cursor": {cursor}}
		if route != "" {
			q.Set("route", route)
		}
		if newest {
			q.Set("order", "newest")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/jobs?"+q.Encode(), nil))
		if rec.Code >= 500 {
			t.Fatalf("GET /api/v1/jobs?%s = %d %s", q.Encode(), rec.Code, rec.Body)
		}
		var v map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatalf("GET /api/v1/jobs?%s answered %d with a body that is not JSON: %q", q.Encode(), rec.Code, rec.Body)
		}
	})
}
