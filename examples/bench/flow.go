package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/internal/benchkit"
	"github.com/bananas-go/bananas/runtime"
)

var (
	flowMode  = flag.Bool("flow", false, "instead of the scenarios: flow control (keyed drain against unkeyed, a rate held by competing workers, a late key behind a backlog), -runs times")
	flowRuns  = flag.Int("runs", 3, "with -flow, -workflow, -batched or -seal: rounds, each scenario once a round; the figures are their medians")
	flowKeys  = flag.Int("keys", 1000, "with -flow: users the keyed drain spreads its jobs over")
	rateSecs  = flag.Int("rate-secs", 30, "with -flow: seconds the rated task runs under its rate")
	backlogN  = flag.Int("backlog", 100000, "with -flow: jobs of one user ahead of the late user's first")
	rateWorks = flag.Int("rate-workers", 4, "with -flow: workers competing for the rated task")
)

// flowBench runs the flow-control scenarios flowRuns times, alternating,
// and reports each figure's runs and median.
func flowBench(ctx context.Context, c *runtime.Client) {
	var plainRates, keyedRates, ratios, plainBytes, keyedBytes, starts, late []float64
	for r := 1; r <= *flowRuns; r++ {
		note("flow round %d of %d", r, *flowRuns)
		pr, pb := drainOf(ctx, c, tasks.Plain, "plain", func(i int) tasks.Keyed { return tasks.Keyed{} })
		kr, kb := drainOf(ctx, c, tasks.PerUser, "peruser", func(i int) tasks.Keyed {
			return tasks.Keyed{User: fmt.Sprint(i % *flowKeys)}
		})
		plainRates, keyedRates, ratios = append(plainRates, pr), append(keyedRates, kr), append(ratios, kr/pr)
		plainBytes, keyedBytes = append(plainBytes, pb), append(keyedBytes, kb)
		starts = append(starts, rateHeld(ctx, c))
		late = append(late, lateKey(ctx, c))
	}
	reportRuns("flow_drain_unkeyed_jobs_per_s", plainRates)
	reportRuns(fmt.Sprintf("flow_drain_%dkeys_cap1_jobs_per_s", *flowKeys), keyedRates)
	reportRuns("flow_drain_keyed_vs_unkeyed", ratios)
	reportRuns("flow_redis_bytes_per_pending_unkeyed_job", plainBytes)
	reportRuns("flow_redis_bytes_per_pending_keyed_job", keyedBytes)
	reportRuns(fmt.Sprintf("flow_rate1000_starts_per_s_%dworkers", *rateWorks), starts)
	reportRuns("flow_late_key_first_start_ms", late)
}

// reportRuns reports each run of a figure and their median.
func reportRuns(metric string, runs []float64) {
	s := append([]float64(nil), runs...)
	sort.Float64s(s)
	for i, v := range runs {
		report(fmt.Sprintf("%s_run%d", metric, i+1), v)
	}
	report(metric, s[len(s)/2])
}

func quietWorker(c *runtime.Client, routes []string, concurrency int) (*runtime.Worker, func()) {
	w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: routes, Concurrency: concurrency,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tasks.Register(w)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(ctx); err != nil {
			log.Fatal(err)
		}
	}()
	return w, func() { cancel(); <-done }
}

// drainOf enqueues n jobs of task (args by index), measures the Redis bytes
// each costs while it waits, then drains them with one worker at
// concurrency conc: jobs per second, bytes per job.
func drainOf(ctx context.Context, c *runtime.Client, task *runtime.Task[tasks.Keyed, runtime.None], route string, args func(int) tasks.Keyed) (float64, float64) {
	var ran atomic.Int64
	all := make(chan struct{})
	tasks.OnKeyed = func(tasks.Keyed) {
		if ran.Add(1) == int64(*n) {
			close(all)
		}
	}
	mem0 := usedMemory(ctx, c.Redis())
	for off := 0; off < *n; off += *batch {
		batchArgs := make([]tasks.Keyed, 0, *batch)
		for i := off; i < min(off+*batch, *n); i++ {
			batchArgs = append(batchArgs, args(i))
		}
		if _, err := task.EnqueueMany(ctx, batchArgs); err != nil {
			log.Fatal(err)
		}
	}
	bytes := float64(usedMemory(ctx, c.Redis())-mem0) / float64(*n)
	start := time.Now()
	_, stop := quietWorker(c, []string{route}, *conc)
	<-all
	rate := float64(*n) / time.Since(start).Seconds()
	stop()
	note("  drain %s: %.0f jobs/s, %.0f bytes a waiting job", route, rate, bytes)
	return rate, bytes
}

