package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotFound is returned when no job has the id asked for (it never existed,
// or its record expired).
var ErrNotFound = errors.New("job not found")

// Queue performs every state transition of jobs under one namespace. It is
// the core that every facet works over: the Redis client, the key layout,
// the scripts, the clock, the routes this process wrote to and their shard
// counts, and the small coordination records (keeper locks, Once keys,
// worker heartbeats, cron state). The transitions and reads live on its
// facets, one field each (see facets.go and the package doc):
//
//	q.Jobs.Enqueue(ctx, route, prio, jobs, now)
//	q.Flows.SetRouteLimits(ctx, route, l)
//	q.Ops.Pause(ctx, route)
//	q.Ended.Head(ctx, route, n)
type Queue struct {
	Jobs  Jobs  // a job's life: enqueue, fetch, ack, fail, reap, promote, cancel, read
	Flows Flows // flow control: limits and flow state
	Ops   Ops   // what operators do and read: pause, listings, dead letters, stats, route pruning
	Ended Ended // the ended lists the task history drains

	rdb    redis.UniversalClient
	ns     string
	s      *scripts
	routes sync.Map // route → *routeNote: routes this process enqueued to
	shards sync.Map // route → *shardCount: shard counts this process read (shard.go)
	// cluster: rdb is a Redis Cluster client, where a pub/sub subscriber may
	// sit on another node than the one a script runs on (see ack.lua).
	cluster bool

	// warner reports what the queue met and passed over (garbage entries);
	// it never stops a transition. Set by OnWarning.
	warner atomic.Pointer[func(msg string, args ...any)]

	wall   func() time.Time            // the host's wall clock (see clock.go)
	mono   func() time.Duration        // the host's monotonic clock: time since an arbitrary origin
	anchor atomic.Pointer[clockAnchor] // Redis's clock at a monotonic instant (see SyncClock)

	replicas replication // what an enqueue waits for before it returns (see WaitForReplicas)

	keepEnded atomic.Bool // ends also go to the routes' ended lists (see Ended.Keep)

	acks *committer[string, ackReq, bool]     // coalesced acks, by route
	enqs *committer[enqGroup, NewJob, string] // coalesced single enqueues, by route and priority

	// The writes sent in the background (a route's note in the routes set,
	// a shard count's refresh), which WaitBackground waits for; once it was
	// called, none is sent.
	bgMu      sync.Mutex
	bgStopped bool
	bg        sync.WaitGroup
}

// background runs f on a goroutine of its own, counted for WaitBackground;
// after WaitBackground it runs nothing: the client is closing, and what f
// would have written, the next process that writes the route writes.
func (q *Queue) background(f func()) {
	q.bgMu.Lock()
	defer q.bgMu.Unlock()
	if q.bgStopped {
		return
	}
	q.bg.Add(1)
	go func() {
		defer q.bg.Done()
		f()
	}()
}

// WaitBackground waits for the writes the queue sent in the background, each
// bounded by its own timeout, and sends none after. A client calls it before
// it closes its connections: a process that exits right after an enqueue (a
// command line) would otherwise cut off the note of the route it wrote to,
// or have its connection handed back to a closed pool, which go-redis logs
// ("Unexpected conn[N] state changed by hook to CLOSED").
func (q *Queue) WaitBackground() {
	q.bgMu.Lock()
	q.bgStopped = true
	q.bgMu.Unlock()
	q.bg.Wait()
}

// New returns a Queue over rdb (a *redis.Client or *redis.ClusterClient) with
// keys under namespace ns.
func New(rdb redis.UniversalClient, ns string) (*Queue, error) {
	if !ValidNamespace(ns) {
		return nil, fmt.Errorf("invalid namespace %q: 1-64 characters without spaces or braces", ns)
	}
	_, cluster := rdb.(*redis.ClusterClient)
	q := &Queue{rdb: rdb, ns: ns, s: loadScripts(), cluster: cluster, wall: time.Now, mono: sinceStart}
	// The facets first: the committers below bind their methods.
	q.Jobs = Jobs{q}
	q.Flows = Flows{q}
	q.Ops = Ops{q}
	q.Ended = Ended{q}
	q.anchorAtWall()
	// One ack flush in flight per route: acks that finish meanwhile wait,
	// and most of them go out with the worker's next fetch (see Fetch)
	// rather than in a round trip of their own. Measured on a drain of 100k
	// jobs at concurrency 64: 5.3–5.7k round trips in all, against 9.2k with
	// two ack flushes in flight.
	q.acks = newCommitter(1, 0, q.Jobs.ackMany)
	// Two enqueue flushes in flight per route and priority: the next batch
	// goes out while the last one's reply is on its way, so producers spend
	// less of a round trip waiting. Measured with 16 producers against a
	// redis-server on 2 idle cores: 105–113k single enqueues a second
	// against 87–89k with one flush in flight, and unique ones 60–62k
	// against 52k.
	q.enqs = newCommitter(2, enqueueLinger, func(ctx context.Context, g enqGroup, jobs []NewJob) ([]string, error) {
		return q.Jobs.enqueueChunk(ctx, g.route, g.priority, jobs, q.Now())
	})
	return q, nil
}

// OnWarning sets where the queue reports what it met and passed over, such
// as a ready-list entry that is not a job (slog.Logger.Warn fits).
func (q *Queue) OnWarning(f func(msg string, args ...any)) { q.warner.Store(&f) }

func (q *Queue) warn(msg string, args ...any) {
	if f := q.warner.Load(); f != nil {
		(*f)(msg, args...)
	}
}

// Namespace returns the key prefix of this queue.
func (q *Queue) Namespace() string { return q.ns }

// Keys returns the keys of route.
func (q *Queue) Keys(route string) Keys { return RouteKeys(q.ns, route) }

// Client returns the Redis client the queue uses.
func (q *Queue) Client() redis.UniversalClient { return q.rdb }

// routeNote is what this process knows of one route's place in the routes set.
type routeNote struct {
	added   atomic.Bool  // the routes set holds it
	adding  atomic.Bool  // an SADD is under way
	retryAt atomic.Int64 // unix ns before which a failed SADD is not tried again
	// writtenAt is when (unix ns) the last SADD after a write went out.
	writtenAt atomic.Int64
}

// routeRenote is how often a process writing to a route adds it to the
// routes set again: PruneRoutes may have removed it, and only a route that
// stayed idle for RouteIdleTTL is removed, far longer than this.
const routeRenote = time.Minute

// routeWritten adds route to the routes set after a write to it, at most once
// per routeRenote per process, in the background (off the caller's path).
// Sent after the write, it restores a route PruneRoutes removed between its
// last check and the write: an SADD sent before the write could land before
// the removal and leave the job's route unlisted.
func (q *Queue) routeWritten(route string) {
	v, ok := q.routes.Load(route)
	if !ok {
		v, _ = q.routes.LoadOrStore(route, new(routeNote))
	}
	n := v.(*routeNote)
	// The monotonic clock, so that a step of the wall clock neither stops
	// the re-adds (back) nor floods them (ahead); 0 is "never written".
	now := int64(q.mono()) + 1
	last := n.writtenAt.Load()
	if (last != 0 && now-last < int64(routeRenote)) || !n.writtenAt.CompareAndSwap(last, now) {
		return
	}
	q.background(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := q.rdb.SAdd(ctx, RoutesKey(q.ns), route).Err(); err != nil {
			n.writtenAt.Store(0) // the next write tries again
			q.warn("bananas: cannot add a route to the routes set; its jobs are stored, and the route is listed once this succeeds",
				"route", route, "err", err)
		}
	})
}

