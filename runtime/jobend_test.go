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

	"github.com/vmihailenco/msgpack/v5"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// endLog records what a worker's OnJobEnd hook is told.
type endLog struct {
	mu   sync.Mutex
	ends []bananastype.JobEnd
}

func (l *endLog) add(e bananastype.JobEnd) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ends = append(l.ends, e)
}

// of returns the ends told of job id, in the order told.
func (l *endLog) of(id string) []bananastype.JobEnd {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []bananastype.JobEnd
	for _, e := range l.ends {
		if e.ID == id {
			out = append(out, e)
		}
	}
	return out
}

// statuses is how each of ends left its job, and its attempt.
func statuses(ends []bananastype.JobEnd) []string {
	out := make([]string, len(ends))
	for i, e := range ends {
		out[i] = fmt.Sprintf("%s#%d", e.Status(), e.Attempt)
	}
	return out
}

// wantEnds fails t unless the ends told of id are, in order, want
// ("status#attempt"), each with the worker's id, the job's task and route,
// and a run that started before it ended.
func wantEnds(t *testing.T, l *endLog, w *runtime.Worker, id string, want ...string) []bananastype.JobEnd {
	t.Helper()
	ends := l.of(id)
	if got := statuses(ends); !slices.Equal(got, want) {
		t.Fatalf("ends told of job %s: %v; want %v", id, got, want)
	}
	for _, e := range ends {
		if e.Worker != w.ID() || e.Task != "t_echo" || e.Route != "default" || e.Priority != runtime.PriorityNormal {
			t.Errorf("end %+v: want worker %s, task t_echo, route default, priority normal", e, w.ID())
		}
		if e.StartedAt.IsZero() || e.EndedAt.Before(e.StartedAt) {
			t.Errorf("end %+v: started %v, ended %v; want a start at or before the end", e, e.StartedAt, e.EndedAt)
		}
	}
	return ends
}

// A job that succeeds is told once, as completed, with its result. The hook
// runs off the job's path, so the end is seen by the time Run returns, not
// necessarily by the time Await does.
func TestOnJobEnd_ACompletedJobIsToldOnceWithItsResult(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		var l endLog
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{OnJobEnd: l.add}))
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
		e := wantEnds(t, &l, w, id, "completed#1")[0]
		if e.Error != "" || len(e.Result) == 0 || e.Recovered || e.Ending == queue.EndSnoozed {
			t.Fatalf("completed end %+v: want its result, no error", e)
		}
	})
}

// A job that fails once then succeeds is told twice: its retry (when it
// runs again, and why), then its completion.
func TestOnJobEnd_AJobThatFailsThenSucceedsIsToldARetryThenCompleted(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		var l endLog
		var runs atomic.Int32
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{OnJobEnd: l.add}))
		runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			if runs.Add(1) == 1 {
				return testtasks.Reply{}, errors.New("flaky")
			}
			return testtasks.Reply{Text: m.Text}, nil
		})
		stop := startWorker(t, w)
		echo := testtasks.Echo.With(c)
		id, err := echo.Enqueue(ctx, testtasks.Msg{Text: "hi"}, runtime.MaxRetries(3))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := echo.Await(ctx, id); err != nil {
			t.Fatal(err)
		}
		stop()
		ends := wantEnds(t, &l, w, id, "scheduled#1", "completed#2")
		if r := ends[0]; r.Error != "flaky" || r.RetryAt.Before(r.EndedAt) || r.Ending == queue.EndSnoozed {
			t.Fatalf("retry end %+v: want the failure and a retry time after it", r)
		}
	})
}

// A job that fails on its last attempt is told failed (dead-lettered), after
// the retry of its first.
func TestOnJobEnd_AJobOutOfRetriesIsToldARetryThenFailed(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		var l endLog
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{OnJobEnd: l.add}))
		runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			return testtasks.Reply{}, errors.New("doomed")
		})
		stop := startWorker(t, w)
		echo := testtasks.Echo.With(c)
		id, err := echo.Enqueue(ctx, testtasks.Msg{}, runtime.MaxRetries(1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := echo.Await(ctx, id); err == nil {
			t.Fatal("the doomed job succeeded")
		}
		stop()
		ends := wantEnds(t, &l, w, id, "scheduled#1", "failed#2")
		if d := ends[1]; d.Error != "doomed" || !d.RetryAt.IsZero() {
			t.Fatalf("dead end %+v: want its failure, no retry", d)
		}
	})
}

// A running job canceled is told once, canceled; its handler's return after
// the cancel is not told again.
func TestOnJobEnd_ACanceledRunningJobIsToldOnceCanceled(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		var l endLog
		started, returned := make(chan struct{}, 1), make(chan struct{})
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{OnJobEnd: l.add}))
		runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			defer close(returned)
			started <- struct{}{}
			<-ctx.Done()
			return testtasks.Reply{}, ctx.Err()
		})
		stop := startWorker(t, w)
		echo := testtasks.Echo.With(c)
		id, err := echo.Enqueue(ctx, testtasks.Msg{}, runtime.MaxRetries(5))
		if err != nil {
			t.Fatal(err)
		}
		recv(t, started, 10*time.Second, "the job to start")
		if _, err := w.Inspector().Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := echo.Await(ctx, id); !errors.Is(err, runtime.ErrJobCanceled) {
			t.Fatalf("Await = %v; want ErrJobCanceled", err)
		}
		recv(t, returned, 10*time.Second, "the handler to return")
		stop()
		if e := wantEnds(t, &l, w, id, "canceled#1")[0]; e.Error == "" {
			t.Fatalf("canceled end %+v: want why", e)
		}
	})
}

