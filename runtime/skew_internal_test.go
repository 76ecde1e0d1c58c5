package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
)

// A host whose clock runs ahead of the others' by more than the slack
// between two renewals (here 2.4 s on a 3 s lease renewed every second)
// must not reap leases that are being renewed: leases are judged on Redis's
// clock, not on each host's. Judged on its own clock, its reaper would see
// every renewed lease as expired for part of each renewal period and rerun
// the jobs.
func TestLease_HostClockAheadDoesNotReapRenewedLeases(t *testing.T) {
	t.Parallel()
	const lease, skew, work = 3 * time.Second, 2400 * time.Millisecond, 6 * time.Second
	url := redistest.Shared(t).URL()
	ns := redistest.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	connectT := func(opts ...ConnectOption) *Client {
		c, err := Connect(ctx, url, append([]ConnectOption{WithNamespace(ns)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	honest := connectT()
	ahead := connectT(WithLocalClock(func() time.Time { return time.Now().Add(skew) }))
	if s := ahead.q.Skew(); s > -skew+500*time.Millisecond || s < -skew-500*time.Millisecond {
		t.Fatalf("measured skew of the host ahead = %s, want about -%s", s, skew)
	}

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	task := NewTask[int, int]("skew_slow")
	var mu sync.Mutex
	runs := map[string]int{}
	w := NewWorker(honest, WorkerOptions{Lease: lease, Concurrency: 4, Logger: quiet, ShutdownTimeout: time.Second})
	Handle(w, task, func(ctx context.Context, n int) (int, error) {
		j, _ := CurrentJob(ctx)
		mu.Lock()
		runs[j.ID]++
		mu.Unlock()
		select {
		case <-time.After(work): // the job's work, longer than two leases
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		return n, nil
	})
	// The host ahead only reaps: it takes no job of its own.
	reaper := NewWorker(ahead, WorkerOptions{Lease: lease, JobTypes: []string{"nothing"}, Logger: quiet})
	for _, wk := range []*Worker{w, reaper} {
		wctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- wk.Run(wctx) }()
		t.Cleanup(func() { stop(); <-done })
	}

	ids := make([]string, 4)
	for i := range ids {
		id, err := task.With(honest).Enqueue(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	for i, id := range ids {
		got, err := task.With(honest).Await(ctx, id)
		if err != nil || got != i {
			t.Fatalf("Await(%s) = %d, %v; want %d", id, got, err, i)
		}
		info, err := honest.Job(ctx, id)
		if err != nil || info.Attempts != 1 || info.Error != "" {
			t.Fatalf("Job(%s) = %+v, %v; want one attempt, no failure (no lease reaped)", id, info, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if runs[id] != 1 {
			t.Errorf("job %s ran %d times, want once", id, runs[id])
		}
	}
}

// An Await on a job of a route that no live worker takes says so (a warning
// on slog.Default) once the grace period passes, instead of waiting without a
// word.
func TestAwait_JobOfARouteNoWorkerTakesIsPointedOut(t *testing.T) {
	url := redistest.Shared(t).URL()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Connect(ctx, url, WithNamespace(redistest.Namespace(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.unservedAfter = 100 * time.Millisecond
	var logs lockedBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	defer slog.SetDefault(old)

	task := NewTask[int, int]("unserved", Route("nobody_takes_this"))
	id, err := task.With(c).Enqueue(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithCancel(ctx)
	awaited := make(chan error, 1)
	go func() { _, err := task.With(c).Await(actx, id); awaited <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "no live worker takes") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning 10 s into an Await with a 100 ms grace; log %q", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	acancel()
	if err := <-awaited; err == nil {
		t.Fatal("Await returned a result for a job nobody runs")
	}
	if out := logs.String(); !strings.Contains(out, "route=nobody_takes_this") || !strings.Contains(out, id) {
		t.Fatalf("log %q; want the warning to name the job and its route", out)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A step of a host's wall clock (NTP, an operator, a VM resumed), ahead or
// back, on the host running a job or on one that only reaps, reaps no
// healthy lease and moves no retry: the queue's time advances by the
// monotonic clock between syncs, and a sync measures Redis's clock, not the
// wall's. The long job runs once and completes; the retry scheduled with a
// backoff keeps its run-at and stays scheduled.
func TestLease_WallClockStepsOnEitherHostReapNoLeaseAndMoveNoRetry(t *testing.T) {
	t.Parallel()
	const lease, backoff = time.Second, 45 * time.Second
	url := redistest.Shared(t).URL()
	ns := redistest.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var stepA, stepB atomic.Int64 // each host's wall clock step
	connectT := func(step *atomic.Int64) *Client {
		c, err := Connect(ctx, url, WithNamespace(ns),
			WithLocalClock(func() time.Time { return time.Now().Add(time.Duration(step.Load())) }))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	hostA, hostB := connectT(&stepA), connectT(&stepB)

	r := startStepWorkers(ctx, t, hostA, hostB, lease, backoff)
	for _, host := range []struct {
		name string
		c    *Client
		step *atomic.Int64
	}{{"A (running the job)", hostA, &stepA}, {"B (reaping)", hostB, &stepB}} {
		for _, step := range []time.Duration{60 * time.Second, -60 * time.Second} {
			what := fmt.Sprintf("host %s stepped %s", host.name, step)
			host.step.Store(int64(step))
			r.hold(ctx, t, what+", before its next sync", 2*lease)
			if err := host.c.q.SyncClock(ctx); err != nil {
				t.Fatal(err)
			}
			r.hold(ctx, t, what+", after a sync", lease)
			host.step.Store(0)
			if err := host.c.q.SyncClock(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}

	close(r.release)
	if got, err := r.long.With(hostA).Await(ctx, r.longID); err != nil || got != 7 {
		t.Fatalf("Await(long) = %d, %v; want 7", got, err)
	}
	if info, err := hostA.Job(ctx, r.longID); err != nil || info.Attempts != 1 || len(info.FailedAt) != 0 || info.Error != "" || r.longRuns.Load() != 1 {
		t.Fatalf("long job %+v, %v after %d runs; want one run, no failed attempt", info, err, r.longRuns.Load())
	}
	if info, err := hostA.Job(ctx, r.flakyID); err != nil || info.Status != StatusScheduled || info.Attempts != 1 || r.flakyRuns.Load() != 1 {
		t.Fatalf("flaky job %+v, %v after %d runs; want it scheduled for its retry, one failed run", info, err, r.flakyRuns.Load())
	}
}

// stepRig is the long job and the failing one of the wall-clock step test,
// their runs, and where the failing one's retry is scheduled.
type stepRig struct {
	hostA               *Client
	long, flaky         *Task[int, int]
	longRuns, flakyRuns atomic.Int32
	release             chan struct{} // closed to let the long job return
	longID, flakyID     string
	scheduled           string  // the route's scheduled set
	runAt               float64 // the retry's run-at
}

// startStepWorkers starts a worker on host A running a long job and one that
// fails, retried after backoff, and one on host B that only reaps; it
// enqueues both jobs and waits until the long one runs and the other's retry
// is scheduled.
func startStepWorkers(ctx context.Context, t *testing.T, hostA, hostB *Client, lease, backoff time.Duration) *stepRig {
	r := &stepRig{hostA: hostA, long: NewTask[int, int]("step_long"), flaky: NewTask[int, int]("step_flaky"), release: make(chan struct{})}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := NewWorker(hostA, WorkerOptions{Lease: lease, Logger: quiet, ShutdownTimeout: time.Second,
		Backoff: func(int) time.Duration { return backoff }})
	Handle(w, r.long, func(ctx context.Context, n int) (int, error) {
		r.longRuns.Add(1)
		select {
		case <-r.release:
			return n, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
	Handle(w, r.flaky, func(ctx context.Context, n int) (int, error) {
		r.flakyRuns.Add(1)
		return 0, errors.New("fails once, retried after the backoff")
	})
	// Host B only reaps (and promotes): it takes no job of its own.
	reaper := NewWorker(hostB, WorkerOptions{Lease: lease, JobTypes: []string{"nothing"}, Logger: quiet})
	for _, wk := range []*Worker{w, reaper} {
		wctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- wk.Run(wctx) }()
		t.Cleanup(func() { stop(); <-done })
	}

	var err error
	if r.longID, err = r.long.With(hostA).Enqueue(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if r.flakyID, err = r.flaky.With(hostA).Enqueue(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r.scheduled = hostA.q.Keys("default").Scheduled()
	waitUntil(t, 10*time.Second, "the long job to start and the flaky one's retry to be scheduled", func() bool {
		s, err := hostA.rdb.ZScore(ctx, r.scheduled, r.flakyID).Result()
		r.runAt = s
		return err == nil && r.longRuns.Load() == 1
	})
	return r
}

// hold watches for d that the long job keeps running, once, and the retry
// keeps its run-at.
func (r *stepRig) hold(ctx context.Context, t *testing.T, what string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		info, err := r.hostA.Job(ctx, r.longID)
		if err != nil || info.Status != StatusProcessing || info.Attempts != 1 || len(info.FailedAt) != 0 || r.longRuns.Load() != 1 {
			t.Fatalf("%s: long job %+v, %v, %d runs; want it processing, its first run, never reaped", what, info, err, r.longRuns.Load())
		}
		if s, err := r.hostA.rdb.ZScore(ctx, r.scheduled, r.flakyID).Result(); err != nil || s != r.runAt || r.flakyRuns.Load() != 1 {
			t.Fatalf("%s: retry run-at %v, %v (was %v), %d runs; want it unmoved and not run again", what, s, err, r.runAt, r.flakyRuns.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitUntil polls cond until it holds or within passes.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
