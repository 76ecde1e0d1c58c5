package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
	"github.com/bananas-go/bananas/runtime/internal/workflows/redisstore"
)

// failsOnceMore starts a worker and checks that the workflow's failing step
// ran once more, and only once: twice in all, its first run and its kept
// job's, never under a second job.
func failsOnceMore(t *testing.T, c *runtime.Client, r *wfRuns, last runtime.Step[int], id string) {
	t.Helper()
	wfWorkerStoppable(t, c, r)
	var we *runtime.WorkflowError
	if _, err := last.Await(ctxT(t), id); !errors.As(err, &we) {
		t.Fatalf("Await after the retry = %v; want the step failed again", err)
	}
	routeDrained(t, c, "default")
	if n := r.count("explode"); n != 2 {
		t.Fatalf("the failing step ran %d times; want 2: its first run and the kept job's, no second job", n)
	}
}

// deadStepWorkflow runs a workflow whose step of wfExplode (no retries)
// always fails, between two steps of wfDouble: double(1) -> explode ->
// double, until it failed; then stops its worker, so that what is made
// again waits. r counts the runs.
func deadStepWorkflow(t *testing.T, c *runtime.Client) (r *wfRuns, last runtime.Step[int], id string, we *runtime.WorkflowError) {
	t.Helper()
	ctx := ctxT(t)
	r = newWFRuns()
	r.setFail("explode", true)
	stop := wfWorkerStoppable(t, c, r)
	defer stop()
	last = runtime.Then(runtime.Then(wfDouble.With(c).Step(1), wfExplode.With(c)), wfDouble.With(c))
	id, err := last.Enqueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = last.Await(ctx, id); !errors.As(err, &we) || we.Step != "wf_explode" {
		t.Fatalf("Await = %v; want a *WorkflowError naming wf_explode", err)
	}
	return r, last, id, we
}

// routeDrained waits until route holds no job that waits or runs: every
// job made for a step has run by then, so the handlers' runs are counted
// exactly.
func routeDrained(t *testing.T, c *runtime.Client, route string) {
	t.Helper()
	in := runtime.NewInspector(c)
	waitFor(t, 20*time.Second, "route "+route+" to drain", func() bool {
		routes, err := in.Routes(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range routes {
			if r.Route == route {
				return r.Pending()+r.Scheduled+r.Active == 0
			}
		}
		return true
	})
}

// A retry never makes a second job for a step whose job waits: the dead
// step's job replayed by `dlq replay --all` (which does not touch the
// workflow) and still pending when the workflow is retried is kept, and the
// step runs once more, not twice more.
func TestWorkflowRetry_AStepReplayedByReplayAllAndStillWaitingRunsOnceMore(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		r, last, id, we := deadStepWorkflow(t, c) // its worker stopped: a replayed job waits

		in := runtime.NewInspector(c)
		if n, err := in.ReplayDead(ctx, "", ""); err != nil || n != 1 {
			t.Fatalf("replay --all = %d, %v; want the dead step's job replayed", n, err)
		}
		if n, err := c.RetryWorkflow(ctx, id); err != nil || n != 2 {
			t.Fatalf("RetryWorkflow = %d, %v; want 2 steps (the dead one and the one it canceled)", n, err)
		}
		info, err := c.Workflow(ctx, id)
		if err != nil || info.Steps[1].JobID != we.JobID {
			t.Fatalf("after the retry the step's job is %v (%v); want it kept: %s", info, err, we.JobID)
		}
		failsOnceMore(t, c, r, last, id)
	})
}

