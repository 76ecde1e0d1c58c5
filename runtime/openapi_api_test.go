package runtime_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"

	quickstart "github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// The OpenAPI document that GET /api/v1/openapi.json serves is checked
// against the API that serves it: a real worker runs the test tasks and the
// quickstart's, every request goes over HTTP to runtime.APIHandler, and each
// real request and answer is validated against the document the same server
// served.

const specToken = "spec-token" // the document asks for a bearer token on every /api call

// specRig is a running API and the validator of the document it serves.
type specRig struct {
	t   *testing.T
	url string
	doc []byte
	v   validator.Validator
	// strict also refuses what the document does not declare.
	strict validator.Validator
	http   *http.Client
}

// newSpecRig starts a worker with the test and quickstart tasks (and a cron
// entry) on c, serves its API with a token, and reads the document it serves.
func newSpecRig(t *testing.T, c *runtime.Client) *specRig {
	t.Helper()
	return newSpecRigWith(t, c, func(w *runtime.Worker) {
		testtasks.Register(w)
		quickstart.Register(w)
		runtime.Schedule(w, testtasks.Tick, "@every 1s", "")
	})
}

// newSpecRigWith is newSpecRig with the handlers register sets up.
func newSpecRigWith(t *testing.T, c *runtime.Client, register func(*runtime.Worker)) *specRig {
	t.Helper()
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"default", "email", "images"}}))
	register(w)
	startWorker(t, w)
	srv := httptest.NewServer(runtime.APIHandler(w.Inspector(), runtime.APIOptions{Token: specToken}))
	t.Cleanup(srv.Close)
	r := &specRig{t: t, url: srv.URL, http: &http.Client{Timeout: 30 * time.Second}}

	status, raw, _, _ := r.send("GET", "/api/v1/openapi.json", "")
	if status != http.StatusOK {
		t.Fatalf("GET /api/v1/openapi.json = %d %s", status, raw)
	}
	r.doc = raw
	d, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatalf("the served document does not parse: %v", err)
	}
	v, errs := validator.NewValidator(d)
	if len(errs) > 0 {
		t.Fatalf("no validator of the served document: %v", errs)
	}
	// Strict: a query parameter the document does not declare is refused,
	// as the API refuses it (used on requests only: it would also refuse
	// every response header the document does not list).
	strict, errs := validator.NewValidator(d, config.WithStrictMode())
	if len(errs) > 0 {
		t.Fatalf("no strict validator of the served document: %v", errs)
	}
	r.v, r.strict = v, strict
	return r
}

// request is method path with body, as a client of the document sends it.
func (r *specRig) request(method, path, body string) *http.Request {
	r.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, r.url+path, rd)
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+specToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// send makes a real request and returns its status and body, with a copy of
// the request (its body unread) and the response (its body readable again)
// for the validator.
func (r *specRig) send(method, path, body string) (int, []byte, *http.Request, *http.Response) {
	r.t.Helper()
	resp, err := r.http.Do(r.request(method, path, body))
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		r.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	return resp.StatusCode, raw, r.request(method, path, body), resp
}

// conforms sends a request the document allows, wants status, and fails
// unless both the request and the real answer follow the document. It
// returns the answer decoded.
func (r *specRig) conforms(status int, method, path, body string) any {
	r.t.Helper()
	return r.exchange(status, method, path, body, r.v.ValidateHttpRequestResponse)
}

// answerConforms sends a request, wants status, and fails unless the answer
// follows the document (the request itself may be one the document
// refuses: an error answer is described all the same).
func (r *specRig) answerConforms(status int, method, path, body string) map[string]any {
	r.t.Helper()
	m, ok := r.exchange(status, method, path, body, r.v.ValidateHttpResponse).(map[string]any)
	if !ok {
		r.t.Fatalf("%s %s: the answer is not a JSON object", method, path)
	}
	return m
}

