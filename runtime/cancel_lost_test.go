package runtime_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

// A job canceled while its worker is dead (killed with SIGKILL mid-job: its
// lease is held by nobody) ends canceled when another worker's reaper
// recovers it: not retried, not dead-lettered, its handler not run again,
// and Await returns the canceled error as for any canceled job.
func TestCancel_AJobCanceledWhileItsWorkerIsDeadEndsCanceledNotRetried(t *testing.T) {
	t.Parallel()
	c, id := aJobOfAKilledWorker(t)
	ctx, task := ctxT(t), crashy.With(c)

	in := runtime.NewInspector(c)
	if s, err := in.Cancel(ctx, id); err != nil || s != runtime.StatusProcessing {
		t.Fatalf("Cancel of the dead worker's job = %s, %v; want it asked of the worker (processing)", s, err)
	}
	var reruns atomic.Int32
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
		reruns.Add(1)
		return Reply{Text: "ran again"}, nil
	})
	startWorker(t, w)

	if got, err := task.Await(ctx, id); !errors.Is(err, runtime.ErrJobCanceled) {
		t.Fatalf("Await = %+v, %v; want ErrJobCanceled", got, err)
	}
	info, err := c.Job(ctx, id)
	if err != nil || info.Status != runtime.StatusCanceled || info.Attempts != 1 {
		t.Fatalf("Job = %+v, %v; want it canceled in its first attempt (the killed run), no retry counted", info, err)
	}
	if n := reruns.Load(); n != 0 {
		t.Fatalf("the handler ran %d more times after the kill; want once in all (the killed run)", n)
	}
	if dead, err := runtime.QueueOf(c).Ops.DeadList(ctx, "default", 0, 10); err != nil || len(dead) != 0 {
		t.Fatalf("dead-letter set %+v, %v; want it empty", dead, err)
	}
}

// A cancel asked of a running job that its worker has not acted on (the
// message was lost with its subscription, and the next lease renewal, which
// would catch it, has not come) when the worker shuts down and hands the job
// back ends the job canceled instead of putting it back in its list.
func TestCancel_AJobAskedToCancelWhenItsWorkerShutsDownEndsCanceledNotHandedBack(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	ctx := ctxT(t)
	task := runtime.NewTask[int, int]("shutdown_cancel").With(c)
	var runs atomic.Int32
	started := make(chan struct{}, 1)
	handler := func(ctx context.Context, n int) (int, error) {
		runs.Add(1)
		started <- struct{}{}
		<-ctx.Done()
		return 0, ctx.Err()
	}
	// A long lease: no renewal (and no catching of the request) in the test.
	opts := fastOpts(runtime.WorkerOptions{Lease: time.Minute, ShutdownTimeout: 100 * time.Millisecond})
	w := runtime.NewWorker(c, opts)
	runtime.Handle(w, task, handler)
	stop := startWorker(t, w)
	id, err := task.Enqueue(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	recv(t, started, 10*time.Second, "the job to start")
	// What Cancel writes for a running job, without the message the worker
	// would have heard.
	q := runtime.QueueOf(c)
	if err := c.Redis().SAdd(ctx, q.Keys("default").Cancels(), id).Err(); err != nil {
		t.Fatal(err)
	}
	stop()

	if _, err := task.Await(ctx, id); !errors.Is(err, runtime.ErrJobCanceled) {
		t.Fatalf("Await = %v; want ErrJobCanceled", err)
	}
	if s := jobStatus(t, c, id); s != runtime.StatusCanceled {
		t.Fatalf("Job status %s; want canceled", s)
	}
	if d, err := q.Ops.Depths(ctx, []string{"default"}); err != nil || d[0].High+d[0].Normal+d[0].Low != 0 {
		t.Fatalf("depths %+v, %v; want the job in no ready list", d, err)
	}
	if n, err := c.Redis().SCard(ctx, q.Keys("default").Cancels()).Result(); err != nil || n != 0 {
		t.Fatalf("cancels set holds %d, %v; want the request gone with its job", n, err)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("handler ran %d times; want once", n)
	}
}
