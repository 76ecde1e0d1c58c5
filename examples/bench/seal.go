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

var sealMode = flag.Bool("seal", false, "instead of the scenarios: enqueue and drain of -n no-op jobs plain, with keys set, and with a 16 KiB compressible payload (compressed, sealed), in the same run")

// sealBench measures enqueue and drain of -n no-op jobs with keys set
// (runtime.WithKeys) and with a 16 KiB compressible payload, against plain
// jobs in the same run, each in a namespace of its own; it reports jobs per
// second of each and the ratio to plain (the target is at least 0.85).
func sealBench(ctx context.Context, url string) {
	keys := runtime.WithKeys(runtime.SealKey{ID: "bench", Secret: bytes.Repeat([]byte{7}, 32)})
	var body strings.Builder
	for i := 0; body.Len() < 16<<10; i++ {
		fmt.Fprintf(&body, `{"customer":%d,"plan":"pro"},`, i%300)
	}
	big := tasks.Payload{To: "user@example.com", Subject: "hello", Body: body.String()[:16<<10]}
	type variant struct {
		name string
		opts []runtime.ConnectOption
		p    tasks.Payload
	}
	var plainEnq, plainDrain float64
	for _, v := range []variant{
		{"plain", []runtime.ConnectOption{runtime.CompressOver(0)}, payload},
		{"sealed", []runtime.ConnectOption{keys}, payload},
		{"plain_16k", []runtime.ConnectOption{runtime.CompressOver(0)}, big},
		{"compressed_16k", []runtime.ConnectOption{runtime.CompressOver(runtime.DefaultCompressOver)}, big},
		{"sealed_16k", []runtime.ConnectOption{keys}, big},
	} {
		ns := fmt.Sprintf("s%x", time.Now().UnixNano()%0xfffff)
		c, err := runtime.Connect(ctx, url, append([]runtime.ConnectOption{runtime.WithNamespace(ns)}, v.opts...)...)
		if err != nil {
			log.Fatal(err)
		}
		task := tasks.Noop.With(c)
		start := time.Now()
		benchkit.Parallel(*producers, *n, func(int) {
			if _, err := task.Enqueue(ctx, v.p); err != nil {
				log.Fatal(err)
			}
		})
		enq := float64(*n) / time.Since(start).Seconds()
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
		drain := float64(*n) / time.Since(start).Seconds()
		stop()
		<-ran
		tasks.OnNoop = nil
		cleanup(ctx, c.Redis(), ns)
		_ = c.Close()
		report("seal_"+v.name+"_enqueue_jobs_per_s", enq)
		report("seal_"+v.name+"_drain_jobs_per_s", drain)
		switch v.name {
		case "plain":
			plainEnq, plainDrain = enq, drain
		case "plain_16k":
			plainEnq, plainDrain = enq, drain
		default:
			report("seal_"+v.name+"_enqueue_vs_plain", enq/plainEnq)
			report("seal_"+v.name+"_drain_vs_plain", drain/plainDrain)
		}
	}
}
