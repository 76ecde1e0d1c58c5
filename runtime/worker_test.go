package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// The tests' tasks are generated (internal/testtasks); these name their types.
type (
	Msg   = testtasks.Msg
	Reply = testtasks.Reply
)

func TestEnqueueAwait_TypedResult(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		upper := testtasks.Echo.With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, upper, func(ctx context.Context, m Msg) (Reply, error) {
			return Reply{Text: strings.Repeat(strings.ToUpper(m.Text), m.N)}, nil
		})
		startWorker(t, w)

		got, err := upper.Call(ctxT(t), Msg{Text: "ab", N: 2})
		if err != nil || got.Text != "ABAB" {
			t.Fatalf("Call = %+v, %v; want ABAB", got, err)
		}
		ids, err := upper.EnqueueMany(ctxT(t), []Msg{{Text: "x", N: 1}, {Text: "y", N: 2}, {Text: "z", N: 3}})
		if err != nil || len(ids) != 3 {
			t.Fatalf("EnqueueMany = %v, %v", ids, err)
		}
		for i, want := range []string{"X", "YY", "ZZZ"} {
			got, err := upper.Await(ctxT(t), ids[i])
			if err != nil || got.Text != want {
				t.Fatalf("Await(ids[%d]) = %+v, %v; want %s (ids in enqueue order)", i, got, err, want)
			}
		}
		info, err := c.Job(ctxT(t), ids[2])
		if err != nil || info.Status != runtime.StatusCompleted || info.Name != "t_echo" || info.Route != "default" ||
			info.CreatedAt.IsZero() || info.StartedAt.IsZero() || info.FinishedAt.IsZero() {
			t.Fatalf("Job = %+v, %v; want a completed echo job with its timestamps", info, err)
		}
	})
}

func TestFetch_HighBeforeNormalBeforeLowWithinRoute(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Note.With(c)
		ctx := ctxT(t)
		for i, p := range []runtime.Priority{runtime.PriorityLow, runtime.PriorityNormal, runtime.PriorityHigh, runtime.PriorityLow, runtime.PriorityHigh, runtime.PriorityNormal} {
			if _, err := task.Enqueue(ctx, Msg{Text: string(p), N: i}, runtime.WithPriority(p)); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		var order []string
		done := make(chan struct{}, 6)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 1}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (runtime.None, error) {
			mu.Lock()
			order = append(order, fmt.Sprintf("%s%d", m.Text, m.N))
			mu.Unlock()
			done <- struct{}{}
			return runtime.None{}, nil
		})
		startWorker(t, w)
		for range 6 {
			recv(t, done, 10*time.Second, "six jobs to run")
		}
		mu.Lock()
		defer mu.Unlock()
		want := []string{"high2", "high4", "normal1", "normal5", "low0", "low3"}
		if !slices.Equal(order, want) {
			t.Fatalf("ran %v, want %v (strict priority, FIFO within one)", order, want)
		}
	})
}

func TestRouting_WorkerSeesOnlyItsRoutesInPreferenceOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Note.With(c)
		ctx := ctxT(t)
		gpu, _ := task.Enqueue(ctx, Msg{Text: "gpu"}, runtime.Route("gpu"), runtime.WithPriority(runtime.PriorityLow))
		cpu, _ := task.Enqueue(ctx, Msg{Text: "cpu"}, runtime.Route("cpu"), runtime.WithPriority(runtime.PriorityHigh))
		other, err := task.Enqueue(ctx, Msg{Text: "other"}, runtime.Route("other"))
		if err != nil {
			t.Fatal(err)
		}
		ran := make(chan string, 3)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"gpu", "cpu"}, Concurrency: 1}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (runtime.None, error) {
			ran <- m.Text
			return runtime.None{}, nil
		})
		startWorker(t, w)
		// gpu comes first in the worker's routes, so its low job beats cpu's high one.
		if first, second := recv(t, ran, 10*time.Second, "first job"), recv(t, ran, 10*time.Second, "second job"); first != "gpu" || second != "cpu" {
			t.Fatalf("ran %s then %s, want gpu then cpu", first, second)
		}
		for _, id := range []string{gpu, cpu} {
			waitFor(t, 5*time.Second, "job "+id+" completed", func() bool { return jobStatus(t, c, id) == runtime.StatusCompleted })
		}
		// The worker never takes a job of a route it does not listen on.
		if s := jobStatus(t, c, other); s != runtime.StatusPending {
			t.Fatalf("job on route other is %s, want pending", s)
		}
		select {
		case got := <-ran:
			t.Fatalf("worker ran %q from a route it does not serve", got)
		default:
		}
	})
}

