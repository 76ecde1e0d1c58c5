package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// A job that failed for good, was replayed and is then canceled before it
// runs again keeps the life it had before the replay: Job reads it from
// the canceled job's record, with its run and its error.
func TestJob_ACanceledReplayedJobKeepsItsEarlierLife(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(w, testtasks.Note, func(context.Context, testtasks.Msg) (runtime.None, error) {
		return runtime.None{}, errors.Join(errors.New("upstream down"), runtime.SkipRetry)
	})
	stop := startWorker(t, w)
	id, err := testtasks.Note.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "canceled after a replay"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the job to fail for good", func() bool { return jobStatus(t, c, id) == runtime.StatusFailed })
	stop() // nothing runs the replayed job: it stays pending
	in := runtime.NewInspector(c, testtasks.Register)
	if err := in.Replay(ctxT(t), id); err != nil {
		t.Fatal(err)
	}
	if st, err := in.Cancel(ctxT(t), id); err != nil || st != runtime.StatusCanceled {
		t.Fatalf("cancel = %s, %v; want canceled", st, err)
	}
	info, err := c.Job(ctxT(t), id)
	if err != nil || info.Status != runtime.StatusCanceled {
		t.Fatalf("job = %+v, %v; want it canceled", info, err)
	}
	if len(info.Earlier) != 1 || info.Earlier[0].FirstRun != 1 || info.Earlier[0].Attempts != 1 || len(info.Earlier[0].FailedAt) != 1 || info.Earlier[0].Died.IsZero() {
		t.Fatalf("the canceled job's earlier lives = %+v; want the one run that failed for good before the replay", info.Earlier)
	}
}
