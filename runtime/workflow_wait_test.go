package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

// Approval is a signal's payload in the wait tests.
type Approval struct {
	By string `json:"by" msgpack:"by"`
}

var wfShip = runtime.NewTask[Approval, string]("wf_ship", runtime.Route("wfb"))

// eachBackendAndCluster runs f on the embedded server, a redis-server and a 3-master
// cluster.
func eachBackendAndCluster(t *testing.T, f func(t *testing.T, c *runtime.Client)) {
	t.Run("backends", func(t *testing.T) { eachBackend(t, f) })
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		f(t, connect(t, redistest.SharedCluster(t).URL()))
	})
}

// stepOf is the step labelled label of w.
func stepOf(t *testing.T, w *bananastype.Workflow, label string) bananastype.WorkflowStep {
	t.Helper()
	for _, s := range w.Steps {
		if s.Label == label {
			return s
		}
	}
	t.Fatalf("workflow %s has no step %s: %+v", w.ID, label, w.Steps)
	return bananastype.WorkflowStep{}
}

func workflowOf(t *testing.T, c *runtime.Client, id string) *bananastype.Workflow {
	t.Helper()
	w, err := c.Workflow(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Sleep: the next step starts its duration after the step before it
// completed, with that step's result, and the workflow shows the timer.
func TestWorkflowSleep_TheNextStepStartsItsDurationAfterThePreviousCompleted(t *testing.T) {
	t.Parallel()
	eachBackendAndCluster(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		var mu sync.Mutex
		var aDone, bStart time.Time
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: wfCrashRoutes}))
		runtime.Handle(w, wfStepA, func(_ context.Context, x int) (int, error) {
			mu.Lock()
			aDone = time.Now()
			mu.Unlock()
			return x + 1, nil
		})
		runtime.Handle(w, wfStepB, func(_ context.Context, x int) (int, error) {
			mu.Lock()
			bStart = time.Now()
			mu.Unlock()
			return x * 10, nil
		})
		startWorker(t, w)
		last := runtime.Then(runtime.Sleep(wfStepA.With(c).Step(1), 700*time.Millisecond), wfStepB.With(c))
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the timer to be armed", func() bool {
			return stepOf(t, workflowOf(t, c, id), "sleep").Status == runtime.StatusScheduled
		})
		got, err := last.Await(ctx, id)
		if err != nil || got != 20 {
			t.Fatalf("Await = %d, %v; want (1+1)*10", got, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if gap := bStart.Sub(aDone); gap < 700*time.Millisecond {
			t.Fatalf("b started %s after a completed; want at least the sleep's 700ms", gap)
		}
		s := stepOf(t, workflowOf(t, c, id), "sleep")
		if s.Status != runtime.StatusCompleted || s.Wait == nil || s.Wait.Kind != bananastype.WaitTimer || s.Wait.Due.IsZero() || s.Wait.Duration != 700*time.Millisecond || s.JobID != "" {
			t.Fatalf("sleep step = %+v (wait %+v); want completed, a timer with its due time and no job", s, s.Wait)
		}
	})
}

// WaitSignal: the step after the wait starts with the signal's payload; a
// second signal, one of no wait's name, one of another type and one to no
// workflow are refused; the workflow shows the wait and when its signal
// came.
func TestWorkflowSignal_TheSignalsPayloadIsTheNextStepsArgs(t *testing.T) {
	t.Parallel()
	eachBackendAndCluster(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: wfCrashRoutes}))
		runtime.Handle(w, wfShip, func(_ context.Context, a Approval) (string, error) { return "shipped by " + a.By, nil })
		startWorker(t, w)
		last := runtime.Then(runtime.WaitSignal[Approval]("approval", time.Hour), wfShip.With(c))
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s := stepOf(t, workflowOf(t, c, id), "approval")
		if s.Status != runtime.StatusPending || s.Wait == nil || s.Wait.Kind != bananastype.WaitSignal || s.Wait.Signal != "approval" || s.Wait.Due.IsZero() || !s.Wait.Received.IsZero() {
			t.Fatalf("wait step = %+v (wait %+v); want pending, armed with its timeout's due time", s, s.Wait)
		}
		if err := c.Signal(ctx, id, "approval", 42); err == nil {
			t.Fatal("a payload of another type than the wait's was taken")
		}
		if err := c.Signal(ctx, id, "nope", Approval{}); !errors.Is(err, runtime.ErrNoSuchWait) {
			t.Fatalf("a signal of no wait's name: %v; want ErrNoSuchWait", err)
		}
		if err := c.Signal(ctx, "01NOSUCHWORKFLOW", "approval", Approval{}); !errors.Is(err, runtime.ErrWorkflowNotFound) {
			t.Fatalf("a signal to no workflow: %v; want ErrWorkflowNotFound", err)
		}
		if err := c.Signal(ctx, id, "approval", &Approval{By: "ana"}); err != nil {
			t.Fatal(err)
		}
		got, err := last.Await(ctx, id)
		if err != nil || got != "shipped by ana" {
			t.Fatalf("Await = %q, %v", got, err)
		}
		if err := c.Signal(ctx, id, "approval", Approval{By: "bob"}); !errors.Is(err, runtime.ErrWrongState) {
			t.Fatalf("a signal to a completed workflow: %v; want ErrWrongState", err)
		}
		s = stepOf(t, workflowOf(t, c, id), "approval")
		if s.Status != runtime.StatusCompleted || s.Wait.Received.IsZero() {
			t.Fatalf("wait step after its signal = %+v (wait %+v); want completed, received", s, s.Wait)
		}
	})
}

