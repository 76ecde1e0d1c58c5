package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
)

// A chosen id of the shape Bananas generates (a ULID, a dot, a route) is
// located by the route it ends in. One ending in another route than the
// job's would be looked for there by Job, Cancel, Delete and Await and never
// found, so it is refused at enqueue with an error naming the rule, and
// nothing is written.
func TestWithID_AnIDEndingInAnotherRouteIsRefused(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	ctx := ctxT(t)
	task := runtime.NewTask[int, int]("chosen_elsewhere", runtime.Route("images")).With(c)
	id := queue.NewID("thumbs", time.Now())

	for _, enqueue := range []func() error{
		func() error { _, err := task.Enqueue(ctx, 1, runtime.WithID(id)); return err },
		func() error { _, err := task.EnqueueMany(ctx, []int{1}, runtime.WithID(id)); return err },
	} {
		err := enqueue()
		if err == nil || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), `ends in route "thumbs"`) ||
			!strings.Contains(err.Error(), `route "images"`) {
			t.Fatalf("enqueue with WithID(%q) on route images = %v; want an error naming the id, both routes and the rule", id, err)
		}
	}
	if _, err := c.Job(ctx, id); !errors.Is(err, runtime.ErrJobNotFound) {
		t.Fatalf("Job(%s) after the refused enqueue = %v; want ErrJobNotFound (nothing written)", id, err)
	}
	depths, err := runtime.QueueOf(c).Ops.Depths(ctx, []string{"images", "thumbs"})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range depths {
		if d.High+d.Normal+d.Low != 0 {
			t.Fatalf("depths %+v after the refused enqueue; want nothing enqueued", depths)
		}
	}
}

// Chosen ids that are not read as another route's — plain, with a dot, or
// of the generated shape ending in the job's own route — are found by Job,
// Cancel, Delete and Await while the job waits and while it runs.
func TestWithID_AllowedIDsAreFoundWhilePendingAndWhileRunning(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	ctx := ctxT(t)
	in := runtime.NewInspector(c)
	task := runtime.NewTask[string, string]("chosen_here", runtime.Route("images")).With(c)
	// Plain, with a dot, of the generated shape ending in the job's route. A
	// canceled job's record keeps its id taken, so each use has its own.
	idsOf := func(use string) []string {
		return []string{"order-42-" + use, "invoice-" + use + ".thumbs", queue.NewID("images", time.Now())}
	}

	// Pending: found, and Delete and Cancel act on it.
	for _, act := range []string{"delete", "cancel"} {
		for _, id := range idsOf(act) {
			chosenIDFoundWhilePending(ctx, t, c, in, task, act, id)
		}
	}
	// Running: found by Job, Delete says it runs, Await gets its result and
	// Cancel stops it.
	chosenIDsFoundWhileRunning(ctx, t, c, in, task, idsOf("run"))
}

// chosenIDFoundWhilePending enqueues a job with the chosen id, finds it
// pending, and deletes or cancels it (act) by that id.
func chosenIDFoundWhilePending(ctx context.Context, t *testing.T, c *runtime.Client, in *admin.Inspector, task *runtime.Task[string, string], act, id string) {
	t.Helper()
	if got, err := task.Enqueue(ctx, id, runtime.WithID(id)); err != nil || got != id {
		t.Fatalf("Enqueue WithID(%q) = %q, %v", id, got, err)
	}
	if s := jobStatus(t, c, id); s != runtime.StatusPending {
		t.Fatalf("Job(%s) status %s, want pending", id, s)
	}
	switch act {
	case "delete":
		if err := in.Delete(ctx, id); err != nil {
			t.Fatalf("Delete(%s) while pending: %v", id, err)
		}
		if _, err := c.Job(ctx, id); !errors.Is(err, runtime.ErrJobNotFound) {
			t.Fatalf("Job(%s) after Delete = %v; want ErrJobNotFound", id, err)
		}
	case "cancel":
		if s, err := in.Cancel(ctx, id); err != nil || s != runtime.StatusCanceled {
			t.Fatalf("Cancel(%s) while pending = %s, %v; want canceled", id, s, err)
		}
		if _, err := task.Await(ctx, id); !errors.Is(err, runtime.ErrJobCanceled) {
			t.Fatalf("Await(%s) after Cancel = %v; want ErrJobCanceled", id, err)
		}
	}
}

// chosenIDsFoundWhileRunning runs a job for each chosen id, finds it
// processing, and checks that Delete says it runs, that Cancel stops the
// first, and that Await gets each other's result.
func chosenIDsFoundWhileRunning(ctx context.Context, t *testing.T, c *runtime.Client, in *admin.Inspector, task *runtime.Task[string, string], ids []string) {
	t.Helper()
	started := make(chan string, 3)
	release := make(chan struct{})
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"images"}, Concurrency: 6}))
	runtime.Handle(w, task, func(ctx context.Context, s string) (string, error) {
		started <- s
		select {
		case <-release:
			return "done " + s, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	startWorker(t, w)
	awaited := make(map[string]chan error)
	for _, id := range ids {
		if _, err := task.Enqueue(ctx, id, runtime.WithID(id)); err != nil {
			t.Fatalf("Enqueue WithID(%q): %v", id, err)
		}
	}
	for range ids {
		recv(t, started, 10*time.Second, "every job to start")
	}
	for i, id := range ids {
		if s := jobStatus(t, c, id); s != runtime.StatusProcessing {
			t.Fatalf("Job(%s) status %s, want processing", id, s)
		}
		if err := in.Delete(ctx, id); !errors.Is(err, runtime.ErrWrongState) || !strings.Contains(err.Error(), "processing") {
			t.Fatalf("Delete(%s) while running = %v; want ErrWrongState naming it processing", id, err)
		}
		done := make(chan error, 1)
		awaited[id] = done
		go func() {
			got, err := task.Await(ctx, id)
			if err == nil && got != "done "+id {
				err = errors.New("result " + got)
			}
			done <- err
		}()
		if i == 0 {
			if s, err := in.Cancel(ctx, id); err != nil || (s != runtime.StatusProcessing && s != runtime.StatusCanceled) {
				t.Fatalf("Cancel(%s) while running = %s, %v", id, s, err)
			}
			if err := recv(t, done, 10*time.Second, "the Await of the canceled job"); !errors.Is(err, runtime.ErrJobCanceled) {
				t.Fatalf("Await(%s) of a job canceled while running = %v; want ErrJobCanceled", id, err)
			}
		}
	}
	close(release)
	for _, id := range ids[1:] {
		if err := recv(t, awaited[id], 10*time.Second, "the Await of "+id); err != nil {
			t.Fatalf("Await(%s) while it ran = %v; want its result", id, err)
		}
	}
}
