package runtime_test

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
)

// capped is a task limited to one running job per key, everywhere.
var capped = runtime.NewTask[Msg, Reply]("t_capped").Limit(runtime.TaskLimits{MaxRunning: 1})

// byText is a task keyed by its args' text, without limits.
var byText = runtime.NewTask[Msg, Reply]("t_by_text").KeyBy(func(m Msg) string { return m.Text })

// perKey records, per key, the jobs running now, the most ever at once and
// the order jobs started in.
type perKey struct {
	mu      sync.Mutex
	running map[string]int
	most    map[string]int
	order   map[string][]string
	total   int
}

func newPerKey() *perKey {
	return &perKey{running: map[string]int{}, most: map[string]int{}, order: map[string][]string{}}
}

func (p *perKey) start(key, text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running[key]++
	p.most[key] = max(p.most[key], p.running[key])
	p.order[key] = append(p.order[key], text)
}

func (p *perKey) end(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running[key]--
	p.total++
}

func (p *perKey) done() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total
}

// keyOfText reads the key a test job carries in its text: "key/seq".
func keyOfText(text string) string {
	for i := range text {
		if text[i] == '/' {
			return text[:i]
		}
	}
	return text
}

// twoWorkersRunCapped runs jobs of 5 keys, 8 each, on two workers of
// concurrency 8, and checks each key ran one job at a time, in enqueue order.
func twoWorkersRunCapped(t *testing.T, c *runtime.Client, route string) {
	t.Helper()
	ctx := ctxT(t)
	seen := newPerKey()
	for range 2 {
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{route}, Concurrency: 8}))
		runtime.Handle(w, capped, func(ctx context.Context, m Msg) (Reply, error) {
			key := keyOfText(m.Text)
			seen.start(key, m.Text)
			time.Sleep(5 * time.Millisecond)
			seen.end(key)
			return Reply{Text: m.Text}, nil
		})
		startWorker(t, w)
	}
	task := capped.With(c)
	want := map[string][]string{}
	for i := range 8 {
		for k := range 5 {
			key := fmt.Sprintf("k%d", k)
			text := fmt.Sprintf("%s/%d", key, i)
			if _, err := task.Enqueue(ctx, Msg{Text: text}, runtime.Route(route), runtime.Key(key)); err != nil {
				t.Fatal(err)
			}
			want[key] = append(want[key], text)
		}
	}
	waitFor(t, 30*time.Second, "all 40 jobs to run", func() bool { return seen.done() == 40 })
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for key, texts := range want {
		if seen.most[key] != 1 {
			t.Errorf("key %s ran %d jobs at once, want 1", key, seen.most[key])
		}
		if fmt.Sprint(seen.order[key]) != fmt.Sprint(texts) {
			t.Errorf("key %s started %v, want enqueue order %v", key, seen.order[key], texts)
		}
	}
}

func TestFlow_MaxRunningOnePerKeyAcrossWorkersInEnqueueOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) { twoWorkersRunCapped(t, c, "capped") })
}

func TestCluster_MaxRunningOnePerKeyAcrossWorkers(t *testing.T) {
	t.Parallel()
	cl := redistest.SharedCluster(t)
	c := connect(t, cl.URL())
	// Routes on different masters, each with its own flows.
	for _, r := range []string{"r1", "r2", "r3"} {
		t.Run(r, func(t *testing.T) { twoWorkersRunCapped(t, c, r) })
	}
}