func TestRetry_BackoffThenSuccess(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Echo.With(c)
		var calls atomic.Int32
		var mu sync.Mutex
		var asked []int
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Backoff: func(attempt int) time.Duration {
			mu.Lock()
			asked = append(asked, attempt)
			mu.Unlock()
			return time.Duration(attempt) * 20 * time.Millisecond
		}}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
			j, _ := runtime.CurrentJob(ctx)
			if calls.Add(1) < 3 {
				return Reply{}, fmt.Errorf("transient failure on attempt %d", j.Attempt)
			}
			return Reply{Text: fmt.Sprintf("ok on attempt %d", j.Attempt)}, nil
		})
		startWorker(t, w)
		got, err := task.Call(ctxT(t), Msg{}, runtime.MaxRetries(3))
		if err != nil || got.Text != "ok on attempt 3" {
			t.Fatalf("Call = %+v, %v; want success on attempt 3", got, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(asked, []int{1, 2}) {
			t.Fatalf("backoff asked for attempts %v, want [1 2]", asked)
		}
	})
}

func TestDefaultBackoff_GrowsExponentiallyWithJitterAndCap(t *testing.T) {
	t.Parallel()
	for attempt := 1; attempt <= 10; attempt++ {
		base := time.Duration(1<<attempt) * time.Second
		for range 50 {
			d := runtime.DefaultBackoff(attempt)
			if d < base || d > base+base/4 {
				t.Fatalf("DefaultBackoff(%d) = %s, want within [%s, %s]", attempt, d, base, base+base/4)
			}
		}
	}
	if d := runtime.DefaultBackoff(40); d != runtime.MaxBackoff {
		t.Fatalf("DefaultBackoff(40) = %s, want the cap %s", d, runtime.MaxBackoff)
	}
}

func TestDeadLetter_ThenReplay(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Echo.With(c)
		var healed atomic.Bool
		var runs atomic.Int32
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
			runs.Add(1)
			if !healed.Load() {
				return Reply{}, errors.New("smtp: connection refused")
			}
			return Reply{Text: "sent"}, nil
		})
		startWorker(t, w)
		ctx := ctxT(t)
		id, err := task.Enqueue(ctx, Msg{Text: "hi"}, runtime.MaxRetries(2))
		if err != nil {
			t.Fatal(err)
		}
		_, err = task.Await(ctx, id)
		var je *runtime.JobError
		if !errors.As(err, &je) || je.Attempts != 3 || je.Message != "smtp: connection refused" || je.ID != id {
			t.Fatalf("Await = %v; want a JobError after 3 attempts with the handler's message", err)
		}
		if runs.Load() != 3 {
			t.Fatalf("handler ran %d times, want 3 (1 + 2 retries)", runs.Load())
		}
		info := jobInfo(t, c, id)
		if info.Status != runtime.StatusFailed || info.Error != "smtp: connection refused" || info.Attempts != 3 {
			t.Fatalf("Job = %+v, want failed with the error and 3 attempts", info)
		}
		dead, err := runtime.QueueOf(c).Ops.DeadList(ctx, "default", 0, 10)
		if err != nil || len(dead) != 1 || dead[0].ID != id {
			t.Fatalf("DeadList = %+v, %v; want the job", dead, err)
		}

		healed.Store(true)
		if err := runtime.QueueOf(c).Ops.Replay(ctx, id); err != nil {
			t.Fatal(err)
		}
		got, err := task.Await(ctx, id)
		if err != nil || got.Text != "sent" {
			t.Fatalf("Await after replay = %+v, %v; want sent", got, err)
		}
		if info := jobInfo(t, c, id); info.Status != runtime.StatusCompleted || info.Attempts != 1 {
			t.Fatalf("after replay Job = %+v; want completed with attempts reset, then the one run counted", info)
		}
		if dead, _ := runtime.QueueOf(c).Ops.DeadList(ctx, "default", 0, 10); len(dead) != 0 {
			t.Fatalf("DeadList after replay = %+v, want empty", dead)
		}
	})
}

