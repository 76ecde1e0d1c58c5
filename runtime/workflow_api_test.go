package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	quickstart "github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

// wfAPI is the API of c with the workflow tests' tasks registered (run by
// wfWorker, on the same client).
func wfAPI(t *testing.T, c *runtime.Client, r *wfRuns) *apiClient {
	t.Helper()
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"default", "wf_other"}, Concurrency: 8}))
	wfWorker(t, c, r)
	registerWF(w)
	return serveAPI(t, w.Inspector(), runtime.APIOptions{})
}

// registerWF registers the workflow tests' tasks on w, for its admin layer
// (w never runs).
func registerWF(w *runtime.Worker) {
	runtime.Handle(w, wfSplit, nil)
	runtime.Handle(w, wfLeft, nil)
	runtime.Handle(w, wfRight, nil)
	runtime.Handle(w, wfJoin, nil)
	runtime.Handle(w, wfDouble, nil)
	runtime.Handle(w, wfExplode, nil)
}

// awaitWorkflow polls GET /api/v1/workflows/{id} until its status is one
// of want, and returns it.
func (a *apiClient) awaitWorkflow(id string, want ...string) map[string]any {
	a.t.Helper()
	var got map[string]any
	waitFor(a.t, 20*time.Second, "workflow "+id+" to be "+strings.Join(want, " or "), func() bool {
		got = a.want(http.StatusOK, "GET", "/api/v1/workflows/"+id, "")
		for _, w := range want {
			if got["status"] == w {
				return true
			}
		}
		return false
	})
	return got
}

const diamondJSON = `{"steps": [
	{"id": "split", "name": "wf_split", "args": "abc"},
	{"id": "left", "name": "wf_left", "after": ["split"]},
	{"id": "right", "name": "wf_right", "after": ["split"]},
	{"id": "join", "name": "wf_join", "after": ["left", "right"]}]}`

// A diamond submitted as JSON runs as the typed one does: the split once,
// both halves with its result, the join with theirs in the order given;
// the workflow's result is the join's, as JSON.
func TestWorkflowAPI_DiamondOverJSONCompletesWithTheJoinsResult(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		r := newWFRuns()
		api := wfAPI(t, c, r)
		created := api.want(http.StatusCreated, "POST", "/api/v1/workflows", diamondJSON)
		id, _ := created["id"].(string)
		jobs, _ := created["steps"].(map[string]any)
		if id == "" || len(jobs) != 4 || jobs["split"] == "" || jobs["join"] == "" {
			t.Fatalf("201 = %v; want the workflow's id and a job id per step", created)
		}
		got := api.awaitWorkflow(id, "completed", "failed", "canceled")
		if got["status"] != "completed" || got["result"] != "[3 6]" {
			t.Fatalf("workflow = %v; want completed with result \"[3 6]\"", got)
		}
		steps, _ := got["steps"].([]any)
		last, _ := steps[3].(map[string]any)
		if len(steps) != 4 || last["id"] != "join" || last["name"] != "wf_join" || last["job_id"] != jobs["join"] ||
			fmt.Sprint(last["after"]) != "[left right]" || last["status"] != "completed" {
			t.Fatalf("steps = %v", steps)
		}
		if n := r.count("split"); n != 1 {
			t.Fatalf("split ran %d times", n)
		}
		job := api.want(http.StatusOK, "GET", "/api/v1/jobs/"+jobs["split"].(string), "")
		if job["status"] != "completed" || job["workflow"] != id {
			t.Fatalf("the split's job = %v; want completed, naming workflow %s", job, id)
		}
	})
}