// A wait that gets no signal within its timeout fails the workflow with
// ErrTimeout naming the wait; a retry arms it again, and a signal then
// completes it.
func TestWorkflowSignal_AWaitsTimeoutFailsTheWorkflowAndARetryArmsItAgain(t *testing.T) {
	t.Parallel()
	eachBackendAndCluster(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: wfCrashRoutes}))
		runtime.Handle(w, wfShip, func(_ context.Context, a Approval) (string, error) { return "shipped by " + a.By, nil })
		startWorker(t, w)
		last := runtime.Then(runtime.WaitSignal[Approval]("approval", 300*time.Millisecond), wfShip.With(c))
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = last.Await(ctx, id)
		var we *runtime.WorkflowError
		if !errors.Is(err, runtime.ErrTimeout) || !errors.As(err, &we) || we.Step != "approval" {
			t.Fatalf("Await = %v; want a WorkflowError of step approval matching ErrTimeout", err)
		}
		if err := c.Signal(ctx, id, "approval", Approval{By: "late"}); !errors.Is(err, runtime.ErrWrongState) {
			t.Fatalf("a signal to the failed workflow: %v; want ErrWrongState", err)
		}
		if n, err := c.RetryWorkflow(ctx, id); err != nil || n == 0 {
			t.Fatalf("RetryWorkflow = %d, %v", n, err)
		}
		if err := c.Signal(ctx, id, "approval", Approval{By: "ana"}); err != nil {
			t.Fatalf("a signal after the retry: %v", err)
		}
		if got, err := last.Await(ctx, id); err != nil || got != "shipped by ana" {
			t.Fatalf("Await after the retry = %q, %v", got, err)
		}
	})
}

// Cancel reaches the armed timers and waits: they are canceled, fire
// nothing, and a signal is refused.
func TestWorkflowCancel_CancelsItsTimersAndWaits(t *testing.T) {
	t.Parallel()
	eachBackendAndCluster(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		var mu sync.Mutex
		runs := 0
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: wfCrashRoutes}))
		runtime.Handle(w, wfStepA, func(_ context.Context, x int) (int, error) { return x, nil })
		runtime.Handle(w, wfStepB, func(_ context.Context, x int) (int, error) { mu.Lock(); runs++; mu.Unlock(); return x, nil })
		runtime.Handle(w, wfStepC, func(_ context.Context, x int) (int, error) { mu.Lock(); runs++; mu.Unlock(); return x, nil })
		startWorker(t, w)
		slept := runtime.Then(runtime.Sleep(wfStepA.With(c).Step(1), 400*time.Millisecond), wfStepB.With(c))
		waited := runtime.Then(runtime.WaitSignal[int]("go", 400*time.Millisecond), wfStepC.With(c))
		id, err := runtime.Gather(slept, waited).Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the timer to be armed", func() bool {
			return stepOf(t, workflowOf(t, c, id), "sleep").Status == runtime.StatusScheduled
		})
		if st, err := c.CancelWorkflow(ctx, id); err != nil || st != "canceled" {
			t.Fatalf("CancelWorkflow = %s, %v", st, err)
		}
		wf := workflowOf(t, c, id)
		for _, l := range []string{"sleep", "go"} {
			if s := stepOf(t, wf, l); s.Status != runtime.StatusCanceled {
				t.Fatalf("step %s after the cancel: %s; want canceled", l, s.Status)
			}
		}
		if err := c.Signal(ctx, id, "go", 1); !errors.Is(err, runtime.ErrWrongState) {
			t.Fatalf("a signal to a canceled workflow: %v; want ErrWrongState", err)
		}
		// Past both due times, with the keeper looking: nothing fired.
		time.Sleep(800 * time.Millisecond)
		if err := runtime.CheckWorkflow(ctx, c, id); err != nil {
			t.Fatal(err)
		}
		wf = workflowOf(t, c, id)
		mu.Lock()
		defer mu.Unlock()
		if runs != 0 || wf.Status != "canceled" || stepOf(t, wf, "go").Status != runtime.StatusCanceled {
			t.Fatalf("after the due times: %d steps ran, workflow %s; want none, canceled", runs, wf.Status)
		}
	})
}

