package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The scripts of the distributed lock primitive (scheduler.Lock): they are
// the only compare-and-delete and compare-and-expire on a key that is not a
// route's, so they take any client and key rather than a Queue.
var lockScripts = struct{ unlock, relock, keep *redis.Script }{
	unlock: newScript("unlock"),
	relock: newScript("relock"),
	keep:   newScript("keep"),
}

// Unlock deletes lock key if it still holds token, and reports whether it
// did (unlock.lua).
func Unlock(ctx context.Context, rdb redis.Scripter, key, token string) (bool, error) {
	n, err := lockScripts.unlock.Run(ctx, rdb, []string{key}, token).Int()
	return n == 1, err
}

// Relock sets lock key to expire ttl from now if it still holds token, and
// reports whether it did (relock.lua).
func Relock(ctx context.Context, rdb redis.Scripter, key, token string, ttl time.Duration) (bool, error) {
	n, err := lockScripts.relock.Run(ctx, rdb, []string{key}, token, ttl.Milliseconds()).Int()
	return n == 1, err
}

// Keep takes or extends the keeper lock of route for token (keep.lua): it
// reports whether token holds it now, for ttl, and, when another holds it,
// how long that holder's lock has left.
func (q *Queue) Keep(ctx context.Context, route, token string, ttl time.Duration) (bool, time.Duration, error) {
	res, err := lockScripts.keep.Run(ctx, q.rdb, []string{q.Keys(route).Keeper()}, token, max(1, ttl.Milliseconds())).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("keeper lock of route %s: %w", route, err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("keeper lock of route %s: keep.lua answered %v", route, res)
	}
	return res[0] == 1, time.Duration(res[1]) * time.Millisecond, nil
}

// Unkeep gives up the keeper lock of route if token still holds it, so
// another process takes over at once rather than at the lock's end.
// The release is announced on the route's keeper channel, for the standbys
// to try at once.
func (q *Queue) Unkeep(ctx context.Context, route, token string) error {
	k := q.Keys(route)
	released, err := Unlock(ctx, q.rdb, k.Keeper(), token)
	if err != nil || !released {
		return err
	}
	return q.rdb.Publish(ctx, k.KeeperChannel(), "1").Err()
}