// A route's limit set while its jobs run is in force within a second, in
// every worker; removed, the route runs at full concurrency again.
func routeLimitUnderLoad(t *testing.T, c *runtime.Client) {
	{
		ctx := ctxT(t)
		var mu sync.Mutex
		running, most, ended := 0, 0, 0
		observe := func() (int, int, int) { mu.Lock(); defer mu.Unlock(); return running, most, ended }
		task := byText.With(c) // keyed, each job its own key: no cap of a key binds
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"lim"}, Concurrency: 6}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(10 * time.Millisecond) // the job's work
			mu.Lock()
			running--
			ended++
			mu.Unlock()
			return Reply{}, nil
		})
		jobs := make([]Msg, 2000)
		for i := range jobs {
			jobs[i].Text = fmt.Sprint(i)
		}
		if _, err := task.EnqueueMany(ctx, jobs, runtime.Route("lim")); err != nil {
			t.Fatal(err)
		}
		startWorker(t, w)
		waitFor(t, 10*time.Second, "6 jobs at once without a route limit", func() bool { _, m, _ := observe(); return m == 6 })
		q := runtime.QueueOf(c)
		if err := q.Flows.SetRouteLimits(ctx, "lim", queue.Limits{MaxRunning: 2}); err != nil {
			t.Fatal(err)
		}
		// Jobs fetched before the limit was set end within a few job times.
		_, _, before := observe()
		waitFor(t, time.Second, "the route limit of 2 to be in force", func() bool {
			r, _, e := observe()
			return r <= 2 && e >= before+12
		})
		mu.Lock()
		most, ended = running, 0
		mu.Unlock()
		waitFor(t, 10*time.Second, "50 jobs to end under the limit", func() bool { _, _, e := observe(); return e >= 50 })
		if _, m, _ := observe(); m > 2 {
			t.Fatalf("%d jobs ran at once under a route limit of 2", m)
		}
		if err := q.Flows.SetRouteLimits(ctx, "lim", queue.Limits{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Second, "more than 2 at once once the limit is removed", func() bool { r, _, _ := observe(); return r > 2 })
	}
}

func TestFlow_RouteLimitChangedUnderLoad(t *testing.T) { eachBackend(t, routeLimitUnderLoad) }

func TestCluster_RouteLimitChangedUnderLoad(t *testing.T) {
	t.Parallel()
	routeLimitUnderLoad(t, connect(t, redistest.SharedCluster(t).URL()))
}

// A worker process SIGKILLed while it holds a key's only slot: the key's
// next job starts within the dead worker's lease (500 ms) and a second, and
// the killed job is recovered and runs too.
func TestFlow_AKilledWorkersSlotComesBackWithinItsLease(t *testing.T) {
	t.Parallel()
	killedHoldingASlot(t, redistest.Shared(t).URL())
}

func TestCluster_AKilledWorkersSlotComesBackWithinItsLease(t *testing.T) {
	t.Parallel()
	killedHoldingASlot(t, redistest.SharedCluster(t).URL())
}

func killedHoldingASlot(t *testing.T, url string) {
	ns := redistest.Namespace(t)
	c := connect(t, url, runtime.WithNamespace(ns))
	ctx, task := ctxT(t), capped.With(c)
	for _, text := range []string{"payload", "second"} {
		if _, err := task.Enqueue(ctx, Msg{Text: text}, runtime.Key("A")); err != nil {
			t.Fatal(err)
		}
	}
	killWorkerMidJobAt(t, url, ns, "BANANAS_TEST_WORKER_TASK=capped")
	killed := time.Now()
	started := make(chan string, 4)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 4}))
	runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
		started <- m.Text
		return Reply{}, nil
	})
	startWorker(t, w)
	next := recv(t, started, 5*time.Second, "a job of the key after the kill")
	took := time.Since(killed)
	t.Logf("the key's next job started %v after the kill", took)
	if took > 1500*time.Millisecond {
		t.Fatalf("the key's next job (%s) started %v after the kill, want within the lease and a second", next, took)
	}
	again := recv(t, started, 10*time.Second, "the other job of the key")
	if (next != "second" || again != "payload") && (next != "payload" || again != "second") {
		t.Fatalf("after the kill ran %q then %q, want the killed job and the second, once each", next, again)
	}
}

// rated starts at most 20 jobs a second, one at a time after the first.
var rated = runtime.NewTask[Msg, Reply]("t_rated").Limit(runtime.TaskLimits{Rate: "20/s", Burst: 1})

