package runtime

import (
	"fmt"
	"maps"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// Option adjusts one enqueue (or, passed to NewTask, every enqueue of a task).
type Option func(*jobConfig)

type jobConfig struct {
	route       string
	priority    Priority
	runAt       time.Time
	delay       time.Duration
	maxRetries  int
	hasRetries  bool
	timeout     time.Duration
	uniqueTTL   time.Duration
	id          string
	resultTTL   time.Duration
	keepNothing bool // ResultTTL(0): no record of a success
	description string
	backoff     time.Duration
	headers     map[string]string // Header's; never written in place (copied on change)
	key         string            // Key's
	hasKey      bool
	errs        []error
	// unsharded: the job goes to the route itself, shard 0, whatever the
	// route's shards (a cron tick, whose job is written with the entry's
	// state in one script).
	unsharded bool
	// shard: the shard of the route a batch's jobs without a key go to,
	// one per batch and route so that such a batch stays one script call,
	// all or nothing (the batches go to the shards in turn). Empty for a
	// single enqueue, which goes to the shard of the moment (queue.ShardNow).
	shard string
	// uniq: UniqueBy, UniqueUntil, Debounce and DebounceMax (unique.go).
	uniq uniqueConfig

	// expiry: ExpireIn's (expireIn) or ExpireAt's (expireAt), the last given.
	expireIn time.Duration
	expireAt time.Time

	// everyTick: the envelope serves the job of every tick of a schedule,
	// each with its own id; its args cannot be sealed for one (keys.go).
	everyTick bool
}

func (c *jobConfig) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// Route sends the job to the routing key route; only workers listening on it take it.
func Route(route string) Option {
	return func(c *jobConfig) {
		if err := queue.CheckRoute(route); err != nil {
			c.fail("runtime.Route: %v", err)
		}
		c.route = route
	}
}

// WithPriority sets the job's priority within its route.
func WithPriority(p Priority) Option {
	return func(c *jobConfig) {
		if !queue.ValidPriority(string(p)) {
			c.fail("runtime.WithPriority: invalid priority %q: use PriorityHigh, PriorityNormal or PriorityLow", p)
		}
		c.priority = p
	}
}

// Delay makes the job ready d from now.
func Delay(d time.Duration) Option {
	return func(c *jobConfig) {
		if d < 0 {
			c.fail("runtime.Delay: negative delay %s", d)
		}
		c.delay, c.runAt = d, time.Time{}
	}
}

// At makes the job ready at t.
func At(t time.Time) Option {
	return func(c *jobConfig) { c.runAt, c.delay = t, 0 }
}

// MaxRetries sets how many failed runs are retried before the job is dead-lettered.
func MaxRetries(n int) Option {
	return func(c *jobConfig) {
		if n < 0 {
			c.fail("runtime.MaxRetries: negative retries %d", n)
		}
		c.maxRetries, c.hasRetries = n, true
	}
}

// RetryBackoff sets the job's delay before its first retry, doubling for
// each retry after (with up to 25% jitter, capped at MaxBackoff), in place of
// the worker's WorkerOptions.Backoff. The annotation key is backoff=.
func RetryBackoff(first time.Duration) Option {
	return func(c *jobConfig) {
		if first <= 0 {
			c.fail("runtime.RetryBackoff: the first delay must be positive, got %s", first)
		}
		c.backoff = first
	}
}

// Timeout bounds one run: its context is canceled and the run fails after d.
func Timeout(d time.Duration) Option {
	return func(c *jobConfig) {
		if d <= 0 {
			c.fail("runtime.Timeout: timeout must be positive, got %s", d)
		}
		c.timeout = d
	}
}

// Unique gives the job a unique key — its task and its args, all of them or
// the fields UniqueBy names — held from the enqueue until the point of the
// job's life UniqueUntil says (by default UntilEnded: until it completes,
// dies or is canceled; a retry keeps it), and ttl at the longest whatever
// happens. While the key is held, an enqueue of the same key to the same
// route returns the holder's id and an error matching ErrDuplicate.
func Unique(ttl time.Duration) Option {
	return func(c *jobConfig) {
		if ttl <= 0 {
			c.fail("runtime.Unique: ttl must be positive, got %s", ttl)
		}
		c.uniqueTTL = ttl
	}
}

// WithID gives the job a caller-chosen id; enqueueing a second job with the
// same id to the same route returns ErrDuplicate. Ids chosen by Bananas carry
// their route (a ULID, a dot, the route) and are located by it; chosen ids
// are found by searching the known routes. So a chosen id of that generated
// shape must end in the job's own route: one ending in another route is
// refused (the enqueue fails, naming the rule), since Job, Cancel, Delete and
// Await would look for it under that other route.
func WithID(id string) Option {
	return func(c *jobConfig) {
		if err := queue.CheckID(id); err != nil {
			c.fail("runtime.WithID: %v", err)
		}
		c.id = id
	}
}

// ResultTTL keeps the job's result (success or failure) for d.
//
// ResultTTL(0) keeps nothing of a success (a fire-and-forget job, the
// annotation's result_ttl=0): once the job completed, Redis holds nothing of
// it, and Job and Await answer ErrJobNotFound. Its end is still told to
// OnJobEnd hooks, the metrics and the task history, and an Await already
// waiting when it completes still hears it. A failure is kept as any other
// (the worker's FailureTTL; a dead job stays in the dead-letter queue). A
// workflow's step ignores it: the workflow reads the step's end from its
// record.
func ResultTTL(d time.Duration) Option {
	return func(c *jobConfig) {
		if d < 0 {
			c.fail("runtime.ResultTTL: ttl must be positive, or 0 to keep nothing of a success, got %s", d)
		}
		c.resultTTL, c.keepNothing = d, d == 0
	}
}

// successTTLMS is the envelope's ResultTTL for c: queue.KeepNothing for a
// job that keeps nothing of its success.
func (c *jobConfig) successTTLMS() int64 {
	if c.keepNothing {
		return queue.KeepNothing
	}
	return c.resultTTL.Milliseconds()
}

// Description attaches free text to the job, shown by `job` and the dashboard.
func Description(text string) Option {
	return func(c *jobConfig) { c.description = text }
}

// Header sets a header the job carries beside its args: its handler reads
// it in Job.Headers (CurrentJob), middleware in the Job it is given. A job
// carries at most queue.MaxHeaders headers of printable-ASCII names; see
// queue.CheckHeaders for the sizes.
func Header(key, value string) Option {
	return func(c *jobConfig) {
		if err := queue.CheckHeaderKey(key); err != nil {
			c.fail("runtime.Header: %v", err)
			return
		}
		c.headers = withHeaders(c.headers, map[string]string{key: value})
	}
}

// withHeaders is headers with over's over them: a new map, as a job's
// headers may be shared with its task's defaults or its template; headers
// itself when over is empty.
func withHeaders(headers, over map[string]string) map[string]string {
	if len(over) == 0 {
		return headers
	}
	h := make(map[string]string, len(headers)+len(over))
	maps.Copy(h, headers)
	maps.Copy(h, over)
	return h
}

// UniqueBy builds the unique key (Unique) from the named fields of the args
// instead of all of them: Go field names, dotted paths into nested structs
// and maps with string keys ("To", "Customer.ID"). The key is the canonical
// JSON of those fields' values. The annotation key is unique_by=.
func UniqueBy(fields ...string) Option {
	return func(c *jobConfig) {
		if len(fields) == 0 {
			c.fail("runtime.UniqueBy: name at least one field")
		}
		for _, f := range fields {
			if err := checkFieldPath(f); err != nil {
				c.fail("runtime.UniqueBy: %v", err)
			}
		}
		c.uniq.by = fields
	}
}

// UniqueUntil sets the point of the job's life until which its unique key
// (Unique) is held: UntilStarted, UntilCompleted or UntilEnded (the
// default). The annotation key is unique_until=.
func UniqueUntil(u Until) Option {
	return func(c *jobConfig) {
		if _, err := queue.ParseUntil(string(u)); err != nil || u == "" {
			c.fail("runtime.UniqueUntil: %q: use UntilStarted, UntilCompleted or UntilEnded", u)
		}
		c.uniq.until = u
	}
}

// Debounce makes the job wait d and, while it waits, takes the place of
// every later enqueue of its unique key (Unique, which it needs): such an
// enqueue gives the waiting job its args and moves its start to d from
// then, and returns the same id with an error matching ErrDebounced. So a
// burst of enqueues runs once, with the last args, d after the last one.
// The annotation key is debounce=.
func Debounce(d time.Duration) Option {
	return func(c *jobConfig) {
		if d <= 0 {
			c.fail("runtime.Debounce: the wait must be positive, got %s", d)
		}
		c.uniq.debounce = d
	}
}

// DebounceMax caps how far Debounce can push a job back: it runs at the
// latest m after the enqueue that created it, however many enqueues follow.
func DebounceMax(m time.Duration) Option {
	return func(c *jobConfig) {
		if m <= 0 {
			c.fail("runtime.DebounceMax: the cap must be positive, got %s", m)
		}
		c.uniq.debounceMax = m
	}
}

// ExpireIn makes the job expire d after its enqueue if it has not started
// by then: it ends with StatusExpired, never run and never dead-lettered,
// and Await returns an error matching ErrExpired. A job that started (and
// then fails and retries) no longer expires. d must be positive; it
// replaces an earlier ExpireAt.
func ExpireIn(d time.Duration) Option {
	return func(c *jobConfig) {
		if d <= 0 {
			c.fail("runtime.ExpireIn: the expiry must be positive, got %s", d)
		}
		c.expireIn, c.expireAt = d, time.Time{}
	}
}

// ExpireAt makes the job expire at t if it has not started by then, as
// ExpireIn does. It replaces an earlier ExpireIn.
func ExpireAt(t time.Time) Option {
	return func(c *jobConfig) {
		if t.IsZero() {
			c.fail("runtime.ExpireAt: the time must be set")
		}
		c.expireAt, c.expireIn = t, 0
	}
}

// expiry is when a job enqueued at now with c expires; zero for none.
func (c *jobConfig) expiry(now time.Time) time.Time {
	if c.expireIn > 0 {
		return now.Add(c.expireIn)
	}
	return c.expireAt
}