// exchange sends a request, wants status, and fails unless validate passes
// the request and its real answer. It returns the answer decoded.
func (r *specRig) exchange(status int, method, path, body string,
	validate func(*http.Request, *http.Response) (bool, []*verrors.ValidationError)) any {
	r.t.Helper()
	got, raw, req, resp := r.send(method, path, body)
	if got != status {
		r.t.Fatalf("%s %s %s = %d %s; want %d", method, path, body, got, raw, status)
	}
	if ok, errs := validate(req, resp); !ok {
		r.t.Fatalf("%s %s %s = %d %s\ndoes not follow the served document:\n%s", method, path, body, got, raw, specErrs(errs))
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		r.t.Fatalf("%s %s: the answer is not JSON: %v: %s", method, path, err, raw)
	}
	return v
}

// documentRefuses fails unless the document refuses the request for what
// is wrong with param.
func (r *specRig) documentRefuses(method, path, param string) {
	r.t.Helper()
	ok, errs := r.strict.ValidateHttpRequestSync(r.request(method, path, ""))
	if ok {
		r.t.Errorf("the API refuses %s %s, but the served document accepts it", method, path)
	} else if !strings.Contains(specErrs(errs), "'"+param+"'") {
		r.t.Errorf("the served document refuses %s %s, not for %s:\n%s", method, path, param, specErrs(errs))
	}
}

func specErrs(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "%s: %s\n", e.Message, e.Reason)
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "  %s at %s (%s)\n", f.Reason, f.FieldPath, f.KeywordLocation)
		}
	}
	return b.String()
}