// routeRetry is how long a route whose SADD failed waits before the next
// enqueue to it tries again.
const routeRetry = time.Second

// noteRoute adds route to the routes set, once per process. On a single
// server it does so before the enqueue goes on, as part of it. On a cluster
// it does so in the background: the set lives outside every route's slot,
// so its node can be down while the route's is up, and an enqueue must not
// wait for it or fail with it. Until the SADD lands, this process's Routes
// includes the route anyway; other processes see it once it lands (one
// round trip, sent before the enqueue that noted it).
func (q *Queue) noteRoute(ctx context.Context, route string) error {
	v, ok := q.routes.Load(route)
	if !ok {
		v, _ = q.routes.LoadOrStore(route, new(routeNote))
	}
	n := v.(*routeNote)
	if n.added.Load() {
		return nil
	}
	if !q.cluster {
		if err := q.rdb.SAdd(ctx, RoutesKey(q.ns), route).Err(); err != nil {
			return fmt.Errorf("register route %s: %w", route, err)
		}
		n.added.Store(true)
		return nil
	}
	if int64(q.mono()) < n.retryAt.Load() || !n.adding.CompareAndSwap(false, true) {
		return nil
	}
	q.background(func() {
		defer n.adding.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := q.rdb.SAdd(ctx, RoutesKey(q.ns), route).Err(); err != nil {
			n.retryAt.Store(int64(q.mono() + routeRetry))
			q.warn("bananas: cannot add a route to the routes set; its jobs are stored, and the route is listed once this succeeds",
				"route", route, "err", err)
			return
		}
		n.added.Store(true)
	})
	return nil
}

