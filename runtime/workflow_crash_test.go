package runtime_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
)

// The steps of the crash tests, each on its own route (on a cluster, each
// on its own master).
var (
	wfStepA = runtime.NewTask[int, int]("wf_step_a", runtime.Route("wfa"))
	wfStepB = runtime.NewTask[int, int]("wf_step_b", runtime.Route("wfb"))
	wfStepC = runtime.NewTask[int, int]("wf_step_c", runtime.Route("wfc"))
)

var wfCrashRoutes = []string{"wfa", "wfb", "wfc"}

// runWorkflowWorkerProcess runs step a's jobs and, once the first one's end
// is recorded, says "acked" and stops before advancing its workflow: it
// waits to be SIGKILLed there.
func runWorkflowWorkerProcess(ctx context.Context, c *runtime.Client) {
	w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"wfa"}, Lease: 500 * time.Millisecond, Logger: quiet()})
	runtime.Handle(w, wfStepA, func(_ context.Context, x int) (int, error) { return x + 1, nil })
	runtime.SetStepEndHook(func(string, int) {
		fmt.Println("acked")
		select {}
	})
	_ = w.Run(ctx)
}

// A worker killed after a step's job completed and before it advanced the
// workflow: the keeper of a worker still alive makes the next step, once,
// and the workflow completes with every step run once.
func TestWorkflow_KilledBetweenAStepsAckAndItsSuccessorsCreation(t *testing.T) {
	t.Parallel()
	killedBeforeAdvance(t, redistest.Shared(t).URL())
}

func TestCluster_WorkflowKilledBetweenAStepsAckAndItsSuccessorsCreation(t *testing.T) {
	t.Parallel()
	cl := redistest.SharedCluster(t)
	cc := cl.Client(t)
	masters := map[string]bool{}
	for _, r := range wfCrashRoutes {
		m, err := cc.MasterForKey(context.Background(), "{"+r+"}")
		if err != nil {
			t.Fatal(err)
		}
		masters[m.String()] = true
	}
	if len(masters) != 3 {
		t.Fatalf("the steps' routes %v are on %d masters, want 3", wfCrashRoutes, len(masters))
	}
	killedBeforeAdvance(t, cl.URL())
}

func killedBeforeAdvance(t *testing.T, url string) {
	ns := redistest.Namespace(t)
	c := connect(t, url, runtime.WithNamespace(ns))
	ctx := ctxT(t)
	last := runtime.Then(runtime.Then(wfStepA.With(c).Step(1), wfStepB.With(c)), wfStepC.With(c))
	id, err := last.Enqueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	killWorkerWhenItSays(t, url, ns, "acked", "BANANAS_TEST_WORKER_TASK=workflow")
	before, err := c.Workflow(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if before.Steps[0].Status != runtime.StatusCompleted || before.Status == "completed" {
		t.Fatalf("after the kill: %+v; want step a's job completed and the workflow not advanced", before)
	}
	if _, err := c.Job(ctx, before.Steps[1].JobID); err == nil {
		t.Fatalf("step b's job exists before any keeper ran")
	}

	var mu sync.Mutex
	runs := map[string]int{}
	count := func(name string) { mu.Lock(); runs[name]++; mu.Unlock() }
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: wfCrashRoutes, Lease: 500 * time.Millisecond}))
	runtime.Handle(w, wfStepA, func(_ context.Context, x int) (int, error) { count("a"); return x + 1, nil })
	runtime.Handle(w, wfStepB, func(_ context.Context, x int) (int, error) { count("b"); return x * 10, nil })
	runtime.Handle(w, wfStepC, func(_ context.Context, x int) (int, error) { count("c"); return x + 3, nil })
	startWorker(t, w)
	got, err := last.Await(ctx, id)
	if err != nil || got != 23 {
		t.Fatalf("Await = %d, %v; want (1+1)*10+3 = 23", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if runs["a"] != 0 || runs["b"] != 1 || runs["c"] != 1 {
		t.Fatalf("runs here = %v; want step a never again (it completed in the killed worker), b and c once", runs)
	}
	after, err := c.Workflow(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range after.Steps {
		info := jobInfo(t, c, s.JobID)
		if info.Status != runtime.StatusCompleted || info.Attempts != 1 {
			t.Fatalf("step %s's job: %s after %d attempts; want completed at its first", s.Label, info.Status, info.Attempts)
		}
	}
	waitFor(t, 10*time.Second, "the workflow to leave the keeper's index", func() bool {
		n, err := redisOf(c).ZScore(ctx, queue.WorkflowIndex(ns), id).Result()
		return err == redis.Nil && n == 0
	})
}

func redisOf(c *runtime.Client) redis.UniversalClient { return c.Redis() }
