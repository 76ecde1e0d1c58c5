package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
)

// Ev is the args of the batch tasks under test.
// enqueueEvs enqueues n events N 0..n-1 in one call, of tenant(i) when
// tenant is given, and returns their ids.
func enqueueEvs[R any](t *testing.T, ctx context.Context, task *runtime.Task[Ev, R], n int, tenant func(i int) string) []string {
	t.Helper()
	evs := make([]Ev, n)
	for i := range evs {
		evs[i] = Ev{N: i}
		if tenant != nil {
			evs[i].Tenant = tenant(i)
		}
	}
	ids, err := task.EnqueueMany(ctx, evs)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

type Ev struct {
	Tenant string
	N      int
}

// byTenant is a batch task keyed by tenant (key=Tenant).
var byTenant = runtime.NewTask[Ev, runtime.None]("t_batch_tenant", runtime.Route("batch")).
	KeyBy(func(e Ev) string { return e.Tenant })

// doubled is a batch task with a result per job, retried once.
var doubled = runtime.NewTask[Ev, int]("t_batch_double", runtime.Route("batchr"), runtime.MaxRetries(1))

// calls records the calls of a batch function: the args of each.
type calls struct {
	mu  sync.Mutex
	got [][]Ev
	n   int // jobs seen
}

func (c *calls) add(evs []Ev) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, append([]Ev(nil), evs...))
	c.n += len(evs)
}

func (c *calls) jobs() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *calls) all() [][]Ev {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]Ev(nil), c.got...)
}

// thousandOverTenKeys enqueues 1,000 jobs over 10 tenants, interleaved,
// runs a worker of Concurrency 100 with batch=100 linger=200ms key=Tenant,
// and checks the calls: at most 20, each of one tenant and at most 100 jobs,
// every job run once.
func thousandOverTenKeys(t *testing.T, c *runtime.Client) {
	t.Helper()
	ctx := ctxT(t)
	task := byTenant.With(c)
	ids := enqueueEvs(t, ctx, task, 1000, func(i int) string { return fmt.Sprintf("tenant-%d", i%10) })
	var seen calls
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"batch"}, Concurrency: 100}))
	runtime.HandleBatch(w, task, runtime.Batch{Size: 100, Linger: 200 * time.Millisecond}, func(ctx context.Context, evs []Ev) ([]runtime.None, []error, error) {
		seen.add(evs)
		return nil, nil, nil
	})
	startWorker(t, w)
	for _, id := range ids {
		if _, err := task.Await(ctx, id); err != nil {
			t.Fatalf("Await %s: %v", id, err)
		}
	}
	got := seen.all()
	ran := map[int]bool{}
	for i, evs := range got {
		if len(evs) > 100 {
			t.Errorf("call %d took %d jobs, more than batch=100", i, len(evs))
		}
		for _, e := range evs {
			if e.Tenant != evs[0].Tenant {
				t.Errorf("call %d mixes tenants %s and %s", i, evs[0].Tenant, e.Tenant)
				break
			}
		}
		for _, e := range evs {
			if ran[e.N] {
				t.Errorf("job %d ran twice", e.N)
			}
			ran[e.N] = true
		}
	}
	if len(ran) != 1000 {
		t.Errorf("%d distinct jobs ran, want 1000", len(ran))
	}
	t.Logf("1,000 jobs over 10 keys: %d calls", len(got))
	if len(got) > 20 {
		t.Errorf("1,000 jobs over 10 keys made %d calls, want at most 20", len(got))
	}
}

func TestBatch_ThousandJobsOverTenKeysMakeAtMostTwentyCallsOfOneKey(t *testing.T) {
	eachBackend(t, thousandOverTenKeys)
}

func TestBatch_ThousandJobsOverTenKeysOnACluster(t *testing.T) {
	t.Parallel()
	thousandOverTenKeys(t, connect(t, redistest.SharedCluster(t).URL()))
}

// A nil entry completes its job, an error entry fails only its job, which
// retries on its own: the others ran once.
func TestBatch_PartialFailureRetriesOnlyTheFailedJobs(t *testing.T) {
	eachBackend(t, partialFailure)
}

func TestBatch_PartialFailureOnACluster(t *testing.T) {
	t.Parallel()
	partialFailure(t, connect(t, redistest.SharedCluster(t).URL()))
}

