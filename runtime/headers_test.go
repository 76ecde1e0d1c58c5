package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
)

var hdrEcho = runtime.NewTask[string, string]("hdr_echo", runtime.Header("tenant", "default-tenant"))

// A job's headers — from its task's defaults, its enqueue's options and the
// client's enqueue hooks — reach its handler (Job.Header) and the worker's
// middleware, through a retry, for Enqueue, EnqueueMany, Call and a
// workflow's steps alike.
func TestHeaders_ReachTheHandlerFromOptionsAndEnqueueHooks(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		hdrEcho := hdrEcho.With(c)
		var mu sync.Mutex
		var calls []string
		c.AddEnqueueHook(func(ctx context.Context, e *runtime.Enqueueing, next func(context.Context) error) error {
			e.SetHeader("trace", "t-"+e.Task)
			err := next(ctx)
			mu.Lock()
			calls = append(calls, fmt.Sprintf("%s route=%s count=%d workflow=%v ids=%d", e.Task, e.Route, e.Count, e.Workflow, len(e.IDs)))
			mu.Unlock()
			return err
		})
		var seenByMiddleware sync.Map
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 4, Middleware: []runtime.Middleware{
			func(ctx context.Context, job runtime.Job, next func(context.Context) error) error {
				seenByMiddleware.Store(job.ID, job.Header("trace"))
				return next(ctx)
			},
		}}))
		failed := sync.Map{}
		runtime.Handle(w, hdrEcho, func(ctx context.Context, s string) (string, error) {
			job, _ := runtime.CurrentJob(ctx)
			if s == "retry" {
				if _, again := failed.LoadOrStore(job.ID, true); !again {
					return "", fmt.Errorf("first run fails")
				}
			}
			h := job.Headers()
			keys := make([]string, 0, len(h))
			for k, v := range h {
				keys = append(keys, k+"="+v)
			}
			slices.Sort(keys)
			return strings.Join(keys, " "), nil
		})
		startWorker(t, w)

		want := "tenant=acme trace=t-hdr_echo"
		id, err := hdrEcho.Enqueue(ctx, "retry", runtime.Header("tenant", "acme"))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := hdrEcho.Await(ctx, id); err != nil || got != want {
			t.Fatalf("a retried job's handler saw headers %q, %v; want %q", got, err, want)
		}
		if v, _ := seenByMiddleware.Load(id); v != "t-hdr_echo" {
			t.Fatalf("middleware saw trace header %v", v)
		}
		ids, err := hdrEcho.EnqueueMany(ctx, []string{"a", "b"})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if got, err := hdrEcho.Await(ctx, id); err != nil || got != "tenant=default-tenant trace=t-hdr_echo" {
				t.Fatalf("a batch's job saw headers %q, %v", got, err)
			}
		}
		if got, err := hdrEcho.Call(ctx, "c"); err != nil || got != "tenant=default-tenant trace=t-hdr_echo" {
			t.Fatalf("Call's job saw headers %q, %v", got, err)
		}
		final := runtime.Then(hdrEcho.Step("w", runtime.Header("tenant", "wf")), hdrEcho)
		wf, err := final.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := final.Await(ctx, wf); err != nil || got != "tenant=default-tenant trace=t-hdr_echo" {
			t.Fatalf("a workflow's second step saw headers %q, %v", got, err)
		}
		// The API's and the CLI's submissions, through the Inspector: one
		// job, and a batch as one call.
		in := w.Inspector()
		id, _, err = in.Submit(ctx, admin.Submission{Name: "hdr_echo", Args: []byte(`"api"`)})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := hdrEcho.Await(ctx, id); err != nil || got != "tenant=default-tenant trace=t-hdr_echo" {
			t.Fatalf("a submitted job saw headers %q, %v", got, err)
		}
		ids, err = in.SubmitBatch(ctx, []admin.Submission{{Name: "hdr_echo", Args: []byte(`"b1"`)}, {Name: "hdr_echo", Args: []byte(`"b2"`)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if got, err := hdrEcho.Await(ctx, id); err != nil || got != "tenant=default-tenant trace=t-hdr_echo" {
				t.Fatalf("a submitted batch's job saw headers %q, %v", got, err)
			}
		}
		if _, err := in.SubmitBatch(ctx, []admin.Submission{{Name: "hdr_echo", Args: []byte(`"c1"`)}, {Name: "hdr_echo", Args: []byte(`"c2"`), Route: "elsewhere"}}, nil); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		wantCalls := []string{"hdr_echo route=default count=1 workflow=false ids=1", "hdr_echo route=default count=2 workflow=false ids=2",
			"hdr_echo route=default count=1 workflow=false ids=1", "hdr_echo route= count=2 workflow=true ids=1",
			"hdr_echo route=default count=1 workflow=false ids=1", "hdr_echo route=default count=2 workflow=false ids=2",
			"hdr_echo route= count=2 workflow=false ids=2"}
		if !slices.Equal(calls, wantCalls) {
			t.Fatalf("hook calls:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(wantCalls, "\n"))
		}
	})
}

