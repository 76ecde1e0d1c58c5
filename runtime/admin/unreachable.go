package admin

import (
	"context"
	"errors"
	"time"
)

// RedisUnreachable is what a surface answers in place of a Failure when
// Redis does not answer (Admin.Ready fails): the operator is told which
// Redis and why, and that trying again is worth it (HTTP 503), rather than
// shown an internal error.
type RedisUnreachable struct {
	Addr string // the Redis the admin layer reads, as host:port, never with credentials
	Err  error  // why Ready failed
}

func (e *RedisUnreachable) Error() string {
	where := "Redis"
	if e.Addr != "" {
		where += " at " + e.Addr
	}
	return where + " is unreachable: " + Message(e.Err)
}

func (e *RedisUnreachable) Unwrap() error { return e.Err }

// ReadyWithin is how long Unreachable waits for Redis to answer.
const ReadyWithin = time.Second

// Unreachable is the *RedisUnreachable to answer err with, when err is a
// Failure and a's Redis, at addr, does not answer a PING within
// ReadyWithin; nil otherwise (err was the caller's doing, or Redis answers
// and something else failed). It asks only once a call has failed, so a
// served request costs no extra round trip.
func Unreachable(ctx context.Context, a Admin, addr string, err error) *RedisUnreachable {
	if err == nil || ctx.Err() != nil || errors.Is(err, context.Canceled) || Classify(err).Class != Failure {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ReadyWithin)
	defer cancel()
	rerr := a.Ready(ctx)
	if rerr == nil {
		return nil
	}
	return &RedisUnreachable{Addr: addr, Err: rerr}
}
