package once_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/internal/once"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// newRunner is a Runner on the shared test server, under a namespace of
// the test's own.
func newRunner(t *testing.T, claimTTL time.Duration) *once.Runner {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Shared(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	l := results.NewListener(rdb)
	t.Cleanup(func() { _ = l.Close() })
	return &once.Runner{Queue: q, Listener: l, ClaimTTL: claimTTL, MarkerTTL: time.Minute, WriteTimeout: 5 * time.Second}
}

func TestRun_ASucceededKeyIsNotRunAgain(t *testing.T) {
	r := newRunner(t, 30*time.Second)
	var calls atomic.Int32
	fn := func(context.Context) error { calls.Add(1); return nil }
	for i, want := range []bool{true, false} {
		ran, err := r.Run(t.Context(), "k", fn)
		if err != nil || ran != want {
			t.Fatalf("call %d: ran %v, %v; want %v, nil", i, ran, err, want)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("fn ran %d times, want 1", n)
	}
}

func TestRun_AFailureLetsTheNextCallRun(t *testing.T) {
	r := newRunner(t, 30*time.Second)
	boom := errors.New("boom")
	ran, err := r.Run(t.Context(), "k", func(context.Context) error { return boom })
	if !ran || !errors.Is(err, boom) {
		t.Fatalf("failing call: ran %v, %v; want true, boom", ran, err)
	}
	ran, err = r.Run(t.Context(), "k", func(context.Context) error { return nil })
	if !ran || err != nil {
		t.Fatalf("call after the failure: ran %v, %v; want true, nil", ran, err)
	}
}

// A second caller waits while the holder runs fn, and does not run fn when
// the holder succeeded.
func TestRun_AWaiterSeesTheHolderSucceed(t *testing.T) {
	r := newRunner(t, 30*time.Second)
	entered, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		_, err := r.Run(t.Context(), "k", func(context.Context) error { close(entered); <-release; return nil })
		held <- err
	}()
	<-entered
	waited := make(chan bool, 1)
	go func() {
		ran, err := r.Run(t.Context(), "k", func(context.Context) error { return errors.New("ran twice") })
		if err != nil {
			t.Error(err)
		}
		waited <- ran
	}()
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	select {
	case ran := <-waited:
		if ran {
			t.Fatal("the waiter ran fn after the holder succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not hear the holder end")
	}
}

// A claim taken over by another caller cancels fn's context with
// ErrClaimLost at the next renewal.
func TestRun_ALostClaimCancelsFn(t *testing.T) {
	r := newRunner(t, 300*time.Millisecond)
	ctx := t.Context()
	ran, err := r.Run(ctx, "k", func(fctx context.Context) error {
		k := r.Queue.OnceKeys("k")
		if err := r.Queue.Client().Del(ctx, k.Claim).Err(); err != nil {
			return err
		}
		if st, _, err := r.Queue.OnceClaim(ctx, "k", "another caller", time.Minute); err != nil || st != queue.OnceClaimed {
			return errors.Join(err, errors.New("the other caller did not get the claim"))
		}
		select {
		case <-fctx.Done():
			return context.Cause(fctx)
		case <-time.After(10 * time.Second):
			return errors.New("fn's context was not canceled")
		}
	})
	if !ran || !errors.Is(err, once.ErrClaimLost) {
		t.Fatalf("ran %v, %v; want true, ErrClaimLost", ran, err)
	}
}