// A worker process SIGKILLed while a timer of its workflow waits, and the
// Redis server restarted (killed, its append-only file kept): a worker here
// fires the timer once, not before its due time, and the workflow
// completes with each step run once.
func TestWorkflowSleep_FiresOnceAcrossAWorkerKillAndARedisRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.StartPersistent(t)
	ns := redistest.Namespace(t)
	c := connect(t, srv.URL(), runtime.WithNamespace(ns))
	ctx := ctxT(t)
	last := runtime.Then(runtime.Sleep(wfStepA.With(c).Step(1), 1500*time.Millisecond), wfStepB.With(c))
	id, err := last.Enqueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	killWorkerWhenItSays(t, srv.URL(), ns, "armed", "BANANAS_TEST_WORKER_TASK=sleep", "BANANAS_TEST_WORKFLOW="+id)
	due := stepOf(t, workflowOf(t, c, id), "sleep").Wait.Due
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var starts []time.Time
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: wfCrashRoutes}))
	runtime.Handle(w, wfStepA, func(_ context.Context, x int) (int, error) { return 0, errors.New("a ran twice") })
	runtime.Handle(w, wfStepB, func(_ context.Context, x int) (int, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return x * 10, nil
	})
	startWorker(t, w)
	if got, err := last.Await(ctx, id); err != nil || got != 20 {
		t.Fatalf("Await = %d, %v; want 20", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(starts) != 1 || starts[0].Before(due) {
		t.Fatalf("b ran at %v; want once, not before the timer's due time %v", starts, due)
	}
}

// runSleepWorkerProcess runs step a of the workflow of
// BANANAS_TEST_WORKFLOW, says "armed" once its timer is, and hangs until
// it is killed.
func runSleepWorkerProcess(ctx context.Context, c *runtime.Client) {
	w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: wfCrashRoutes, Lease: 500 * time.Millisecond, Logger: quiet()})
	runtime.Handle(w, wfStepA, func(_ context.Context, x int) (int, error) { return x + 1, nil })
	go func() {
		for {
			wf, err := c.Workflow(ctx, os.Getenv("BANANAS_TEST_WORKFLOW"))
			if err == nil && len(wf.Steps) > 1 && wf.Steps[1].Status == runtime.StatusScheduled {
				fmt.Println("armed")
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	_ = w.Run(ctx)
}

// Signals over HTTP: a payload whose field does not fit the wait's type is
// a 400 naming the field; a name no wait has, or no workflow, a 404; a
// signal taken a 202, and the step after the wait runs with it; a second
// one, with the wait done, a 409. GET shows the wait, received.
func TestWorkflowSignalAPI_TheWaitsTypeChecksThePayload(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: wfCrashRoutes}))
		runtime.Handle(w, wfShip, func(_ context.Context, a Approval) (string, error) { return "shipped by " + a.By, nil })
		startWorker(t, w)
		api := serveAPI(t, w.Inspector(), runtime.APIOptions{})
		last := runtime.Then(runtime.WaitSignal[Approval]("approval", time.Hour), wfShip.With(c))
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		path := "/api/v1/workflows/" + id + "/signals/approval"
		got := api.want(http.StatusBadRequest, "POST", path, `{"by": 3}`)
		if msg := fmt.Sprint(got); !strings.Contains(msg, "by") {
			t.Fatalf("400 = %v; want it to name the field by", got)
		}
		api.want(http.StatusBadRequest, "POST", path, `{"who": "ana"}`)
		api.want(http.StatusNotFound, "POST", "/api/v1/workflows/"+id+"/signals/nope", `{"by": "ana"}`)
		api.want(http.StatusNotFound, "POST", "/api/v1/workflows/01NOSUCHWORKFLOW/signals/approval", `{"by": "ana"}`)
		wf := api.want(http.StatusOK, "GET", "/api/v1/workflows/"+id, "")
		steps, _ := wf["steps"].([]any)
		first, _ := steps[0].(map[string]any)
		wait, _ := first["wait"].(map[string]any)
		if first["id"] != "approval" || wait["kind"] != "signal" || wait["signal"] != "approval" || wait["due"] == nil || wait["received"] != nil {
			t.Fatalf("the wait step = %v; want its wait: signal approval, due, not received", first)
		}
		if sent := api.want(http.StatusAccepted, "POST", path, `{"by": "ana"}`); sent["workflow"] != id || sent["signal"] != "approval" {
			t.Fatalf("202 = %v", sent)
		}
		if res, err := last.Await(ctx, id); err != nil || res != "shipped by ana" {
			t.Fatalf("Await = %q, %v", res, err)
		}
		api.want(http.StatusConflict, "POST", path, `{"by": "bob"}`)
		wf = api.want(http.StatusOK, "GET", "/api/v1/workflows/"+id, "")
		steps, _ = wf["steps"].([]any)
		first, _ = steps[0].(map[string]any)
		if wait, _ := first["wait"].(map[string]any); wait["received"] == nil || first["status"] != "completed" {
			t.Fatalf("the wait step after its signal = %v; want completed, received", first)
		}
	})
}