// examples are the document's example submissions, by task.
func (r *specRig) examples() map[string]json.RawMessage {
	r.t.Helper()
	var d struct {
		Paths map[string]struct {
			Post struct {
				RequestBody struct {
					Content map[string]struct {
						Examples map[string]struct {
							Value json.RawMessage `json:"value"`
						} `json:"examples"`
					} `json:"content"`
				} `json:"requestBody"`
			} `json:"post"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(r.doc, &d); err != nil {
		r.t.Fatal(err)
	}
	out := map[string]json.RawMessage{}
	for name, ex := range d.Paths["/api/v1/jobs"].Post.RequestBody.Content["application/json"].Examples {
		out[name] = ex.Value
	}
	return out
}

// taskNames are the tasks GET /api/v1/tasks lists.
func (r *specRig) taskNames() []string {
	r.t.Helper()
	var names []string
	for _, x := range r.conforms(http.StatusOK, "GET", "/api/v1/tasks", "").([]any) {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	return names
}

// submit enqueues body, which must follow the document, and returns the id.
func (r *specRig) submit(body string) string {
	r.t.Helper()
	id, _ := r.conforms(http.StatusCreated, "POST", "/api/v1/jobs", body).(map[string]any)["id"].(string)
	if id == "" {
		r.t.Fatalf("POST %s: no id in the 201", body)
	}
	return id
}

// waitDead waits for the dead-letter queue to hold one job.
func (r *specRig) waitDead(what string) {
	r.t.Helper()
	waitFor(r.t, 20*time.Second, what, func() bool {
		jobs, _ := r.get("/api/v1/dlq").(map[string]any)["jobs"].([]any)
		return len(jobs) == 1
	})
}

// get reads path (no validation: for waiting).
func (r *specRig) get(path string) any {
	r.t.Helper()
	status, raw, _, _ := r.send("GET", path, "")
	var v any
	if status != http.StatusOK || json.Unmarshal(raw, &v) != nil {
		r.t.Fatalf("GET %s = %d %s", path, status, raw)
	}
	return v
}

// The document served is valid OpenAPI 3.1 and describes, with an example,
// a submission of every task the API lists.
func TestOpenAPI_ServedDocumentIsValidOpenAPI31WithAnExamplePerTask(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		r := newSpecRig(t, c)
		var head struct {
			OpenAPI string `json:"openapi"`
		}
		if err := json.Unmarshal(r.doc, &head); err != nil || head.OpenAPI != "3.1.0" {
			t.Fatalf("openapi = %q, %v; want 3.1.0", head.OpenAPI, err)
		}
		if ok, errs := r.v.ValidateDocument(); !ok {
			t.Fatalf("the served document is not valid OpenAPI 3.1:\n%s", specErrs(errs))
		}
		names := r.taskNames()
		for _, want := range []string{"t_echo", "t_tick", "send_email", "resize_image", "count_words"} {
			if !slices.Contains(names, want) {
				t.Errorf("GET /api/v1/tasks lists %v, not %s", names, want)
			}
		}
		examples := r.examples()
		for _, name := range names {
			if _, ok := examples[name]; !ok {
				t.Errorf("the document has no example submission of %s (it has %d)", name, len(examples))
			}
		}
		if len(examples) != len(names) {
			t.Errorf("%d examples for %d tasks", len(examples), len(names))
		}
	})
}

// Each task's example submission, as the document gives it, is accepted by
// the API (201) and by the document; a submission the API refuses with 400
// (an unknown key, a key in the wrong case, a value of the wrong type) the
// document refuses too, and the 400 answer is the document's error body.
func TestOpenAPI_DocumentAcceptsAndRefusesSubmissionsAsTheAPIDoes(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		r := newSpecRig(t, c)
		r.conforms(http.StatusOK, "POST", "/api/v1/routes/default/pause", "") // nothing runs: the examples stay pending
		r.conforms(http.StatusOK, "POST", "/api/v1/routes/email/pause", "")
		r.conforms(http.StatusOK, "POST", "/api/v1/routes/images/pause", "")
		for name, ex := range r.examples() {
			t.Run(name, func(t *testing.T) {
				r := *r
				r.t = t
				r.submit(string(ex))

				var sub struct {
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				}
				if err := json.Unmarshal(ex, &sub); err != nil || sub.Name != name {
					t.Fatalf("example %s: %v", ex, err)
				}
				// The API must refuse these; the document must refuse what it
				// refuses. Args of a struct type are an object, whose keys are
				// checked; args of another type ([]int) refuse an object.
				var fields map[string]any
				objectArgs := json.Unmarshal(sub.Args, &fields) == nil
				refused := map[string]string{
					"unknown arg key": withArgs(name, fields, "no_such_key", 1),
				}
				if !objectArgs {
					refused = map[string]string{"args of another type": withArgs(name, nil, "no_such_key", 1)}
				}
				for key, val := range fields {
					if other := swapCase(key); other != key {
						refused["key "+key+" as "+other] = withArgs(name, without(fields, key), other, val)
					}
					refused["key "+key+" of the wrong type"] = withArgs(name, fields, key, wrongType(val))
				}
				for what, body := range refused {
					r.answerConforms(http.StatusBadRequest, "POST", "/api/v1/jobs", body)
					if ok, _ := r.v.ValidateHttpRequestSync(r.request("POST", "/api/v1/jobs", body)); ok {
						t.Errorf("%s: the API refuses %s with 400, the served document accepts it", what, body)
					}
				}
				// The document refuses these; the API refuses most of them too
				// (a task without args takes null args): whatever it refuses,
				// the document must refuse, never the other way round.
				doubtful := map[string]string{
					"unknown submission key": fmt.Sprintf(`{"name":%q,"args":%s,"prio":"high"}`, name, mustJSON(t, sub.Args)),
					"name of the wrong type": fmt.Sprintf(`{"name":7,"args":%s}`, mustJSON(t, sub.Args)),
					"args of the wrong type": fmt.Sprintf(`{"name":%q,"args":"x"}`, name),
					"args null":              fmt.Sprintf(`{"name":%q,"args":null}`, name),
					"no args":                fmt.Sprintf(`{"name":%q}`, name),
					"priority not known":     fmt.Sprintf(`{"name":%q,"args":%s,"priority":"urgent"}`, name, mustJSON(t, sub.Args)),
					"delay not a duration":   fmt.Sprintf(`{"name":%q,"args":%s,"delay":"soon"}`, name, mustJSON(t, sub.Args)),
				}
				if !objectArgs {
					delete(doubtful, "args null") // a nil slice's JSON: args both take
				}
				for what, body := range doubtful {
					if ok, _ := r.v.ValidateHttpRequestSync(r.request("POST", "/api/v1/jobs", body)); ok {
						t.Errorf("%s: the served document accepts %s", what, body)
					}
					status, raw, req, resp := r.send("POST", "/api/v1/jobs", body)
					switch status {
					case http.StatusBadRequest:
						if ok, errs := r.v.ValidateHttpResponse(req, resp); !ok {
							t.Errorf("%s: the 400 %s does not follow the document:\n%s", what, raw, specErrs(errs))
						}
					case http.StatusCreated: // the document is narrower than the API: allowed
					default:
						t.Errorf("%s: POST %s = %d %s; want 400 (or 201)", what, body, status, raw)
					}
				}
			})
		}
	})
}

// Every answer of the API, to a request the document allows, follows the
// document: jobs pending, completed and dead, their pages, results that are
// still coming (202) and done (200), queues, tasks, the DLQ, cron, workers,
// stats, the actions, and the 400, 404 and 409 error bodies.
func TestOpenAPI_ServedDocumentDescribesEveryAnswer(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		r := newSpecRig(t, c)
		echo := r.completedJobsOfEveryResultKindConform()
		pending, scheduled := r.waitingJobsAndTheirPagesConform()
		dead := r.aDeadJobConforms()
		r.whatThereIsConforms()
		r.theActionsConform(pending, scheduled, dead)
		r.theErrorBodiesConform(echo)
	})
}

// Completed jobs of every result kind: a struct, an int, none. It returns
// the id of the completed t_echo job.
func (r *specRig) completedJobsOfEveryResultKindConform() string {
	t := r.t
	echo := r.submit(`{"name":"t_echo","args":{"Text":"hi","N":2},"priority":"high"}`)
	resize := r.submit(`{"name":"resize_image","args":{"URL":"https://x/cat.png","Width":640}}`)
	count := r.submit(`{"name":"count_words","args":{"Body":"a b c"},"route":"default"}`)
	note := r.submit(`{"name":"t_note","args":{"Text":"n"}}`)
	for _, id := range []string{echo, resize, count, note} {
		job := r.conforms(http.StatusOK, "GET", "/api/v1/jobs/"+id+"/result?wait=20s", "").(map[string]any)
		if job["status"] != "completed" {
			t.Fatalf("job %s = %v; want completed", id, job)
		}
		r.conforms(http.StatusOK, "GET", "/api/v1/jobs/"+id, "")
	}
	if job := r.conforms(http.StatusOK, "GET", "/api/v1/jobs/"+count, "").(map[string]any); job["result"] != float64(3) {
		t.Errorf("count_words result = %v; want 3", job["result"])
	}
	return echo
}

// A pending job (its route, held, paused), a scheduled one, and their pages.
func (r *specRig) waitingJobsAndTheirPagesConform() (pending, scheduled string) {
	t := r.t
	pending = r.submit(`{"name":"t_echo","args":{"Text":"wait"},"route":"held"}`)
	r.conforms(http.StatusOK, "POST", "/api/v1/routes/held/pause", "")
	r.conforms(http.StatusNotFound, "POST", "/api/v1/routes/nowhere/pause", "")
	scheduled = r.submit(`{"name":"send_email","args":{"To":"a@b","Subject":"later"},"delay":"1h"}`)
	if job := r.conforms(http.StatusOK, "GET", "/api/v1/jobs/"+pending, "").(map[string]any); job["status"] != "pending" || job["result"] != nil {
		t.Fatalf("job on a paused route = %v; want pending, result null", job)
	}
	r.conforms(http.StatusAccepted, "GET", "/api/v1/jobs/"+pending+"/result", "")
	r.conforms(http.StatusAccepted, "GET", "/api/v1/jobs/"+pending+"/result?wait=10ms", "")
	r.conforms(http.StatusOK, "GET", "/api/v1/jobs/"+scheduled, "")
	page := r.conforms(http.StatusOK, "GET", "/api/v1/jobs?route=held&state=pending&limit=50", "").(map[string]any)
	if jobs, _ := page["jobs"].([]any); len(jobs) != 1 {
		t.Fatalf("page of held = %v; want the pending job", page)
	}
	r.conforms(http.StatusOK, "GET", "/api/v1/jobs?route=email&state=scheduled&order=newest", "")
	r.conforms(http.StatusOK, "GET", "/api/v1/jobs", "")
	first := r.conforms(http.StatusOK, "GET", "/api/v1/jobs?route=held&state=pending&limit=1", "").(map[string]any)
	if next, _ := first["next"].(string); next != "" {
		r.conforms(http.StatusOK, "GET", "/api/v1/jobs?route=held&state=pending&limit=1&cursor="+next, "")
	}
	return pending, scheduled
}

// A dead job, read alone, in the DLQ and among the failed.
func (r *specRig) aDeadJobConforms() string {
	dead := r.submit(`{"name":"send_email","args":{"To":"nobody","Subject":"x"}}`)
	r.waitDead("send_email to nobody to die")
	r.conforms(http.StatusOK, "GET", "/api/v1/dlq", "")
	r.conforms(http.StatusOK, "GET", "/api/v1/dlq?task=send_email&q=nobody&limit=10", "")
	r.conforms(http.StatusOK, "GET", "/api/v1/jobs/"+dead, "")
	r.conforms(http.StatusOK, "GET", "/api/v1/jobs/"+dead+"/result", "")
	r.conforms(http.StatusOK, "GET", "/api/v1/jobs?state=failed", "")
	return dead
}

// What there is: queues, tasks, cron, workers and stats.
func (r *specRig) whatThereIsConforms() {
	t := r.t
	queues := r.conforms(http.StatusOK, "GET", "/api/v1/queues", "").([]any)
	if len(queues) == 0 {
		t.Fatal("GET /api/v1/queues: no queue")
	}
	r.conforms(http.StatusOK, "GET", "/api/v1/tasks", "")
	waitFor(t, 15*time.Second, "the cron entry to have run", func() bool {
		entries, _ := r.get("/api/v1/cron").([]any)
		return len(entries) == 1 && entries[0].(map[string]any)["last_run"] != nil
	})
	r.conforms(http.StatusOK, "GET", "/api/v1/cron", "")
	waitFor(t, 15*time.Second, "the worker's heartbeat", func() bool {
		ws, _ := r.get("/api/v1/workers").([]any)
		return len(ws) > 0
	})
	r.conforms(http.StatusOK, "GET", "/api/v1/workers", "")
	r.conforms(http.StatusOK, "GET", "/api/v1/stats", "")
	r.conforms(http.StatusOK, "GET", "/api/v1/stats?window=24h", "")
}

// The actions: cancel, delete, resume, replay of one and by task, purge.
func (r *specRig) theActionsConform(pending, scheduled, dead string) {
	r.conforms(http.StatusOK, "POST", "/api/v1/jobs/"+pending+"/cancel", "")
	r.conforms(http.StatusOK, "DELETE", "/api/v1/jobs/"+scheduled, "")
	r.conforms(http.StatusOK, "POST", "/api/v1/routes/held/resume", "")
	r.conforms(http.StatusOK, "PUT", "/api/v1/routes/held/shards", `{"shards":3}`)
	r.conforms(http.StatusOK, "GET", "/api/v1/routes/held/shards", "")
	if e := r.answerConforms(http.StatusBadRequest, "PUT", "/api/v1/routes/held/shards", `{"shards":0}`); e["field"] != "shards" {
		r.t.Errorf("PUT shards 0: 400 %v; want an error about shards", e)
	}
	r.conforms(http.StatusOK, "PUT", "/api/v1/routes/held/shards", `{"shards":1}`)
	r.conforms(http.StatusOK, "POST", "/api/v1/dlq/"+dead+"/replay", "")
	r.waitDead("the replayed job to die again")
	r.conforms(http.StatusOK, "POST", "/api/v1/dlq/replay?task=send_email", "")
	r.waitDead("the replayed jobs to die again")
	r.conforms(http.StatusOK, "DELETE", "/api/v1/dlq?task=send_email&older_than=0s", "")
}

// specBadQueries are requests the API answers 400, each with the query
// parameter its error names ("" when the document cannot refuse it by a
// pattern); {echo} stands for the id of a completed job.
var specBadQueries = map[string]string{
	"/api/v1/jobs?limit=0": "limit", "/api/v1/jobs?order=sideways": "order", "/api/v1/jobs?state=completed": "state",
	"/api/v1/jobs?nope=1": "nope", "/api/v1/dlq?state=pending": "state", "/api/v1/stats?window=2h": "window",
	"/api/v1/jobs/{echo}/result?wait=soon": "wait",
	// Over the 5m cap: a pattern cannot say so; the document says it in words.
	"/api/v1/jobs/{echo}/result?wait=10m": "",
}

// The error bodies: 404, 409 (of the completed job echo) and 400.
func (r *specRig) theErrorBodiesConform(echo string) {
	t := r.t
	r.conforms(http.StatusNotFound, "GET", "/api/v1/jobs/01M84ZSHR0JRGTE9KQMVTY94SD.default", "")
	r.conforms(http.StatusNotFound, "GET", "/api/v1/jobs/01M84ZSHR0JRGTE9KQMVTY94SD.default/result", "")
	r.conforms(http.StatusConflict, "DELETE", "/api/v1/jobs/"+echo, "")
	r.conforms(http.StatusConflict, "POST", "/api/v1/jobs/"+echo+"/cancel", "")
	for path, param := range specBadQueries {
		path = strings.ReplaceAll(path, "{echo}", echo)
		e := r.answerConforms(http.StatusBadRequest, "GET", path, "")
		if e["error"] == "" || (param != "" && e["field"] != nil && e["field"] != param) {
			t.Errorf("GET %s: 400 %v; want an error about %s", path, e, param)
		}
		if param != "" {
			r.documentRefuses("GET", path, param)
		}
	}
	e := r.answerConforms(http.StatusBadRequest, "POST", "/api/v1/jobs", `{"name":"t_echo","args":{"text":"x"}}`)
	if e["field"] != "args" {
		t.Errorf("400 of a wrong-case key = %v; want field args", e)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withArgs is a submission of task name whose args are args with key set to val.
func withArgs(name string, args map[string]any, key string, val any) string {
	m := map[string]any{key: val}
	for k, v := range args {
		if k != key {
			m[k] = v
		}
	}
	b, _ := json.Marshal(map[string]any{"name": name, "args": m})
	return string(b)
}

func without(m map[string]any, key string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// swapCase is key with the case of its first letter changed.
func swapCase(key string) string {
	if key == "" {
		return key
	}
	first := key[:1]
	if up := strings.ToUpper(first); up != first {
		return up + key[1:]
	}
	return strings.ToLower(first) + key[1:]
}

// wrongType is a JSON value of another type than v's.
func wrongType(v any) any {
	switch v.(type) {
	case string:
		return 5
	case nil:
		return []any{}
	}
	return "not this type"
}

// A batch of every task's example submission is accepted by the API (201)
// and by the document, with the answer the document describes; a batch the
// API refuses — a bad job in it, over 1,000 jobs, an unknown key — the
// document refuses too, and the 400 is the document's.
func TestOpenAPI_DocumentAcceptsAndRefusesBatchesAsTheAPIDoes(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		r := newSpecRig(t, c)
		var subs []string
		for _, ex := range r.examples() {
			subs = append(subs, string(ex))
		}
		created := r.conforms(http.StatusCreated, "POST", "/api/v1/jobs/batch", batchBody(subs...)).(map[string]any)
		if ids, _ := created["ids"].([]any); len(ids) != len(subs) {
			t.Fatalf("201 %v; want %d ids", created, len(subs))
		}
		many := make([]string, 1001)
		for i := range many {
			many[i] = subs[0]
		}
		for what, body := range map[string]string{
			"a job with an unknown args key": batchBody(subs[0], `{"name":"t_echo","args":{"Text":"x","Nope":1}}`),
			"a job with an unknown key":      batchBody(subs[0], `{"name":"t_echo","args":{"Text":"x"},"prio":"high"}`),
			"1,001 jobs":                     batchBody(many...),
			"an unknown key":                 `{"jobs":[` + subs[0] + `],"atomic":true}`,
			"no jobs":                        `{"jobs":[]}`,
		} {
			e := r.answerConforms(http.StatusBadRequest, "POST", "/api/v1/jobs/batch", body)
			if e["error"] == "" {
				t.Errorf("%s: 400 %v; want an error", what, e)
			}
			if ok, _ := r.v.ValidateHttpRequest(r.request("POST", "/api/v1/jobs/batch", body)); ok {
				t.Errorf("%s: the document accepts the batch the API refuses", what)
			}
		}
	})
}

// The workflow routes' answers follow the document: a submission (201), the
// workflow pending, completed with its result, canceled and retried, the
// 404 of an unknown one and the 400 of a step that does not take what it
// comes after; a body the API refuses, the document refuses too.
func TestOpenAPI_WorkflowRoutesFollowTheDocument(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		r := newSpecRig(t, c)
		one := `{"steps":[{"id":"count","name":"count_words","args":{"Body":"a b c"}}]}`
		created := r.conforms(http.StatusCreated, "POST", "/api/v1/workflows", one).(map[string]any)
		id, _ := created["id"].(string)
		var got map[string]any
		waitFor(t, 20*time.Second, "the workflow to complete", func() bool {
			got = r.conforms(http.StatusOK, "GET", "/api/v1/workflows/"+id, "").(map[string]any)
			return got["status"] == "completed"
		})
		if got["result"] != float64(3) {
			t.Fatalf("completed workflow = %v; want result 3", got)
		}
		r.conforms(http.StatusOK, "POST", "/api/v1/workflows/"+id+"/cancel", "")
		r.conforms(http.StatusOK, "POST", "/api/v1/workflows/"+id+"/retry", "")
		r.conforms(http.StatusOK, "POST", "/api/v1/routes/email/pause", "")
		held := r.conforms(http.StatusCreated, "POST", "/api/v1/workflows",
			`{"steps":[{"id":"mail","name":"send_email","args":{"To":"a@b","Subject":"s"}}]}`).(map[string]any)
		if w := r.conforms(http.StatusOK, "GET", "/api/v1/workflows/"+held["id"].(string), "").(map[string]any); w["status"] != "pending" {
			t.Fatalf("a workflow waiting on a paused route = %v", w)
		}
		r.conforms(http.StatusOK, "POST", "/api/v1/workflows/"+held["id"].(string)+"/cancel", "")
		r.conforms(http.StatusOK, "POST", "/api/v1/workflows/"+held["id"].(string)+"/retry", "")
		for _, path := range []string{"/api/v1/workflows/01M84ZSHR0JRGTE9KQMVTY94SD", "/api/v1/workflows/01M84ZSHR0JRGTE9KQMVTY94SD/cancel"} {
			method := "GET"
			if strings.HasSuffix(path, "/cancel") {
				method = "POST"
			}
			r.conforms(http.StatusNotFound, method, path, "")
		}
		mismatch := `{"steps":[{"id":"count","name":"count_words","args":{"Body":"a"}},{"id":"echo","name":"t_echo","after":["count"]}]}`
		if e := r.conforms(http.StatusBadRequest, "POST", "/api/v1/workflows", mismatch).(map[string]any); e["field"] != "steps[1].after" {
			t.Fatalf("400 of a type mismatch = %v", e)
		}
		for what, body := range map[string]string{
			"args and after":   `{"steps":[{"id":"a","name":"count_words","args":{"Body":"a"}},{"id":"b","name":"count_words","args":{"Body":"b"},"after":["a"]}]}`,
			"an unknown key":   `{"steps":[{"id":"a","name":"count_words","args":{"Body":"a"},"route":"x"}]}`,
			"no steps":         `{"steps":[]}`,
			"a bad id":         `{"steps":[{"id":"a b","name":"count_words","args":{"Body":"a"}}]}`,
			"an unknown task":  `{"steps":[{"id":"a","name":"nope","args":{}}]}`,
			"a body key wrong": `{"Steps":[{"id":"a","name":"count_words","args":{"Body":"a"}}]}`,
		} {
			r.answerConforms(http.StatusBadRequest, "POST", "/api/v1/workflows", body)
			if ok, _ := r.v.ValidateHttpRequestSync(r.request("POST", "/api/v1/workflows", body)); ok {
				t.Errorf("%s: the API refuses %s with 400, the served document accepts it", what, body)
			}
		}
	})
}