func partialFailure(t *testing.T, c *runtime.Client) {
	{
		ctx := ctxT(t)
		task := doubled.With(c)
		var seen calls
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"batchr"}, Concurrency: 10}))
		runtime.HandleBatch(w, task, runtime.Batch{Size: 10, Linger: 50 * time.Millisecond}, func(ctx context.Context, evs []Ev) ([]int, []error, error) {
			seen.add(evs)
			jobs, _ := runtime.BatchJobs(ctx)
			ctxs, _ := runtime.BatchContexts(ctx)
			if len(jobs) != len(evs) || len(ctxs) != len(evs) {
				return nil, nil, fmt.Errorf("BatchJobs has %d jobs and BatchContexts %d for %d args", len(jobs), len(ctxs), len(evs))
			}
			for i, jctx := range ctxs {
				if j, ok := runtime.CurrentJob(jctx); !ok || j.ID != jobs[i].ID {
					return nil, nil, fmt.Errorf("job %d's context is job %s's, want %s's", i, j.ID, jobs[i].ID)
				}
				if err := runtime.Progress(jctx, 50, "half"); err != nil {
					return nil, nil, fmt.Errorf("progress of job %d: %w", i, err)
				}
			}
			out, errs := make([]int, len(evs)), make([]error, len(evs))
			for i, e := range evs {
				if e.N%2 == 1 && jobs[i].Attempt == 1 {
					errs[i] = fmt.Errorf("odd %d", e.N)
					continue
				}
				out[i] = 2 * e.N
			}
			return out, errs, nil
		})
		ids := enqueueEvs(t, ctx, task, 10, nil)
		startWorker(t, w)
		for i, id := range ids {
			got, err := task.Await(ctx, id)
			if err != nil || got != 2*i {
				t.Fatalf("Await job %d = %d, %v; want %d", i, got, err, 2*i)
			}
			info := jobInfo(t, c, id)
			want := 1
			if i%2 == 1 {
				want = 2
			}
			if info.Attempts != want {
				t.Errorf("job %d took %d attempts, want %d (only the failed jobs retry)", i, info.Attempts, want)
			}
		}
		if n := seen.jobs(); n != 15 {
			t.Errorf("the function was handed %d jobs, want 15 (10, then the 5 that failed)", n)
		}
	}
}

// Call on a batched task returns that job's own result.
func TestBatch_CallReturnsTheJobsOwnResult(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := doubled.With(c)
		var seen calls
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"batchr"}, Concurrency: 20}))
		runtime.HandleBatch(w, task, runtime.Batch{Size: 8, Linger: 20 * time.Millisecond}, func(ctx context.Context, evs []Ev) ([]int, []error, error) {
			seen.add(evs)
			out := make([]int, len(evs))
			for i, e := range evs {
				out[i] = 2 * e.N
			}
			return out, nil, nil
		})
		startWorker(t, w)
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := task.Call(ctx, Ev{N: i})
				if err != nil || got != 2*i {
					errs <- fmt.Errorf("Call(%d) = %d, %v; want %d", i, got, err, 2*i)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if calls := len(seen.all()); calls >= 20 {
			t.Errorf("20 concurrent Calls made %d calls: none was batched", calls)
		}
	})
}

// batchFails runs 3 jobs of a task without retries, on a route of its own
// (its name), through fn and returns each job's error from Await.
func batchFails(t *testing.T, c *runtime.Client, name string, fn func(ctx context.Context, evs []Ev) ([]runtime.None, []error, error)) []error {
	t.Helper()
	ctx := ctxT(t)
	task := runtime.NewTask[Ev, runtime.None](name, runtime.Route(name), runtime.MaxRetries(0)).With(c)
	ids, err := task.EnqueueMany(ctx, []Ev{{N: 0}, {N: 1}, {N: 2}})
	if err != nil {
		t.Fatal(err)
	}
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{name}, Concurrency: 3}))
	runtime.HandleBatch(w, task, runtime.Batch{Size: 3, Linger: time.Second}, fn)
	startWorker(t, w)
	out := make([]error, len(ids))
	for i, id := range ids {
		_, out[i] = task.Await(ctx, id)
	}
	return out
}

func TestBatch_WrongLengthSingleErrorAndPanicFailEveryJob(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		for _, tc := range []struct {
			name string
			fn   func(ctx context.Context, evs []Ev) ([]runtime.None, []error, error)
			want string
		}{
			{"t_batch_short", func(ctx context.Context, evs []Ev) ([]runtime.None, []error, error) {
				return nil, make([]error, len(evs)-1), nil
			}, "returned 2 errors for 3 jobs"},
			{"t_batch_whole", func(ctx context.Context, evs []Ev) ([]runtime.None, []error, error) {
				return nil, nil, errors.New("provider down")
			}, "provider down"},
			{"t_batch_panic", func(ctx context.Context, evs []Ev) ([]runtime.None, []error, error) {
				panic("boom")
			}, "panic: boom"},
		} {
			for i, err := range batchFails(t, c, tc.name, tc.fn) {
				var je *runtime.JobError
				if !errors.As(err, &je) || !strings.Contains(je.Message, tc.want) {
					t.Errorf("%s: job %d: Await = %v, want a JobError saying %q", tc.name, i, err, tc.want)
				}
			}
		}
	})
}