// A workflow whose steps do not fit together is refused whole, with a 400
// naming the step, its id and both types; no job is made.
func TestWorkflowAPI_RefusalsNameTheStep(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		api := serveAPI(t, runtime.NewInspector(c, registerWF), runtime.APIOptions{})
		first := `{"id": "a", "name": "wf_split", "args": "abc"}`
		for body, want := range map[string][]string{
			`{"steps": [` + first + `, {"id": "b", "name": "wf_join", "after": ["a"]}]}`:                                                         {"steps[1].after", `"b"`, "[]int", "string"},
			`{"steps": [` + first + `, {"id": "b", "name": "wf_left", "after": ["a"]}, {"id": "c", "name": "wf_join", "after": ["a", "b"]}]}`:    {"steps[2].after", `"c"`, "[]int", `"a"`, "string"},
			`{"steps": [` + first + `, {"id": "b", "name": "wf_left", "after": ["a"]}, {"id": "c", "name": "wf_double", "after": ["b", "b2"]}]}`: {"steps[2].after", `"b2"`},
			`{"steps": [` + first + `, {"id": "b", "name": "wf_left", "after": ["a"]}, {"id": "c", "name": "wf_double", "after": ["b", "a"]}]}`:  {"steps[2].after", "int", "not a list"},
			`{"steps": [` + first + `, {"id": "b", "name": "nope", "after": ["a"]}]}`:                                                            {"steps[1].name", `"b"`, `"nope"`},
			`{"steps": [` + first + `, {"id": "a", "name": "wf_left", "after": ["a"]}]}`:                                                         {"steps[1].id", `"a"`},
			`{"steps": [{"id": "b", "name": "wf_left", "after": ["a"]}, ` + first + `]}`:                                                         {"steps[0].after", "listed after it"},
			`{"steps": [{"id": "a", "name": "wf_split", "args": 5}]}`:                                                                            {"steps[0].args", `"a"`},
			`{"steps": [{"id": "a", "name": "wf_split"}]}`:                                                                                       {"steps[0].args"},
			`{"steps": [` + first + `, {"id": "b", "name": "wf_left", "args": "x", "after": ["a"]}]}`:                                            {"steps[1].args", "not both"},
			`{"steps": [{"id": "a b", "name": "wf_split", "args": "x"}]}`:                                                                        {"steps[0].id"},
			`{"steps": [{"id": "` + strings.Repeat("x", 65) + `", "name": "wf_split", "args": "x"}]}`:                                            {"steps[0].id"},
			`{"steps": []}`: {"steps"},
		} {
			got := api.want(http.StatusBadRequest, "POST", "/api/v1/workflows", body)
			msg, _ := got["error"].(string)
			if got["field"] != want[0] {
				t.Errorf("POST %s = %v; want a 400 on field %s", body, got, want[0])
			}
			for _, w := range want[1:] {
				if !strings.Contains(msg, w) {
					t.Errorf("POST %s: error %q does not say %s", body, msg, w)
				}
			}
		}
		if page := api.want(http.StatusOK, "GET", "/api/v1/jobs", ""); len(page["jobs"].([]any)) != 0 {
			t.Fatalf("a refused workflow made jobs: %v", page)
		}
	})
}

// A workflow that does not exist, or an id that cannot name one, is a 404
// on each of its routes.
func TestWorkflowAPI_UnknownWorkflowIs404(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		api := serveAPI(t, runtime.NewInspector(c, registerWF), runtime.APIOptions{})
		for _, id := range []string{"01M84ZSHR0JRGTE9KQMVTY94SD", "a%7Bb%7D", "a%20b"} {
			for _, req := range [][2]string{{"GET", ""}, {"POST", "/cancel"}, {"POST", "/retry"}} {
				got := api.want(http.StatusNotFound, req[0], "/api/v1/workflows/"+id+req[1], "")
				if msg, _ := got["error"].(string); !strings.Contains(msg, "workflow not found") {
					t.Errorf("%s %s: %v", req[0], id+req[1], got)
				}
			}
		}
	})
}

// A step that failed for good fails the workflow, its error shown on its
// step and its successors canceled; a retry over HTTP runs those steps
// again, and the workflow completes.
func TestWorkflowAPI_RetryAFailedWorkflowOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		r := newWFRuns()
		r.setFail("explode", true)
		api := wfAPI(t, c, r)
		created := api.want(http.StatusCreated, "POST", "/api/v1/workflows", `{"steps": [
			{"id": "first", "name": "wf_double", "args": 5},
			{"id": "boom", "name": "wf_explode", "after": ["first"]},
			{"id": "last", "name": "wf_double", "after": ["boom"]}]}`)
		id := created["id"].(string)
		got := api.awaitWorkflow(id, "failed", "completed", "canceled")
		steps, _ := got["steps"].([]any)
		boom, _ := steps[1].(map[string]any)
		last, _ := steps[2].(map[string]any)
		if got["status"] != "failed" || boom["status"] != "failed" || !strings.Contains(fmt.Sprint(boom["error"]), "explode broke") || last["status"] != "canceled" || got["result"] != nil {
			t.Fatalf("failed workflow = %v", got)
		}
		r.setFail("explode", false)
		after := api.want(http.StatusOK, "POST", "/api/v1/workflows/"+id+"/retry", "")
		if after["status"] == "failed" {
			t.Fatalf("after the retry = %v; want it running again", after)
		}
		if got := api.awaitWorkflow(id, "completed", "failed"); got["status"] != "completed" || got["result"] != float64(20) {
			t.Fatalf("retried workflow = %v; want completed with 20", got)
		}

	})
}

