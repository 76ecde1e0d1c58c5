package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// A handler error wrapping runtime.SkipRetry dead-letters the job at once,
// whatever retries it has left.
func TestHandler_SkipRetryDeadLettersAtOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := testtasks.Echo.With(c)
		var runs atomic.Int32
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, task, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			runs.Add(1)
			return testtasks.Reply{}, fmt.Errorf("recipient %q does not exist: %w", m.Text, runtime.SkipRetry)
		})
		startWorker(t, w)
		id, err := task.Enqueue(ctx, testtasks.Msg{Text: "nobody"}, runtime.MaxRetries(5))
		if err != nil {
			t.Fatal(err)
		}
		var je *runtime.JobError
		if _, err := task.Await(ctx, id); !errors.As(err, &je) || je.Attempts != 1 {
			t.Fatalf("Await = %v; want a JobError after 1 attempt", err)
		}
		if runs.Load() != 1 || jobStatus(t, c, id) != runtime.StatusFailed {
			t.Fatalf("%d runs, status %s; want 1 run and dead-lettered", runs.Load(), jobStatus(t, c, id))
		}
	})
}

// A handler error wrapping runtime.RetryAfter runs the job again later
// without counting a failure: a job with no retries runs a third time and
// succeeds, with no failed attempt recorded.
func TestHandler_RetryAfterReschedulesWithoutCountingAFailure(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := testtasks.Echo.With(c)
		var runs atomic.Int32
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, task, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			if runs.Add(1) < 3 {
				return testtasks.Reply{}, fmt.Errorf("rate limited: %w", runtime.RetryAfter(20*time.Millisecond))
			}
			return testtasks.Reply{Text: m.Text}, nil
		})
		startWorker(t, w)
		id, err := task.Enqueue(ctx, testtasks.Msg{Text: "later"}, runtime.MaxRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		got, err := task.Await(ctx, id)
		if err != nil || got.Text != "later" || runs.Load() != 3 {
			t.Fatalf("Await = %+v, %v after %d runs; want success on the third run", got, err, runs.Load())
		}
		info, err := c.Job(ctx, id)
		if err != nil || info.Attempts != 1 || info.Retries() != 0 {
			t.Fatalf("Job = %+v, %v; want one attempt (the run that succeeded): runs that asked to run later do not count", info, err)
		}
	})
}

// A duplicate enqueue says what it found: the job holding the unique key or
// the id, and its status — "already enqueued" would be wrong for a job that
// waits scheduled, or one that completed and still holds its id.
func TestEnqueue_DuplicateSaysWhatItFound(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := testtasks.Echo.With(c)
		first, err := task.Enqueue(ctx, testtasks.Msg{Text: "once"}, runtime.Unique(time.Hour), runtime.Delay(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		id, err := task.Enqueue(ctx, testtasks.Msg{Text: "once"}, runtime.Unique(time.Hour))
		want := "t_echo job " + first + " (scheduled) already holds its unique key (identical args, held until ended, 1h0m0s at most)"
		if !errors.Is(err, runtime.ErrDuplicate) || id != first || !strings.Contains(err.Error(), want) {
			t.Fatalf("second Enqueue = %s, %v; want %s and an error saying %q", id, err, first, want)
		}
		if _, err := task.Enqueue(ctx, testtasks.Msg{}, runtime.WithID("fixed"), runtime.Delay(time.Hour)); err != nil {
			t.Fatal(err)
		}
		_, err = task.Enqueue(ctx, testtasks.Msg{}, runtime.WithID("fixed"))
		if !errors.Is(err, runtime.ErrDuplicate) || !strings.Contains(err.Error(), "t_echo job fixed (scheduled) already holds its id") {
			t.Fatalf("second WithID Enqueue: %v; want it to name the scheduled holder", err)
		}
	})
}

// A task's own backoff (RetryBackoff, the annotation's backoff=) sets its
// first retry's delay in place of the worker's Backoff.
func TestRetryBackoff_TheTasksOwnDelayBeforeItsFirstRetry(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := testtasks.Echo.With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{})) // its own Backoff: 10 ms
		runtime.Handle(w, task, func(context.Context, testtasks.Msg) (testtasks.Reply, error) {
			return testtasks.Reply{}, errors.New("not yet")
		})
		startWorker(t, w)
		before := time.Now()
		id, err := task.Enqueue(ctx, testtasks.Msg{}, runtime.RetryBackoff(10*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the first run to fail", func() bool { return jobStatus(t, c, id) == runtime.StatusScheduled })
		info, err := c.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if wait := info.ScheduledAt.Sub(before); wait < 10*time.Minute-time.Second || wait > 12*time.Minute+31*time.Second {
			t.Fatalf("retry scheduled %s after the enqueue; want 10 min plus up to 25%% jitter", wait)
		}
	})
}
