package otelbananas

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
)

// ScopeName is the instrumentation scope of the spans this package makes.
const ScopeName = "github.com/bananas-go/bananas/otelbananas"

// Attribute keys of Bananas's own, beside the messaging conventions'.
const (
	// AttemptKey is the run's attempt: 1 for the first run, 2 for the
	// first retry, and so on.
	AttemptKey = attribute.Key("bananas.job.attempt")
	// TaskKey is the task's name.
	TaskKey = attribute.Key("bananas.task")
	// WorkflowKey is the id of a workflow submitted by the span's enqueue.
	WorkflowKey = attribute.Key("bananas.workflow.id")
)

// system is messaging.system's value for Bananas; processName a run's
// messaging.operation.name.
var (
	system      = semconv.MessagingSystemKey.String("bananas")
	processName = semconv.MessagingOperationName("process")
)

// Option configures Instrument and Middleware.
type Option func(*config)

type config struct {
	provider   trace.TracerProvider
	propagator propagation.TextMapPropagator
}

// WithTracerProvider makes the spans with tp instead of the global
// provider (otel.GetTracerProvider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.provider = tp }
}

// WithPropagator carries the context in the job's headers with p instead
// of W3C trace context and baggage. Producer and worker must use the same.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(c *config) { c.propagator = p }
}