// rateHeld runs the rated task (rate=1000/s) with rateWorks workers
// competing for more jobs than the rate allows, and returns the starts per
// second from its second second on (the first holds the burst) for rateSecs.
// What is left of its jobs runs in the next round's.
func rateHeld(ctx context.Context, c *runtime.Client) float64 {
	var mu sync.Mutex
	var at []time.Time
	tasks.OnKeyed = func(tasks.Keyed) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
	}
	total := 1000 * (*rateSecs + 3)
	for off := 0; off < total; off += *batch {
		if _, err := tasks.Rated.EnqueueMany(ctx, make([]tasks.Keyed, min(*batch, total-off))); err != nil {
			log.Fatal(err)
		}
	}
	var stops []func()
	for range *rateWorks {
		_, stop := quietWorker(c, []string{"rated"}, 16)
		stops = append(stops, stop)
	}
	benchkit.WaitFor(func() bool { mu.Lock(); defer mu.Unlock(); return len(at) > 0 }, 10*time.Second)
	mu.Lock()
	first := at[0]
	mu.Unlock()
	from, to := first.Add(time.Second), first.Add(time.Second+time.Duration(*rateSecs)*time.Second)
	time.Sleep(time.Until(to) + 100*time.Millisecond)
	for _, stop := range stops {
		stop()
	}
	mu.Lock()
	defer mu.Unlock()
	in := 0
	for _, t := range at {
		if !t.Before(from) && t.Before(to) {
			in++
		}
	}
	perSec := float64(in) / float64(*rateSecs)
	note("  rate: %.1f starts/s over %ds, %d workers", perSec, *rateSecs, *rateWorks)
	return perSec
}

// lateKey puts backlogN jobs of one user in the fair route, starts a worker
// on them, and once it runs them enqueues one job of another user: the
// milliseconds from that enqueue to its start.
func lateKey(ctx context.Context, c *runtime.Client) float64 {
	var ran atomic.Int64
	lateStart := make(chan time.Time, 1)
	tasks.OnKeyed = func(k tasks.Keyed) {
		if k.User == "late" {
			lateStart <- time.Now()
			return
		}
		ran.Add(1)
	}
	for off := 0; off < *backlogN; off += *batch {
		args := make([]tasks.Keyed, min(*batch, *backlogN-off))
		for i := range args {
			args[i].User = "busy"
		}
		if _, err := tasks.Fair.EnqueueMany(ctx, args); err != nil {
			log.Fatal(err)
		}
	}
	_, stop := quietWorker(c, []string{"fair"}, *conc)
	defer stop()
	benchkit.WaitFor(func() bool { return ran.Load() >= 1000 }, 30*time.Second)
	sent := time.Now()
	if _, err := tasks.Fair.Enqueue(ctx, tasks.Keyed{User: "late"}); err != nil {
		log.Fatal(err)
	}
	var took time.Duration
	select {
	case t := <-lateStart:
		took = t.Sub(sent)
	case <-time.After(60 * time.Second):
		log.Fatal("the late user's job did not start within 60s")
	}
	left := int64(*backlogN) - ran.Load()
	note("  late key: first job started %.1f ms after its enqueue, %d jobs of the busy user still waiting", benchkit.Ms(took), left)
	benchkit.WaitFor(func() bool { return ran.Load() >= int64(*backlogN) }, 120*time.Second)
	return benchkit.Ms(took)
}
