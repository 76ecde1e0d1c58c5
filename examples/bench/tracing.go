package main

import (
	"context"
	"flag"
	"io"
	"log"
	"log/slog"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/otelbananas"
	"github.com/bananas-go/bananas/runtime"
)

var tracingMode = flag.Bool("tracing", false, "instead of the scenarios: the drain of -n jobs at -concurrency with otelbananas (every span recorded by the SDK and dropped by a no-op exporter; and with 1% of traces sampled) against without, -runs times, alternating")

// discard is a span exporter that drops what it is given: the SDK's whole
// cost (sampling, recording, batching) is paid, no exporter's.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// tracingBench drains n no-op jobs with and without tracing (every trace
// sampled, and 1% of them), the jobs of a traced drain enqueued by an
// instrumented client (so they carry their trace context), and reports each
// drain's jobs per second and its ratio to the plain one.
func tracingBench(ctx context.Context, c *runtime.Client, url, ns string) {
	all := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	some := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))))
	defer func() { _ = all.Shutdown(ctx); _ = some.Shutdown(ctx) }()
	traced, mwAll := instrumented(ctx, url, ns, all)
	defer traced.Close()
	sampled, mwSome := instrumented(ctx, url, ns, some)
	defer sampled.Close()
	var on, off, ratio, onSome, ratioSome []float64
	for r := 1; r <= *flowRuns; r++ {
		note("tracing round %d of %d", r, *flowRuns)
		var t, p, q float64
		if r%2 == 1 {
			p, t, q = tracedDrain(ctx, c, nil), tracedDrain(ctx, traced, mwAll), tracedDrain(ctx, sampled, mwSome)
		} else {
			q, t, p = tracedDrain(ctx, sampled, mwSome), tracedDrain(ctx, traced, mwAll), tracedDrain(ctx, c, nil)
		}
		note("  drain: traced %.0f jobs/s, 1%% sampled %.0f jobs/s, plain %.0f jobs/s (%.2fx, %.2fx)", t, q, p, t/p, q/p)
		on, off, ratio = append(on, t), append(off, p), append(ratio, t/p)
		onSome, ratioSome = append(onSome, q), append(ratioSome, q/p)
	}
	reportRuns("tracing_drain_jobs_per_s", on)
	reportRuns("tracing_sampled1pct_drain_jobs_per_s", onSome)
	reportRuns("tracing_plain_drain_jobs_per_s", off)
	reportRuns("tracing_drain_vs_plain", ratio)
	reportRuns("tracing_sampled1pct_drain_vs_plain", ratioSome)
}

// instrumented is a client of namespace ns whose enqueues are traced with
// tp, and the worker middleware that traces runs with it.
func instrumented(ctx context.Context, url, ns string, tp *sdktrace.TracerProvider) (*runtime.Client, runtime.Middleware) {
	c, err := runtime.Connect(ctx, url, runtime.WithNamespace(ns))
	if err != nil {
		log.Fatal(err)
	}
	otelbananas.Instrument(c, otelbananas.WithTracerProvider(tp))
	return c, otelbananas.Middleware(otelbananas.WithTracerProvider(tp))
}

// tracedDrain enqueues n no-op jobs through c, then drains them with one
// worker at concurrency conc whose middleware is mw (none when nil), and
// returns the jobs run per second.
func tracedDrain(ctx context.Context, c *runtime.Client, mw runtime.Middleware) float64 {
	args := make([]tasks.Payload, *batch)
	for i := range args {
		args[i] = payload
	}
	for sent := 0; sent < *n; sent += len(args) {
		if _, err := tasks.Noop.With(c).EnqueueMany(ctx, args[:min(len(args), *n-sent)]); err != nil {
			log.Fatal(err)
		}
	}
	var ran atomic.Int64
	all := make(chan struct{})
	tasks.OnNoop = func() {
		if ran.Add(1) == int64(*n) {
			close(all)
		}
	}
	opts := runtime.WorkerOptions{Concurrency: *conc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mw != nil {
		opts.Middleware = []runtime.Middleware{mw}
	}
	w := runtime.NewWorker(c, opts)
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		if err := w.Run(wctx); err != nil {
			log.Fatal(err)
		}
	}()
	<-all
	rate := float64(*n) / time.Since(start).Seconds()
	stop()
	<-done
	return rate
}