func TestDelay_RunsNotBeforeDue(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Note.With(c)
		started := make(chan time.Time, 1)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (runtime.None, error) {
			started <- time.Now()
			return runtime.None{}, nil
		})
		startWorker(t, w)
		ctx := ctxT(t)
		due := time.Now().Add(400 * time.Millisecond)
		id, err := task.Enqueue(ctx, Msg{}, runtime.At(due))
		if err != nil {
			t.Fatal(err)
		}
		if info := jobInfo(t, c, id); info.Status != runtime.StatusScheduled || info.ScheduledAt.UnixMilli() != due.UnixMilli() {
			t.Fatalf("Job = %+v; want scheduled at %s", info, due)
		}
		at := recv(t, started, 10*time.Second, "the delayed job to start")
		if at.Before(due.Truncate(time.Millisecond)) {
			t.Fatalf("delayed job started %s before it was due", due.Sub(at))
		}
	})
}

func TestUnique_SecondEnqueueReturnsExistingID(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Note.With(c)
		ctx := ctxT(t)
		first, err := task.Enqueue(ctx, Msg{Text: "a"}, runtime.Unique(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		again, err := task.Enqueue(ctx, Msg{Text: "a"}, runtime.Unique(time.Minute))
		if !errors.Is(err, runtime.ErrDuplicate) || again != first {
			t.Fatalf("second Enqueue = %q, %v; want %q and ErrDuplicate", again, err, first)
		}
		other, err := task.Enqueue(ctx, Msg{Text: "b"}, runtime.Unique(time.Minute))
		if err != nil || other == first {
			t.Fatalf("Enqueue with other args = %q, %v; want a new job", other, err)
		}
		ids, err := task.EnqueueMany(ctx, []Msg{{Text: "a"}, {Text: "c"}, {Text: "c"}}, runtime.Unique(time.Minute))
		if !errors.Is(err, runtime.ErrDuplicate) || ids[0] != first || ids[1] != ids[2] || ids[1] == first {
			t.Fatalf("EnqueueMany = %v, %v; want [first, new, new] and ErrDuplicate", ids, err)
		}
		byID, err := task.Enqueue(ctx, Msg{}, runtime.WithID("order-42"))
		if err != nil || byID != "order-42" {
			t.Fatalf("WithID Enqueue = %q, %v", byID, err)
		}
		if _, err := task.Enqueue(ctx, Msg{Text: "different"}, runtime.WithID("order-42")); !errors.Is(err, runtime.ErrDuplicate) {
			t.Fatalf("second WithID Enqueue err = %v, want ErrDuplicate", err)
		}
		if info, err := c.Job(ctx, "order-42"); err != nil || info.Status != runtime.StatusPending {
			t.Fatalf("Job(order-42) = %+v, %v; a chosen id is found by id alone", info, err)
		}
		if depth, _ := runtime.QueueOf(c).Ops.Depths(ctx, []string{"default"}); depth[0].Normal != 4 {
			t.Fatalf("normal depth = %d, want 4 jobs (a, b, c, order-42)", depth[0].Normal)
		}
	})
}

