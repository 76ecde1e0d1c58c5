package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

// Tasks of the workflow tests: a document split in two halves, each
// measured, the measures joined.
var (
	wfSplit   = runtime.NewTask[string, string]("wf_split")
	wfLeft    = runtime.NewTask[string, int]("wf_left")
	wfRight   = runtime.NewTask[string, int]("wf_right", runtime.Route("wf_other"))
	wfJoin    = runtime.NewTask[[]int, string]("wf_join")
	wfDouble  = runtime.NewTask[int, int]("wf_double")
	wfExplode = runtime.NewTask[int, int]("wf_explode", runtime.MaxRetries(0))
)

// wfRuns counts the runs of each task and remembers their args.
type wfRuns struct {
	mu   sync.Mutex
	runs map[string]int
	args map[string][]string
	fail map[string]bool // tasks that fail until told otherwise
}

func newWFRuns() *wfRuns {
	return &wfRuns{runs: map[string]int{}, args: map[string][]string{}, fail: map[string]bool{}}
}

func (r *wfRuns) ran(task string, args any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs[task]++
	r.args[task] = append(r.args[task], fmt.Sprint(args))
	if r.fail[task] {
		return errors.New(task + " broke")
	}
	return nil
}

func (r *wfRuns) count(task string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[task]
}

func (r *wfRuns) setFail(task string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail[task] = on
}

func wfWorker(t *testing.T, c *runtime.Client, r *wfRuns) {
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"default", "wf_other"}, Concurrency: 8}))
	runtime.Handle(w, wfSplit, func(_ context.Context, doc string) (string, error) {
		return strings.ToUpper(doc), r.ran("split", doc)
	})
	runtime.Handle(w, wfLeft, func(_ context.Context, s string) (int, error) {
		return len(s), r.ran("left", s)
	})
	runtime.Handle(w, wfRight, func(_ context.Context, s string) (int, error) {
		return 2 * len(s), r.ran("right", s)
	})
	runtime.Handle(w, wfJoin, func(_ context.Context, xs []int) (string, error) {
		return fmt.Sprint(xs), r.ran("join", xs)
	})
	runtime.Handle(w, wfDouble, func(_ context.Context, x int) (int, error) {
		return 2 * x, r.ran("double", x)
	})
	runtime.Handle(w, wfExplode, func(_ context.Context, x int) (int, error) {
		return x, r.ran("explode", x)
	})
	startWorker(t, w)
}

// wfBackends runs f as parallel subtests against the embedded server, a
// real redis-server and a real 3-master cluster, each in its own namespace.
func wfBackends(t *testing.T, f func(t *testing.T, c *runtime.Client)) {
	t.Helper()
	t.Parallel()
	for _, name := range []string{"embedded", "redis", "cluster"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := "mem://"
			switch name {
			case "redis":
				url = redistest.Shared(t).URL()
			case "cluster":
				url = redistest.SharedCluster(t).URL()
			}
			f(t, connect(t, url))
		})
	}
}

