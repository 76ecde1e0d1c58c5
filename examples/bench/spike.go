package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/internal/benchkit"
	"github.com/bananas-go/bananas/runtime"
)

// spike measures enqueue-to-start latency at a base rate, through a 10× spike
// of one second, and after it: a table of p50/p99 per 250 ms window, and how
// long after the spike the p99 is back under twice the base p99.
func spike(ctx context.Context, c *runtime.Client, base int) {
	run := &spikeRun{}
	tasks.OnPing = run.record
	w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: *conc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		if err := w.Run(wctx); err != nil {
			log.Fatal(err)
		}
	}()
	run.send(ctx, base)

	run.mu.Lock()
	defer run.mu.Unlock()
	recovered := run.printWindows(250 * time.Millisecond)
	if recovered < 0 {
		note("spike: p99 never came back within 2x the base p99 after the spike")
		report("spike_recovery_ms", -1)
		return
	}
	report("spike_recovery_ms", benchkit.Ms(recovered))
}

// spikeSample is one ping job: when it was sent and its enqueue-to-start.
type spikeSample struct {
	sent time.Time
	lat  time.Duration
}

// spikeRun is one spike measurement: its phases' boundaries and the samples
// the worker records.
type spikeRun struct {
	start, spikeStart, spikeEnd time.Time

	mu      sync.Mutex
	samples []spikeSample
}

// record is the ping handler's hook: one started job.
func (r *spikeRun) record(sent time.Time) {
	d := time.Since(sent)
	r.mu.Lock()
	r.samples = append(r.samples, spikeSample{sent, d})
	r.mu.Unlock()
}

// send enqueues pings at base for 3s, 10x base for 1s and base for 3s, and
// waits until the worker has started them all.
func (r *spikeRun) send(ctx context.Context, base int) {
	send := func() {
		if _, err := tasks.Ping.Enqueue(ctx, tasks.Stamp{At: time.Now().UnixNano()}); err != nil {
			log.Print(err)
		}
	}
	note("spike: %d jobs/s for 3s, %d jobs/s for 1s, %d jobs/s for 3s", base, 10*base, base)
	r.start = time.Now()
	sent := benchkit.Paced(base, 3*time.Second, send)
	r.spikeStart = time.Now()
	sent += benchkit.Paced(10*base, time.Second, send)
	r.spikeEnd = time.Now()
	sent += benchkit.Paced(base, 3*time.Second, send)
	benchkit.WaitFor(func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.samples) >= sent }, 30*time.Second)
}

// basePreP99 is the p99 of the jobs sent at the base rate before the spike,
// leaving out the first second while the worker warms up.
func (r *spikeRun) basePreP99() time.Duration {
	var basePre []time.Duration
	for _, s := range r.samples {
		if s.sent.Before(r.spikeStart) && s.sent.After(r.start.Add(time.Second)) {
			basePre = append(basePre, s.lat)
		}
	}
	return benchkit.Quantile(basePre, 0.99)
}

// printWindows prints the table of p50/p99 per window of send time and
// returns how long after the spike the p99 was back within twice the base
// p99, or -1 if it never was. The caller holds r.mu.
func (r *spikeRun) printWindows(window time.Duration) (recovered time.Duration) {
	buckets := map[int][]time.Duration{}
	for _, s := range r.samples {
		buckets[int(s.sent.Sub(r.start)/window)] = append(buckets[int(s.sent.Sub(r.start)/window)], s.lat)
	}
	baseP99 := r.basePreP99()
	keys := make([]int, 0, len(buckets))
	for k := range buckets {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	fmt.Printf("# spike: enqueue-to-start latency per %s window (sent at), base p99 %.2f ms\n", window, benchkit.Ms(baseP99))
	fmt.Printf("%-12s %8s %10s %10s\n", "window_s", "jobs", "p50_ms", "p99_ms")
	recovered = time.Duration(-1)
	for _, k := range keys {
		from := time.Duration(k) * window
		l := buckets[k]
		p99 := benchkit.Quantile(l, 0.99)
		phase := ""
		at := r.start.Add(from)
		// A window belongs to the phase its middle falls in: paced's phases
		// end a little after whole seconds, so a window's start lies just
		// before the phase change that its jobs are after.
		mid := at.Add(window / 2)
		if !mid.Before(r.spikeStart) && mid.Before(r.spikeEnd) {
			phase = " spike"
		}
		fmt.Printf("%-12.2f %8d %10.2f %10.2f%s\n", from.Seconds(), len(l), benchkit.Ms(benchkit.Quantile(l, 0.5)), benchkit.Ms(p99), phase)
		if recovered < 0 && !mid.Before(r.spikeEnd) && p99 <= 2*baseP99 {
			recovered = at.Add(window).Sub(r.spikeEnd) // by the end of this window at the latest
		}
	}
	return recovered
}