// A header that breaks the bounds is refused at enqueue with an error naming
// it, whether an option or a hook set it; nothing is stored.
func TestHeaders_OverTheirBoundsAreRefusedAtEnqueue(t *testing.T) {
	c := connect(t, "mem://")
	ctx := ctxT(t)
	if _, err := hdrEcho.With(c).Enqueue(ctx, "x", runtime.Header("bad name", "v")); err == nil || !strings.Contains(err.Error(), `runtime.Header: header name "bad name"`) {
		t.Fatalf("Enqueue with a header name holding a space: %v", err)
	}
	c.AddEnqueueHook(func(ctx context.Context, e *runtime.Enqueueing, next func(context.Context) error) error {
		e.SetHeader("big", strings.Repeat("x", 5000))
		return next(ctx)
	})
	if _, err := hdrEcho.With(c).Enqueue(ctx, "x"); err == nil || !strings.Contains(err.Error(), "header big: value of 5000 bytes, at most 2048") {
		t.Fatalf("Enqueue with a hook's oversized header: %v", err)
	}
	if _, err := runtime.Then(hdrEcho.With(c).Step("a"), hdrEcho.With(c)).Enqueue(ctx); err == nil || !strings.Contains(err.Error(), "header big") {
		t.Fatalf("a workflow's Enqueue with a hook's oversized header: %v", err)
	}
	n, err := c.Redis().DBSize(ctx).Result()
	if err != nil || n != 0 {
		t.Fatalf("refused enqueues left %d keys, %v", n, err)
	}
}

// What a workflow step's run leaves (LeaveTrail) reaches the steps after it
// (Job.After), in their predecessors' order; a bad trail, or a context that
// is not a run's, is an error naming what is wrong.
func TestLeaveTrail_ReachesTheStepsAfterAndRefusesBadTrails(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		if err := runtime.LeaveTrail(ctx, "x"); err == nil || !strings.Contains(err.Error(), "ctx is not a job's") {
			t.Fatalf("LeaveTrail outside a run: %v", err)
		}
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 4}))
		runtime.Handle(w, hdrEcho, func(ctx context.Context, s string) (string, error) {
			job, _ := runtime.CurrentJob(ctx)
			if err := runtime.LeaveTrail(ctx, "a,b"); err == nil || !strings.Contains(err.Error(), "without commas") {
				return "", fmt.Errorf("LeaveTrail with a comma: %v", err)
			}
			if err := runtime.LeaveTrail(ctx, "left-by-"+s); err != nil {
				return "", err
			}
			return strings.Join(job.After(), " "), nil
		})
		startWorker(t, w)
		task := hdrEcho.With(c)
		last := runtime.Then(task.Step("x"), task)
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := last.Await(ctx, id); err != nil || got != "left-by-x" {
			t.Fatalf("the second step saw trails %q, %v; want left-by-x, its predecessor's", got, err)
		}
	})
}

// A hook that breaks its contract cannot lose jobs behind a nil error or
// store them twice: returning nil without calling next fails the enqueue,
// and a second call of next stores nothing and says so.
func TestEnqueueHook_SkippingOrRepeatingNextIsAnError(t *testing.T) {
	for _, tc := range []struct {
		name string
		hook runtime.EnqueueHook
		want string
	}{
		{"skips next", func(ctx context.Context, e *runtime.Enqueueing, next func(context.Context) error) error { return nil },
			"returned nil without calling next: nothing was enqueued"},
		{"calls next twice", func(ctx context.Context, e *runtime.Enqueueing, next func(context.Context) error) error {
			if err := next(ctx); err != nil {
				return err
			}
			return next(ctx)
		}, "called next a second time: that call enqueued nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := connect(t, "mem://")
			c.AddEnqueueHook(tc.hook)
			ctx := ctxT(t)
			if _, err := hdrEcho.With(c).Enqueue(ctx, "x"); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Enqueue = %v; want an error saying the hook %s", err, tc.name)
			}
			if _, err := hdrEcho.With(c).EnqueueMany(ctx, []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("EnqueueMany = %v; want an error saying the hook %s", err, tc.name)
			}
			jobs, err := runtime.NewInspector(c).Jobs(ctx, admin.JobQuery{Route: "default", State: runtime.StatusPending, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if tc.name == "calls next twice" {
				want = 3 // each call stored its jobs once
			}
			if len(jobs.Jobs) != want {
				t.Fatalf("%d jobs pending, want %d", len(jobs.Jobs), want)
			}
		})
	}
}
