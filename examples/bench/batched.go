package main

import (
	"context"
	"flag"
	"log"
	"sync/atomic"
	"time"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/runtime"
)

var batchConc = flag.Int("batch-concurrency", 400, "with -batched: the worker's concurrency for both drains (a batch holds a slot per job: at 400, four batches of 100 are in flight at once, one filling while others run and are recorded)")

var batchedMode = flag.Bool("batched", false, "instead of the scenarios: the drain of a no-op task run in batches of 100 (batch=100) against the same task one job at a time, -runs times, at -batch-concurrency")

// batchedBench drains n jobs of the no-op task unbatched, then n of it
// batched, flowRuns times alternating, and reports each drain's jobs per
// second, their ratio and the CPU per job of each (Redis's included).
func batchedBench(ctx context.Context, c *runtime.Client) {
	cpu := cpuPerJob(ctx, c)
	var single, batched, ratios []float64
	for r := 1; r <= *flowRuns; r++ {
		note("batched round %d of %d", r, *flowRuns)
		var s, b float64
		cpu("drain_single", *n, func() { s = drainNoop(ctx, c, tasks.SingleNoop, "single") })
		cpu("drain_batched100", *n, func() { b = drainNoop(ctx, c, tasks.BatchedNoop, "batched") })
		single, batched, ratios = append(single, s), append(batched, b), append(ratios, b/s)
	}
	reportRuns("batch_drain_single_jobs_per_s", single)
	reportRuns("batch_drain_batched100_jobs_per_s", batched)
	reportRuns("batch_drain_batched100_vs_single", ratios)
}

// drainNoop enqueues n jobs of task on route, then drains them with one
// worker of concurrency -batch-concurrency, and returns the jobs per second of the drain.
func drainNoop(ctx context.Context, c *runtime.Client, task *runtime.Task[tasks.Payload, runtime.None], route string) float64 {
	var ran atomic.Int64
	all := make(chan struct{})
	tasks.OnDrained = func(jobs int) {
		if ran.Add(int64(jobs)) == int64(*n) {
			close(all)
		}
	}
	for off := 0; off < *n; off += *batch {
		if _, err := task.EnqueueMany(ctx, make([]tasks.Payload, min(*batch, *n-off))); err != nil {
			log.Fatal(err)
		}
	}
	start := time.Now()
	_, stop := quietWorker(c, []string{route}, *batchConc)
	<-all
	rate := float64(*n) / time.Since(start).Seconds()
	stop()
	note("  drain %s: %.0f jobs/s", route, rate)
	return rate
}
