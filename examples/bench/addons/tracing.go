package main

import (
	"context"
	"flag"
	"io"
	"log"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/otelbananas"
	"github.com/bananas-go/bananas/runtime"
)

var tracingMode = flag.Bool("tracing", false, "the drain of -n jobs at -concurrency with otelbananas (every span recorded by the SDK and dropped by a no-op exporter; with 1% of traces sampled) and with a bare SDK span, against without, -runs rounds in rotating order")

// discard is a span exporter that drops what it is given: the SDK's whole
// cost (sampling, recording, batching) is paid, no exporter's.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// tracingBench drains n no-op jobs four ways a round, in an order that
// rotates from round to round: plain; with otelbananas recording every
// trace; with 1% of traces sampled; and, the floor of any tracing on the
// SDK, with a middleware that only starts and ends a span with as many
// attributes and nothing else (no context carried, no link). The traced
// drains' jobs are enqueued by an instrumented client, so they carry their
// trace context. It reports each drain's jobs per second and its ratio to
// the plain one of its round.
func tracingBench(ctx context.Context, c *runtime.Client, url, ns string) {
	all := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	some := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))))
	defer func() { _ = all.Shutdown(ctx); _ = some.Shutdown(ctx) }()
	traced, mwAll := instrumented(ctx, url, ns, all)
	defer traced.Close()
	sampled, mwSome := instrumented(ctx, url, ns, some)
	defer sampled.Close()
	drains := []struct {
		name string
		c    *runtime.Client
		mw   runtime.Middleware
	}{
		{"plain", c, nil},
		{"traced", traced, mwAll},
		{"sampled1pct", sampled, mwSome},
		{"bare_span", traced, bareSpan(all)},
	}
	rates, ratios := make([][]float64, len(drains)), make([][]float64, len(drains))
	cpus, cpuRatios := make([][]float64, len(drains)), make([][]float64, len(drains))
	for r := 0; r < *flowRuns; r++ {
		note("tracing round %d of %d", r+1, *flowRuns)
		rate, cpu := make([]float64, len(drains)), make([]time.Duration, len(drains))
		for i := range drains {
			j := (r + i) % len(drains)
			rate[j], cpu[j] = tracedDrain(ctx, drains[j].c, drains[j].mw)
		}
		for i, d := range drains {
			rates[i], ratios[i] = append(rates[i], rate[i]), append(ratios[i], rate[i]/rate[0])
			cpus[i], cpuRatios[i] = append(cpus[i], cpu[i].Seconds()*1e6), append(cpuRatios[i], cpu[0].Seconds()/cpu[i].Seconds())
			note("  %s: %.0f jobs/s (%.2fx), %.1f µs of CPU a job (%.2fx)", d.name, rate[i], rate[i]/rate[0], cpu[i].Seconds()*1e6, cpu[0].Seconds()/cpu[i].Seconds())
		}
	}
	for i, d := range drains {
		if d.name == "plain" {
			reportRuns("tracing_plain_drain_jobs_per_s", rates[i])
			reportRuns("tracing_plain_cpu_us_per_job", cpus[i])
			continue
		}
		name := "tracing_" + d.name
		if d.name == "traced" {
			name = "tracing"
		}
		reportRuns(name+"_drain_jobs_per_s", rates[i])
		reportRuns(name+"_drain_vs_plain", ratios[i])
		reportRuns(name+"_cpu_us_per_job", cpus[i])
		// plain's CPU a job over this drain's: the throughput a machine
		// whose cores are all busy would keep.
		reportRuns(name+"_cpu_vs_plain", cpuRatios[i])
	}
}

// bareSpan is a middleware that starts and ends a CONSUMER span of seven
// attributes around each run and does nothing else: what the SDK alone
// costs a run, below which no tracing middleware can go.
func bareSpan(tp *sdktrace.TracerProvider) runtime.Middleware {
	tracer := tp.Tracer("bench")
	return func(ctx context.Context, job runtime.Job, next func(context.Context) error) error {
		ctx, span := tracer.Start(ctx, "process "+job.Route, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
			attribute.String("messaging.system", "bananas"), attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.operation.name", "process"), attribute.String("messaging.destination.name", job.Route),
			attribute.String("messaging.message.id", job.ID), attribute.String("bananas.task", job.Name), attribute.Int("bananas.job.attempt", job.Attempt)))
		defer span.End()
		return next(ctx)
	}
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
// returns the jobs run per second and the CPU time a job took, this
// process's and Redis's together. CPU time swings far less than throughput
// on a shared machine, whose neighbours take cores from it at any moment.
func tracedDrain(ctx context.Context, c *runtime.Client, mw runtime.Middleware) (float64, time.Duration) {
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
	cpu0 := cpuTime(ctx, c)
	start := time.Now()
	go func() {
		defer close(done)
		if err := w.Run(wctx); err != nil {
			log.Fatal(err)
		}
	}()
	<-all
	rate := float64(*n) / time.Since(start).Seconds()
	perJob := (cpuTime(ctx, c) - cpu0) / time.Duration(*n)
	stop()
	<-done
	return rate, perJob
}

// cpuTime is the CPU time, user and system, this process and c's Redis
// server (when it is another process that says, in INFO cpu) have used.
func cpuTime(ctx context.Context, c *runtime.Client) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	info, err := c.Redis().Info(ctx, "cpu").Result()
	if err != nil {
		return t
	}
	for _, line := range strings.Split(info, "\r\n") {
		for _, field := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(line, field); ok {
				secs, _ := strconv.ParseFloat(v, 64)
				t += time.Duration(secs * float64(time.Second))
			}
		}
	}
	return t
}
