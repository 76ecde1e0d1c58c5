package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A sharded route spreads its jobs over N shards, each a route of its own to
// every script here: shard 0 is the route itself ({hot}), shard i > 0 is
// the route with a shard suffix (hot~<k>), k chosen so that the shards' hash
// tags fall evenly over the slots, and so over a Redis Cluster's masters.
// Ids of a shard's jobs end in the shard's name (NewID), so RouteOf locates
// their keys; users are shown the base route (ShardBase).

// MaxShards bounds the shards of one route.
const MaxShards = 256

// shardSep separates a route from its shard suffix. ValidRoute refuses it, so
// no user route can be mistaken for a shard.
const shardSep = '~'

// clusterSlots is the slot count of a Redis Cluster.
const clusterSlots = 16384

// CheckShards returns an error naming the field shards and its range when n
// is not a legal shard count.
func CheckShards(n int) error {
	if n < 1 || n > MaxShards {
		return fmt.Errorf("invalid shards %d: shards is 1-%d", n, MaxShards)
	}
	return nil
}

// ShardBase returns the route a shard name belongs to: name without its
// shard suffix (a route is its own shard 0).
func ShardBase(name string) string {
	if i := strings.IndexByte(name, shardSep); i >= 0 {
		return name[:i]
	}
	return name
}

// ValidShardRoute reports whether name is a legal route or a shard of one:
// a route, optionally followed by ~ and a number from 1 without leading zeros.
func ValidShardRoute(name string) bool {
	base, suffix, found := strings.Cut(name, string(shardSep))
	if !ValidRoute(base) {
		return false
	}
	if !found {
		return true
	}
	if suffix == "" || len(suffix) > 9 || suffix[0] == '0' {
		return false
	}
	for i := 0; i < len(suffix); i++ {
		if suffix[i] < '0' || suffix[i] > '9' {
			return false
		}
	}
	return true
}

// CheckShardRoute returns an error naming name when it is neither a legal
// route nor a shard of one.
func CheckShardRoute(name string) error {
	if !ValidShardRoute(name) {
		return CheckRoute(name)
	}
	return nil
}

// Slot returns the Redis Cluster slot of a key whose hash tag is tag, as
// Redis computes it: CRC16 (XMODEM) of the tag, modulo 16384.
func Slot(tag string) int { return int(crc16(tag)) % clusterSlots }

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// ShardNames returns the names of the n shards of route, shard 0 first.
//
// The slots are cut into n equal ranges; shard 0 (the route itself) keeps
// the range its slot falls in, and shards 1..n-1 take the other ranges in
// order, each named route~k with the least k whose slot falls in its range.
// Shards in equal slot ranges fall evenly over masters that own equal slot
// ranges (naive suffixes hash unevenly). The names depend on n: a change of
// n gives every shard but shard 0 a new name (see Queue.ShardOf).
func ShardNames(route string, n int) []string {
	if n <= 1 {
		return []string{route}
	}
	key := shardKey{route, n}
	if v, ok := shardNames.Load(key); ok {
		return v.([]string)
	}
	names := make([]string, n)
	names[0] = route
	own := Slot(route) * n / clusterSlots // the range of shard 0
	rng := 0
	for i := 1; i < n; i++ {
		if rng == own {
			rng++
		}
		for k := 1; ; k++ {
			name := route + string(shardSep) + strconv.Itoa(k)
			if Slot(name)*n/clusterSlots == rng {
				names[i] = name
				break
			}
		}
		rng++
	}
	v, _ := shardNames.LoadOrStore(key, names)
	return v.([]string)
}

type shardKey struct {
	route string
	n     int
}

// shardNames caches ShardNames: a producer names a shard on every enqueue.
var shardNames sync.Map // shardKey -> []string