// `app workflow signal ID NAME JSON` sends a signal; `app workflow ID`
// shows the wait, its due time and when its signal came. Bad JSON is a
// usage error, and so is a name no wait has (exit 2, naming it).
func TestWorkflowSignalCLI_SendsTheSignalAndShowsTheWait(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	c := connect(t, a.env["REDIS_URL"], runtime.WithNamespace(a.env["BANANAS_NAMESPACE"]))
	ctx := ctxT(t)
	last := runtime.Then(runtime.WaitSignal[Approval]("approval", time.Hour), wfShip.With(c))
	id, err := last.Enqueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out := a.ok("workflow", id); !strings.Contains(out, "WAIT") || !strings.Contains(out, "signal approval") || !strings.Contains(out, "1h0m0s") {
		t.Fatalf("workflow ID printed:\n%s\nwant the wait approval with its timeout", out)
	}
	if code, _, errOut := a.run("workflow", "signal", id, "approval", "{nope"); code != 2 || !strings.Contains(errOut, "JSON") {
		t.Fatalf("bad JSON: exit %d, %q; want 2 naming the JSON", code, errOut)
	}
	if code, _, errOut := a.run("workflow", "signal", id, "nope", `{"by":"ana"}`); code != 2 || !strings.Contains(errOut, "nope") {
		t.Fatalf("a name no wait has: exit %d, %q; want 2 naming it", code, errOut)
	}
	if out := a.ok("workflow", "signal", id, "approval", `{"by":"ana"}`); !strings.Contains(out, "approval") {
		t.Fatalf("signal printed %q", out)
	}
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: wfCrashRoutes}))
	runtime.Handle(w, wfShip, func(_ context.Context, a Approval) (string, error) { return "shipped by " + a.By, nil })
	startWorker(t, w)
	if res, err := last.Await(ctx, id); err != nil || res != "shipped by ana" {
		t.Fatalf("Await = %q, %v", res, err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(a.ok("workflow", id, "--json")), &got); err != nil {
		t.Fatal(err)
	}
	steps, _ := got["steps"].([]any)
	first, _ := steps[0].(map[string]any)
	if wait, _ := first["wait"].(map[string]any); wait["received"] == nil {
		t.Fatalf("workflow --json: %v; want the wait received", first)
	}
}

// A wait holds no worker slot: with 1,000 workflows waiting for their
// signal, a worker of concurrency 1 runs other jobs, and the workflows
// signalled then complete.
func TestWorkflowSignal_AThousandWaitingWorkflowsHoldNoSlot(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	ctx := ctxT(t)
	last := runtime.Then(runtime.WaitSignal[Approval]("approval", 0), wfShip.With(c))
	ids := make([]string, 1000)
	for i := range ids {
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: wfCrashRoutes, Concurrency: 1}))
	runtime.Handle(w, wfStepA, func(_ context.Context, x int) (int, error) { return x + 1, nil })
	runtime.Handle(w, wfShip, func(_ context.Context, a Approval) (string, error) { return "shipped by " + a.By, nil })
	startWorker(t, w)
	for i := range 20 {
		got, err := wfStepA.With(c).Call(ctx, i)
		if err != nil || got != i+1 {
			t.Fatalf("job %d beside the waiting workflows: %d, %v", i, got, err)
		}
	}
	for _, id := range ids[:3] {
		if err := c.Signal(ctx, id, "approval", Approval{By: "ana"}); err != nil {
			t.Fatal(err)
		}
		if res, err := last.Await(ctx, id); err != nil || res != "shipped by ana" {
			t.Fatalf("Await = %q, %v", res, err)
		}
	}
	if wf := workflowOf(t, c, ids[999]); wf.Status != "pending" || stepOf(t, wf, "approval").Status != runtime.StatusPending {
		t.Fatalf("an unsignalled workflow: %s; want pending, waiting", wf.Status)
	}
}
