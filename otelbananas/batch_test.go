package otelbananas_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/otelbananas"
	"github.com/bananas-go/bananas/runtime"
)

// bulk is a batch task: its function doubles each of its args.
var bulk = runtime.NewTask[int, int]("otel_bulk", runtime.Route("bulk"))

// A call of a batch task's function is one CONSUMER span "process bulk"
// of its own, beside each job's run span: it links to the run span of
// every job of the batch (the job's id on the link), counts them, and is
// the span the function's context holds; each job keeps its own run span,
// which its entry of BatchContexts holds.
func TestTrace_ABatchCallIsOneSpanLinkedToEachJobsRunSpan(t *testing.T) {
	redistest.EachURL(t, func(t *testing.T, url string) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		c := connect(t, url, redistest.Namespace(t))
		w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: 5, Routes: []string{"bulk"}, Lease: time.Second})
		otelbananas.Install(otelbananas.WithTracerProvider(tp))(w)
		var mu sync.Mutex
		var callSpan trace.SpanContext
		jobSpans := map[string]trace.SpanID{}
		runtime.HandleBatch(w, bulk.With(c), runtime.Batch{Size: 5, Linger: time.Minute}, func(ctx context.Context, args []int) ([]int, []error, error) {
			jobs, _ := runtime.BatchJobs(ctx)
			ctxs, _ := runtime.BatchContexts(ctx)
			mu.Lock()
			callSpan = trace.SpanContextFromContext(ctx)
			for i, jctx := range ctxs {
				jobSpans[jobs[i].ID] = trace.SpanContextFromContext(jctx).SpanID()
			}
			mu.Unlock()
			out := make([]int, len(args))
			for i, a := range args {
				out[i] = 2 * a
			}
			return out, nil, nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done := make(chan struct{})
		wctx, stop := context.WithCancel(context.Background())
		go func() { defer close(done); _ = w.Run(wctx) }()
		t.Cleanup(func() { stop(); <-done })
		ids, err := bulk.With(c).EnqueueMany(ctx, []int{1, 2, 3, 4, 5})
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			if got, err := bulk.With(c).Await(ctx, id); err != nil || got != 2*(i+1) {
				t.Fatalf("Await job %d = %d, %v", i, got, err)
			}
		}
		spans := waitSpans(t, rec, 7) // the send, five runs, the call
		var call sdktrace.ReadOnlySpan
		runs := map[trace.SpanID]string{} // run span -> its job's id
		for _, s := range all(spans, "process bulk") {
			if attr(s, "messaging.batch.message_count") != "" {
				if call != nil {
					t.Fatal("two batch spans for one call")
				}
				call = s
				continue
			}
			runs[s.SpanContext().SpanID()] = attr(s, "messaging.message.id")
		}
		if call == nil || len(runs) != 5 {
			t.Fatalf("want one batch span and five run spans, got %v and %d", call, len(runs))
		}
		checkKind(t, call, trace.SpanKindConsumer)
		checkAttrs(t, call, map[string]string{"messaging.system": "bananas", "messaging.operation.type": "process",
			"messaging.destination.name": "bulk", "messaging.batch.message_count": "5", "bananas.task": "otel_bulk"})
		mu.Lock()
		defer mu.Unlock()
		if callSpan.SpanID() != call.SpanContext().SpanID() {
			t.Fatalf("the function's context holds span %s, want the batch span %s", callSpan.SpanID(), call.SpanContext().SpanID())
		}
		var linked []string
		for _, l := range call.Links() {
			id := runs[l.SpanContext.SpanID()]
			if id == "" {
				t.Fatalf("the batch span links to %s, no run span of its jobs", l.SpanContext.SpanID())
			}
			for _, a := range l.Attributes {
				if a.Key == "messaging.message.id" && a.Value.AsString() != id {
					t.Fatalf("the link to job %s's run span names job %s", id, a.Value.AsString())
				}
			}
			if jobSpans[id] != l.SpanContext.SpanID() {
				t.Fatalf("job %s's context in the batch holds span %s, its run span is %s", id, jobSpans[id], l.SpanContext.SpanID())
			}
			linked = append(linked, id)
		}
		slices.Sort(linked)
		want := slices.Clone(ids)
		slices.Sort(want)
		if !slices.Equal(linked, want) {
			t.Fatalf("the batch span links to the runs of %v, want every job's %v", linked, want)
		}
	})
}