// newConfig applies opts over the defaults. The propagator defaults to W3C
// trace context and baggage, not the global one: the global propagator does
// nothing until a program sets it, and a trace that silently stops at the
// queue is the failure this package exists to prevent.
func newConfig(opts []Option) (config, trace.Tracer) {
	c := config{
		provider:   otel.GetTracerProvider(),
		propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	for _, o := range opts {
		o(&c)
	}
	return c, c.provider.Tracer(ScopeName)
}

// Instrument makes c's typed enqueues (Enqueue, EnqueueMany, Call, a
// workflow's Enqueue) and the submissions of its HTTP API and CLI PRODUCER
// spans, and puts their context in the jobs' headers. Call it once per client, before it enqueues.
func Instrument(c *runtime.Client, opts ...Option) {
	cfg, tracer := newConfig(opts)
	c.AddEnqueueHook(func(ctx context.Context, e *runtime.Enqueueing, next func(context.Context) error) error {
		dest := e.Route
		if e.Workflow {
			dest = "workflow"
		}
		attrs := []attribute.KeyValue{system, semconv.MessagingOperationTypeSend, semconv.MessagingOperationName("send")}
		name := "send" // a batch over several routes has no one destination
		if dest != "" {
			name += " " + dest
			attrs = append(attrs, semconv.MessagingDestinationName(dest))
		}
		if e.Task != "" {
			attrs = append(attrs, TaskKey.String(e.Task))
		}
		if e.Count != 1 || e.Workflow {
			attrs = append(attrs, semconv.MessagingBatchMessageCount(e.Count))
		}
		if !trace.SpanContextFromContext(ctx).IsValid() {
			// A submission over the HTTP API continues its caller's trace.
			if h := runtime.RequestHeader(ctx); h != nil {
				ctx = cfg.propagator.Extract(ctx, propagation.HeaderCarrier(h))
			}
		}
		ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
		defer span.End()
		cfg.propagator.Inject(ctx, enqueueCarrier{e})
		err := next(ctx)
		if len(e.IDs) == 1 && e.IDs[0] != "" {
			if e.Workflow {
				span.SetAttributes(WorkflowKey.String(e.IDs[0]))
			} else {
				span.SetAttributes(semconv.MessagingMessageID(e.IDs[0]))
			}
		}
		if err != nil && !errors.Is(err, runtime.ErrDuplicate) {
			fail(span, err)
		}
		return err
	})
}

// Install returns a function that instruments a worker's client
// (Instrument) and adds the tracing middleware to the worker (Middleware):
// what a program run by runtime.Main, which builds both itself, registers
// to be traced:
//
//	func main() { runtime.Main(tasks.Register, otelbananas.Install()) }
//
// Main runs it for every subcommand, so the enqueues of the CLI and the
// submissions of the HTTP API are traced too. Do not also Instrument the
// same client: each hook would make its own span.
func Install(opts ...Option) func(*runtime.Worker) {
	return func(w *runtime.Worker) {
		Instrument(w.Client(), opts...)
		w.Use(Middleware(opts...))
		w.UseBatch(BatchMiddleware(opts...))
	}
}

// Middleware makes each run of a job a CONSUMER span, a child of the
// context its enqueue put in its headers and linked to it, and gives the
// handler a context holding that span and the enqueue's baggage. A failed
// run's span has status Error and error.type; a panic's, error.type panic.
func Middleware(opts ...Option) runtime.Middleware {
	cfg, tracer := newConfig(opts)
	names := new(spanNames)
	return func(ctx context.Context, job runtime.Job, next func(context.Context) error) (err error) {
		k := kits.Get().(*startKit)
		k.carrier.job = job
		ctx = cfg.propagator.Extract(ctx, &k.carrier) // a propagator reads the carrier in Extract, and keeps none of it
		k.carrier.job = runtime.Job{}
		start := k.options(ctx, job)
		if job.Workflow != "" {
			start = append(start, trace.WithAttributes(WorkflowKey.String(job.Workflow)), trace.WithLinks(afterLinks(job)...))
		}
		ctx, span := tracer.Start(ctx, names.of(job.Route), start...)
		kits.Put(k) // Start copied what it needs of the kit
		if job.Workflow != "" {
			_ = runtime.LeaveTrail(ctx, traceparent(span.SpanContext()))
		}
		defer func() {
			if p := recover(); p != nil {
				span.SetAttributes(semconv.ErrorTypeKey.String("panic"))
				span.SetStatus(codes.Error, fmt.Sprint("panic: ", p))
				span.End()
				panic(p)
			}
			if err != nil {
				fail(span, err)
			}
			span.End()
		}()
		return next(ctx)
	}
}

// BatchMiddleware makes each call of a batch task's function
// (runtime.HandleBatch) one CONSUMER span `process <route>`, beside the
// span of each of its jobs' runs (Middleware): it links to every job's run
// span, with the job's id on the link, and counts them in
// messaging.batch.message_count. The function's context holds it. A
// failure of the whole batch (the function's single error, a panic,
// entries of the wrong length) sets its status Error and error.type; a
// job's own error is on that job's span. Install adds it; a worker that
// adds Middleware by hand adds it with Worker.UseBatch.
func BatchMiddleware(opts ...Option) runtime.BatchMiddleware {
	_, tracer := newConfig(opts)
	return func(ctx context.Context, call runtime.BatchCall, next func(context.Context) error) error {
		links := make([]trace.Link, 0, len(call.Contexts))
		for i, jctx := range call.Contexts {
			if sc := trace.SpanContextFromContext(jctx); sc.IsValid() {
				links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{semconv.MessagingMessageID(call.Jobs[i].ID)}})
			}
		}
		ctx, span := tracer.Start(ctx, "process "+call.Route, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...),
			trace.WithAttributes(system, semconv.MessagingOperationTypeProcess, processName, semconv.MessagingDestinationName(call.Route),
				TaskKey.String(call.Task), semconv.MessagingBatchMessageCount(len(call.Jobs))))
		defer span.End()
		err := next(ctx)
		if err != nil {
			fail(span, err)
		}
		return err
	}
}

// A startKit is what a run's span is started with: the carrier its
// context is read through, its attributes, its link to the enqueue's span,
// and the options over them. The options are made once per kit, over the
// kit's own arrays, and kits are pooled: a run fills a kit in place and
// boxes nothing, and tracing's cost per job is the SDK's. A kit is free
// again once Start returns: Start copies the attributes and links it is
// given.
type startKit struct {
	carrier jobCarrier
	attrs   [7]attribute.KeyValue
	link    [1]trace.Link
	// withLink is the option list with the link last; without the link,
	// the list but its last.
	withLink [3]trace.SpanStartOption
}

