package runtime_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// allSides is one hook that follows a client's enqueues and its workers'
// runs and ends, as a tracer does.
type allSides struct {
	mu     sync.Mutex
	events []string
}

func (h *allSides) note(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, s)
}

func (h *allSides) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

func (h *allSides) Enqueue(ctx context.Context, e *runtime.Enqueueing, next func(context.Context) error) error {
	e.SetHeader("from-hook", "yes")
	err := next(ctx)
	h.note("enqueue " + e.Task + " " + strings.Join(e.IDs, ","))
	return err
}

func (h *allSides) WorkBegin(ctx context.Context, job runtime.Job, next func(context.Context) error) error {
	h.note("begin " + job.ID + " header " + job.Header("from-hook"))
	return next(ctx)
}

func (h *allSides) JobEnded(e bananastype.JobEnd) { h.note("end " + e.ID + " " + e.Ending.String()) }

// One hook added to the client sees the three operations of a job: its
// enqueue, its run (outside the worker's own middleware) and its end (with
// the worker's OnJobEnd, and the client's metrics still counting it).
func TestAddHook_OneHookSeesTheEnqueueTheRunAndTheEndOfAJob(t *testing.T) {
	c := connect(t, "mem://")
	ctx := ctxT(t)
	h := &allSides{}
	c.AddHook(h)
	var l endLog
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{OnJobEnd: l.add, Middleware: []runtime.Middleware{
		func(ctx context.Context, job runtime.Job, next func(context.Context) error) error {
			h.note("worker middleware " + job.ID)
			return next(ctx)
		}}}))
	runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		return testtasks.Reply{Text: m.Text}, nil
	})
	stop := startWorker(t, w)
	echo := testtasks.Echo.With(c)
	id, err := echo.Enqueue(ctx, testtasks.Msg{Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := echo.Await(ctx, id); err != nil {
		t.Fatal(err)
	}
	stop()
	want := []string{"enqueue t_echo " + id, "begin " + id + " header yes", "worker middleware " + id, "end " + id + " completed"}
	if got := h.seen(); !slices.Equal(got, want) {
		t.Fatalf("hook saw %q; want %q", got, want)
	}
	if ends := l.of(id); len(ends) != 1 || ends[0].Ending != queue.EndCompleted {
		t.Fatalf("OnJobEnd told %+v; want the one completed end", ends)
	}
	if m := scrapeMetrics(t, c); m.value("bananas_jobs_processed_total", "route=default", "priority=normal", "task=t_echo") != 1 {
		t.Fatalf("metrics do not count the end:\n%s", m.body)
	}
}

// A value that follows no operation is refused at once, naming its type.
func TestAddHook_AValueOfNoHookPanicsNamingIt(t *testing.T) {
	c := connect(t, "mem://")
	defer func() {
		if v := recover(); v == nil || !strings.Contains(v.(string), "int") {
			t.Fatalf("recovered %v; want a panic naming int", v)
		}
	}()
	c.AddHook(42)
}