// A task's max_running holds per key within batches: a batch of a key holds
// at most that many jobs, and no more of the key run meanwhile.
func TestBatch_MaxRunningHoldsPerKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := runtime.NewTask[Ev, runtime.None]("t_batch_capped", runtime.Route("batchc")).
			KeyBy(func(e Ev) string { return e.Tenant }).Limit(runtime.TaskLimits{MaxRunning: 2}).With(c)
		ids := enqueueEvs(t, ctx, task, 20, func(i int) string { return fmt.Sprintf("k%d", i%2) })
		seen := newPerKey()
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"batchc"}, Concurrency: 20}))
		runtime.HandleBatch(w, task, runtime.Batch{Size: 10, Linger: 20 * time.Millisecond}, func(ctx context.Context, evs []Ev) ([]runtime.None, []error, error) {
			for _, e := range evs {
				seen.start(e.Tenant, fmt.Sprint(e.N))
			}
			time.Sleep(5 * time.Millisecond) // a call that takes a while, so that running jobs overlap
			for _, e := range evs {
				seen.end(e.Tenant)
			}
			return nil, nil, nil
		})
		startWorker(t, w)
		for _, id := range ids {
			if _, err := task.Await(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		seen.mu.Lock()
		defer seen.mu.Unlock()
		for key, most := range seen.most {
			if most > 2 {
				t.Errorf("key %s ran %d jobs at once, want at most 2 (max_running=2)", key, most)
			}
		}
	})
}

// crashBatch is the batch task of the crash test: keyed, one key.
var crashBatch = runtime.NewTask[Ev, runtime.None]("t_batch_crash", runtime.Route("batchk")).
	KeyBy(func(e Ev) string { return e.Tenant })

// runBatchWorkerProcess is the worker process of the crash test: batches
// of 5 crashBatch jobs; the first completes, the second says "started
// second" once the first batch's jobs read completed in Redis, then hangs
// until the process is killed.
func runBatchWorkerProcess(ctx context.Context, c *runtime.Client) {
	w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"batchk"}, Concurrency: 5, Lease: 500 * time.Millisecond, Logger: quiet()})
	var first []runtime.Job
	runtime.HandleBatch(w, crashBatch, runtime.Batch{Size: 5, Linger: time.Second}, func(ctx context.Context, evs []Ev) ([]runtime.None, []error, error) {
		if first == nil {
			first, _ = runtime.BatchJobs(ctx)
			return nil, nil, nil
		}
		deadline := time.Now().Add(10 * time.Second)
		for _, j := range first {
			for {
				info, err := c.Job(ctx, j.ID)
				if err == nil && info.Status == runtime.StatusCompleted {
					break
				}
				if time.Now().After(deadline) {
					fmt.Println("first batch not completed:", j.ID, err)
					select {}
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		fmt.Println("started second")
		select {}
	})
	_ = w.Run(ctx)
}

// A worker process SIGKILLed in the middle of a batch loses nothing: the
// batch it had completed stays completed (one attempt each), and only the
// jobs of the batch it was running run again, on a live worker, once their
// lease expires.
func TestBatch_WorkerKilledMidBatchRerunsOnlyTheUnacknowledgedJobs(t *testing.T) {
	t.Parallel()
	killedMidBatch(t, redistest.Shared(t).URL())
}

func TestBatch_WorkerKilledMidBatchOnACluster(t *testing.T) {
	t.Parallel()
	killedMidBatch(t, redistest.SharedCluster(t).URL())
}

// killedMidBatch runs the crash test on the server or cluster of url.
func killedMidBatch(t *testing.T, url string) {
	t.Helper()
	ns := redistest.Namespace(t)
	c := connect(t, url, runtime.WithNamespace(ns))
	ctx := ctxT(t)
	task := crashBatch.With(c)
	ids := enqueueEvs(t, ctx, task, 10, func(i int) string { return "t" })
	killWorkerWhenItSays(t, url, ns, "started second", "BANANAS_TEST_WORKER_TASK=batch")

	var seen calls
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"batchk"}, Concurrency: 10}))
	runtime.HandleBatch(w, task, runtime.Batch{Size: 10, Linger: 50 * time.Millisecond}, func(ctx context.Context, evs []Ev) ([]runtime.None, []error, error) {
		seen.add(evs)
		return nil, nil, nil
	})
	startWorker(t, w)
	for i, id := range ids {
		if _, err := task.Await(ctx, id); err != nil {
			t.Fatalf("Await job %d: %v", i, err)
		}
		want := 1
		if i >= 5 {
			want = 2 // the killed run, counted when its lease expired, and the one that completed
		}
		if got := jobInfo(t, c, id).Attempts; got != want {
			t.Errorf("job %d took %d attempts, want %d", i, got, want)
		}
	}
	var rerun []int
	for _, evs := range seen.all() {
		for _, e := range evs {
			rerun = append(rerun, e.N)
		}
	}
	slices.Sort(rerun)
	if !slices.Equal(rerun, []int{5, 6, 7, 8, 9}) {
		t.Errorf("the live worker ran jobs %v, want only the killed batch's 5..9", rerun)
	}
}