// A replay of a dead step's job whose reply was lost is resent, and the
// resend finds the job out of the dead-letter set by its own first run: it
// answers replayed, as the first run did, and the workflow runs again with
// the replayed job; a retry then has nothing to run again, and the step
// runs once more, not twice more.
func TestWorkflowRetry_AResentReplayThenARetryRunTheStepOnceMore(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		r, last, id, we := deadStepWorkflow(t, c)

		// A client each of whose scripts reaches Redis twice, the second
		// answer kept: a reply lost and the call resent.
		url := c.EmbeddedURL()
		if url == "" {
			url = redistest.Shared(t).URL()
		}
		resender := connect(t, url, runtime.WithNamespace(c.Namespace()))
		resender.Redis().AddHook(&redistest.Twice{Only: func(name string) bool { return name == "evalsha" || name == "eval" }})
		if err := runtime.NewInspector(resender).Replay(ctx, we.JobID); err != nil {
			t.Fatalf("the resent replay = %v; want it answered replayed", err)
		}
		if info, err := c.Workflow(ctx, id); err != nil || info.Status != "running" || info.Steps[1].JobID != we.JobID {
			t.Fatalf("after the replay: %+v, %v; want the workflow running, its step under its own job", info, err)
		}
		if n, err := c.RetryWorkflow(ctx, id); err != nil || n != 0 {
			t.Fatalf("RetryWorkflow = %d, %v; want nothing to run again", n, err)
		}
		failsOnceMore(t, c, r, last, id)
	})
}

// A retry while the dead step's job, replayed by a call whose answer was
// "not in the dead-letter queue" (another caller replayed it first), still
// waits keeps that job: the step runs once more.
func TestWorkflowRetry_AfterAReplayAnsweredNotDeadKeepsTheReplayedJob(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		r, last, id, we := deadStepWorkflow(t, c)
		if err := runtime.QueueOf(c).Ops.Replay(ctx, we.JobID); err != nil { // the other caller
			t.Fatal(err)
		}
		err := runtime.NewInspector(c).Replay(ctx, we.JobID)
		if !errors.Is(err, runtime.ErrWrongState) || !strings.Contains(err.Error(), "pending") {
			t.Fatalf("the second replay = %v; want it refused, the job pending", err)
		}
		if _, err := c.RetryWorkflow(ctx, id); err != nil {
			t.Fatal(err)
		}
		failsOnceMore(t, c, r, last, id)
	})
}

// A retry that comes while a retried step's job already waits (a second
// retry, or one racing another) changes nothing: the step keeps its job.
func TestWorkflowRetry_ASecondRetryKeepsTheWaitingJob(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		r, last, id, we := deadStepWorkflow(t, c)
		if n, err := c.RetryWorkflow(ctx, id); err != nil || n != 2 {
			t.Fatalf("first retry = %d, %v", n, err)
		}
		if n, err := c.RetryWorkflow(ctx, id); err != nil || n != 0 {
			t.Fatalf("second retry = %d, %v; want nothing to retry", n, err)
		}
		r.setFail("explode", false)
		wfWorkerStoppable(t, c, r)
		if got, err := last.Await(ctx, id); err != nil || got != 4 {
			t.Fatalf("Await = %d, %v; want 4", got, err)
		}
		routeDrained(t, c, "default")
		if n := r.count("explode"); n != 2 {
			t.Fatalf("the step ran %d times; want 2", n)
		}
		if j := jobInfo(t, c, we.JobID); j.Status != runtime.StatusCompleted {
			t.Fatalf("the step's own job is %s; want completed (replayed, kept)", j.Status)
		}
	})
}

// wfWorkerStoppable is wfWorker on the default route, with its stop.
func wfWorkerStoppable(t *testing.T, c *runtime.Client, r *wfRuns) (stop func()) {
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"default"}, Concurrency: 4}))
	runtime.Handle(w, wfDouble, func(_ context.Context, x int) (int, error) {
		return 2 * x, r.ran("double", x)
	})
	runtime.Handle(w, wfExplode, func(_ context.Context, x int) (int, error) {
		return x, r.ran("explode", x)
	})
	return startWorker(t, w)
}

