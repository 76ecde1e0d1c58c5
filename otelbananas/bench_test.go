package otelbananas_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/bananas-go/bananas/otelbananas"
	"github.com/bananas-go/bananas/runtime"
)

// discard drops the spans it is given, so that a benchmark pays the SDK's
// recording and batching and no exporter's.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// capturedRun runs one job enqueued by an instrumented client on the
// embedded server, and returns its run's context and Job as a middleware
// saw them: what a benchmark calls the middleware with.
func capturedRun(b *testing.B, tp *sdktrace.TracerProvider) (context.Context, runtime.Job) {
	c, err := runtime.Connect(context.Background(), "mem://", runtime.WithNamespace("otelbench"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	otelbananas.Instrument(c, otelbananas.WithTracerProvider(tp))
	type run struct {
		ctx context.Context
		job runtime.Job
	}
	got := make(chan run, 1)
	w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"orders"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Middleware: []runtime.Middleware{
		func(ctx context.Context, job runtime.Job, next func(context.Context) error) error {
			select {
			case got <- run{context.WithoutCancel(ctx), job}:
			default:
			}
			return next(ctx)
		},
	}})
	runtime.Handle(w, flaky, func(context.Context, int) (seen, error) { return seen{}, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	if _, err := flaky.With(c).Enqueue(ctx, 0); err != nil {
		b.Fatal(err)
	}
	r := <-got
	cancel()
	<-done
	return r.ctx, r.job
}

// BenchmarkMiddleware_EverySpanRecorded is the middleware's cost per run
// with every span sampled, recorded and batched to an exporter that drops
// it: what tracing adds to a job's run.
func BenchmarkMiddleware_EverySpanRecorded(b *testing.B) {
	benchMiddleware(b, sdktrace.AlwaysSample())
}

// BenchmarkMiddleware_Unsampled is the middleware's cost per run of a job
// whose trace was not sampled (parent-based sampling, the enqueue's span
// not sampled): what tracing adds to most runs where a small share of
// traces is sampled.
func BenchmarkMiddleware_Unsampled(b *testing.B) {
	benchMiddleware(b, sdktrace.ParentBased(sdktrace.NeverSample()))
}

// benchMiddleware runs the middleware, over a provider that samples with
// sampler and batches to a discarding exporter, on a captured run whose
// job was enqueued by a client instrumented with the same provider.
func benchMiddleware(b *testing.B, sampler sdktrace.Sampler) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}), sdktrace.WithSampler(sampler))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx, job := capturedRun(b, tp)
	mw := otelbananas.Middleware(otelbananas.WithTracerProvider(tp))
	next := func(context.Context) error { return nil }
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = mw(ctx, job, next)
		}
	})
}
