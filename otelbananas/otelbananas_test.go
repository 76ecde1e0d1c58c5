package otelbananas_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/otelbananas"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
)

func TestMain(m *testing.M) {
	if url := os.Getenv("BANANAS_OTEL_WORKER_URL"); url != "" {
		runWorkerProcess(url, os.Getenv("BANANAS_OTEL_WORKER_NS"), os.Getenv("BANANAS_OTEL_WORKER_SPANS"))
		return
	}
	redistest.Main(m)
}

// flaky fails its first runs (as many as its args say), then returns its
// args; its span context and baggage are what the handler saw.
var flaky = runtime.NewTask[int, seen]("otel_flaky", runtime.Route("orders"), runtime.MaxRetries(3), runtime.RetryBackoff(time.Millisecond))

type seen struct {
	TraceID, SpanID, Tenant string
}

var errFlaky = errors.New("payment gateway said no")

type runs struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *runs) handler(ctx context.Context, failures int) (seen, error) {
	job, _ := runtime.CurrentJob(ctx)
	r.mu.Lock()
	r.n[job.ID]++
	n := r.n[job.ID]
	r.mu.Unlock()
	if n <= failures {
		return seen{}, fmt.Errorf("attempt %d: %w", n, errFlaky)
	}
	sc := trace.SpanContextFromContext(ctx)
	return seen{sc.TraceID().String(), sc.SpanID().String(), baggage.FromContext(ctx).Member("tenant").Value()}, nil
}

func connect(t *testing.T, url string, ns string) *runtime.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := runtime.Connect(ctx, url, runtime.WithNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// tracedClient is a client of its own namespace at url, instrumented with
// a provider whose spans rec records.
func tracedClient(t *testing.T, url string) (*tracetest.SpanRecorder, *sdktrace.TracerProvider, *runtime.Client) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	c := connect(t, url, redistest.Namespace(t))
	otelbananas.Instrument(c, otelbananas.WithTracerProvider(tp))
	return rec, tp, c
}

func startWorker(t *testing.T, c *runtime.Client, tp trace.TracerProvider) *runs {
	r, _ := startWorkerOf(t, c, tp, "orders")
	return r
}

// startWorkerOf starts a traced worker of flaky's runs on routes.
func startWorkerOf(t *testing.T, c *runtime.Client, tp trace.TracerProvider, routes ...string) (*runs, *runtime.Worker) {
	r := &runs{n: map[string]int{}}
	w := runtime.NewWorker(c, runtime.WorkerOptions{
		Concurrency: 4, Routes: routes, Lease: time.Second,
		Middleware: []runtime.Middleware{otelbananas.Middleware(otelbananas.WithTracerProvider(tp))},
	})
	runtime.Handle(w, flaky, r.handler)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r, w
}

// A job enqueued inside a request's span is one trace: a PRODUCER span
// "send orders", child of the request, and a CONSUMER span "process orders"
// per run — two failed retries, then the run that completed — each a child
// of the enqueue's span and linked to it, with the messaging attributes and
// the attempt. The handler's context holds its run's span and the
// request's baggage.
func TestTrace_OneTraceFromTheRequestThroughEveryRetry(t *testing.T) {
	redistest.EachURL(t, func(t *testing.T, url string) {
		rec, tp, c := tracedClient(t, url)
		startWorker(t, c, tp)

		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		member, _ := baggage.NewMember("tenant", "acme")
		bag, _ := baggage.New(member)
		ctx = baggage.ContextWithBaggage(ctx, bag)
		ctx, request := tp.Tracer("test").Start(ctx, "GET /orders", trace.WithSpanKind(trace.SpanKindServer))
		id, err := flaky.With(c).Enqueue(ctx, 2)
		request.End()
		if err != nil {
			t.Fatal(err)
		}
		got, err := flaky.With(c).Await(ctx, id)
		if err != nil {
			t.Fatal(err)
		}

		spans := waitSpans(t, rec, 5)
		send := only(t, spans, "send orders")
		checkKind(t, send, trace.SpanKindProducer)
		if send.Parent().SpanID() != request.SpanContext().SpanID() || send.SpanContext().TraceID() != request.SpanContext().TraceID() {
			t.Fatalf("send span's parent is %s, want the request's span %s", send.Parent().SpanID(), request.SpanContext().SpanID())
		}
		checkAttrs(t, send, map[string]string{"messaging.system": "bananas", "messaging.destination.name": "orders",
			"messaging.operation.type": "send", "messaging.message.id": id, "bananas.task": "otel_flaky"})

		processes := all(spans, "process orders")
		if len(processes) != 3 {
			t.Fatalf("%d process spans, want 3 (two failed runs and the one that completed)", len(processes))
		}
		for i, p := range processes {
			checkKind(t, p, trace.SpanKindConsumer)
			if p.Parent().SpanID() != send.SpanContext().SpanID() || p.SpanContext().TraceID() != send.SpanContext().TraceID() {
				t.Fatalf("run %d's parent is %s, want the send span %s", i+1, p.Parent().SpanID(), send.SpanContext().SpanID())
			}
			if l := p.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != send.SpanContext().SpanID() {
				t.Fatalf("run %d links to %v, want the send span", i+1, l)
			}
			checkAttrs(t, p, map[string]string{"messaging.system": "bananas", "messaging.destination.name": "orders",
				"messaging.operation.type": "process", "messaging.message.id": id, "bananas.job.attempt": fmt.Sprint(i + 1)})
			if i < 2 {
				if p.Status().Code != codes.Error {
					t.Fatalf("failed run %d has status %v, want Error", i+1, p.Status())
				}
				checkAttrs(t, p, map[string]string{"error.type": "*fmt.wrapError"})
			} else if p.Status().Code == codes.Error || attr(p, "error.type") != "" {
				t.Fatalf("the completed run's span has status %v and error.type %q", p.Status(), attr(p, "error.type"))
			}
		}
		last := processes[2]
		if got.TraceID != last.SpanContext().TraceID().String() || got.SpanID != last.SpanContext().SpanID().String() {
			t.Fatalf("the handler's context held span %s/%s, want its run's %s/%s", got.TraceID, got.SpanID, last.SpanContext().TraceID(), last.SpanContext().SpanID())
		}
		if got.Tenant != "acme" {
			t.Fatalf("the handler's context held baggage tenant=%q, want the request's acme", got.Tenant)
		}
	})
}