// The *JobError inside a *WorkflowError carries the failed step's job's
// attempts, as `app job` shows them.
func TestWorkflowError_CarriesTheStepsJobAttempts(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		twice := runtime.NewTask[int, int]("wf_fails_twice", runtime.MaxRetries(1))
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 2}))
		runtime.Handle(w, twice, func(context.Context, int) (int, error) { return 0, errors.New("still broken") })
		startWorker(t, w)
		s := twice.With(c).Step(1)
		id, err := s.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Await(ctx, id)
		var we *runtime.WorkflowError
		var je *runtime.JobError
		if !errors.As(err, &we) || !errors.As(err, &je) {
			t.Fatalf("Await = %v; want a *WorkflowError around a *JobError", err)
		}
		info := jobInfo(t, c, we.JobID)
		if info.Attempts != 2 || je.Attempts != info.Attempts {
			t.Fatalf("JobError.Attempts = %d, the job's = %d; want both 2", je.Attempts, info.Attempts)
		}
		if !strings.Contains(err.Error(), "failed after 2 attempt(s): still broken") {
			t.Fatalf("error %q; want it to say 2 attempts", err)
		}
	})
}

// Steps found creating by another call than the one that marked them (the
// keeper, after their maker died) are made id by id: a step whose job was
// made, ran and completed before its worker died unheard of is not made
// again, so it does not run twice, while the step whose job was never made
// is made and runs.
func TestWorkflowKeeper_MakesOnlyTheJobsOfStepsNotMadeYet(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx, q := ctxT(t), runtime.QueueOf(c)
		now := q.Now()
		tpl := runtime.StepTemplate("wf_double", "default")
		mpk := func(n int) []byte {
			b, err := msgpack.Marshal(n)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		steps := []record.NewStep{
			{Label: "a", JobID: queue.NewID("default", now), Template: tpl, Args: mpk(1)},
			{Label: "b", JobID: queue.NewID("default", now), Template: tpl, Args: mpk(2)},
			{Label: "both", Gather: true, After: []int{0, 1}},
		}
		const id = "wf-keeper" // a namespace of its own per backend
		ready, own, err := redisstore.New(q).Submit(ctx, id, steps, 2, time.Minute, now)
		if err != nil || !own || len(ready) != 2 {
			t.Fatalf("submit = %d ready, own %v, %v", len(ready), own, err)
		}
		// Its submitter made a's job and died; a worker ran a's job to
		// completion and died before it told the workflow: both steps are
		// left creating, a's job completed.
		if errs := runtime.MakeSteps(ctx, c, id, ready[:1], true); errs[0] != nil {
			t.Fatal(errs[0])
		}
		ds, err := q.Jobs.Fetch(ctx, "default", queue.Priorities, 10, now.Add(time.Minute), now)
		if err != nil || len(ds) != 1 || ds[0].ID != steps[0].JobID {
			t.Fatalf("fetch = %v, %v; want a's job", ds, err)
		}
		rec, err := results.Encode(results.Record{ID: ds[0].ID, OK: true, Value: mpk(2), FinishedAt: now.UnixMilli(), Name: "wf_double"})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := q.Jobs.Ack(ctx, ds[0], rec, time.Hour); !ok || err != nil {
			t.Fatalf("ack = %v, %v", ok, err)
		}
		if err := runtime.CheckWorkflow(ctx, c, id); err != nil {
			t.Fatal(err)
		}
		r := newWFRuns()
		wfWorkerStoppable(t, c, r)
		waitFor(t, 20*time.Second, "the workflow to complete", func() bool {
			if err := runtime.CheckWorkflow(ctx, c, id); err != nil { // the keeper reads a's end back
				t.Fatal(err)
			}
			info, err := c.Workflow(ctx, id)
			return err == nil && info.Status == "completed"
		})
		routeDrained(t, c, "default")
		if n := r.count("double"); n != 1 {
			t.Fatalf("the workers ran the steps' task %d times; want once, for b (a's job had completed)", n)
		}
	})
}