// JumpHash maps key to one of n buckets with Lamping and Veach's jump
// consistent hash: when n grows to n+1, only a 1/(n+1) share of the keys
// moves, each to the new bucket.
func JumpHash(key uint64, n int) int {
	var b, j int64 = -1, 0
	for j < int64(n) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// fnv64 hashes a key for JumpHash (FNV-1a).
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// RouteShardsKey is the HASH of sharded routes: route -> shard count. A
// route absent from it has one shard, itself.
func RouteShardsKey(ns string) string { return ns + ":route-shards" }

// ShardRefresh is how often a producer reads a route's shard count again: a
// change of the count reaches every producer within about that. Workers
// hear of a change at once (ShardsChannel) and read the counts again every
// WorkerShardRefresh besides, in case they missed it.
const (
	ShardRefresh       = 3 * time.Second
	WorkerShardRefresh = 30 * time.Second
)

// ShardsChannel is published when a route's shard count is set: workers
// read the counts again at once.
func ShardsChannel(ns string) string { return ns + ":route-shards" }

// shardCount is what this process knows of one route's shard count.
type shardCount struct {
	n          atomic.Int64
	readAt     atomic.Int64 // monotonic ns of the last read; 0: never read
	reading    atomic.Bool
	roundRobin atomic.Uint64 // the next shard of a job of a batch with no key
	turn       atomic.Pointer[shardTurn]
}

// SetShards stores route's shard count n, and, when the route is paused,
// pauses its shards too: a shard created while the route is paused must not
// run jobs. The count is written before the pause is read, and a pause of
// the whole route (runtime's Inspector.Pause) pauses the route itself before
// it reads the count, so one of the two always sees the other.
func (q *Queue) SetShards(ctx context.Context, route string, n int) error {
	if err := CheckRoute(route); err != nil {
		return err
	}
	if err := CheckShards(n); err != nil {
		return err
	}
	// The new shards of a paused route are paused before the count that
	// sends jobs to them is stored: a job in an unpaused shard would run
	// while the route is paused.
	paused, err := q.Ops.PausedRoutes(ctx, []string{route})
	if err != nil {
		return fmt.Errorf("set shards of route %s: %w", route, err)
	}
	if paused[route] {
		for _, s := range ShardNames(route, n)[1:] {
			if err := q.Ops.Pause(ctx, s); err != nil {
				return fmt.Errorf("set shards of route %s: pause its new shards, as the route is paused (the count is not changed): %w", route, err)
			}
		}
	}
	// A count of 1 is stored too, not deleted: a route in the hash was
	// sharded once, and its workers look for shards of an earlier count
	// to drain (see RouteShards).
	if err := q.rdb.HSet(ctx, RouteShardsKey(q.ns), route, n).Err(); err != nil {
		return fmt.Errorf("set shards of route %s: %w", route, err)
	}
	c := q.shardCountOf(route)
	c.n.Store(int64(n))
	c.readAt.Store(int64(q.mono()) + 1)
	if err := q.rdb.Publish(ctx, ShardsChannel(q.ns), route).Err(); err != nil {
		return fmt.Errorf("set shards of route %s: stored; announcing it (workers see it within %s): %w", route, WorkerShardRefresh, err)
	}
	return nil
}

// Shards returns route's shard count as stored in Redis (1 when unset).
func (q *Queue) Shards(ctx context.Context, route string) (int, error) {
	if err := CheckRoute(route); err != nil {
		return 0, err
	}
	n, err := q.readShards(ctx, route)
	if err != nil {
		return 0, err
	}
	c := q.shardCountOf(route)
	c.n.Store(int64(n))
	c.readAt.Store(int64(q.mono()) + 1)
	return n, nil
}

func (q *Queue) readShards(ctx context.Context, route string) (int, error) {
	s, err := q.rdb.HGet(ctx, RouteShardsKey(q.ns), route).Result()
	if errors.Is(err, redis.Nil) {
		return 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read shards of route %s: %w", route, err)
	}
	n, err := strconv.Atoi(s)
	if err != nil || CheckShards(n) != nil {
		q.warn("bananas: a route's shard count in Redis is not 1-256; taking 1", "route", route, "value", s)
		return 1, nil
	}
	return n, nil
}

// AllShards returns every sharded route's count, read from Redis.
func (q *Queue) AllShards(ctx context.Context) (map[string]int, error) {
	m, err := q.rdb.HGetAll(ctx, RouteShardsKey(q.ns)).Result()
	if err != nil {
		return nil, fmt.Errorf("read route shards: %w", err)
	}
	out := make(map[string]int, len(m))
	for r, s := range m {
		if n, err := strconv.Atoi(s); err == nil && CheckShards(n) == nil {
			out[r] = n
		}
	}
	return out, nil
}

// LoadShards reads every sharded route's count into this process's cache in
// one round trip, so that the first jobs of a route spread at once.
func (q *Queue) LoadShards(ctx context.Context) error {
	counts, err := q.AllShards(ctx)
	if err != nil {
		return err
	}
	for r, n := range counts {
		c := q.shardCountOf(r)
		c.n.Store(int64(n))
		c.readAt.Store(int64(q.mono()) + 1)
	}
	return nil
}

func (q *Queue) shardCountOf(route string) *shardCount {
	v, ok := q.shards.Load(route)
	if !ok {
		c := new(shardCount)
		c.n.Store(1)
		v, _ = q.shards.LoadOrStore(route, c)
	}
	return v.(*shardCount)
}

// ShardCount returns route's shard count as this process knows it: read
// from Redis on first use, then again in the background every ShardRefresh.
// A count that cannot be read is taken as the last one known (1 at first):
// a stale count only sends a job to a shard that is still served. On a
// cluster the first read is not waited for either, as noteRoute does not
// wait for the routes set: the hash lives outside every route's slot, and
// its node can be down while the route's is up (LoadShards, at Connect,
// has read the counts set by then).
func (q *Queue) ShardCount(ctx context.Context, route string) int {
	c := q.shardCountOf(route)
	now := int64(q.mono()) + 1
	last := c.readAt.Load()
	switch {
	case last == 0 && !q.cluster && c.reading.CompareAndSwap(false, true):
		q.refreshShards(ctx, route, c)
	case (last == 0 || now-last >= int64(ShardRefresh)) && c.reading.CompareAndSwap(false, true):
		q.background(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			q.refreshShards(ctx, route, c)
		})
	}
	return int(c.n.Load())
}

