package main

import (
	"context"
	"flag"
	"io"
	"log"
	"log/slog"
	"sync"
	"time"

	"github.com/bananas-go/bananas/internal/benchkit"
	"github.com/bananas-go/bananas/runtime"
)

var (
	waitsMode   = flag.Bool("waits", false, "instead of the scenarios: workflow waits (a signal's time to the next step's start, Redis bytes per waiting workflow, timer lateness with the waiting workflows stored)")
	waitSignals = flag.Int("signals", 500, "with -waits: workflows signalled, 4 at a time, for the signal-to-start figure")
	waitWaiting = flag.Int("waiting", 100000, "with -waits: workflows left waiting for a signal (a wait, then a step)")
	waitTimers  = flag.Int("timers", 2000, "with -waits: workflows each sleeping -sleep after a first step, for the lateness")
	waitSleep   = flag.Duration("sleep", 2*time.Second, "with -waits: each timer's duration")
)

// The tasks of the waits bench: a step after a signal, whose args are the
// signal's send time (ns), and a first step that returns when its timer
// will be due (ns), then the step after the timer.
var (
	benchSignaled = runtime.NewTask[int64, int64]("bench_signaled", runtime.Route("waits"))
	benchBefore   = runtime.NewTask[int64, int64]("bench_before_sleep", runtime.Route("waits"))
	benchAfter    = runtime.NewTask[int64, int64]("bench_after_sleep", runtime.Route("waits"))
)

// waitsBench reports the waits' figures.
func waitsBench(ctx context.Context, c *runtime.Client) {
	var mu sync.Mutex
	var toStart, late []time.Duration
	started := map[int64]chan struct{}{}
	w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"waits"}, Concurrency: 64, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	runtime.Handle(w, benchSignaled, func(_ context.Context, sent int64) (int64, error) {
		d := time.Since(time.Unix(0, sent))
		mu.Lock()
		toStart = append(toStart, d)
		ch := started[sent]
		mu.Unlock()
		if ch != nil {
			close(ch)
		}
		return 0, nil
	})
	runtime.Handle(w, benchBefore, func(_ context.Context, d int64) (int64, error) {
		return time.Now().Add(time.Duration(d)).UnixNano(), nil
	})
	runtime.Handle(w, benchAfter, func(_ context.Context, due int64) (int64, error) {
		mu.Lock()
		late = append(late, time.Since(time.Unix(0, due)))
		mu.Unlock()
		return 0, nil
	})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	defer func() { stop(); <-done }()

	// A signal's time to the next step's start.
	signaled := runtime.Then(runtime.WaitSignal[int64]("go", 0), benchSignaled.With(c))
	one := func() {
		id, err := signaled.Enqueue(ctx)
		if err != nil {
			log.Fatal(err)
		}
		sent := time.Now().UnixNano()
		ch := make(chan struct{})
		mu.Lock()
		started[sent] = ch
		mu.Unlock()
		if err := c.Signal(ctx, id, "go", sent); err != nil {
			log.Fatal(err)
		}
		<-ch
	}
	benchkit.Parallel(4, 8, func(int) { one() }) // warm up: scripts loaded, connections open
	mu.Lock()
	toStart = toStart[:0]
	mu.Unlock()
	benchkit.Parallel(4, *waitSignals, func(int) { one() })
	mu.Lock()
	report("wait_signal_to_next_step_start_p50_ms", benchkit.Ms(benchkit.Quantile(toStart, 0.50)))
	report("wait_signal_to_next_step_start_p99_ms", benchkit.Ms(benchkit.Quantile(toStart, 0.99)))
	mu.Unlock()

	// Redis bytes per waiting workflow: a signal wait (no timeout), then a step.
	mem0 := usedMemory(ctx, c.Redis())
	t0 := time.Now()
	benchkit.Parallel(*producers, *waitWaiting, func(int) {
		if _, err := signaled.Enqueue(ctx); err != nil {
			log.Fatal(err)
		}
	})
	perWait := float64(usedMemory(ctx, c.Redis())-mem0) / float64(*waitWaiting)
	note("  %d waiting workflows stored in %s", *waitWaiting, time.Since(t0).Round(time.Millisecond))
	report("wait_redis_bytes_per_waiting_workflow", perWait)

	// Timer lateness, the waiting workflows still stored.
	slept := runtime.Then(runtime.Sleep(benchBefore.With(c).Step(int64(*waitSleep)), *waitSleep), benchAfter.With(c))
	ids := make([]string, *waitTimers)
	benchkit.Parallel(*producers, *waitTimers, func(i int) {
		id, err := slept.Enqueue(ctx)
		if err != nil {
			log.Fatal(err)
		}
		ids[i] = id
	})
	benchkit.Parallel(16, *waitTimers, func(i int) {
		if _, err := slept.Await(ctx, ids[i]); err != nil {
			log.Fatal(err)
		}
	})
	mu.Lock()
	defer mu.Unlock()
	report("wait_timer_lateness_p50_ms", benchkit.Ms(benchkit.Quantile(late, 0.50)))
	report("wait_timer_lateness_p99_ms", benchkit.Ms(benchkit.Quantile(late, 0.99)))
}
