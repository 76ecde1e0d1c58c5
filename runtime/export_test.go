package runtime

import (
	"context"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// QueueOf is the client's queue, for tests that plant or inspect Redis state
// below the runtime; applications use the Inspector.
func QueueOf(c *Client) *queue.Queue { return c.q }

// WithLocalClock makes the client read a host wall clock of its own: a
// skewed one stands for a host whose clock is off, a stepped one for a clock
// set while it runs. The monotonic clock, which the queue's time advances
// by, stays the process's.
func WithLocalClock(now func() time.Time) ConnectOption {
	return func(c *connectConfig) { c.localClock = now }
}

// SetOnceTTLs shortens the claim and marker TTLs of c's Once calls, for
// tests of a dead holder's claim and of the marker's expiry.
func SetOnceTTLs(c *Client, claim, marker time.Duration) {
	r := c.onceRunner()
	r.ClaimTTL, r.MarkerTTL = claim, marker
}

// SetOnceWriteTimeout shortens how long the writes of fn's outcome may
// take, for the test that it is counted from fn's return.
func SetOnceWriteTimeout(c *Client, d time.Duration) { c.onceRunner().WriteTimeout = d }

// BuiltJobs builds the jobs an EnqueueMany of args with opts would write,
// and the shard each would be written to, without writing them: what the
// queue is handed, for tests of what the runtime asks of it.
func BuiltJobs[A, R any](t *Task[A, R], c *Client, args []A, opts ...Option) ([]queue.NewJob, []string, error) {
	t = t.With(c)
	c, cfg, now, runAt, err := t.prepare(opts, len(args))
	if err != nil {
		return nil, nil, err
	}
	if len(args) > 1 {
		cfg.shard = c.q.ShardOf(context.Background(), cfg.route, "")
	}
	jobs := make([]queue.NewJob, len(args))
	shards := make([]string, len(args))
	for i, a := range args {
		if jobs[i], err = t.newJob(c, cfg, a, now, runAt); err != nil {
			return nil, nil, err
		}
		shards[i] = c.shardOf(cfg, &jobs[i])
	}
	return jobs, shards, nil
}

// SetStepEndHook has f called with each workflow step's end, once its
// job's end is recorded and before the workflow is advanced.
func SetStepEndHook(f func(workflow string, step int)) { stepEndHook = f }

// SetNoKeyRetry sets how long a job sealed under a key its worker does not
// hold waits before it is tried again, until restore is called.
func SetNoKeyRetry(d time.Duration) (restore func()) {
	old := noKeyRetry
	noKeyRetry = d
	return func() { noKeyRetry = old }
}