func (q *Queue) refreshShards(ctx context.Context, route string, c *shardCount) {
	defer c.reading.Store(false)
	n, err := q.readShards(ctx, route)
	if err != nil {
		// Tried again after ShardRefresh, not on every enqueue.
		c.readAt.Store(int64(q.mono()) + 1)
		q.warn("bananas: cannot read a route's shard count; using the last one known", "route", route, "err", err)
		return
	}
	c.n.Store(int64(n))
	c.readAt.Store(int64(q.mono()) + 1)
}

// ShardOf returns the shard of route a job goes to: with key (a unique key,
// a chosen id) the shard jump hash picks for it, so that the same key always
// meets itself while the count stays; without, the shards in turn. A key's
// shard changes with the count: after a change, a unique key or chosen id is
// checked in its new shard only, so a duplicate of a job enqueued before the
// change can be enqueued once more while that job is still in its old shard.
func (q *Queue) ShardOf(ctx context.Context, route, key string) string {
	n := q.ShardCount(ctx, route)
	if n <= 1 {
		return route
	}
	var i int
	if key != "" {
		i = JumpHash(fnv64(key), n)
	} else {
		i = int(q.shardCountOf(route).roundRobin.Add(1) % uint64(n))
	}
	return ShardNames(route, n)[i]
}

// shardWindow is how long single enqueues without a key keep going to one
// shard (ShardNow): long enough that the enqueues of closed-loop producers
// come back to the group they were coalesced in for several round trips
// (see committer: a batch waits for the callers its group answered last,
// and one whose callers went to another shard waits out its linger). On a
// three-master cluster, 16 producers enqueued 20,000 jobs over 12 shards in
// 0.31-0.37 s so, against 0.62-0.79 s with each job to the next shard.
const shardWindow = 2 * time.Millisecond

// shardTurn is which shard a process's single enqueues of a route go to
// now, and how many it sent to each.
type shardTurn struct {
	n         int
	current   atomic.Int64 // the shard's index
	until     atomic.Int64 // monotonic ns at which the next shard is picked
	switching atomic.Bool
	sent      []atomic.Int64 // by shard index
}

