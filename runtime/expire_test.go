package runtime_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// expiryLife runs the life of jobs with an expiry on c: one waiting on a
// paused route past its expiry, one delayed past it, and one found expired
// by a worker's fetch; none runs, each ends expired (Await: ErrExpired, Job:
// StatusExpired, its args kept), and a job whose expiry is far runs.
func expiryLife(t *testing.T, c *runtime.Client, route string) {
	ctx := ctxT(t)
	task := testtasks.Echo.With(c)
	var ran atomic.Int64
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{route}}))
	runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
		if m.Text != "runs" {
			ran.Add(1)
		}
		return Reply{Text: m.Text}, nil
	})
	paused, err := task.Enqueue(ctx, Msg{Text: "paused"}, runtime.Route(route), runtime.ExpireIn(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	delayed, err := task.Enqueue(ctx, Msg{Text: "delayed"}, runtime.Route(route), runtime.Delay(time.Hour), runtime.ExpireAt(time.Now().Add(300*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	in := w.Inspector()
	if err := in.Pause(ctx, route); err != nil { // before any worker runs: neither job is fetched
		t.Fatal(err)
	}
	stop := startWorker(t, w)
	for _, id := range []string{paused, delayed} {
		if _, err := task.Await(ctx, id); !errors.Is(err, runtime.ErrExpired) {
			t.Fatalf("Await %s = %v; want ErrExpired", id, err)
		}
		info := jobInfo(t, c, id)
		if info.Status != runtime.StatusExpired || info.Status.Finished() != true || len(info.ArgsMsgpack) == 0 {
			t.Fatalf("job %s = %+v; want it expired, with its args", id, info)
		}
	}
	stop()
	// Found expired at fetch: the worker starts after the job's expiry.
	if err := in.Resume(ctx, route); err != nil {
		t.Fatal(err)
	}
	late, err := task.Enqueue(ctx, Msg{Text: "late"}, runtime.Route(route), runtime.ExpireAt(time.Now().Add(-time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	w2 := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{route}}))
	runtime.Handle(w2, task, func(ctx context.Context, m Msg) (Reply, error) {
		if m.Text != "runs" {
			ran.Add(1)
		}
		return Reply{Text: m.Text}, nil
	})
	startWorker(t, w2)
	if _, err := task.Await(ctx, late); !errors.Is(err, runtime.ErrExpired) {
		t.Fatalf("Await of a job expired at fetch = %v; want ErrExpired", err)
	}
	if got, err := task.Call(ctx, Msg{Text: "runs"}, runtime.Route(route), runtime.ExpireIn(time.Hour)); err != nil || got.Text != "runs" {
		t.Fatalf("Call with a far expiry = %+v, %v; want it run", got, err)
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("%d expired job(s) ran", n)
	}
}

func TestExpire_AJobNotStartedByItsExpiryEndsExpiredNeverRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) { expiryLife(t, c, "default") })
}

func TestExpire_OnACluster(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.SharedCluster(t).URL())
	expiryLife(t, c, "expiring")
}

// ExpireIn and ExpireAt refuse what is no expiry.
func TestExpire_BadOptionsAreRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := testtasks.Echo.With(c)
		if _, err := task.Enqueue(ctxT(t), Msg{}, runtime.ExpireIn(0)); err == nil {
			t.Fatal("ExpireIn(0) accepted")
		}
		if _, err := task.Enqueue(ctxT(t), Msg{}, runtime.ExpireAt(time.Time{})); err == nil {
			t.Fatal("ExpireAt(zero) accepted")
		}
	})
}
