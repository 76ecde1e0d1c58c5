package runtime_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// Canceling a running job cancels its handler's context on the worker that
// holds it, records it as canceled (Await returns ErrJobCanceled) and does not
// run it again.
func TestCancel_RunningJobsContextEndsAndItIsNotRetried(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		started, ended := make(chan struct{}, 1), make(chan error, 1)
		var runs atomic.Int32
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			runs.Add(1)
			started <- struct{}{}
			<-ctx.Done()
			ended <- ctx.Err()
			return testtasks.Reply{}, ctx.Err()
		})
		startWorker(t, w)
		echo := testtasks.Echo.With(c)
		id, err := echo.Enqueue(ctx, testtasks.Msg{Text: "long"}, runtime.MaxRetries(5))
		if err != nil {
			t.Fatal(err)
		}
		recv(t, started, 10*time.Second, "the job to start")
		st, err := w.Inspector().Cancel(ctx, id)
		if err != nil || st != runtime.StatusProcessing {
			t.Fatalf("Cancel of a running job = %s, %v; want processing (asked)", st, err)
		}
		if err := recv(t, ended, 10*time.Second, "the handler's context to end"); !errors.Is(err, context.Canceled) {
			t.Fatalf("handler's context ended with %v; want context.Canceled", err)
		}
		_, err = echo.Await(ctx, id)
		var je *runtime.JobError
		if !errors.Is(err, runtime.ErrJobCanceled) || !errors.As(err, &je) || !je.Canceled {
			t.Fatalf("Await of a canceled job = %v; want a JobError matching ErrJobCanceled", err)
		}
		if s := jobStatus(t, c, id); s != runtime.StatusCanceled {
			t.Fatalf("status %s, want canceled", s)
		}
		// The job is gone from every list, so nothing can run it again; a
		// second job still runs, on the same slot.
		other, err := echo.Enqueue(ctx, testtasks.Msg{Text: "next"})
		if err != nil {
			t.Fatal(err)
		}
		recv(t, started, 10*time.Second, "the next job to start")
		if _, err := w.Inspector().Cancel(ctx, other); err != nil {
			t.Fatal(err)
		}
		recv(t, ended, 10*time.Second, "the next job's context to end")
		if runs.Load() != 2 {
			t.Fatalf("%d runs; want 2 (the canceled job ran once)", runs.Load())
		}
	})
}

// A waiting job canceled before it runs never runs, and its waiters learn it
// was canceled.
func TestCancel_PendingJobNeverRunsAndAwaitSaysCanceled(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		echo := testtasks.Echo.With(c)
		id, err := echo.Enqueue(ctx, testtasks.Msg{Text: "never"})
		if err != nil {
			t.Fatal(err)
		}
		awaited := make(chan error, 1)
		go func() { _, err := echo.Await(ctx, id); awaited <- err }()
		in := runtime.NewInspector(c, testtasks.Register)
		if st, err := in.Cancel(ctx, id); err != nil || st != runtime.StatusCanceled {
			t.Fatalf("Cancel of a pending job = %s, %v; want canceled", st, err)
		}
		if err := recv(t, awaited, 10*time.Second, "Await to return"); !errors.Is(err, runtime.ErrJobCanceled) {
			t.Fatalf("Await = %v; want ErrJobCanceled", err)
		}
		var runs atomic.Int32
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			runs.Add(1)
			return testtasks.Reply{}, nil
		})
		startWorker(t, w)
		if _, err := echo.Call(ctx, testtasks.Msg{Text: "after"}); err != nil {
			t.Fatal(err)
		}
		if runs.Load() != 1 {
			t.Fatalf("%d runs; the canceled job ran", runs.Load())
		}
		if _, err := in.Cancel(ctx, id); !errors.Is(err, runtime.ErrWrongState) {
			t.Fatalf("second Cancel = %v; want ErrWrongState", err)
		}
	})
}
