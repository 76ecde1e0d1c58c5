package otelbananas_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// spanLine is a span as the worker process writes it, one JSON line each.
type spanLine struct {
	Name, Kind, Trace, Span, Parent, Status string
	Links                                   []string
	Attrs                                   map[string]string
}

// lineExporter writes ended spans to a file as spanLines.
type lineExporter struct {
	mu sync.Mutex
	f  *os.File
}

func (e *lineExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range spans {
		l := spanLine{Name: s.Name(), Kind: s.SpanKind().String(), Trace: s.SpanContext().TraceID().String(),
			Span: s.SpanContext().SpanID().String(), Parent: s.Parent().SpanID().String(), Status: s.Status().Code.String(),
			Attrs: map[string]string{}}
		for _, k := range s.Links() {
			l.Links = append(l.Links, k.SpanContext.SpanID().String())
		}
		for _, a := range s.Attributes() {
			l.Attrs[string(a.Key)] = a.Value.String()
		}
		b, _ := json.Marshal(l)
		if _, err := e.f.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	return e.f.Sync()
}

func (e *lineExporter) Shutdown(context.Context) error { return nil }

// runWorkerProcess is the test binary re-executed as a worker process: it
// runs flaky jobs under the tracing middleware, writing its spans to the
// file spans, until it is killed.
func runWorkerProcess(url, ns, spans string) {
	f, err := os.Create(spans)
	if err != nil {
		panic(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(&lineExporter{f: f}))
	ctx := context.Background()
	c, err := runtime.Connect(ctx, url, runtime.WithNamespace(ns))
	if err != nil {
		panic(err)
	}
	w := runtime.NewWorker(c, runtime.WorkerOptions{
		Routes: []string{"orders"}, Lease: time.Second,
		Middleware: []runtime.Middleware{otelbananas.Middleware(otelbananas.WithTracerProvider(tp))},
	})
	r := &runs{n: map[string]int{}}
	runtime.Handle(w, flaky, r.handler)
	_ = w.Run(ctx)
}

// The trace crosses processes: a producer in this process and a worker in
// another, against one redis-server. The worker's runs are children of the
// producer's send span, in its trace, linked to it.
func TestTrace_CrossesFromTheProducerProcessToTheWorkerProcess(t *testing.T) {
	t.Parallel()
	url, ns := redistest.Shared(t).URL(), redistest.Namespace(t)
	spans := filepath.Join(t.TempDir(), "spans.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "BANANAS_OTEL_WORKER_URL="+url, "BANANAS_OTEL_WORKER_NS="+ns, "BANANAS_OTEL_WORKER_SPANS="+spans)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	c := connect(t, url, ns)
	otelbananas.Instrument(c, otelbananas.WithTracerProvider(tp))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctx, request := tp.Tracer("test").Start(ctx, "POST /checkout", trace.WithSpanKind(trace.SpanKindServer))
	id, err := flaky.With(c).Enqueue(ctx, 1)
	request.End()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flaky.With(c).Await(ctx, id); err != nil {
		t.Fatal(err)
	}
	send := only(t, rec.Ended(), "send orders")

	var runs []spanLine
	deadline := time.Now().Add(10 * time.Second)
	for len(runs) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the worker process wrote %d process spans, want 2 (a failed run and its retry)", len(runs))
		}
		time.Sleep(20 * time.Millisecond)
		runs = readRuns(t, spans)
	}
	for i, r := range runs {
		if r.Kind != "consumer" || r.Name != "process orders" || r.Attrs["messaging.message.id"] != id {
			t.Fatalf("worker span %d: %+v", i, r)
		}
		if r.Trace != send.SpanContext().TraceID().String() || r.Parent != send.SpanContext().SpanID().String() {
			t.Fatalf("worker run %d is in trace %s under %s; want the producer's trace %s under its send span %s",
				i+1, r.Trace, r.Parent, send.SpanContext().TraceID(), send.SpanContext().SpanID())
		}
		if len(r.Links) != 1 || r.Links[0] != send.SpanContext().SpanID().String() {
			t.Fatalf("worker run %d links to %v, want the send span", i+1, r.Links)
		}
	}
	if runs[0].Status != "Error" || runs[1].Status == "Error" || runs[1].Attrs["bananas.job.attempt"] != "2" {
		t.Fatalf("worker runs: %+v; want a failed first run, then a second attempt that completed", runs)
	}
}

func readRuns(t *testing.T, path string) []spanLine {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []spanLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l spanLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			if strings.TrimSpace(sc.Text()) == "" {
				continue
			}
			return out // a line being written
		}
		if l.Name == "process orders" {
			out = append(out, l)
		}
	}
	return out
}
