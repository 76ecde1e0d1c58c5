package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/redis/go-redis/v9"
)

// ErrNotHeld is returned by Release and Extend when the lock expired or was
// taken by someone else meanwhile.
var ErrNotHeld = errors.New("scheduler: lock not held")

// Lock is a distributed mutual-exclusion lock on one Redis key: SET NX PX
// with a random token, released and extended only by its holder (a Lua
// compare-and-delete / compare-and-expire), so a holder whose lock expired
// can never release or extend the next holder's.
//
// Cron does not use it: a lock can expire while its holder is still working
// (a GC pause, a slow network) and two holders then act at once. Firing a
// tick is instead one atomic compare-and-set (see Cron). Lock is for work that
// cannot be made a single script; keep what it guards shorter than its TTL,
// and Extend it while working.
type Lock struct {
	rdb   redis.UniversalClient
	key   string
	token string
}

// NewLock returns a lock on key (not yet acquired).
func NewLock(rdb redis.UniversalClient, key string) *Lock {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return &Lock{rdb: rdb, key: key, token: hex.EncodeToString(b[:])}
}

// TryAcquire takes the lock for ttl if nobody holds it, and reports whether it did.
func (l *Lock) TryAcquire(ctx context.Context, ttl time.Duration) (bool, error) {
	if ttl < time.Millisecond {
		return false, fmt.Errorf("scheduler: lock ttl must be at least 1ms, got %s", ttl)
	}
	return l.rdb.SetNX(ctx, l.key, l.token, ttl).Result()
}

// Release gives the lock up; ErrNotHeld if it was no longer ours.
func (l *Lock) Release(ctx context.Context) error {
	released, err := queue.Unlock(ctx, l.rdb, l.key, l.token)
	if err != nil {
		return err
	}
	if !released {
		return ErrNotHeld
	}
	return nil
}

// Extend keeps the lock for ttl from now; ErrNotHeld if it was no longer ours.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("scheduler: lock ttl must be at least 1ms, got %s", ttl)
	}
	extended, err := queue.Relock(ctx, l.rdb, l.key, l.token, ttl)
	if err != nil {
		return err
	}
	if !extended {
		return ErrNotHeld
	}
	return nil
}
