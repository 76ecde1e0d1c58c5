package engine

import (
	"context"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// Redis returns the engine's Queue over q: each method is the one of q's
// facet that owns it (q.Jobs, q.Flows, q.Ops, q.Ended) or of q itself.
func Redis(q *queue.Queue) Queue { return redisQueue{q} }

type redisQueue struct{ q *queue.Queue }

func (r redisQueue) Now() time.Time               { return r.q.Now() }
func (r redisQueue) Keys(route string) queue.Keys { return r.q.Keys(route) }
func (r redisQueue) KeepsEnded() bool             { return r.q.Ended.Kept() }

func (r redisQueue) FetchOrWait(ctx context.Context, route string, priorities []queue.Priority, n int, leaseUntil, now time.Time, w queue.Waiter) ([]*queue.Dispatch, error) {
	return r.q.Jobs.FetchOrWait(ctx, route, priorities, n, leaseUntil, now, w)
}

func (r redisQueue) FetchTypes(ctx context.Context, route string, priorities []queue.Priority, types []string, n int, leaseUntil, now time.Time) ([]*queue.Dispatch, error) {
	return r.q.Jobs.FetchTypes(ctx, route, priorities, types, n, leaseUntil, now)
}

func (r redisQueue) WakeWaiters(ctx context.Context, route string, n int) (int, error) {
	return r.q.Jobs.WakeWaiters(ctx, route, n)
}

func (r redisQueue) StopWaiting(ctx context.Context, routes []string, worker string) error {
	return r.q.Jobs.StopWaiting(ctx, routes, worker)
}

func (r redisQueue) HandBack(ctx context.Context, l *queue.LostFetch, now time.Time, canceled func(queue.Expired) queue.Verdict) (queue.LostHandBack, error) {
	return r.q.Jobs.HandBack(ctx, l, now, canceled)
}

func (r redisQueue) Renew(ctx context.Context, route string, running []*queue.Dispatch, until time.Time) ([]*queue.Dispatch, error) {
	return r.q.Jobs.Renew(ctx, route, running, until)
}

func (r redisQueue) CancelRequests(ctx context.Context, route string, ids []string) ([]string, error) {
	return r.q.Jobs.CancelRequests(ctx, route, ids)
}

func (r redisQueue) AckAsync(d *queue.Dispatch, record []byte, ttl time.Duration, done func(ok bool, err error)) {
	r.q.Jobs.AckAsync(d, record, ttl, done)
}

func (r redisQueue) Fail(ctx context.Context, d *queue.Dispatch, f queue.Failure, now time.Time) (queue.Ending, error) {
	return r.q.Jobs.Fail(ctx, d, f, now)
}

func (r redisQueue) FinishCanceled(ctx context.Context, d *queue.Dispatch, record []byte, ttl time.Duration) (bool, error) {
	return r.q.Jobs.FinishCanceled(ctx, d, record, ttl)
}

func (r redisQueue) Requeue(ctx context.Context, d *queue.Dispatch, canceled []byte, ttl time.Duration, now time.Time) (queue.Ending, error) {
	return r.q.Jobs.Requeue(ctx, d, canceled, ttl, now)
}

func (r redisQueue) Reap(ctx context.Context, route string, now time.Time, decide func(queue.Expired) queue.Verdict) (map[string]queue.Ending, error) {
	return r.q.Jobs.Reap(ctx, route, now, decide)
}

func (r redisQueue) SweepFlows(ctx context.Context, route string, now time.Time) (int, error) {
	return r.q.Flows.Sweep(ctx, route, now)
}

func (r redisQueue) Purge(ctx context.Context, route string, cutoff time.Time) (int, error) {
	return r.q.Ops.Purge(ctx, route, cutoff)
}

func (r redisQueue) PruneRoutes(ctx context.Context, keep map[string]bool, now time.Time) ([]string, error) {
	return r.q.Ops.PruneRoutes(ctx, keep, now)
}

func (r redisQueue) Beat(ctx context.Context, id string, state []byte, now time.Time, ttl time.Duration) error {
	return r.q.Beat(ctx, id, state, now, ttl)
}

func (r redisQueue) EndBeats(ctx context.Context, id string) error { return r.q.EndBeats(ctx, id) }

func (r redisQueue) WriteProgress(ctx context.Context, ws []queue.ProgressWrite) ([]queue.ProgressWrite, error) {
	return r.q.Jobs.WriteProgress(ctx, ws)
}