// A task's rate holds across two workers: 11 jobs take at least 10
// intervals of 50 ms, and a late key of a keyed task goes first past
// another key's backlog.
func rateAndFairnessOn(t *testing.T, c *runtime.Client) {
	ctx := ctxT(t)
	var mu sync.Mutex
	var starts []time.Time
	order := []string{}
	// The keyed jobs' handlers wait for gate: the 8 slots of the two
	// workers hold the first 8 jobs fetched, so the order they start in is
	// the order they were fetched in, not the order a loaded machine gets
	// round to their goroutines.
	gate := make(chan struct{})
	for range 2 {
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 4}))
		runtime.Handle(w, rated.With(c), func(ctx context.Context, m Msg) (Reply, error) {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			return Reply{}, nil
		})
		runtime.Handle(w, byText.With(c), func(ctx context.Context, m Msg) (Reply, error) {
			mu.Lock()
			order = append(order, m.Text)
			mu.Unlock()
			select {
			case <-gate:
			case <-ctx.Done():
			}
			return Reply{}, nil
		})
		startWorker(t, w)
	}
	if _, err := rated.With(c).EnqueueMany(ctx, make([]Msg, 11)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "11 rated jobs to start", func() bool { mu.Lock(); defer mu.Unlock(); return len(starts) == 11 })
	mu.Lock()
	if span := starts[10].Sub(starts[0]); span < 450*time.Millisecond {
		t.Errorf("11 jobs at 20/s with a burst of 1 started within %v, want at least 500 ms less the clocks' play", span)
	}
	mu.Unlock()
	backlog := make([]Msg, 300)
	for i := range backlog {
		backlog[i].Text = "busy"
	}
	// Paused, the route takes both keys in before either runs.
	q := runtime.QueueOf(c)
	if err := q.Ops.Pause(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	if _, err := byText.With(c).EnqueueMany(ctx, backlog); err != nil {
		t.Fatal(err)
	}
	if _, err := byText.With(c).Enqueue(ctx, Msg{Text: "late"}); err != nil {
		t.Fatal(err)
	}
	if err := q.Ops.Resume(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the workers' 8 slots to fill", func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 8 })
	mu.Lock()
	first := slices.Clone(order)
	mu.Unlock()
	close(gate)
	if !slices.Contains(first, "late") {
		t.Fatalf("the first 8 jobs fetched, for the workers' 8 slots, were %v: the late key's job waits behind 300 of another key; want it in the first turn", first)
	}
	waitFor(t, 10*time.Second, "the keyed jobs to run", func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 301 })
}

func TestFlow_RateAcrossWorkersAndALateKeyFirst(t *testing.T) {
	eachBackend(t, rateAndFairnessOn)
}

func TestCluster_RateAcrossWorkersAndALateKeyFirst(t *testing.T) {
	t.Parallel()
	rateAndFairnessOn(t, connect(t, redistest.SharedCluster(t).URL()))
}

// A job held back by its key's cap stays pending: no attempt spent, no
// failure, listed with the route's pending jobs, and it runs once the
// key's running job ends.
func TestFlow_AHeldBackJobStaysPendingWithNoAttemptSpent(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx, task := ctxT(t), capped.With(c)
		release, started := make(chan struct{}), make(chan string, 2)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 4}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
			started <- m.Text
			<-release
			return Reply{}, nil
		})
		startWorker(t, w)
		first, err := task.Enqueue(ctx, Msg{Text: "first"}, runtime.Key("A"))
		if err != nil {
			t.Fatal(err)
		}
		second, err := task.Enqueue(ctx, Msg{Text: "second"}, runtime.Key("A"))
		if err != nil {
			t.Fatal(err)
		}
		if got := recv(t, started, 5*time.Second, "the key's first job"); got != "first" {
			t.Fatalf("started %q first", got)
		}
		info := jobInfo(t, c, second)
		if info.Status != runtime.StatusPending || info.Attempts != 0 || info.Error != "" {
			t.Fatalf("the held-back job is %+v, want pending with no attempt and no error", info)
		}
		if s := jobStatus(t, c, first); s != runtime.StatusProcessing {
			t.Fatalf("the running job is %s", s)
		}
		close(release)
		if got := recv(t, started, 5*time.Second, "the key's second job"); got != "second" {
			t.Fatalf("started %q second", got)
		}
	})
}