// A job of a running batch canceled on its own ends canceled at once; the
// others of the batch complete, each end told once, with its own id.
func TestBatch_CancelOfOneJobEndsOnlyItAndEveryJobEndsOnItsOwn(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := runtime.NewTask[Ev, runtime.None]("t_batch_cancel", runtime.Route("batchx"), runtime.MaxRetries(0)).With(c)
		var mu sync.Mutex
		ends := map[string][]queue.Ending{}
		started, release := make(chan struct{}, 1), make(chan struct{})
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"batchx"}, Concurrency: 3,
			OnJobEnd: func(e bananastype.JobEnd) {
				mu.Lock()
				defer mu.Unlock()
				ends[e.ID] = append(ends[e.ID], e.Ending)
			}}))
		runtime.HandleBatch(w, task, runtime.Batch{Size: 3, Linger: 10 * time.Second}, func(ctx context.Context, evs []Ev) ([]runtime.None, []error, error) {
			started <- struct{}{}
			<-release
			return nil, nil, nil
		})
		ids, err := task.EnqueueMany(ctx, []Ev{{N: 0}, {N: 1}, {N: 2}})
		if err != nil {
			t.Fatal(err)
		}
		startWorker(t, w)
		recv(t, started, 10*time.Second, "the batch to start")
		if st, err := w.Inspector().Cancel(ctx, ids[1]); err != nil || st != runtime.StatusProcessing {
			t.Fatalf("Cancel of a job of a running batch = %s, %v; want processing (asked)", st, err)
		}
		if _, err := task.Await(ctx, ids[1]); !errors.Is(err, runtime.ErrJobCanceled) {
			t.Fatalf("Await of the canceled job = %v, want ErrJobCanceled while its batch still runs", err)
		}
		close(release)
		for _, i := range []int{0, 2} {
			if _, err := task.Await(ctx, ids[i]); err != nil {
				t.Fatalf("Await job %d = %v", i, err)
			}
		}
		waitFor(t, 10*time.Second, "an end for each job", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(ends) == 3
		})
		mu.Lock()
		defer mu.Unlock()
		for i, id := range ids {
			want := queue.EndCompleted
			if i == 1 {
				want = queue.EndCanceled
			}
			if got := ends[id]; len(got) != 1 || got[0] != want {
				t.Errorf("job %d ended %v, want once %v", i, got, want)
			}
		}
	})
}

// A paused route gives a batch task nothing; once resumed its jobs run.
func TestBatch_PausedRouteRunsNoBatchUntilResumed(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := byTenant.With(c)
		ids, err := task.EnqueueMany(ctx, []Ev{{Tenant: "a", N: 0}, {Tenant: "a", N: 1}, {Tenant: "b", N: 2}})
		if err != nil {
			t.Fatal(err)
		}
		in := runtime.NewInspector(c)
		if err := in.Pause(ctx, "batch"); err != nil {
			t.Fatal(err)
		}
		var seen calls
		sentinel := runtime.NewTask[Msg, runtime.None]("t_batch_sentinel", runtime.Route("batch-sentinel")).With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"batch", "batch-sentinel"}, Concurrency: 10}))
		runtime.HandleBatch(w, task, runtime.Batch{Size: 10, Linger: 10 * time.Millisecond}, func(ctx context.Context, evs []Ev) ([]runtime.None, []error, error) {
			seen.add(evs)
			return nil, nil, nil
		})
		runtime.Handle(w, sentinel, func(ctx context.Context, m Msg) (runtime.None, error) { return runtime.None{}, nil })
		startWorker(t, w)
		// A pass over the worker's routes looks at the paused route before
		// the sentinel's, and the batch jobs were there before the worker
		// started: once a sentinel job ran, the paused route was looked at.
		for range 2 {
			if _, err := sentinel.Call(ctx, Msg{Text: "after"}); err != nil {
				t.Fatal(err)
			}
		}
		if n := seen.jobs(); n != 0 {
			t.Fatalf("a paused route's batch task ran %d jobs", n)
		}
		if err := in.Resume(ctx, "batch"); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if _, err := task.Await(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	})
}