// A job still running when its worker's grace period ends is told handed
// back: pending again, no attempt counted.
func TestOnJobEnd_AJobRunningAtShutdownIsToldHandedBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		var l endLog
		started := make(chan struct{}, 1)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{OnJobEnd: l.add, ShutdownTimeout: 20 * time.Millisecond}))
		runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			started <- struct{}{}
			<-ctx.Done()
			return testtasks.Reply{}, ctx.Err()
		})
		stop := startWorker(t, w)
		id, err := testtasks.Echo.With(c).Enqueue(ctx, testtasks.Msg{})
		if err != nil {
			t.Fatal(err)
		}
		recv(t, started, 10*time.Second, "the job to start")
		stop()
		wantEnds(t, &l, w, id, "pending#1")
		if s := jobStatus(t, c, id); s != runtime.StatusPending {
			t.Fatalf("status %s after the hand-back; want pending", s)
		}
	})
}

// A hook that blocks holds up only itself: jobs keep running and ending
// while it waits, and the ends it had no room for are dropped, not waited
// for.
func TestOnJobEnd_ABlockedHookDoesNotHoldUpJobs(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		unblock := make(chan struct{})
		var l endLog
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 2, OnJobEnd: func(e bananastype.JobEnd) {
			<-unblock
			l.add(e)
		}}))
		runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			return testtasks.Reply{Text: m.Text}, nil
		})
		stop := startWorker(t, w)
		echo := testtasks.Echo.With(c)
		msgs := make([]testtasks.Msg, 1100) // more than the hook's buffer
		ids, err := echo.EnqueueMany(ctx, msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if _, err := echo.Await(ctx, id); err != nil {
				t.Fatalf("Await(%s) with the hook blocked: %v", id, err)
			}
		}
		close(unblock)
		stop()
		l.mu.Lock()
		n := len(l.ends)
		l.mu.Unlock()
		if n == 0 || n >= len(ids) {
			t.Fatalf("the hook saw %d of %d ends; want some, the rest dropped while it was blocked", n, len(ids))
		}
	})
}

// A job whose worker died mid-run (killed: its lease held by nobody) is told
// by the worker whose reaper recovers it: a retry, marked recovered, then
// the completion of the run that worker gives it.
func TestOnJobEnd_AJobRecoveredFromADeadWorkerIsToldARecoveredRetry(t *testing.T) {
	t.Parallel()
	c, id := aJobOfAKilledWorker(t)
	ctx, task := ctxT(t), crashy.With(c)

	var l endLog
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{OnJobEnd: l.add}))
	runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) { return Reply{Text: m.Text}, nil })
	stop := startWorker(t, w)
	if _, err := task.Await(ctx, id); err != nil {
		t.Fatal(err)
	}
	stop()
	ends := l.of(id)
	if got := statuses(ends); !slices.Equal(got, []string{"scheduled#1", "completed#2"}) {
		t.Fatalf("ends told of the recovered job: %v; want [scheduled#1 completed#2]", got)
	}
	if r := ends[0]; !r.Recovered || r.Worker != w.ID() || r.Error == "" || r.RetryAt.IsZero() || !r.StartedAt.IsZero() {
		t.Fatalf("recovered end %+v: want it marked recovered by this worker, why, and its retry time", r)
	}
	if ends[1].Recovered {
		t.Fatalf("completed end %+v marked recovered; this worker ran it", ends[1])
	}
}

// With keys set (and a result long enough to be compressed too), the work-end
// hooks — a worker's OnJobEnd and a client's HookWorkEnd — are told the
// result as the handler returned it, not as Redis stores it.
func TestOnJobEnd_WithKeysTheHooksGetTheOpenedResult(t *testing.T) {
	eachServer(t, func(t *testing.T, url, ns string) {
		ctx := ctxT(t)
		c := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(sealKey("k1", 1)), runtime.CompressOver(64))
		var own, client endLog
		c.AddHook(runtime.JobEndFunc(client.add))
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{OnJobEnd: own.add}))
		runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			return testtasks.Reply{Text: m.Text}, nil
		})
		stop := startWorker(t, w)
		echo := testtasks.Echo.With(c)
		want := map[string]string{}
		for _, text := range []string{"short secret", strings.Repeat("a long secret, compressed then sealed; ", 20)} {
			id, err := echo.Enqueue(ctx, testtasks.Msg{Text: text})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := echo.Await(ctx, id); err != nil {
				t.Fatal(err)
			}
			want[id] = text
		}
		stop()
		for id, text := range want {
			for name, l := range map[string]*endLog{"OnJobEnd": &own, "HookWorkEnd": &client} {
				ends := l.of(id)
				if len(ends) != 1 {
					t.Fatalf("%s: %d ends of job %s, want 1", name, len(ends), id)
				}
				var r testtasks.Reply
				if err := msgpack.Unmarshal(ends[0].Result, &r); err != nil || r.Text != text {
					t.Errorf("%s: the result of job %s decodes to %+v (%v); want the handler's %q", name, id, r, err, text)
				}
			}
		}
	})
}