// Routes returns every route a job was enqueued to, sorted: the routes set,
// and the routes this process enqueued to whose SADD has not landed yet.
func (q *Queue) Routes(ctx context.Context) ([]string, error) {
	rs, err := q.rdb.SMembers(ctx, RoutesKey(q.ns)).Result()
	if err != nil {
		return nil, err
	}
	q.routes.Range(func(k, v any) bool {
		if r := k.(string); !v.(*routeNote).added.Load() && !slices.Contains(rs, r) {
			rs = append(rs, r)
		}
		return true
	})
	slices.Sort(rs)
	return rs, nil
}

// AddRoute adds route to the routes set now, whatever this process noted
// before: a route an operator paused or gave limits before its first job is
// listed from then on (PruneRoutes keeps it while it is paused or has limits).
func (q *Queue) AddRoute(ctx context.Context, route string) error {
	if err := CheckShardRoute(route); err != nil {
		return err
	}
	if err := q.rdb.SAdd(ctx, RoutesKey(q.ns), route).Err(); err != nil {
		return fmt.Errorf("register route %s: %w", route, err)
	}
	return nil
}

// RouteOfJob finds the route of a job id: read off ids made by NewID, and
// searched for in every known route (one pipelined round trip) for ids chosen
// by the caller.
func (q *Queue) RouteOfJob(ctx context.Context, id string) (string, error) {
	if r, ok := RouteOf(id); ok {
		return r, nil
	}
	routes, err := q.Routes(ctx)
	if err != nil {
		return "", err
	}
	pipe := q.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(routes))
	light := make([]*redis.BoolCmd, len(routes))
	for i, r := range routes {
		k := q.Keys(r)
		cmds[i] = pipe.Exists(ctx, k.Job(id), k.Result(id))
		light[i] = pipe.HExists(ctx, k.Payloads(), id)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return "", err
	}
	for i, c := range cmds {
		if c.Val() > 0 || light[i].Val() {
			return routes[i], nil
		}
	}
	return "", ErrNotFound
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// msOrZero is t in unix ms, 0 for the zero time, which parseMS reads back
// as the zero time.
func msOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return ms(t)
}

func durMS(d time.Duration) int64 { return d.Milliseconds() }

// parseMS reads unix milliseconds stored as text; garbage or 0 is the zero
// time.
func parseMS(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n == 0 {
		return time.Time{}
	}
	return time.UnixMilli(n)
}

// FailuresKept is how many failure times a job keeps (fields fa<attempt>,
// and their runs' starts sa<attempt>; bn_failed_kept in
// scripts/_prelude.lua): its timeline shows its last FailuresKept failed runs.
const FailuresKept = 20

// failedAt reads the failure times of a job hash with the given attempts,
// oldest first. Fields of a life before a replay (attempts reset) have
// numbers above attempts and are left out; a garbage one is skipped.
func failedAt(f map[string]string, attempts int) []time.Time {
	var out []time.Time
	for k := max(1, attempts-FailuresKept+1); k <= attempts; k++ {
		if t := parseMS(f["fa"+strconv.Itoa(k)]); !t.IsZero() {
			out = append(out, t)
		}
	}
	return out
}

// failedStartedAt reads when each failed run that failedAt reads started
// (fields sa<attempt>), in the same order: the zero time where a run's start
// was not kept (a job that failed before they were).
func failedStartedAt(f map[string]string, attempts int) []time.Time {
	var out []time.Time
	for k := max(1, attempts-FailuresKept+1); k <= attempts; k++ {
		if !parseMS(f["fa"+strconv.Itoa(k)]).IsZero() {
			out = append(out, parseMS(f["sa"+strconv.Itoa(k)]))
		}
	}
	return out
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// fetchToken is the fencing token of one fetch call, shared by the jobs it
// leases: the time in base 36 (StartedAt reads it back) and 48 random bits.
func fetchToken(now time.Time) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return strconv.FormatInt(ms(now), 36) + "-" + hex.EncodeToString(b[:])
}

// callToken names one call (an enqueue's receipt): 128 random bits.
func callToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// strs turns a script's array reply into strings.
func strs(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, len(arr))
	for i, x := range arr {
		switch t := x.(type) {
		case string:
			out[i] = t
		case int64:
			out[i] = strconv.FormatInt(t, 10)
		}
	}
	return out
}

func ints(v any) []int64 {
	arr, _ := v.([]any)
	out := make([]int64, len(arr))
	for i, x := range arr {
		out[i], _ = x.(int64)
	}
	return out
}
