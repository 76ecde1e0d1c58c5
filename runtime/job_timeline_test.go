package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// stackError formats like the errors of github.com/pkg/errors: %v is the
// message, %+v the message and the stack where it was made.
type stackError struct {
	msg, stack string
	cause      error
}

func (e *stackError) Error() string { return e.msg }
func (e *stackError) Unwrap() error { return e.cause }

func (e *stackError) Format(s fmt.State, verb rune) {
	if verb == 'v' && s.Flag('+') {
		fmt.Fprintf(s, "%s\n%s", e.msg, e.stack)
		return
	}
	fmt.Fprint(s, e.msg)
}

// A job that failed twice and then succeeded keeps when each failed run
// ended, in order, before its last start: Job(id) shows them while it waits
// for its retry and after it completed (from its result record), so a
// timeline can show enqueued, failed, retried, finished.
func TestJob_FailedRunsAreKeptInOrderThroughCompletion(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := testtasks.Echo.With(c)
		var runs atomic.Int32
		retried := make(chan struct{})
		release := make(chan struct{})
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Backoff: func(int) time.Duration { return 20 * time.Millisecond }}))
		runtime.Handle(w, task, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			switch runs.Add(1) {
			case 1:
				return testtasks.Reply{}, errors.New("first run fails")
			case 2:
				return testtasks.Reply{}, errors.New("second run fails")
			}
			close(retried)
			<-release
			return testtasks.Reply{Text: m.Text}, nil
		})
		startWorker(t, w)
		id, err := task.Enqueue(ctx, testtasks.Msg{Text: "x"}, runtime.MaxRetries(5))
		if err != nil {
			t.Fatal(err)
		}
		<-retried
		running, err := c.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		close(release)
		if _, err := task.Await(ctx, id); err != nil {
			t.Fatal(err)
		}
		done, err := c.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range []*bananastype.Job{running, done} {
			if len(info.FailedAt) != 2 || info.Attempts != 3 || info.Error != "second run fails" {
				t.Fatalf("%s job: attempts %d, failed at %v, error %q; want 2 failure times, 3 attempts (the third running or done), the second run's error",
					info.Status, info.Attempts, info.FailedAt, info.Error)
			}
			f1, f2 := info.FailedAt[0], info.FailedAt[1]
			if f1.Before(info.CreatedAt) || f2.Before(f1) || info.StartedAt.Before(f2) {
				t.Fatalf("%s job: created %v, failed %v then %v, last started %v; want them in that order",
					info.Status, info.CreatedAt, f1, f2, info.StartedAt)
			}
		}
		if done.Status != runtime.StatusCompleted || done.FailedAt[1].After(done.FinishedAt) {
			t.Fatalf("done: status %s, last failure %v, finished %v", done.Status, done.FailedAt[1], done.FinishedAt)
		}
	})
}

// A dead job's failure times end with its final failure, and a replay starts
// its timeline again: the times of its earlier life are gone with its
// attempts.
func TestJob_DeadJobsFailuresEndWithItsDeathAndReplayClearsThem(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := testtasks.Echo.With(c)
		var runs atomic.Int32
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, task, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			if runs.Add(1) <= 3 {
				return testtasks.Reply{}, fmt.Errorf("run %d fails", runs.Load())
			}
			return testtasks.Reply{}, nil
		})
		startWorker(t, w)
		id, err := task.Enqueue(ctx, testtasks.Msg{Text: "x"}, runtime.MaxRetries(2))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := task.Await(ctx, id); err == nil {
			t.Fatal("Await of a job failing all its runs succeeded")
		}
		dead, err := c.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if dead.Status != runtime.StatusFailed || len(dead.FailedAt) != 3 || !dead.FailedAt[2].Equal(dead.FinishedAt) {
			t.Fatalf("dead job: status %s, failed at %v, finished %v; want 3 failure times, the last its death",
				dead.Status, dead.FailedAt, dead.FinishedAt)
		}
		in := runtime.NewInspector(c)
		if err := in.Replay(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := task.Await(ctx, id); err != nil {
			t.Fatal(err)
		}
		again, err := c.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if again.Status != runtime.StatusCompleted || len(again.FailedAt) != 0 || again.Attempts != 1 {
			t.Fatalf("replayed job: status %s, attempts %d, failed at %v; want completed after one attempt, with no failures of its earlier life",
				again.Status, again.Attempts, again.FailedAt)
		}
	})
}

// A handler's error that carries a stack (its %+v adds one after the
// message, as github.com/pkg/errors does) is recorded with it, so the
// dashboard and `job ID` show where it came from; a panic's stack is
// recorded too.
func TestHandler_ErrorsStackIsRecorded(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := testtasks.Echo.With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, task, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			if m.Text == "panic" {
				panic("the handler panicked")
			}
			return testtasks.Reply{}, &stackError{msg: "charge declined", stack: "billing.Charge\n\tbilling/charge.go:42"}
		})
		startWorker(t, w)
		for _, c2 := range []struct{ text, first, detail string }{
			{"error", "charge declined", "billing/charge.go:42"},
			{"panic", "panic: the handler panicked", "job_timeline_test.go"},
		} {
			id, err := task.Enqueue(ctx, testtasks.Msg{Text: c2.text}, runtime.MaxRetries(0))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := task.Await(ctx, id); err == nil {
				t.Fatalf("%s: Await succeeded", c2.text)
			}
			info, err := c.Job(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			first, rest, _ := strings.Cut(info.Error, "\n")
			if first != c2.first || !strings.Contains(rest, c2.detail) {
				t.Fatalf("%s: recorded error %q; want first line %q and a stack naming %s", c2.text, info.Error, c2.first, c2.detail)
			}
		}
	})
}
