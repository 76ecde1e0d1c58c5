package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/internal/benchkit"
	"github.com/bananas-go/bananas/runtime"
)

var sealMode = flag.Bool("seal", false, "instead of the scenarios: enqueue and drain of -n no-op jobs plain, with keys set, and with a 16 KiB compressible payload (compressed, sealed), -runs rounds; medians")

// sealBench measures enqueue and drain of -n no-op jobs with keys set
// (runtime.WithKeys) and with a 16 KiB compressible payload, against plain
// jobs, each in a namespace of its own, -runs rounds of every variant in
// turn: it reports jobs per second of each and the ratio to plain of the
// same round (the target is at least 0.85), each the median of its rounds.
func sealBench(ctx context.Context, url string) {
	keys := runtime.WithKeys(runtime.SealKey{ID: "bench", Secret: bytes.Repeat([]byte{7}, 32)})
	var body strings.Builder
	for i := 0; body.Len() < 16<<10; i++ {
		fmt.Fprintf(&body, `{"customer":%d,"plan":"pro"},`, i%300)
	}
	big := tasks.Payload{To: "user@example.com", Subject: "hello", Body: body.String()[:16<<10]}
	type variant struct {
		name, baseline string // baseline: the plain variant it is a ratio of
		opts           []runtime.ConnectOption
		p              tasks.Payload
	}
	variants := []variant{
		{"plain", "", []runtime.ConnectOption{runtime.CompressOver(0)}, payload},
		{"sealed", "plain", []runtime.ConnectOption{keys}, payload},
		{"plain_16k", "", []runtime.ConnectOption{runtime.CompressOver(0)}, big},
		{"compressed_16k", "plain_16k", []runtime.ConnectOption{runtime.CompressOver(runtime.DefaultCompressOver)}, big},
		{"sealed_16k", "plain_16k", []runtime.ConnectOption{keys}, big},
	}
	runs := map[string][]float64{}
	var order []string
	add := func(metric string, v float64) {
		if runs[metric] == nil {
			order = append(order, metric)
		}
		runs[metric] = append(runs[metric], v)
	}
	for r := 1; r <= *flowRuns; r++ {
		note("seal round %d of %d", r, *flowRuns)
		got := map[string][2]float64{}
		for _, v := range variants {
			enq, drain := sealRun(ctx, url, v.opts, v.p)
			got[v.name] = [2]float64{enq, drain}
			add("seal_"+v.name+"_enqueue_jobs_per_s", enq)
			add("seal_"+v.name+"_drain_jobs_per_s", drain)
			if base, ok := got[v.baseline]; ok {
				add("seal_"+v.name+"_enqueue_vs_plain", enq/base[0])
				add("seal_"+v.name+"_drain_vs_plain", drain/base[1])
			}
		}
	}
	for _, metric := range order {
		reportRuns(metric, runs[metric])
	}
}

// sealRun enqueues -n jobs of args p through a client connected with opts,
// in a namespace of its own, then drains them: jobs per second of each.
func sealRun(ctx context.Context, url string, opts []runtime.ConnectOption, p tasks.Payload) (enq, drain float64) {
	ns := fmt.Sprintf("s%x", time.Now().UnixNano()%0xfffff)
	c, err := runtime.Connect(ctx, url, append([]runtime.ConnectOption{runtime.WithNamespace(ns)}, opts...)...)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	task := tasks.Noop.With(c)
	start := time.Now()
	benchkit.Parallel(*producers, *n, func(int) {
		if _, err := task.Enqueue(ctx, p); err != nil {
			log.Fatal(err)
		}
	})
	enq = float64(*n) / time.Since(start).Seconds()
	var done atomic.Int64
	finished := make(chan struct{})
	tasks.OnNoop = func() {
		if done.Add(1) == int64(*n) {
			close(finished)
		}
	}
	w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: *conc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	start = time.Now()
	ran := make(chan struct{})
	go func() { _ = w.Run(wctx); close(ran) }()
	<-finished
	drain = float64(*n) / time.Since(start).Seconds()
	stop()
	<-ran
	tasks.OnNoop = nil
	cleanup(ctx, c.Redis(), ns)
	return enq, drain
}
