package runtime_test

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// With the safety poll set to an hour, only the wake-up path can deliver jobs
// to an idle worker, and only the promoter's sleep-until-due can start a
// delayed job: both must happen well inside the test's deadline.
func TestWakeup_IdleWorkerNeedsNoPolling(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Echo.With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{SafetyPoll: time.Hour, Routes: []string{"a", "b"}}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) { return Reply{Text: m.Text}, nil })
		startWorker(t, w)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for i := range 20 {
			route := []string{"a", "b"}[i%2]
			if got, err := task.Call(ctx, Msg{Text: route}, runtime.Route(route)); err != nil || got.Text != route {
				t.Fatalf("call %d on route %s = %+v, %v", i, route, got, err)
			}
		}
		// Scheduled after the promoter went to sleep with nothing due.
		if got, err := task.Call(ctx, Msg{Text: "later"}, runtime.Route("a"), runtime.Delay(200*time.Millisecond)); err != nil || got.Text != "later" {
			t.Fatalf("delayed call = %+v, %v", got, err)
		}
	})
}

// A job that runs longer than its lease keeps it by renewal: it is not
// reaped, not run twice, and completes on its first attempt.
func TestLease_RenewedWhileRunning(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Echo.With(c)
		runs := make(chan struct{}, 4)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Lease: 600 * time.Millisecond}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
			runs <- struct{}{}
			select {
			case <-time.After(2400 * time.Millisecond): // four leases long
				return Reply{Text: "done"}, nil
			case <-ctx.Done():
				return Reply{}, ctx.Err()
			}
		})
		startWorker(t, w)
		ctx := ctxT(t)
		id, _ := task.Enqueue(ctx, Msg{})
		if got, err := task.Await(ctx, id); err != nil || got.Text != "done" {
			t.Fatalf("Await = %+v, %v", got, err)
		}
		if len(runs) != 1 {
			t.Fatalf("handler ran %d times, want once", len(runs))
		}
		if info := jobInfo(t, c, id); info.Attempts != 1 || info.Error != "" {
			t.Fatalf("Job = %+v; want one attempt, no failure", info)
		}
	})
}

func TestDLQ_PurgeDeletesDeadJobs(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Note.With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (runtime.None, error) {
			return runtime.None{}, context.Canceled
		})
		startWorker(t, w)
		ctx := ctxT(t)
		ids, _ := task.EnqueueMany(ctx, []Msg{{N: 1}, {N: 2}, {N: 3}}, runtime.MaxRetries(0))
		for _, id := range ids {
			if _, err := task.Await(ctx, id); err == nil {
				t.Fatal("want a JobError")
			}
		}
		// A cutoff before they died keeps them; one after deletes them.
		if n, err := runtime.QueueOf(c).Ops.Purge(ctx, "default", time.Now().Add(-time.Hour)); err != nil || n != 0 {
			t.Fatalf("Purge(an hour ago) = %d, %v; want 0", n, err)
		}
		if n, err := runtime.QueueOf(c).Ops.Purge(ctx, "default", time.Now().Add(time.Hour)); err != nil || n != 3 {
			t.Fatalf("Purge(now) = %d, %v; want 3", n, err)
		}
		for _, id := range ids {
			if _, err := c.Job(ctx, id); !errors.Is(err, runtime.ErrJobNotFound) {
				t.Fatalf("Job(%s) after purge = %v; want not found", id, err)
			}
		}
	})
}

// Bursts of three jobs — the enqueue path that wakes workers only when the
// list was empty — each start at once with the safety poll at 1 h: a lost
// wake-up stalls the round (without that wake-up the test fails). A rarer
// loss, a fetch that went out before a wake-up coming back empty after it,
// is rarely hit here; the fetcher's wakes counter (engine/fetcher.go,
// fetcher.account) rules it out by its reasoning.
func TestWakeup_BurstsNeverWaitForTheSafetyPoll(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Note.With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{SafetyPoll: time.Hour, Concurrency: 8}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (runtime.None, error) { return runtime.None{}, nil })
		startWorker(t, w)
		for round := range 150 {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			ids, err := task.EnqueueMany(ctx, make([]Msg, 3))
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			for _, id := range ids {
				if _, err := task.Await(ctx, id); err != nil {
					cancel()
					t.Fatalf("round %d: Await(%s) = %v; a wake-up was lost", round, id, err)
				}
			}
			cancel()
		}
	})
}