var kits = sync.Pool{New: func() any {
	k := new(startKit)
	k.attrs[0], k.attrs[1], k.attrs[2] = system, semconv.MessagingOperationTypeProcess, processName
	k.withLink = [3]trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(k.attrs[:]...),
		trace.WithLinks(k.link[:]...),
	}
	return k
}}

// options fills k for job, whose enqueue's span context (if any) ctx
// holds, and returns the options to start its run's span with. The slice
// is full: an append copies it, and leaves the kit's as it is.
func (k *startKit) options(ctx context.Context, job runtime.Job) []trace.SpanStartOption {
	k.attrs[3] = semconv.MessagingDestinationName(job.Route)
	k.attrs[4] = semconv.MessagingMessageID(job.ID)
	k.attrs[5] = TaskKey.String(job.Name)
	k.attrs[6] = AttemptKey.Int(job.Attempt)
	if sent := trace.SpanContextFromContext(ctx); sent.IsValid() {
		k.link[0] = trace.Link{SpanContext: sent}
		return k.withLink[:3:3]
	}
	return k.withLink[:2:2]
}

// spanNames maps a route to its runs' span name, "process <route>", so
// that a run makes no string: copied on write, read without a lock.
type spanNames struct {
	mu    sync.Mutex
	names atomic.Pointer[map[string]string]
}

func (n *spanNames) of(route string) string {
	if m := n.names.Load(); m != nil {
		if name, ok := (*m)[route]; ok {
			return name
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	next := map[string]string{}
	if m := n.names.Load(); m != nil {
		maps.Copy(next, *m)
	}
	name := "process " + route
	next[route] = name
	n.names.Store(&next)
	return name
}

// afterLinks are the links of a workflow step's run to the runs of its
// predecessors, whose span contexts they left as their trails.
func afterLinks(job runtime.Job) []trace.Link {
	var links []trace.Link
	for _, t := range job.After() {
		ctx := w3c.Extract(context.Background(), propagation.MapCarrier{"traceparent": t})
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{predecessor}})
		}
	}
	return links
}

// w3c reads a trail; predecessor marks a link to a predecessor's run.
var (
	w3c         = propagation.TraceContext{}
	predecessor = attribute.String("bananas.link", "predecessor")
)

// traceparent is sc in the W3C traceparent form, a run's trail.
func traceparent(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// fail marks span failed by err: status Error with err's message, error.type
// err's Go type, and err recorded as an event.
func fail(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
}

// errorType names err for error.type: its Go type, or for the runtime's
// sentinel errors which wrap nothing more telling, their own names.
func errorType(err error) string {
	switch {
	case errors.Is(err, runtime.SkipRetry):
		return "skip_retry"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return fmt.Sprintf("%T", err)
}

// enqueueCarrier writes the propagator's fields as the enqueue's headers.
type enqueueCarrier struct{ e *runtime.Enqueueing }

func (c enqueueCarrier) Get(key string) string { return c.e.Header(key) }

// Set drops a value over a header's bound (a caller's baggage of several
// kilobytes, say): tracing must not make an enqueue fail.
func (c enqueueCarrier) Set(key, value string) {
	if len(value) <= queue.MaxHeaderValue {
		c.e.SetHeader(key, value)
	}
}
func (c enqueueCarrier) Keys() []string { return nil }

// jobCarrier reads the propagator's fields from a job's headers.
type jobCarrier struct{ job runtime.Job }

func (c jobCarrier) Get(key string) string { return c.job.Header(key) }
func (c jobCarrier) Set(string, string)    {}
func (c jobCarrier) Keys() []string {
	h := c.job.Headers()
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}
