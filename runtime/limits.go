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

// Limit sets the task's limits (see TaskLimits) and returns t. Workers store
// them in Redis when they start (Worker.Run), for every worker's fetch to
// honour; a task whose limits are removed from the code has them removed at
// the next start of a worker that registers it. Generated code calls Limit
// when the task is declared, as regexp.MustCompile is called: limits that
// are wrong panic, naming the task and the field.
func (t *Task[A, R]) Limit(l TaskLimits) *Task[A, R] {
	ql, err := l.queueLimits()
	if err != nil {
		if t.varName != "" {
			panic(fmt.Sprintf("bananas: %s.Limit (task %s): %v", t.varName, t.name, err))
		}
		panic(fmt.Sprintf("bananas: Limit of task %s: %v", t.name, err))
	}
	t.limits, t.limitSpec = ql, l
	return t
}

// KeyBy makes every job of the task keyed by fn(args) and returns t. Jobs of
// one key form a flow: the flows of a priority are served round-robin, so
// that one key's backlog does not hold back the others, and the task's
// limits (Limit) hold per key. A key is at most queue.MaxKeyLen bytes; a
// longer one is an error of the enqueue. The Key option overrides fn for one
// enqueue. Generated code calls KeyBy for the annotation key key=.
func (t *Task[A, R]) KeyBy(fn func(A) string) *Task[A, R] {
	t.keyBy = fn
	return t
}

// DescribeKey names the path into the args the key of KeyBy is read from
// ("CustomerID", "Order.Shop"), for the task's description (GET
// /api/v1/tasks, the CLI); generated code calls it with KeyBy. It returns t.
func (t *Task[A, R]) DescribeKey(path string) *Task[A, R] {
	t.keyPath = path
	return t
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

// keyOf returns whether a job of the task with args and cfg is keyed, and
// its key: the Key option's, else KeyBy's, else "" for a task with limits
// (its jobs are one flow, limited together).
func (t *Task[A, R]) keyOf(cfg jobConfig, args A) (keyed bool, key string, err error) {
	switch {
	case cfg.hasKey:
		return true, cfg.key, nil // checked by Key
	case t.keyBy != nil:
		key = t.keyBy(args)
		if err := queue.CheckKey(key); err != nil {
			return true, "", fmt.Errorf("bananas: enqueue %s: the key of the job's args: %w", t.name, err)
		}
		return true, key, nil
	case !t.limits.IsZero():
		return true, "", nil
	}
	return false, "", nil
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
