// Command tracing shows one trace from an HTTP handler through a job's
// enqueue, two failed runs and the retry that completes, on the embedded
// Redis: the spans otelbananas makes, printed as a tree by an in-memory
// exporter.
//
//	go -C examples/tracing run .
//
// It is a module of its own, as otelbananas is, so that the core module
// requires no OpenTelemetry.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/bananas-go/bananas/examples/tracing/tasks"
	"github.com/bananas-go/bananas/otelbananas"
	"github.com/bananas-go/bananas/runtime"
)

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run serves the checkout, posts one order to it and prints the trace to out.
func run(out io.Writer) error {
	ctx := context.Background()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer func() { _ = tp.Shutdown(ctx) }()

	c, err := runtime.Connect(ctx, "mem://")
	if err != nil {
		return err
	}
	defer c.Close()
	runtime.SetDefault(c)
	otelbananas.Instrument(c, otelbananas.WithTracerProvider(tp))

	w := runtime.NewWorker(c, runtime.WorkerOptions{
		Routes:     []string{"payments"},
		Backoff:    func(int) time.Duration { return 20 * time.Millisecond },
		Middleware: []runtime.Middleware{otelbananas.Middleware(otelbananas.WithTracerProvider(tp))},
	})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = w.Run(wctx) }()
	defer func() { stop(); <-stopped }() // the worker stops before its client closes

	// The checkout handler's span is what an HTTP instrumentation such as
	// otelhttp would start; the job's spans hang under it.
	tracer := tp.Tracer("checkout")
	mux := http.NewServeMux()
	mux.HandleFunc("POST /checkout", func(rw http.ResponseWriter, r *http.Request) {
		ctx, span := tracer.Start(r.Context(), "POST /checkout", trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		receipt, err := tasks.Charge.Call(ctx, tasks.Order{ID: "o-42", Cents: 1999})
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		_ = json.NewEncoder(rw).Encode(receipt)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	resp, err := http.Post("http://"+ln.Addr().String()+"/checkout", "application/json", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var receipt tasks.Receipt
	if err := json.NewDecoder(resp.Body).Decode(&receipt); err != nil {
		return fmt.Errorf("POST /checkout answered %s: %w", resp.Status, err)
	}
	fmt.Fprintf(out, "POST /checkout -> %+v\n\n", receipt)
	printTree(out, spans.GetSpans())
	return nil
}

// printTree prints the spans as a tree under their parents, in start order,
// each with its kind, start offset, duration, status and attributes.
func printTree(out io.Writer, spans tracetest.SpanStubs) {
	children := map[trace.SpanID][]tracetest.SpanStub{}
	byID := map[trace.SpanID]bool{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = true
	}
	var roots []tracetest.SpanStub
	for _, s := range spans {
		if p := s.Parent.SpanID(); byID[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	if len(roots) == 0 {
		return
	}
	t0 := roots[0].StartTime
	fmt.Fprintf(out, "trace %s\n", roots[0].SpanContext.TraceID())
	var walk func(s tracetest.SpanStub, indent string)
	walk = func(s tracetest.SpanStub, indent string) {
		status := "ok"
		if s.Status.Code.String() == "Error" {
			status = "error: " + s.Status.Description
		}
		link := ""
		if len(s.Links) > 0 {
			link = " link→" + s.Links[0].SpanContext.SpanID().String()
		}
		fmt.Fprintf(out, "%s%s [%s] span %s%s, +%.1f ms, %.1f ms, %s\n", indent, s.Name, strings.ToLower(s.SpanKind.String()),
			s.SpanContext.SpanID(), link, ms(s.StartTime.Sub(t0)), ms(s.EndTime.Sub(s.StartTime)), status)
		attrs := make([]string, 0, len(s.Attributes))
		for _, a := range s.Attributes {
			attrs = append(attrs, fmt.Sprintf("%s=%s", a.Key, a.Value.String()))
		}
		sort.Strings(attrs)
		if len(attrs) > 0 {
			fmt.Fprintf(out, "%s    %s\n", indent, strings.Join(attrs, " "))
		}
		kids := children[s.SpanContext.SpanID()]
		sort.Slice(kids, func(i, j int) bool { return kids[i].StartTime.Before(kids[j].StartTime) })
		for _, k := range kids {
			walk(k, indent+"  ")
		}
	}
	for _, r := range roots {
		walk(r, "")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