// A deploy that removes or raises a task's rate frees the keys the old
// rate holds back within about a second, as a route's changed limits do:
// they do not wait out the old rate's hour.
func TestFlow_ADeployThatRemovesOrRaisesARateFreesItsHeldKeys(t *testing.T) {
	for _, after := range []runtime.TaskLimits{{}, {Rate: "100/s"}} {
		t.Run("rate "+cmp.Or(after.Rate, "removed"), func(t *testing.T) {
			eachBackend(t, func(t *testing.T, c *runtime.Client) {
				ctx := ctxT(t)
				started := make(chan string, 2)
				run := func(l runtime.TaskLimits) (stop func()) {
					task := runtime.NewTask[Msg, Reply]("t_hourly").Limit(l).With(c)
					w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 4}))
					runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
						started <- m.Text
						return Reply{}, nil
					})
					return startWorker(t, w)
				}
				stop := run(runtime.TaskLimits{Rate: "1/h"})
				task := runtime.NewTask[Msg, Reply]("t_hourly").With(c)
				for _, text := range []string{"first", "second"} {
					if _, err := task.Enqueue(ctx, Msg{Text: text}, runtime.Key("A")); err != nil {
						t.Fatal(err)
					}
				}
				if got := recv(t, started, 5*time.Second, "the key's first job"); got != "first" {
					t.Fatalf("started %q first", got)
				}
				q := runtime.QueueOf(c)
				waitFor(t, 5*time.Second, "the key held by its rate", func() bool {
					st, err := q.Flows.State(ctx, "default", 10)
					return err == nil && len(st.Busiest) == 1 && !st.Busiest[0].HeldUntil.IsZero()
				})
				stop()
				run(after)
				// The old rate would hold it an hour.
				if got := recv(t, started, 2*time.Second, "the key's second job under the new limits"); got != "second" {
					t.Fatalf("started %q second", got)
				}
			})
		})
	}
}

// Keys that wait because the route's own cap is full show as held, with
// the route's cap as the reason, in `app limits` and over the API.
func TestLimits_KeysHeldByTheRoutesCapShowAsHeld(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	c := connect(t, a.env["REDIS_URL"], runtime.WithNamespace(a.env["BANANAS_NAMESPACE"]))
	ctx := ctxT(t)
	a.ok("limits", "default", "--max-running", "1")
	for _, key := range []string{"A", "A", "B"} {
		if _, err := byText.With(c).Enqueue(ctx, Msg{Text: key}); err != nil {
			t.Fatal(err)
		}
	}
	q := runtime.QueueOf(c)
	now := q.Now()
	if ds, err := q.Jobs.Fetch(ctx, "default", queue.Priorities, 10, now.Add(time.Minute), now); err != nil || len(ds) != 1 {
		t.Fatalf("fetch under the route's cap of 1: %d jobs, %v", len(ds), err)
	}
	out := a.ok("limits", "default")
	if !strings.Contains(out, "2 key(s) held back now") {
		t.Errorf("limits default = %q, want both keys with jobs waiting held back", out)
	}
	for _, key := range []string{"A", "B"} {
		if !slices.ContainsFunc(strings.Split(out, "\n"), func(line string) bool {
			f := strings.Fields(line)
			return len(f) > 1 && f[1] == key && strings.HasSuffix(line, "the route's cap")
		}) {
			t.Errorf("limits default = %q, want key %s's row HELD by the route's cap", out, key)
		}
	}
	api := serveAPI(t, runtime.NewInspector(c), runtime.APIOptions{})
	got := api.want(http.StatusOK, "GET", "/api/v1/routes/default/flows", "")
	busiest, _ := got["busiest"].([]any)
	if got["held"] != float64(2) || len(busiest) != 2 {
		t.Fatalf("flows = %v, want 2 keys held", got)
	}
	for _, b := range busiest {
		if f, _ := b.(map[string]any); f["held_by_route"] != "cap" {
			t.Errorf("flow %v, want held_by_route cap", f)
		}
	}
}