// A saturated worker takes its next jobs as slots free, never waiting for
// the safety poll: the fetcher is woken only when enough slots are free to
// matter (engine/slots.go), so a lost wake-up would stall the backlog here for
// an hour. Handlers of uneven length make slots free one by one and in
// bunches.
func TestWakeup_SaturatedWorkerRefillsWithoutTheSafetyPoll(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Note.With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{SafetyPoll: time.Hour, Concurrency: 8}))
		var done atomic.Int64
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (runtime.None, error) {
			time.Sleep(time.Duration(m.N%4) * 300 * time.Microsecond)
			done.Add(1)
			return runtime.None{}, nil
		})
		const jobs = 400
		msgs := make([]Msg, jobs)
		for i := range msgs {
			msgs[i].N = i
		}
		if _, err := task.EnqueueMany(ctxT(t), msgs); err != nil {
			t.Fatal(err)
		}
		startWorker(t, w)
		waitFor(t, 30*time.Second, "every job of the backlog to run", func() bool { return done.Load() == jobs })
	})
}

// Of many idle workers on a route, a job wakes one: a wake-up goes to a
// waiting worker on a channel of its own, not to every subscriber of the
// route, each of which would run an empty fetch.
func TestWakeup_AJobWakesOneOfManyIdleWorkers(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Echo.With(c)
		const workers = 8
		for range workers {
			w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{SafetyPoll: time.Hour, Concurrency: 2}))
			runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) { return Reply{Text: m.Text}, nil })
			startWorker(t, w)
		}
		ctx := ctxT(t)
		k := runtime.QueueOf(c).Keys("default")
		waitFor(t, 10*time.Second, "every worker to wait", func() bool { return c.Redis().ZCard(ctx, k.Idle()).Val() == workers })
		wakes := c.Redis().PSubscribe(ctx, k.WakeChannelOf("*"))
		defer wakes.Close()
		if _, err := wakes.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if got, err := task.Call(ctx, Msg{Text: "x"}); err != nil || got.Text != "x" {
				t.Fatalf("call %d = %+v, %v", i, got, err)
			}
			waitFor(t, 10*time.Second, "the woken worker to wait again", func() bool { return c.Redis().ZCard(ctx, k.Idle()).Val() == workers })
		}
		// A woken worker that finds no free slot (a fetch of its own in
		// flight holds them) hands the wake-up on ("handed-on"): under load
		// that adds wake-ups, which are not the push's.
		woken, handedOn := 0, 0
		for {
			wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			m, err := wakes.ReceiveMessage(wctx)
			cancel()
			if err != nil {
				break
			}
			if m.Payload == "handed-on" {
				handedOn++
				continue
			}
			woken++
		}
		if woken != 5 {
			t.Fatalf("5 jobs woke %d workers of %d idle ones (and %d hand-ons), want 5", woken, workers, handedOn)
		}
	})
}

// One worker per route promotes its delayed jobs (it keeps the route); when
// it stops, the other takes the route over at once, and a job delayed past
// the handover still starts on time — well before the keeper lock (30 s
// with a 30 s lease) would have run out by itself.
func TestWakeup_DelayedJobsRunAfterTheWorkerThatKeptTheRouteStops(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Echo.With(c)
		ctx := ctxT(t)
		k := runtime.QueueOf(c).Keys("default")
		start := func() func() {
			w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{SafetyPoll: time.Hour, Lease: 30 * time.Second}))
			runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) { return Reply{Text: m.Text}, nil })
			return startWorker(t, w)
		}
		stopKeeper := start()
		waitFor(t, 10*time.Second, "the first worker to keep the route", func() bool { return c.Redis().Exists(ctx, k.Keeper()).Val() == 1 })
		start()
		waitFor(t, 10*time.Second, "the second worker to wait", func() bool { return c.Redis().ZCard(ctx, k.Idle()).Val() == 2 })
		stopKeeper()
		begin := time.Now()
		if got, err := task.Call(ctx, Msg{Text: "later"}, runtime.Delay(300*time.Millisecond)); err != nil || got.Text != "later" {
			t.Fatalf("delayed call = %+v, %v", got, err)
		}
		if took := time.Since(begin); took > 5*time.Second {
			t.Fatalf("a job delayed 300 ms ran after %s: the route waited for its keeper lock to run out", took)
		}
	})
}