func TestWorkflow_DiamondPassesResultsOnInOrder(t *testing.T) {
	wfBackends(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		r := newWFRuns()
		wfWorker(t, c, r)
		a := wfSplit.With(c).Step("abc")
		b, d := runtime.Then(a, wfLeft.With(c)), runtime.Then(a, wfRight.With(c))
		j := runtime.Then(runtime.Gather(b, d), wfJoin.With(c))
		id, err := j.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := j.Await(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got != "[3 6]" {
			t.Fatalf("result = %q, want [3 6]", got)
		}
		if n := r.count("split"); n != 1 {
			t.Fatalf("split ran %d times; one Step used twice is one step", n)
		}
		info, err := c.Workflow(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if info.Status != "completed" || len(info.Steps) != 5 {
			t.Fatalf("workflow = %+v", info)
		}
		for _, s := range info.Steps {
			if s.Status != runtime.StatusCompleted {
				t.Fatalf("step %s is %s", s.Label, s.Status)
			}
		}
		// The snapshot is the one the API shows: the final task and its
		// result as the JSON of the result's Go type.
		if info.Task != wfJoin.Name() || string(info.Result) != `"[3 6]"` {
			t.Fatalf("workflow's task and result = %s, %s; want %s, \"[3 6]\"", info.Task, info.Result, wfJoin.Name())
		}
	})
}

func TestWorkflow_DeadStepFailsItAndCancelsWhatCameAfterRetryRunsOnlyThose(t *testing.T) {
	wfBackends(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		r := newWFRuns()
		r.setFail("explode", true)
		wfWorker(t, c, r)
		first := wfDouble.With(c).Step(5)
		boom := runtime.Then(first, wfExplode.With(c))
		last := runtime.Then(runtime.Then(boom, wfDouble.With(c)), wfDouble.With(c))
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = last.Await(ctx, id)
		var we *runtime.WorkflowError
		if !errors.As(err, &we) || we.Step != "wf_explode" || !strings.Contains(err.Error(), "explode broke") {
			t.Fatalf("Await = %v; want a *WorkflowError naming wf_explode", err)
		}
		info, err := c.Workflow(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := []runtime.Status{runtime.StatusCompleted, runtime.StatusFailed, runtime.StatusCanceled, runtime.StatusCanceled}
		for k, s := range info.Steps {
			if s.Status != want[k] {
				t.Fatalf("step %d (%s) is %s, want %s", k, s.Label, s.Status, want[k])
			}
		}
		if info.Status != "failed" {
			t.Fatalf("status %s", info.Status)
		}
		r.setFail("explode", false)
		n, err := c.RetryWorkflow(ctx, id)
		if err != nil || n != 3 {
			t.Fatalf("RetryWorkflow = %d, %v; want 3 steps", n, err)
		}
		got, err := last.Await(ctx, id)
		if err != nil || got != 40 {
			t.Fatalf("Await after retry = %d, %v; want 40", got, err)
		}
		if d := r.count("double"); d != 3 {
			t.Fatalf("double ran %d times, want 3: the completed first step must not run again", d)
		}
		// The dead step ran again as its own job, replayed: no dead job of
		// it is left for a replay to run it a third time.
		if j := jobInfo(t, c, we.JobID); j.Status != runtime.StatusCompleted {
			t.Fatalf("the dead step's job after the retry: %s, want completed (replayed, not left dead)", j.Status)
		}
	})
}

func TestWorkflow_CancelCancelsWaitingAndRunningSteps(t *testing.T) {
	wfBackends(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		started := make(chan struct{}, 1)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 4}))
		slow := runtime.NewTask[int, int]("wf_slow")
		runtime.Handle(w, slow, func(ctx context.Context, x int) (int, error) {
			started <- struct{}{}
			<-ctx.Done()
			return 0, ctx.Err()
		})
		runtime.Handle(w, wfDouble, func(_ context.Context, x int) (int, error) { return 2 * x, nil })
		startWorker(t, w)
		last := runtime.Then(slow.With(c).Step(1), wfDouble.With(c))
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		recv(t, started, 10*time.Second, "the first step to start")
		if st, err := c.CancelWorkflow(ctx, id); err != nil || st != "canceled" {
			t.Fatalf("CancelWorkflow = %q, %v", st, err)
		}
		_, err = last.Await(ctx, id)
		if !errors.Is(err, runtime.ErrJobCanceled) {
			t.Fatalf("Await = %v; want canceled", err)
		}
		waitFor(t, 10*time.Second, "the running step's job to end canceled", func() bool {
			info, err := c.Workflow(ctx, id)
			return err == nil && info.Steps[0].Status == runtime.StatusCanceled && info.Steps[1].Status == runtime.StatusCanceled
		})
	})
}

