package queue

import (
	"context"
	"fmt"
)

// Waiting workers. A worker whose fetch found fewer jobs than it asked for
// stands in its route's idle set (FetchOrWait registers it in the fetch's
// own script), and every script that makes jobs ready — push, enqueue,
// promote, replay, requeue, handback, cron, resume — pops as many entries as
// it made jobs and publishes on each worker's own channel. One job wakes one
// worker however many wait, where a publish on a channel every worker
// listens on would wake them all, each to run an empty fetch.
//
// An entry is a hint, not a lease: one whose worker died is popped once and
// its wake-up lost (the job waits for the next wake-up or a worker's safety
// poll), and entries past their time are dropped unread.

// WakeWaiters wakes up to n workers waiting for jobs of route and returns
// how many it woke: for a worker woken when it had no free slot, which
// hands its wake-up on rather than keep it while its jobs run.
func (js Jobs) WakeWaiters(ctx context.Context, route string, n int) (int, error) {
	k := js.q.Keys(route)
	// Retry-safe enough: a second run wakes up to n more workers, whose
	// fetches find nothing and register them again.
	woke, err := js.q.s.wake.Run(ctx, js.q.rdb, []string{k.Idle()}, n, ms(js.q.Now())).Int()
	if err != nil {
		return 0, fmt.Errorf("wake workers of route %s: %w", route, err)
	}
	return woke, nil
}

// StopWaiting takes a worker's entries out of the idle sets of routes, for
// a worker that stops: a wake-up sent to it would be lost.
func (js Jobs) StopWaiting(ctx context.Context, routes []string, worker string) error {
	pipe := js.q.rdb.Pipeline()
	for _, r := range routes {
		k := js.q.Keys(r)
		pipe.ZRem(ctx, k.Idle(), k.WakeChannelOf(worker))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("stop waiting on routes: %w", err)
	}
	return nil
}
