package queue

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// The scripts of the distributed lock primitive (scheduler.Lock): they are
// the only compare-and-delete and compare-and-expire on a key that is not a
// route's, so they take any client and key rather than a Queue.
var lockScripts = struct{ unlock, relock *redis.Script }{
	unlock: redis.NewScript(mustRead("_prelude.lua") + "\n" + mustRead("unlock.lua")),
	relock: redis.NewScript(mustRead("_prelude.lua") + "\n" + mustRead("relock.lua")),
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
