package bananastest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
)

// TB is the part of testing.TB the assertions use; *testing.T and
// *testing.B are TBs.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Harness is one test's Bananas: an embedded server with a client, and the
// register functions of the tasks under test. New closes it when the test
// ends.
type Harness struct {
	// Client is connected to the harness's own embedded server: bind the
	// generated stubs to it with With, or make it the default (SetDefault).
	Client *runtime.Client
	// Worker has the registered tasks and takes their routes (and
	// "default"). Drain does not use it, so that it can be run live, with
	// Start, for tests that Await or Call.
	Worker *runtime.Worker
	// Inspector is the admin layer of Client with the registered tasks.
	Inspector *admin.Inspector

	register []func(*runtime.Worker)
	opts     Options
}

// Options adjust a harness (NewWithOptions). A zero field takes its default.
type Options struct {
	// Worker configures the workers of Drain and the harness's Worker.
	// Routes and OnJobEnd are the harness's: Routes are the tasks' routes
	// (every known route for Drain), and OnJobEnd, when set, is called
	// after the harness's own. Defaults differ from a worker's: Backoff is
	// zero (a retry is due at once, so Drain runs it; a task's own
	// backoff= still holds), Concurrency 1 (jobs run in the order a worker
	// takes them), SafetyPoll 10ms, and Logger discards.
	Worker runtime.WorkerOptions
	// DrainTimeout bounds one Drain: past it the test fails, listing what
	// is still waiting. Default 10s.
	DrainTimeout time.Duration
}

// New starts an embedded server (mem://) for t, with a client, an Inspector
// and a worker that has the tasks of register: the generated Register
// functions of the packages under test. Everything is closed when t ends.
// Each harness has a server of its own, so tests with harnesses of their own
// may run in parallel.
func New(t testing.TB, register ...func(*runtime.Worker)) *Harness {
	t.Helper()
	return NewWithOptions(t, Options{}, register...)
}

// NewWithOptions is New with options.
func NewWithOptions(t testing.TB, opts Options, register ...func(*runtime.Worker)) *Harness {
	t.Helper()
	c, err := runtime.Connect(context.Background(), "mem://")
	if err != nil {
		t.Fatalf("bananastest: start the embedded server: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	h := &Harness{Client: c, register: register, opts: withDefaults(opts)}
	h.Inspector = runtime.NewInspector(c, register...)
	routes := []string{"default"}
	for _, task := range h.Inspector.Tasks() {
		if !slices.Contains(routes, task.Route) {
			routes = append(routes, task.Route)
		}
	}
	h.Worker = h.newWorker(routes, nil)
	return h
}

func withDefaults(o Options) Options {
	if o.Worker.Concurrency == 0 {
		o.Worker.Concurrency = 1
	}
	if o.Worker.Backoff == nil {
		o.Worker.Backoff = func(int) time.Duration { return 0 }
	}
	if o.Worker.SafetyPoll == 0 {
		o.Worker.SafetyPoll = 10 * time.Millisecond
	}
	if o.Worker.Logger == nil {
		o.Worker.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = 10 * time.Second
	}
	return o
}

// newWorker returns a worker of the harness's options over routes with the
// registered tasks; onEnd, when set, sees every end before the user's hook.
func (h *Harness) newWorker(routes []string, onEnd func(bananastype.JobEnd)) *runtime.Worker {
	o := h.opts.Worker
	o.Routes = routes
	if user := o.OnJobEnd; onEnd != nil {
		o.OnJobEnd = func(e bananastype.JobEnd) {
			onEnd(e)
			if user != nil {
				user(e)
			}
		}
	}
	w := runtime.NewWorker(h.Client, o)
	for _, r := range h.register {
		r(w)
	}
	return w
}

// Start runs h.Worker until t ends, for tests that await results of a live
// worker (Task.Await, Task.Call) rather than Drain. A worker that stops with
// an error fails t when it ends.
func (h *Harness) Start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Worker.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("bananastest: the harness's worker stopped: %v", err)
		}
	})
}

// SetDefault makes h.Client the default client (runtime.SetDefault) until t
// ends, for code under test that enqueues through unbound stubs. The default
// is process-wide: tests that call it must not run in parallel.
func (h *Harness) SetDefault(t testing.TB) {
	t.Helper()
	prev := runtime.Default()
	runtime.SetDefault(h.Client)
	t.Cleanup(func() { runtime.SetDefault(prev) })
}
