package runtime

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/routeshards"
)

// TaskLimits caps how a task's jobs start, across every worker and process.
// When the task's jobs are keyed (Task.KeyBy, Key) the limits hold per key;
// otherwise they hold for all of the task's jobs together. The zero
// TaskLimits limits nothing. The annotation keys are max_running=, rate= and
// burst=.
type TaskLimits struct {
	// MaxRunning is how many jobs (of one key) may run at once; 0: no cap.
	MaxRunning int
	// Rate is how many jobs (of one key) may start per second, minute or
	// hour, written "100/s", "20/m" or "5/h"; "": no rate.
	Rate string
	// Burst is how many of the rate may start back to back after a quiet
	// spell; 0 means the rate's N. It needs a Rate.
	Burst int
}

// queueLimits checks l and turns it into the queue's Limits; an error names
// the field of TaskLimits that is wrong.
func (l TaskLimits) queueLimits() (queue.Limits, error) {
	out := queue.Limits{MaxRunning: l.MaxRunning, Burst: l.Burst}
	switch {
	case l.MaxRunning < 0 || l.MaxRunning > queue.LimitMax:
		return out, fmt.Errorf("field MaxRunning must be between 1 and %d (0: no cap), got %d", queue.LimitMax, l.MaxRunning)
	case l.Burst < 0 || l.Burst > queue.LimitMax:
		return out, fmt.Errorf("field Burst must be between 1 and %d (0: the rate's N), got %d", queue.LimitMax, l.Burst)
	case l.Burst > 0 && l.Rate == "":
		return out, fmt.Errorf("field Burst (%d) needs a Rate", l.Burst)
	}
	if l.Rate != "" {
		n, per, err := queue.ParseRate(l.Rate)
		if err != nil {
			return out, fmt.Errorf("field Rate: %w", err)
		}
		out.Rate, out.Per = n, per
	}
	if err := out.Check(); err != nil { // what the checks above missed, if the queue's rules grow
		return out, err
	}
	return out, nil
}

// Key gives the job the key k, in place of the task's KeyBy: the job joins
// the flow of k (see Task.KeyBy). On a task with neither KeyBy nor limits it
// still puts the job in a flow, so that flows are served in turn. A key
// longer than queue.MaxKeyLen bytes is an error of the enqueue. On a sharded
// route a keyed job goes to its flow's shard, where its Unique key or chosen
// id is checked: identical args enqueued under two keys may land on two
// shards, and both be enqueued.
func Key(k string) Option {
	return func(c *jobConfig) {
		if err := queue.CheckKey(k); err != nil {
			c.fail("runtime.Key: %v", err)
		}
		c.key, c.hasKey = k, true
	}
}

// flowShard is the shard of route that the flow of task name and key lives
// on: fixed by the flow while the route's shard count stays, so that a
// key's jobs, and the limits that hold per key, are all on one shard.
func (c *Client) flowShard(ctx context.Context, route, name, key string) string {
	n := c.q.ShardCount(ctx, route)
	if n <= 1 {
		return route
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return queue.ShardNames(route, n)[queue.JumpHash(h.Sum64(), n)]
}

// storeTaskLimits stores the limits of every registered task on its route,
// on every route the worker takes jobs from (a job can be sent to another
// route than its task's, runtime.Route, and the limits must hold there too),
// and on each of their shards; zero limits too, so that limits removed from
// the code are removed from Redis (a worker's start is when they are
// brought up to date).
func (w *Worker) storeTaskLimits(ctx context.Context) error {
	shardsOf := map[string][]string{}
	for _, name := range w.Tasks() {
		h := w.handlers[name]
		if h.info == nil || h.limits == nil {
			continue
		}
		l := h.limits()
		routes := append([]string{h.info().Route}, w.opts.Routes...)
		for _, route := range routes {
			if _, read := shardsOf[route]; read {
				continue
			}
			shards, err := routeshards.Of(ctx, w.c.q, route)
			if err != nil {
				return fmt.Errorf("store the limits of task %s: read the shards of route %s: %w", name, route, err)
			}
			shardsOf[route] = shards
		}
		for _, route := range routes {
			for _, s := range shardsOf[route] {
				if err := w.c.q.Flows.SetTaskLimits(ctx, s, name, l); err != nil {
					return fmt.Errorf("store the limits of its tasks: %w", err) // err names the task and the shard
				}
			}
		}
	}
	return nil
}

// storeShardLimits stores, on shards the worker has just come to serve (a
// route's shard count changed), the limits of the registered tasks (as
// storeTaskLimits: on the tasks' own routes and the worker's), so that a new shard limits the flows that move to it. A failure is
// warned of: the worker's next start stores them again.
func (w *Worker) storeShardLimits(ctx context.Context, shards []string) {
	for _, sh := range shards {
		for _, name := range w.Tasks() {
			h := w.handlers[name]
			base := queue.ShardBase(sh)
			if h.info == nil || h.limits == nil || (h.info().Route != base && !slices.Contains(w.opts.Routes, base)) {
				continue
			}
			if err := w.c.q.Flows.SetTaskLimits(ctx, sh, name, h.limits()); err != nil {
				w.opts.Logger.Warn("bananas: cannot store the limits of a task on a new shard of its route", "task", name, "shard", sh, "err", err)
			}
		}
	}
}
