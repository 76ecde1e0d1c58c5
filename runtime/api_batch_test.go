package runtime_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// batchBody is a POST /api/v1/jobs/batch body of the given submissions.
func batchBody(subs ...string) string {
	return `{"jobs":[` + strings.Join(subs, ",") + `]}`
}

// storedJobs counts the jobs stored on every route, pending or scheduled.
func storedJobs(t *testing.T, in *admin.Inspector) int64 {
	t.Helper()
	routes, err := in.Routes(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, r := range routes {
		n += r.Pending() + r.Scheduled
	}
	return n
}

func batchIDs(t *testing.T, answer map[string]any, want int) []string {
	t.Helper()
	raw, _ := answer["ids"].([]any)
	if len(raw) != want {
		t.Fatalf("answer %v: want %d ids", answer, want)
	}
	ids := make([]string, len(raw))
	for i, v := range raw {
		ids[i], _ = v.(string)
	}
	return ids
}

// A batch of jobs of several tasks, routes, priorities and delays is
// enqueued whole, and the ids come back in the order of the jobs.
func TestAPI_BatchEnqueuesEveryJobAndAnswersTheirIdsInOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		in := runtime.NewInspector(c, testtasks.Register)
		a := serveAPI(t, in, runtime.APIOptions{})
		subs := []string{
			`{"name":"t_echo","args":{"Text":"j0","N":0}}`,
			`{"name":"t_note","args":{"Text":"j1","N":1},"route":"batch-b"}`,
			`{"name":"t_echo","args":{"Text":"j2","N":2},"priority":"high"}`,
			`{"name":"t_other","args":{"Text":"j3","N":3},"route":"batch-b","delay":"1h"}`,
			`{"name":"t_echo","args":{"Text":"j4","N":4}}`,
			`{"name":"t_tick","route":"batch-c","priority":"low"}`,
		}
		ids := batchIDs(t, a.want(http.StatusCreated, "POST", "/api/v1/jobs/batch", batchBody(subs...)), len(subs))
		wantTask := []string{"t_echo", "t_note", "t_echo", "t_other", "t_echo", "t_tick"}
		wantRoute := []string{"default", "batch-b", "default", "batch-b", "default", "batch-c"}
		wantStatus := []string{"pending", "pending", "pending", "scheduled", "pending", "pending"}
		for i, id := range ids {
			job := a.want(http.StatusOK, "GET", "/api/v1/jobs/"+id, "")
			args, _ := job["args"].(map[string]any)
			if job["task"] != wantTask[i] || job["route"] != wantRoute[i] || job["status"] != wantStatus[i] {
				t.Errorf("ids[%d] = %s is %v; want a %s %s job on route %s", i, id, job, wantStatus[i], wantTask[i], wantRoute[i])
			}
			if wantTask[i] != "t_tick" && (args["Text"] != fmt.Sprintf("j%d", i) || args["N"] != float64(i)) {
				t.Errorf("ids[%d] = %s has args %v; want those of job %d", i, id, args, i)
			}
		}
		if n := storedJobs(t, in); n != int64(len(subs)) {
			t.Errorf("%d jobs stored; want %d", n, len(subs))
		}
	})
}

// A batch over the limit is refused as a whole, naming the limit.
func TestAPI_BatchOverTheLimitIsRefusedNamingIt(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		in := runtime.NewInspector(c, testtasks.Register)
		a := serveAPI(t, in, runtime.APIOptions{})
		subs := make([]string, 1001)
		for i := range subs {
			subs[i] = `{"name":"t_echo","args":{"Text":"x"}}`
		}
		e := a.want(http.StatusBadRequest, "POST", "/api/v1/jobs/batch", batchBody(subs...))
		if msg, _ := e["error"].(string); e["field"] != "jobs" || !strings.Contains(msg, "1001") || !strings.Contains(msg, "limit of 1000") {
			t.Errorf("1,001 jobs: 400 %v; want an error about jobs naming the limit of 1000", e)
		}
		batchIDs(t, a.want(http.StatusCreated, "POST", "/api/v1/jobs/batch", batchBody(subs[:1000]...)), 1000)
		if n := storedJobs(t, in); n != 1000 {
			t.Errorf("%d jobs stored; want the 1,000 of the batch at the limit", n)
		}
	})
}