// ShardNow returns the shard of route a single enqueue without a key goes
// to: one shard for a shardWindow, then the shard this process has sent
// the fewest jobs to, so that the shards get even counts whatever the load
// of each window. A batch spreads its jobs with ShardOf instead.
func (q *Queue) ShardNow(ctx context.Context, route string) string {
	n := q.ShardCount(ctx, route)
	if n <= 1 {
		return route
	}
	c := q.shardCountOf(route)
	t := c.turn.Load()
	if t == nil || t.n != n {
		c.turn.CompareAndSwap(t, &shardTurn{n: n, sent: make([]atomic.Int64, n)})
		t = c.turn.Load()
	}
	if now := int64(q.mono()); now >= t.until.Load() && t.switching.CompareAndSwap(false, true) {
		least := 0
		for i := range t.sent {
			if t.sent[i].Load() < t.sent[least].Load() {
				least = i
			}
		}
		t.current.Store(int64(least))
		t.until.Store(now + int64(shardWindow))
		t.switching.Store(false)
	}
	i := int(t.current.Load())
	t.sent[i].Add(1)
	return ShardNames(route, n)[i%n] // t.n may differ from n while a change of the count races this call
}

// RouteShards returns the shards of route that hold or may hold jobs: the
// current ones, then any other shard of it in routes (the routes set: shards
// of an earlier count, drained until they are pruned).
func RouteShards(route string, n int, routes []string) []string {
	cur := ShardNames(route, n)
	out := append([]string(nil), cur...)
	for _, r := range routes {
		if r != route && ShardBase(r) == route && !contains(cur, r) {
			out = append(out, r)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// MergeShards sums the depths of each route's shards into one depth of the
// route, sorted by route: a sharded route is shown whole. It is paused when
// any of its shards is (a pause covers every shard; Resume undoes a partial
// one), and its oldest pending job is the oldest of its shards'.
func MergeShards(ds []Depth) []Depth {
	at := map[string]int{}
	var out []Depth
	for _, d := range ds {
		base := ShardBase(d.Route)
		i, ok := at[base]
		if !ok {
			at[base] = len(out)
			d.Route = base
			out = append(out, d)
			continue
		}
		m := &out[i]
		m.High, m.Normal, m.Low = m.High+d.High, m.Normal+d.Normal, m.Low+d.Low
		m.Scheduled, m.Active, m.Dead = m.Scheduled+d.Scheduled, m.Active+d.Active, m.Dead+d.Dead
		m.Paused = m.Paused || d.Paused
		m.Ended += d.Ended
		m.Expired += d.Expired
		m.Held, m.Throttled, m.KeyedRunning = m.Held+d.Held, m.Throttled+d.Throttled, m.KeyedRunning+d.KeyedRunning
		if !d.OldestPending.IsZero() && (m.OldestPending.IsZero() || d.OldestPending.Before(m.OldestPending)) {
			m.OldestPending = d.OldestPending
		}
	}
	slices.SortFunc(out, func(a, b Depth) int { return strings.Compare(a.Route, b.Route) })
	return out
}

// BaseRoutes returns the distinct routes of routes and shards, sorted.
func BaseRoutes(routes []string) []string {
	out := make([]string, 0, len(routes))
	for _, r := range routes {
		out = append(out, ShardBase(r))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Holding reports, for each of routes, whether it holds a job to run or
// recover: ready, scheduled, or leased (the dead-letter set is not looked
// at), in one pipelined round trip of one EXISTS per route. Workers ask it
// of the shards of an earlier count, which they drain but need not fetch
// from once empty.
func (q *Queue) Holding(ctx context.Context, routes []string) (map[string]bool, error) {
	out := make(map[string]bool, len(routes))
	if len(routes) == 0 {
		return out, nil
	}
	pipe := q.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(routes))
	for i, r := range routes {
		k := q.Keys(r)
		cmds[i] = pipe.Exists(ctx, k.List(High), k.List(Normal), k.List(Low), k.Scheduled(), k.Active())
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read which shards hold jobs: %w", err)
	}
	for i, r := range routes {
		out[r] = cmds[i].Val() > 0
	}
	return out, nil
}