// A worker that waits for jobs on a route another worker keeps calls Redis
// only every several seconds: no per-second poll, no promoter's reads, no
// shard count read while nothing changes (each such loop run by every idle
// worker would cost Redis in proportion to the workers).
func TestWakeup_AnIdleStandbyWorkerCallsRedisRarely(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		k := runtime.QueueOf(c).Keys("default")
		if err := c.Redis().Set(ctx, k.Keeper(), "another worker's token", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		w := runtime.NewWorker(c, runtime.WorkerOptions{Logger: quiet()})
		runtime.Handle(w, testtasks.Echo.With(c), func(ctx context.Context, m Msg) (Reply, error) { return Reply{}, nil })
		calls := &namedCounter{}
		runtime.QueueOf(c).Client().AddHook(calls)
		startWorker(t, w)
		waitFor(t, 10*time.Second, "the worker to wait", func() bool { return c.Redis().ZCard(ctx, k.Idle()).Val() == 1 })
		time.Sleep(500 * time.Millisecond) // its start-up calls are done
		before := calls.snapshot()
		time.Sleep(7 * time.Second) // two of the shard counts' 3 s refreshes, seven of a 1 s poll
		sent := calls.since(before)
		total := 0
		for _, n := range sent {
			total += n
		}
		// A heartbeat (every 15 s) and a clock sync (every 30 s) may fall in.
		if total > 4 || sent["hmget"] > 0 || sent["evalsha"] > 0 {
			t.Fatalf("an idle standby worker sent %v in 7 s, want no shard count read, no script and at most a heartbeat and a clock sync", sent)
		}
	})
}

// namedCounter counts the commands a client sends, by name.
type namedCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *namedCounter) add(cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	for _, c := range cmds {
		h.n[c.Name()]++
	}
}

func (h *namedCounter) snapshot() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.n)
}

func (h *namedCounter) since(before map[string]int) map[string]int {
	out := map[string]int{}
	for name, n := range h.snapshot() {
		if d := n - before[name]; d > 0 {
			out[name] = d
		}
	}
	return out
}

func (h *namedCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *namedCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.add(cmd); return next(ctx, cmd) }
}
func (h *namedCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.add(cmds...); return next(ctx, cmds) }
}

// A worker on two routes is woken for one while a job of the other fills
// it: it hands the wake-up on to another waiting worker of that route,
// which runs the job now rather than after the busy worker's job ends.
func TestWakeup_ABusyWorkerHandsItsWakeUpOn(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := testtasks.Echo.With(c)
		release := make(chan struct{})
		defer close(release)
		handler := func(ctx context.Context, m Msg) (Reply, error) {
			if m.Text == "block" {
				<-release
			}
			return Reply{Text: m.Text}, nil
		}
		b := runtime.QueueOf(c).Keys("b").Idle()
		waiting := func(n int64) func() bool {
			return func() bool { return c.Redis().ZCard(ctx, b).Val() == n }
		}
		other := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"b"}, Concurrency: 1, SafetyPoll: time.Hour}))
		runtime.Handle(other, task, handler)
		startWorker(t, other)
		waitFor(t, 10*time.Second, "the route b worker to wait", waiting(1))
		both := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"a", "b"}, Concurrency: 1, SafetyPoll: time.Hour}))
		runtime.Handle(both, task, handler)
		startWorker(t, both)
		waitFor(t, 10*time.Second, "the two-route worker to wait on b, last", waiting(2))
		if _, err := task.Enqueue(ctx, Msg{Text: "block"}, runtime.Route("a")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the blocking job to run", func() bool {
			n, err := c.Redis().ZCard(ctx, runtime.QueueOf(c).Keys("a").Active()).Result()
			return err == nil && n == 1
		})
		// The two-route worker is full, and still the last to wait on b.
		ctx5, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if got, err := task.Call(ctx5, Msg{Text: "now"}, runtime.Route("b")); err != nil || got.Text != "now" {
			t.Fatalf("a job of b while its last waiting worker was full = %+v, %v", got, err)
		}
	})
}
