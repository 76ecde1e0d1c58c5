package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// A worker that takes a job and dies (never acks, never renews) is simulated by
// leasing the job straight from the queue; a live worker must recover it once
// the lease runs out, counting the lost run as a failed attempt.
func TestCrash_JobRecoveredAfterLease(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Echo.With(c)
		ctx := ctxT(t)
		id, err := task.Enqueue(ctx, Msg{Text: "x"})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		taken, err := runtime.QueueOf(c).Jobs.Fetch(ctx, "default", queue.Priorities, 1, now.Add(300*time.Millisecond), now)
		if err != nil || len(taken) != 1 || taken[0].ID != id {
			t.Fatalf("the doomed worker's fetch = %v, %v", taken, err)
		}
		if s := jobStatus(t, c, id); s != runtime.StatusProcessing {
			t.Fatalf("status while leased = %s, want processing", s)
		}

		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
			j, _ := runtime.CurrentJob(ctx)
			if j.Attempt != 2 {
				return Reply{}, errors.New("the recovered run should be attempt 2")
			}
			return Reply{Text: "recovered"}, nil
		})
		startWorker(t, w)
		got, err := task.Await(ctx, id)
		if err != nil || got.Text != "recovered" {
			t.Fatalf("Await = %+v, %v; want the job recovered and run again", got, err)
		}
		info := jobInfo(t, c, id)
		if !strings.Contains(info.Error, "lease expired") || info.Attempts != 2 {
			t.Fatalf("Job = %+v; want two attempts: the lost run, recorded as failed, and the one that completed", info)
		}
	})
}

// A worker that lost its lease and reports late must change nothing: not
// while another worker runs the job under a new lease (only the lease's
// token tells the two runs apart), and not after that run completed.
func TestLateAck_AfterLeaseLostChangesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Echo.With(c)
		ctx := ctxT(t)
		id, err := task.Enqueue(ctx, Msg{})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		stale, err := runtime.QueueOf(c).Jobs.Fetch(ctx, "default", queue.Priorities, 1, now.Add(200*time.Millisecond), now)
		if err != nil || len(stale) != 1 {
			t.Fatalf("fetch = %v, %v", stale, err)
		}
		running := make(chan struct{}, 1)
		release := make(chan struct{})
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
			running <- struct{}{}
			<-release
			return Reply{Text: "winner"}, nil
		})
		startWorker(t, w)
		recv(t, running, 10*time.Second, "the worker to run the job again once its first lease was reaped")

		held, err := c.Job(ctx, id)
		if err != nil || held.Status != runtime.StatusProcessing || held.Attempts != 2 || len(held.FailedAt) != 1 {
			close(release)
			t.Fatalf("job held by the new lease = %+v, %v; want processing in its second run, after one lost run", held, err)
		}
		lateReports := func(when string) {
			t.Helper()
			ok, err := runtime.QueueOf(c).Jobs.Ack(ctx, stale[0], []byte("late result"), time.Hour)
			if err != nil || ok {
				t.Errorf("late Ack %s = %v, %v; want refused", when, ok, err)
			}
			out, err := runtime.QueueOf(c).Jobs.Fail(ctx, stale[0], queue.Failure{Message: "late", RetryAt: time.Now(), Record: []byte("x"), TTL: time.Hour}, time.Now())
			if err != nil || out != queue.EndStale {
				t.Errorf("late Fail %s = %v, %v; want Stale", when, out, err)
			}
		}
		lateReports("while a new lease holds the job")
		after, err := c.Job(ctx, id)
		close(release)
		if err != nil || after.Status != runtime.StatusProcessing || after.Attempts != held.Attempts ||
			after.Error != held.Error || after.Result != nil || !after.FinishedAt.IsZero() {
			t.Fatalf("job changed by a late report while a new lease holds it: before %+v after %+v (%v)", held, after, err)
		}
		if got, err := task.Await(ctx, id); err != nil || got.Text != "winner" {
			t.Fatalf("Await = %+v, %v; want the new lease's run to complete the job", got, err)
		}

		before := jobInfo(t, c, id)
		lateReports("after the job completed")
		after = jobInfo(t, c, id)
		if after.Status != runtime.StatusCompleted || after.FinishedAt != before.FinishedAt || after.Attempts != before.Attempts {
			t.Fatalf("job changed by a late report: before %+v after %+v", before, after)
		}
		if got, err := task.Await(ctx, id); err != nil || got.Text != "winner" {
			t.Fatalf("result after late ack = %+v, %v; want the winner's", got, err)
		}
	})
}

func TestShutdown_HandsBackUnfinishedJobsWithoutAnAttempt(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Note.With(c)
		quick := testtasks.OtherNote.With(c)
		ctx := ctxT(t)
		started := make(chan struct{}, 2)
		release := make(chan struct{})
		defer close(release)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{ShutdownTimeout: 200 * time.Millisecond, Concurrency: 2}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (runtime.None, error) {
			started <- struct{}{}
			<-release // ignores its context: only the hand-back can take the job away
			return runtime.None{}, nil
		})
		finished := make(chan struct{}, 1)
		runtime.Handle(w, quick, func(ctx context.Context, m Msg) (runtime.None, error) {
			started <- struct{}{}
			time.Sleep(50 * time.Millisecond) // a job that finishes inside the shutdown timeout
			finished <- struct{}{}
			return runtime.None{}, nil
		})
		stop := startWorker(t, w)
		id, _ := task.Enqueue(ctx, Msg{}, runtime.WithPriority(runtime.PriorityHigh))
		quickID, _ := quick.Enqueue(ctx, Msg{})
		recv(t, started, 10*time.Second, "first job to start")
		recv(t, started, 10*time.Second, "second job to start")
		stop()

		recv(t, finished, time.Second, "the quick job to finish during shutdown")
		if s := jobStatus(t, c, quickID); s != runtime.StatusCompleted {
			t.Fatalf("quick job = %s, want completed during the grace period", s)
		}
		info := jobInfo(t, c, id)
		if info.Status != runtime.StatusPending || info.Attempts != 0 {
			t.Fatalf("handed-back job = %+v; want pending with no attempt counted", info)
		}
		// It went back to the front of its list: the next worker takes it first.
		next, err := runtime.QueueOf(c).Jobs.Fetch(ctx, "default", queue.Priorities, 1, time.Now().Add(time.Minute), time.Now())
		if err != nil || len(next) != 1 || next[0].ID != id {
			t.Fatalf("next fetch = %v, %v; want the handed-back job", next, err)
		}
	})
}

// The result lands before Await subscribes: Await must still find it.
func TestAwait_ResultStoredBeforeSubscribe(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Echo.With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) { return Reply{Text: m.Text + "!"}, nil })
		startWorker(t, w)
		ctx := ctxT(t)
		id, _ := task.Enqueue(ctx, Msg{Text: "done"})
		waitFor(t, 10*time.Second, "the job to complete", func() bool { return jobStatus(t, c, id) == runtime.StatusCompleted })
		got, err := task.Await(ctx, id)
		if err != nil || got.Text != "done!" {
			t.Fatalf("Await after completion = %+v, %v", got, err)
		}
		// A second client (another process) finds it too, by id alone.
		other := task.With(c)
		if got, err := other.Await(ctx, id); err != nil || got.Text != "done!" {
			t.Fatalf("Await from another handle = %+v, %v", got, err)
		}
		if _, err := task.Await(ctx, "01JZZZZZZZZZZZZZZZZZZZZZZZ.default"); !errors.Is(err, runtime.ErrJobNotFound) {
			t.Fatalf("Await(unknown id) err = %v, want ErrJobNotFound", err)
		}
	})
}