// Jobs refused for any reason — here bad args at index 3 and an unknown key
// at index 7 — are all listed by index, field and error, and not one job of
// the batch is enqueued.
func TestAPI_BatchWithBadJobsListsEveryOneAndEnqueuesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		in := runtime.NewInspector(c, testtasks.Register)
		a := serveAPI(t, in, runtime.APIOptions{})
		subs := make([]string, 10)
		for i := range subs {
			subs[i] = fmt.Sprintf(`{"name":"t_echo","args":{"Text":"j%d","N":%d},"route":"r%d"}`, i, i, i%3)
		}
		subs[3] = `{"name":"t_echo","args":{"Text":"j3","N":"three"}}`
		subs[7] = `{"name":"t_echo","args":{"Text":"j7"},"prio":"high"}`
		e := a.want(http.StatusBadRequest, "POST", "/api/v1/jobs/batch", batchBody(subs...))
		jobs, _ := e["jobs"].([]any)
		if len(jobs) != 2 {
			t.Fatalf("answer %v; want jobs listing the 2 refused jobs", e)
		}
		for k, want := range []struct {
			index       float64
			field, says string
		}{{3, "args", `"N"`}, {7, "prio", "unknown field"}} {
			got, _ := jobs[k].(map[string]any)
			if msg, _ := got["error"].(string); got["index"] != want.index || got["field"] != want.field || !strings.Contains(msg, want.says) {
				t.Errorf("jobs[%d] = %v; want index %v, field %q, an error saying %s", k, got, want.index, want.field, want.says)
			}
		}
		if n := storedJobs(t, in); n != 0 {
			t.Errorf("%d jobs stored after a refused batch; want none", n)
		}
		page, err := in.Jobs(ctxT(t), admin.JobQuery{})
		if err != nil || len(page.Jobs) != 0 {
			t.Errorf("jobs listed after a refused batch: %v %v; want none", page.Jobs, err)
		}

		// Every kind of refusal of one job is named with its field.
		for _, tc := range []struct{ sub, field, says string }{
			{`{"name":"nope","args":{}}`, "name", "no task named"},
			{`{"args":{"Text":"x"}}`, "name", "name"},
			{`{"name":7,"args":{}}`, "name", "want a string"},
			{`{"name":"t_echo","args":{"text":"x"}}`, "args", `"text"`},
			{`{"name":"t_echo"}`, "args", "no args"},
			{`{"name":"t_echo","args":null}`, "args", "null"},
			{`{"name":null,"args":{}}`, "name", "want a string"},
			{`{"name":"t_echo","args":{},"route":"a b"}`, "route", "route"},
			{`{"name":"t_echo","args":{},"priority":"urgent"}`, "priority", "high, normal or low"},
			{`{"name":"t_echo","args":{},"delay":"soon"}`, "delay", "duration"},
			{`"t_echo"`, "", "want a submission"},
			{`null`, "", "want a submission"},
		} {
			e := a.want(http.StatusBadRequest, "POST", "/api/v1/jobs/batch", batchBody(`{"name":"t_echo","args":{}}`, tc.sub))
			jobs, _ := e["jobs"].([]any)
			got, _ := func() (map[string]any, bool) {
				if len(jobs) != 1 {
					return nil, false
				}
				m, ok := jobs[0].(map[string]any)
				return m, ok
			}()
			if msg, _ := got["error"].(string); got["index"] != float64(1) || got["field"] != tc.field || !strings.Contains(msg, tc.says) {
				t.Errorf("batch with %s: 400 %v; want jobs[0] about index 1, field %q, saying %s", tc.sub, e, tc.field, tc.says)
			}
		}
		if n := storedJobs(t, in); n != 0 {
			t.Errorf("%d jobs stored after refused batches; want none", n)
		}
	})
}

// A body that is not a batch is a 400 naming what is wrong.
func TestAPI_BatchBodyThatIsNotABatchIs400NamingTheField(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		in := runtime.NewInspector(c, testtasks.Register)
		a := serveAPI(t, in, runtime.APIOptions{})
		for _, tc := range []struct{ body, field, says string }{
			{`{"jobs":[{"name":"t_echo","args":{}}],"atomic":true}`, "atomic", "unknown field"},
			{`{"Jobs":[{"name":"t_echo","args":{}}]}`, "Jobs", "unknown field"},
			{`{}`, "jobs", "missing"},
			{`{"jobs":{"name":"t_echo","args":{}}}`, "jobs", "want an array"},
			{`{"jobs":null}`, "jobs", "want an array"},
			{`{"jobs":[]}`, "jobs", "empty"},
			{`[{"name":"t_echo","args":{}}]`, "", "JSON"},
			{`null`, "", "null"},
			{``, "", "empty body"},
			{`name=t_echo`, "", "not JSON"},
			{`{"jobs":[{"name":"t_echo","args":{}}]} {}`, "", "more than one"},
			{`{"jobs":[`, "", "JSON"},
		} {
			e := a.want(http.StatusBadRequest, "POST", "/api/v1/jobs/batch", tc.body)
			if msg, _ := e["error"].(string); (e["field"] != nil || tc.field != "") && e["field"] != tc.field || !strings.Contains(msg, tc.says) {
				t.Errorf("body %s: 400 %v; want field %q, an error saying %s", tc.body, e, tc.field, tc.says)
			}
		}
		if n := storedJobs(t, in); n != 0 {
			t.Errorf("%d jobs stored; want none", n)
		}
	})
}