// A batch is one PRODUCER span with messaging.batch.message_count, and each
// of its jobs' runs is its child.
func TestTrace_ABatchIsOneSendSpan(t *testing.T) {
	redistest.EachURL(t, func(t *testing.T, url string) {
		rec, tp, c := tracedClient(t, url)
		startWorker(t, c, tp)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ids, err := flaky.With(c).EnqueueMany(ctx, []int{0, 0, 0})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if _, err := flaky.With(c).Await(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		spans := waitSpans(t, rec, 4)
		send := only(t, spans, "send orders")
		checkAttrs(t, send, map[string]string{"messaging.batch.message_count": "3"})
		if v := attr(send, "messaging.message.id"); v != "" {
			t.Fatalf("a batch's send span names one message id %q", v)
		}
		for _, p := range all(spans, "process orders") {
			if p.Parent().SpanID() != send.SpanContext().SpanID() {
				t.Fatalf("a batch job's run has parent %s, want the batch's send span", p.Parent().SpanID())
			}
		}
	})
}

// A batch submitted through the Inspector (the HTTP API's POST
// /api/v1/jobs with a list) is one PRODUCER span too; over two routes it
// has no one destination, so it is named "send", and each job's run, on
// either route, is its child.
func TestTrace_ASubmittedBatchOverTwoRoutesIsOneSendSpan(t *testing.T) {
	redistest.EachURL(t, func(t *testing.T, url string) {
		rec, tp, c := tracedClient(t, url)
		_, w := startWorkerOf(t, c, tp, "orders", "refunds")

		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ids, err := w.Inspector().SubmitBatch(ctx, []admin.Submission{
			{Name: "otel_flaky", Args: []byte("0")}, {Name: "otel_flaky", Args: []byte("0"), Route: "refunds"},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if _, err := flaky.With(c).Await(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		spans := waitSpans(t, rec, 3)
		send := only(t, spans, "send")
		checkKind(t, send, trace.SpanKindProducer)
		checkAttrs(t, send, map[string]string{"messaging.batch.message_count": "2", "bananas.task": "otel_flaky", "messaging.operation.type": "send"})
		if v := attr(send, "messaging.destination.name"); v != "" {
			t.Fatalf("a batch over two routes names destination %q", v)
		}
		for _, name := range []string{"process orders", "process refunds"} {
			if p := only(t, spans, name); p.Parent().SpanID() != send.SpanContext().SpanID() {
				t.Fatalf("%s has parent %s, want the batch's send span", name, p.Parent().SpanID())
			}
		}
	})
}

// A program run by runtime.Main, which builds its client and worker
// itself, is traced by registering Install: its worker's runs are CONSUMER
// spans, children of the enqueue's span of another process's instrumented
// client.
func TestTrace_InstallTracesTheWorkerMainBuilds(t *testing.T) {
	t.Parallel()
	url, ns := redistest.Shared(t).URL(), redistest.Namespace(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	env := map[string]string{"REDIS_URL": url, "BANANAS_NAMESPACE": ns, "WORKER_ROUTING_KEYS": "orders", "LOG_LEVEL": "error"}
	r := &runs{n: map[string]int{}}
	wctx, stop := context.WithCancel(context.Background())
	exited := make(chan int, 1)
	var out bytes.Buffer
	go func() {
		exited <- runtime.RunCommand(wctx, []string{"worker"}, func(k string) string { return env[k] }, &out, &out,
			func(w *runtime.Worker) { runtime.Handle(w, flaky, r.handler) }, otelbananas.Install(otelbananas.WithTracerProvider(tp)))
	}()
	t.Cleanup(func() {
		stop()
		if code := <-exited; code != runtime.ExitOK {
			t.Errorf("the worker exited %d: %s", code, out.String())
		}
	})

	c := connect(t, url, ns)
	otelbananas.Instrument(c, otelbananas.WithTracerProvider(tp))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id, err := flaky.With(c).Enqueue(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flaky.With(c).Await(ctx, id); err != nil {
		t.Fatal(err)
	}
	spans := waitSpans(t, rec, 3)
	send := only(t, spans, "send orders")
	processes := all(spans, "process orders")
	if len(processes) != 2 {
		t.Fatalf("%d process spans, want 2 (a failed run and the one that completed)", len(processes))
	}
	for i, p := range processes {
		checkKind(t, p, trace.SpanKindConsumer)
		if p.Parent().SpanID() != send.SpanContext().SpanID() {
			t.Fatalf("run %d's parent is %s, want the send span %s", i+1, p.Parent().SpanID(), send.SpanContext().SpanID())
		}
		checkAttrs(t, p, map[string]string{"messaging.message.id": id, "bananas.job.attempt": fmt.Sprint(i + 1)})
	}
}

// A job submitted over the HTTP API continues the trace of the caller
// that sent its trace context in the request's headers (another service,
// in any language): the send span is a child of the caller's span, and the
// run sees the caller's baggage. A baggage over a header's bound is
// dropped, and the submission still succeeds.
func TestTrace_AnHTTPSubmissionContinuesTheCallersTrace(t *testing.T) {
	redistest.EachURL(t, func(t *testing.T, url string) {
		rec, tp, c := tracedClient(t, url)
		var hookSaw sync.Map // what a hook of the program's own finds in RequestHeader
		c.AddEnqueueHook(func(ctx context.Context, e *runtime.Enqueueing, next func(context.Context) error) error {
			h := runtime.RequestHeader(ctx)
			hookSaw.Store("traceparent", h.Get("traceparent"))
			hookSaw.Store("Authorization", h.Get("Authorization"))
			return next(ctx)
		})
		_, w := startWorkerOf(t, c, tp, "orders")
		srv := httptest.NewServer(runtime.APIHandler(w.Inspector(), runtime.APIOptions{}))
		t.Cleanup(srv.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()

		const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		submit := func(baggage string) string {
			t.Helper()
			req, _ := http.NewRequest("POST", srv.URL+"/api/v1/jobs", strings.NewReader(`{"name":"otel_flaky","args":0}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
			req.Header.Set("baggage", baggage)
			req.Header.Set("Authorization", "Bearer not-for-hooks")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct{ ID string }
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusCreated {
				t.Fatalf("POST /api/v1/jobs: %d, %v", resp.StatusCode, err)
			}
			return body.ID
		}
		for _, tc := range []struct{ baggage, tenant string }{
			{"tenant=acme", "acme"},
			{"tenant=acme,big=" + strings.Repeat("x", 3000), ""},
		} {
			rec.Reset()
			id := submit(tc.baggage)
			got, err := flaky.With(c).Await(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got.TraceID != callerTrace || got.Tenant != tc.tenant {
				t.Fatalf("with baggage of %d bytes the run saw trace %s and tenant %q; want the caller's trace and tenant %q", len(tc.baggage), got.TraceID, got.Tenant, tc.tenant)
			}
			spans := waitSpans(t, rec, 2)
			send := only(t, spans, "send orders")
			if send.Parent().SpanID().String() != callerSpan || send.SpanContext().TraceID().String() != callerTrace || !send.Parent().IsRemote() {
				t.Fatalf("the send span's parent is %s of trace %s, want the caller's span %s of %s", send.Parent().SpanID(), send.SpanContext().TraceID(), callerSpan, callerTrace)
			}
			if p := only(t, spans, "process orders"); p.Parent().SpanID() != send.SpanContext().SpanID() {
				t.Fatalf("the run's parent is %s, want the send span", p.Parent().SpanID())
			}
		}
		if parent, _ := hookSaw.Load("traceparent"); parent == "" {
			t.Fatal("an enqueue hook found no traceparent in RequestHeader")
		}
		if auth, _ := hookSaw.Load("Authorization"); auth != "" {
			t.Fatalf("an enqueue hook found the caller's Authorization %q in RequestHeader", auth)
		}
	})
}

// waitSpans waits until rec holds n ended spans.
func waitSpans(t *testing.T, rec *tracetest.SpanRecorder, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		spans := rec.Ended()
		if len(spans) >= n {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spans ended, want %d", len(spans), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func all(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func only(t *testing.T, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	got := all(spans, name)
	if len(got) != 1 {
		t.Fatalf("%d spans named %q, want 1", len(got), name)
	}
	return got[0]
}

func checkKind(t *testing.T, s sdktrace.ReadOnlySpan, want trace.SpanKind) {
	t.Helper()
	if s.SpanKind() != want {
		t.Fatalf("span %q is of kind %v, want %v", s.Name(), s.SpanKind(), want)
	}
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if a.Key == attribute.Key(key) {
			return a.Value.String()
		}
	}
	return ""
}

func checkAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := attr(s, k); got != v {
			t.Fatalf("span %q: %s = %q, want %q", s.Name(), k, got, v)
		}
	}
}

var (
	wfCount = runtime.NewTask[string, int]("otel_count", runtime.Route("orders"))
	wfSum   = runtime.NewTask[[]int, int]("otel_sum", runtime.Route("orders"))
)

// A workflow's submission is one PRODUCER span "send workflow", with its
// steps counted and its id, and every step's run is its child: the whole
// workflow is one trace under the request that submitted it.
func TestTrace_AWorkflowIsOneTraceUnderItsSubmission(t *testing.T) {
	redistest.EachURL(t, func(t *testing.T, url string) {
		rec, tp, c := tracedClient(t, url)
		w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: 4, Routes: []string{"orders"}, Lease: time.Second,
			Middleware: []runtime.Middleware{otelbananas.Middleware(otelbananas.WithTracerProvider(tp))}})
		runtime.Handle(w, wfCount, func(_ context.Context, s string) (int, error) { return len(s), nil })
		runtime.Handle(w, wfSum, func(_ context.Context, xs []int) (int, error) { return xs[0] + xs[1], nil })
		wctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = w.Run(wctx) }()
		t.Cleanup(func() { stop(); <-done })

		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ctx, request := tp.Tracer("test").Start(ctx, "POST /reports")
		final := runtime.Then(runtime.Gather(wfCount.With(c).Step("ab"), wfCount.With(c).Step("cde")), wfSum.With(c))
		id, err := final.Enqueue(ctx)
		request.End()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := final.Await(ctx, id); err != nil || got != 5 {
			t.Fatalf("Await = %d, %v", got, err)
		}
		spans := waitSpans(t, rec, 5)
		send := only(t, spans, "send workflow")
		checkKind(t, send, trace.SpanKindProducer)
		checkAttrs(t, send, map[string]string{"bananas.workflow.id": id, "messaging.batch.message_count": "4", "bananas.task": "otel_sum"})
		runs := all(spans, "process orders")
		if len(runs) != 3 {
			t.Fatalf("%d process spans, want 3 (two counts and the sum)", len(runs))
		}
		counts := map[trace.SpanID]bool{}
		var sum sdktrace.ReadOnlySpan
		for _, r := range runs {
			if r.Parent().SpanID() != send.SpanContext().SpanID() || r.SpanContext().TraceID() != request.SpanContext().TraceID() {
				t.Fatalf("step run %s (%s) is under %s, want the workflow's send span %s", attr(r, "bananas.task"), attr(r, "messaging.message.id"), r.Parent().SpanID(), send.SpanContext().SpanID())
			}
			checkAttrs(t, r, map[string]string{"bananas.workflow.id": id})
			if attr(r, "bananas.task") == "otel_count" {
				counts[r.SpanContext().SpanID()] = true
				if len(r.Links()) != 1 {
					t.Fatalf("a first step's run has links %v, want only the one to the send span", r.Links())
				}
			} else {
				sum = r
			}
		}
		linked := map[trace.SpanID]bool{}
		for _, l := range sum.Links() {
			if l.SpanContext.SpanID() != send.SpanContext().SpanID() {
				linked[l.SpanContext.SpanID()] = true
			}
		}
		if len(linked) != 2 || !linked[keys(counts)[0]] || !linked[keys(counts)[1]] {
			t.Fatalf("the sum step's run links to %v besides the send span; want the two count runs %v, its predecessors through the Gather", keys(linked), keys(counts))
		}
	})
}

func keys(m map[trace.SpanID]bool) []trace.SpanID {
	out := make([]trace.SpanID, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
