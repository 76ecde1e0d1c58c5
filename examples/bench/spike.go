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
	"github.com/bananas-go/bananas/runtime"
)

// spike measures enqueue-to-start latency at a base rate, through a 10× spike
// of one second, and after it: a table of p50/p99 per 250 ms window, and how
// long after the spike the p99 is back under twice the base p99.
func spike(ctx context.Context, c *runtime.Client, base int) {
	type sample struct {
		sent time.Time
		lat  time.Duration
	}
	var mu sync.Mutex
	var samples []sample
	tasks.OnPing = func(sent time.Time) {
		d := time.Since(sent)
		mu.Lock()
		samples = append(samples, sample{sent, d})
		mu.Unlock()
	}
	w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: *conc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		if err := w.Run(wctx); err != nil {
			log.Fatal(err)
		}
	}()
	send := func() {
		if _, err := tasks.Ping.Enqueue(ctx, tasks.Stamp{At: time.Now().UnixNano()}); err != nil {
			log.Print(err)
		}
	}
	note("spike: %d jobs/s for 3s, %d jobs/s for 1s, %d jobs/s for 3s", base, 10*base, base)
	start := time.Now()
	sent := paced(base, 3*time.Second, send)
	spikeStart := time.Now()
	sent += paced(10*base, time.Second, send)
	spikeEnd := time.Now()
	sent += paced(base, 3*time.Second, send)
	waitFor(func() bool { mu.Lock(); defer mu.Unlock(); return len(samples) >= sent }, 30*time.Second)

	mu.Lock()
	defer mu.Unlock()
	window := 250 * time.Millisecond
	buckets := map[int][]time.Duration{}
	for _, s := range samples {
		buckets[int(s.sent.Sub(start)/window)] = append(buckets[int(s.sent.Sub(start)/window)], s.lat)
	}
	var basePre []time.Duration
	for _, s := range samples {
		if s.sent.Before(spikeStart) && s.sent.After(start.Add(time.Second)) {
			basePre = append(basePre, s.lat)
		}
	}
	baseP99 := quantile(basePre, 0.99)
	keys := make([]int, 0, len(buckets))
	for k := range buckets {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	fmt.Printf("# spike: enqueue-to-start latency per %s window (sent at), base p99 %.2f ms\n", window, ms(baseP99))
	fmt.Printf("%-12s %8s %10s %10s\n", "window_s", "jobs", "p50_ms", "p99_ms")
	recovered := time.Duration(-1)
	for _, k := range keys {
		from := time.Duration(k) * window
		l := buckets[k]
		p99 := quantile(l, 0.99)
		phase := ""
		at := start.Add(from)
		// A window belongs to the phase its middle falls in: paced's phases
		// end a little after whole seconds, so a window's start lies just
		// before the phase change that its jobs are after.
		mid := at.Add(window / 2)
		if !mid.Before(spikeStart) && mid.Before(spikeEnd) {
			phase = " spike"
		}
		fmt.Printf("%-12.2f %8d %10.2f %10.2f%s\n", from.Seconds(), len(l), ms(quantile(l, 0.5)), ms(p99), phase)
		if recovered < 0 && !mid.Before(spikeEnd) && p99 <= 2*baseP99 {
			recovered = at.Add(window).Sub(spikeEnd) // by the end of this window at the latest
		}
	}
	if recovered < 0 {
		note("spike: p99 never came back within 2x the base p99 after the spike")
		report("spike_recovery_ms", -1)
		return
	}
	report("spike_recovery_ms", ms(recovered))
}