// Duplicates of a unique task are not enqueued a second time: the 409 lists
// them with the id of the job that holds each one's key, and ids has every
// job's id.
func TestAPI_BatchDuplicatesOfAUniqueTaskAreA409NamingTheirHolders(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		once := runtime.NewTask[testtasks.Msg, runtime.None]("t_batch_once", runtime.Unique(time.Hour))
		in := runtime.NewInspector(c, func(w *runtime.Worker) {
			runtime.Handle(w, once, func(context.Context, testtasks.Msg) (runtime.None, error) { return runtime.None{}, nil })
		})
		a := serveAPI(t, in, runtime.APIOptions{})
		first := batchIDs(t, a.want(http.StatusCreated, "POST", "/api/v1/jobs/batch", batchBody(`{"name":"t_batch_once","args":{"Text":"a"}}`)), 1)
		e := a.want(http.StatusConflict, "POST", "/api/v1/jobs/batch", batchBody(
			`{"name":"t_batch_once","args":{"Text":"b"}}`, `{"name":"t_batch_once","args":{"Text":"a"}}`))
		ids := batchIDs(t, e, 2)
		jobs, _ := e["jobs"].([]any)
		dup, _ := func() (map[string]any, bool) {
			if len(jobs) != 1 {
				return nil, false
			}
			m, ok := jobs[0].(map[string]any)
			return m, ok
		}()
		if msg, _ := dup["error"].(string); ids[1] != first[0] || ids[0] == "" || ids[0] == first[0] || dup["index"] != float64(1) || !strings.Contains(msg, first[0]) {
			t.Errorf("409 %v; want ids [new, %s] and jobs naming index 1 and its holder", e, first[0])
		}
		if n := storedJobs(t, in); n != 2 {
			t.Errorf("%d jobs stored; want 2 (a, then b)", n)
		}
	})
}

// When Redis refuses the writes of one route part-way through a batch of
// several routes, the answer is a 500 that says which jobs were stored (the
// routes written before it) and lists every other job.
func TestAPI_BatchThatFailsPartWaySaysWhichJobsWereStored(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		broken := runtime.QueueOf(c).Keys("batch-broken").List(runtime.PriorityNormal)
		if err := c.Redis().Set(ctx, broken, "not a list", 0).Err(); err != nil {
			t.Fatal(err)
		}
		in := runtime.NewInspector(c, testtasks.Register)
		a := serveAPI(t, in, runtime.APIOptions{})
		e := a.want(http.StatusInternalServerError, "POST", "/api/v1/jobs/batch", batchBody(
			`{"name":"t_echo","args":{"Text":"j0"},"route":"batch-ok"}`,
			`{"name":"t_echo","args":{"Text":"j1"},"route":"batch-broken"}`,
			`{"name":"t_echo","args":{"Text":"j2"},"route":"batch-ok"}`,
			`{"name":"t_echo","args":{"Text":"j3"},"route":"batch-later"}`,
		))
		ids := batchIDs(t, e, 4)
		if ids[0] == "" || ids[2] == "" || ids[1] != "" || ids[3] != "" {
			t.Fatalf("500 %v; want ids of jobs 0 and 2 (route batch-ok, written first) and none for 1 and 3", e)
		}
		for _, id := range []string{ids[0], ids[2]} {
			a.want(http.StatusOK, "GET", "/api/v1/jobs/"+id, "")
		}
		jobs, _ := e["jobs"].([]any)
		if len(jobs) != 2 || jobs[0].(map[string]any)["index"] != float64(1) || jobs[1].(map[string]any)["index"] != float64(3) {
			t.Errorf("500 %v; want jobs listing indexes 1 and 3", e)
		}
		if err := c.Redis().Del(ctx, broken).Err(); err != nil {
			t.Fatal(err)
		}
		if n := storedJobs(t, in); n != 2 {
			t.Errorf("%d jobs stored; want the 2 of route batch-ok", n)
		}
	})
}
