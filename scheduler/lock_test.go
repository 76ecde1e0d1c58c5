package scheduler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

func TestLock_OneHolderSafeReleaseAndExtend(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		key := q.Namespace() + ":lock:report"
		a := scheduler.NewLock(q.Client(), key)
		b := scheduler.NewLock(q.Client(), key)
		if ok, err := a.TryAcquire(ctx, time.Minute); !ok || err != nil {
			t.Fatalf("a.TryAcquire = %v, %v", ok, err)
		}
		if ok, _ := b.TryAcquire(ctx, time.Minute); ok {
			t.Fatal("b acquired a held lock")
		}
		if err := b.Release(ctx); !errors.Is(err, scheduler.ErrNotHeld) {
			t.Fatalf("b.Release of a's lock = %v, want ErrNotHeld", err)
		}
		if err := b.Extend(ctx, time.Hour); !errors.Is(err, scheduler.ErrNotHeld) {
			t.Fatalf("b.Extend of a's lock = %v, want ErrNotHeld", err)
		}
		if err := a.Extend(ctx, time.Hour); err != nil {
			t.Fatal(err)
		}
		if ttl := q.Client().PTTL(ctx, key).Val(); ttl < 59*time.Minute {
			t.Fatalf("TTL after Extend(1h) = %s", ttl)
		}
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if ok, _ := b.TryAcquire(ctx, time.Minute); !ok {
			t.Fatal("b could not take a released lock")
		}
		if err := a.Release(ctx); !errors.Is(err, scheduler.ErrNotHeld) {
			t.Fatalf("a released b's lock: %v", err)
		}
		if _, err := a.TryAcquire(ctx, 0); err == nil {
			t.Fatal("a zero TTL was accepted")
		}
	})
}

// A lock that expired can be taken by another, and the old holder cannot
// release it from under the new one.
func TestLock_ExpiredHolderCannotReleaseTheNext(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		key := q.Namespace() + ":lock:expiry"
		a := scheduler.NewLock(q.Client(), key)
		b := scheduler.NewLock(q.Client(), key)
		if ok, _ := a.TryAcquire(ctx, 50*time.Millisecond); !ok {
			t.Fatal("a could not acquire")
		}
		deadline := time.Now().Add(5 * time.Second)
		for q.Client().Exists(ctx, key).Val() == 1 {
			if time.Now().After(deadline) {
				t.Fatal("the lock did not expire")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if ok, _ := b.TryAcquire(ctx, time.Minute); !ok {
			t.Fatal("b could not take an expired lock")
		}
		if err := a.Release(ctx); !errors.Is(err, scheduler.ErrNotHeld) {
			t.Fatalf("the expired holder released the new holder's lock: %v", err)
		}
		if q.Client().Exists(ctx, key).Val() != 1 {
			t.Fatal("b's lock is gone")
		}
	})
}