// A step whose args are not its predecessor's result is a compile error;
// the same workflow with matching types compiles.
func TestWorkflow_AMismatchOfResultAndArgsDoesNotCompile(t *testing.T) {
	t.Parallel()
	build := func(dir string) (string, error) {
		cmd := exec.Command("go", "vet", "./testdata/wftypes/"+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := build("good"); err != nil {
		t.Fatalf("the matching workflow does not compile: %v\n%s", err, out)
	}
	out, err := build("bad")
	if err == nil {
		t.Fatal("a workflow whose step takes []byte after a step returning int compiled")
	}
	if !strings.Contains(out, "main.go:13") || !strings.Contains(out, "[]byte") {
		t.Fatalf("the compile error does not point at the mismatch:\n%s", out)
	}
}

// A dead step's job replayed from the dead-letter set that then completes
// brings the workflow back: what it canceled runs, and the workflow
// completes.
func TestWorkflow_ReplayOfTheDeadStepResumesTheWorkflow(t *testing.T) {
	wfBackends(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		r := newWFRuns()
		r.setFail("explode", true)
		wfWorker(t, c, r)
		last := runtime.Then(runtime.Then(wfDouble.With(c).Step(1), wfExplode.With(c)), wfDouble.With(c))
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = last.Await(ctx, id)
		var we *runtime.WorkflowError
		if !errors.As(err, &we) {
			t.Fatalf("Await = %v; want a *WorkflowError", err)
		}
		r.setFail("explode", false)
		if err := runtime.NewInspector(c).Replay(ctx, we.JobID); err != nil {
			t.Fatal(err)
		}
		got, err := last.Await(ctx, id)
		if err != nil || got != 4 {
			t.Fatalf("Await after the replay = %d, %v; want 4", got, err)
		}
		if n := r.count("explode"); n != 2 {
			t.Fatalf("explode ran %d times, want 2", n)
		}
	})
}

// Labels stay unique however tasks are named, and a zero Step given as a
// predecessor is refused before anything is stored.
func TestWorkflow_LabelsAreUniqueAndAZeroStepIsRefused(t *testing.T) {
	wfBackends(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		d2 := runtime.NewTask[int, int]("wf_double-2")
		last := runtime.Then(runtime.Then(runtime.Then(wfDouble.With(c).Step(1), wfDouble.With(c)), d2.With(c)), wfDouble.With(c))
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Workflow(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, s := range info.Steps {
			if seen[s.Label] {
				t.Fatalf("label %q twice in %+v", s.Label, info.Steps)
			}
			seen[s.Label] = true
		}
		var zero runtime.Step[int]
		if _, err := runtime.Then(zero, wfDouble.With(c)).Enqueue(ctx); err == nil || !strings.Contains(err.Error(), "zero Step") {
			t.Fatalf("Enqueue after a zero Step = %v; want refused", err)
		}
	})
}

// A step's job canceled while it waits, where no worker of its route runs:
// the keeper reads the cancel back from the job's record, and the workflow
// ends canceled, the step after it canceled too.
func TestWorkflow_AStepCanceledWhileWaitingIsReadBackAsCanceled(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"wf_nobody"}}))
		startWorker(t, w) // its keeper only
		last := runtime.Then(wfDouble.With(c).Step(1), wfDouble.With(c))
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Workflow(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := runtime.NewInspector(c).Cancel(ctx, info.Steps[0].JobID); err != nil {
			t.Fatal(err)
		}
		_, err = last.Await(ctx, id)
		if !errors.Is(err, runtime.ErrJobCanceled) {
			t.Fatalf("Await = %v; want the canceled step's error", err)
		}
		info, err = c.Workflow(ctx, id)
		if err != nil || info.Status != "canceled" || info.Steps[1].Status != runtime.StatusCanceled {
			t.Fatalf("workflow = %+v, %v; want canceled, its second step canceled", info, err)
		}
	})
}

// wfKeyed is a task keyed by its args and capped at one running job per
// key: a step of it whose args are its predecessor's result gets its key
// when its job is made.
var wfKeyed = runtime.NewTask[int, int]("wf_keyed").
	KeyBy(func(x int) string { return fmt.Sprint(x % 2) }).
	Limit(runtime.TaskLimits{MaxRunning: 1})

func TestWorkflow_AKeyedStepTakesItsKeyFromItsArgs(t *testing.T) {
	wfBackends(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		keys := make(chan string, 4)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 4}))
		runtime.Handle(w, wfDouble, func(_ context.Context, x int) (int, error) { return 2 * x, nil })
		runtime.Handle(w, wfKeyed, func(ctx context.Context, x int) (int, error) {
			// While it runs, its flow (task and key) holds its slot.
			st, err := runtime.QueueOf(c).Flows.State(ctx, "default", 10)
			if err != nil {
				return 0, err
			}
			for _, f := range st.Busiest {
				if f.Task == "wf_keyed" && f.Running == 1 {
					keys <- f.Key
				}
			}
			return x + 1, nil
		})
		startWorker(t, w)
		last := runtime.Then(runtime.Then(wfDouble.With(c).Step(3), wfKeyed.With(c)), wfDouble.With(c))
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := last.Await(ctx, id)
		if err != nil || got != 14 {
			t.Fatalf("Await = %d, %v; want (3*2+1)*2 = 14", got, err)
		}
		if k := recv(t, keys, 5*time.Second, "the keyed step's key"); k != "0" {
			t.Fatalf("the keyed step ran with key %q, want \"0\" (6 %% 2)", k)
		}
	})
}