// A cancel over HTTP cancels the steps not yet run, its first step's
// pending job with them, and answers the workflow canceled.
func TestWorkflowAPI_CancelOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		api := serveAPI(t, runtime.NewInspector(c, registerWF), runtime.APIOptions{})
		created := api.want(http.StatusCreated, "POST", "/api/v1/workflows", `{"steps": [
			{"id": "half", "name": "wf_right", "args": "abcd"},
			{"id": "twice", "name": "wf_double", "after": ["half"]}]}`)
		id := created["id"].(string)
		if got := api.want(http.StatusOK, "GET", "/api/v1/workflows/"+id, ""); got["status"] != "pending" {
			t.Fatalf("a workflow whose first step no worker took yet = %v; want pending", got)
		}
		canceled := api.want(http.StatusOK, "POST", "/api/v1/workflows/"+id+"/cancel", "")
		if canceled["status"] != "canceled" {
			t.Fatalf("after the cancel = %v", canceled)
		}
		for _, s := range canceled["steps"].([]any) {
			if st := s.(map[string]any)["status"]; st != "canceled" {
				t.Fatalf("after the cancel, steps = %v; want every one canceled", canceled["steps"])
			}
		}
	})
}

// The command line shows a workflow and its steps, a step's job names its
// workflow, and cancel and retry act on it: the retried step runs on a
// worker, and the workflow completes with its result.
func TestCLI_WorkflowShowCancelRetry(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	c := connect(t, a.env["REDIS_URL"], runtime.WithNamespace(a.env["BANANAS_NAMESPACE"]))
	id, err := quickstart.CountWords.With(c).Step(quickstart.Text{Body: "a b c"}).Enqueue(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	out := a.ok("workflow", id)
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "workflow "+id+": pending") || len(lines) < 4 {
		t.Fatalf("workflow %s = %q", id, out)
	}
	row := strings.Fields(lines[3])
	if len(row) != 6 || row[0] != "count_words" || row[1] != "count_words" || row[3] != "pending" {
		t.Fatalf("the step's row = %q", lines[3])
	}
	if job := a.ok("job", row[2]); !strings.Contains(job, "workflow ") || !strings.Contains(job, id) {
		t.Fatalf("job %s = %q; want its workflow %s", row[2], job, id)
	}
	if out := a.ok("workflow", "cancel", id); !strings.HasPrefix(out, "canceled workflow "+id) || !strings.Contains(out, ": canceled (") {
		t.Fatalf("workflow cancel = %q", out)
	}
	if out := a.ok("workflow", "retry", id); !strings.HasPrefix(out, "workflow "+id+": 1 step(s) run again") {
		t.Fatalf("workflow retry = %q", out)
	}
	a.background("worker")
	waitFor(t, 20*time.Second, "the retried workflow to complete", func() bool {
		return strings.HasPrefix(a.ok("workflow", id), "workflow "+id+": completed")
	})
	var w struct {
		Status string
		Result int
	}
	if err := json.Unmarshal([]byte(a.ok("workflow", id, "--json")), &w); err != nil || w.Result != 3 {
		t.Fatalf("workflow --json = %+v, %v; want result 3", w, err)
	}
	if code, _, errOut := a.run("workflow", "01M84ZSHR0JRGTE9KQMVTY94SD"); code != 1 || !strings.Contains(errOut, "workflow not found") {
		t.Fatalf("an unknown workflow: exit %d, %q", code, errOut)
	}
}

// No workflow submission, however hostile, panics the server or gets a 5xx.
func FuzzAPI_WorkflowSubmitNeverFailsTheServer(f *testing.F) {
	for _, seed := range []string{
		diamondJSON, `{"steps":[{"id":"a","name":"wf_split","args":"x"},{"id":"b","name":"wf_join","after":["a"]}]}`,
		`{"steps":[{"id":"a","name":"wf_split"}]}`, `{"steps":[{"id":"a","name":"wf_split","args":null}]}`, `{"steps":null}`,
		`{"steps":[{"id":"a","name":"wf_double","args":1e400}]}`, `{"steps":[{"id":"a","name":"wf_split","args":"x","after":[]}]}`,
		`{"steps":[{"id":"a","name":"wf_split","args":"x"},{"id":"b","name":"wf_left","after":["a","a"]}]}`,
		`{"steps":[{"id":"{}","name":"wf_split","args":"x"}]}`, `{"steps":[{"id":"a","name":"wf_join","args":[[[[[[[[[[]]]]]]]]]]}]}`,
		`{"steps":[{"id":"a","name":"wf_join","after":["a"]}]}`, `{"steps":[{}]}`, `{"steps":{}}`,
	} {
		f.Add(seed)
	}
	c, err := runtime.Connect(context.Background(), "mem://", runtime.WithNamespace(redistest.Namespace(f)))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })
	h := runtime.APIHandler(runtime.NewInspector(c, registerWF), runtime.APIOptions{})
	f.Fuzz(func(t *testing.T, body string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "http://127.0.0.1/api/v1/workflows", bytes.NewBufferString(body))
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