func TestTimeout_CancelsHandlerAndFails(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Note.With(c)
		sawCancel := make(chan error, 1)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (runtime.None, error) {
			<-ctx.Done()
			sawCancel <- ctx.Err()
			return runtime.None{}, ctx.Err()
		})
		startWorker(t, w)
		_, err := task.Call(ctxT(t), Msg{}, runtime.Timeout(100*time.Millisecond), runtime.MaxRetries(0))
		var je *runtime.JobError
		if !errors.As(err, &je) || !strings.Contains(je.Message, "timed out after 100ms") {
			t.Fatalf("Call = %v; want a JobError saying it timed out after 100ms", err)
		}
		if got := recv(t, sawCancel, 5*time.Second, "the handler to see its context end"); !errors.Is(got, context.DeadlineExceeded) {
			t.Fatalf("handler ctx.Err() = %v, want DeadlineExceeded", got)
		}
	})
}

// Jobs fetched together share a timer per timeout, not a deadline: each
// times out at its own, and a context the handler derives from its context
// ends with it.
func TestTimeout_JobsFetchedTogetherKeepTheirOwnDeadlines(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Note.With(c)
		ctx := ctxT(t)
		short, err := task.Enqueue(ctx, Msg{Text: "short"}, runtime.Timeout(150*time.Millisecond), runtime.MaxRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		long, err := task.Enqueue(ctx, Msg{Text: "long"}, runtime.Timeout(20*time.Second), runtime.MaxRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		shortEnded, shortDone := make(chan error, 1), make(chan struct{})
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 2}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (runtime.None, error) {
			if m.Text == "long" {
				// Outlives the short job's deadline, then succeeds.
				select {
				case <-shortDone:
				case <-ctx.Done():
					return runtime.None{}, ctx.Err()
				}
				return runtime.None{}, nil
			}
			child, cancel := context.WithTimeout(ctx, time.Hour)
			defer cancel()
			if dl, _ := child.Deadline(); time.Until(dl) > time.Second {
				return runtime.None{}, fmt.Errorf("derived context's deadline is %s away; want the job's (150ms)", time.Until(dl))
			}
			<-child.Done()
			shortEnded <- child.Err()
			close(shortDone)
			return runtime.None{}, child.Err()
		})
		startWorker(t, w)
		if got := recv(t, shortEnded, 10*time.Second, "the short job's derived context to end"); !errors.Is(got, context.DeadlineExceeded) {
			t.Fatalf("derived context ended with %v, want DeadlineExceeded", got)
		}
		_, err = task.Await(ctx, short)
		var je *runtime.JobError
		if !errors.As(err, &je) || !strings.Contains(je.Message, "timed out after 150ms") {
			t.Fatalf("Await(short) = %v; want a JobError saying it timed out after 150ms", err)
		}
		if _, err := task.Await(ctx, long); err != nil {
			t.Fatalf("Await(long) = %v; want success: its 20s deadline is its own", err)
		}
	})
}

func TestPanic_BecomesFailureWithStack(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Note.With(c)
		healthy := testtasks.Echo.With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 1}))
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (runtime.None, error) {
			var m2 map[string]int
			//lint:ignore SA5000 the panic is what this handler is for
			m2["boom"]++
			return runtime.None{}, nil
		})
		runtime.Handle(w, healthy, func(ctx context.Context, m Msg) (Reply, error) { return Reply{Text: "alive"}, nil })
		startWorker(t, w)
		_, err := task.Call(ctxT(t), Msg{}, runtime.MaxRetries(0))
		var je *runtime.JobError
		if !errors.As(err, &je) || !strings.Contains(je.Message, "panic: assignment to entry in nil map") || !strings.Contains(je.Message, "worker_test.go") {
			t.Fatalf("Call = %v; want a JobError with the panic and a stack naming the handler's file", err)
		}
		if got, err := healthy.Call(ctxT(t), Msg{}); err != nil || got.Text != "alive" {
			t.Fatalf("after a panic the worker still runs jobs: got %+v, %v", got, err)
		}
	})
}
