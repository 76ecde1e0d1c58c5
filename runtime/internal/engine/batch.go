package engine

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// Batch is a task whose jobs its handler takes many at once
// (runtime.HandleBatch). The engine runs each of its jobs as any other — a
// slot, a lease, a timeout, an outcome recorded on its own — and does two
// things more for it: it fetches the jobs of one key together (FetchBatch),
// so that the batches the runtime gathers from them are of one key and
// full, and it lets each job's timeout run Linger longer, the longest the
// job may wait in a batch that is filling before its handler is called.
type Batch struct {
	Task   string
	Route  string // the task's route (its shards are fetched alike)
	Size   int
	Linger time.Duration
	// Keyed: the task's jobs wait in flows (key=, limits), which
	// FetchBatch takes one key at a time; the jobs of a task without flows
	// are in the ready lists, which any fetch takes in order.
	Keyed bool
}

// batchQueue is the part of the Queue a worker with batch tasks uses.
type batchQueue interface {
	FetchBatch(ctx context.Context, route string, priorities []queue.Priority, task string, per, n int, leaseUntil, now time.Time) ([]*queue.Dispatch, error)
}

func (r redisQueue) FetchBatch(ctx context.Context, route string, priorities []queue.Priority, task string, per, n int, leaseUntil, now time.Time) ([]*queue.Dispatch, error) {
	return r.q.Jobs.FetchBatch(ctx, route, priorities, task, per, n, leaseUntil, now)
}

// lingerOf is how long a job of task may wait for its batch to fill: 0 for
// a task that is not run in batches.
func (c *Config) lingerOf(task string) time.Duration {
	for _, b := range c.Batches {
		if b.Task == task {
			return b.Linger
		}
	}
	return 0
}

// fetchBatches takes, before the route's ordinary fetch, up to n jobs of
// the keyed batch tasks of route, each key's in one piece of up to its
// batch size, and starts them (their slots were reserved by Run). It
// returns how many it started. A worker that takes only some tasks fetches
// only theirs.
func (f *fetcher) fetchBatches(ctx context.Context, route string, n int) (int, error) {
	bq, ok := f.cfg.Queue.(batchQueue)
	if !ok {
		return 0, nil
	}
	got := 0
	for _, b := range f.cfg.Batches {
		if got >= n {
			break
		}
		if !b.Keyed || queue.ShardBase(route) != b.Route ||
			(len(f.cfg.JobTypes) > 0 && !slices.Contains(f.cfg.JobTypes, b.Task)) {
			continue
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
		now := f.cfg.Queue.Now()
		ds, err := bq.FetchBatch(rctx, route, f.cfg.Priorities, b.Task, b.Size, n-got, now.Add(f.cfg.Lease), now)
		cancel()
		f.exec.startAll(ds)
		got += len(ds)
		var lost *queue.LostFetch
		if errors.As(err, &lost) {
			f.handBacks.add(lost)
		}
		if err != nil {
			return got, err
		}
	}
	return got, nil
}
