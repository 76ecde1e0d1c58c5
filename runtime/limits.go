package runtime

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/bananas-go/bananas/queue"
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
	// OnBusy is what an enqueue does when its key is busy — MaxRunning of
	// the key's jobs running or waiting: OnBusyWait (the zero value) lets
	// the job wait its turn, OnBusyCancelRunning cancels the key's oldest
	// running job (its context; no retry; status canceled) so that the new
	// one runs next, OnBusyDrop refuses the job (ErrKeyBusy). It needs
	// MaxRunning.
	OnBusy OnBusy
}

// OnBusy is a keyed task's policy for a busy key (TaskLimits.OnBusy,
// annotation on_busy=).
type OnBusy string

const (
	OnBusyWait          OnBusy = queue.OnBusyWait
	OnBusyCancelRunning OnBusy = queue.OnBusyCancelRunning
	OnBusyDrop          OnBusy = queue.OnBusyDrop
)

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
	case l.OnBusy != OnBusyWait && l.OnBusy != OnBusyCancelRunning && l.OnBusy != OnBusyDrop:
		return out, fmt.Errorf("field OnBusy must be OnBusyWait, OnBusyCancelRunning or OnBusyDrop, got %q", l.OnBusy)
	case l.OnBusy != OnBusyWait && l.MaxRunning == 0:
		return out, fmt.Errorf("field OnBusy (%s) needs a MaxRunning: a key is busy when that many of its jobs run or wait", l.OnBusy)
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
