// Package routeshards owns a worker's view of the shards of its routes:
// which shards each route has now (its stored count) and which of an
// earlier count still hold jobs, kept fresh as counts change (announced on
// queue.ShardsChannel, read again on the process's beat besides), with the
// wake and cancel channels of each shard listened to. The fetcher, reaper,
// retention and promoter work the shards it lists.
//
// How shards are named and stored is queue's; what a worker does on a
// shard's channels and when it gains shards (store the shard's limits,
// wake its fetcher, kick its keeper) is the runtime's, told through
// Config. It must not know jobs, tasks or handlers.
package routeshards

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
)

// Config is what a Watcher watches and whom it tells.
type Config struct {
	Queue    *queue.Queue
	Listener *results.Listener
	Routes   []string // the worker's routes, in preference order
	Logger   *slog.Logger

	// Subscribe listens on the channels of a shard the watcher found; the
	// watcher closes the subscriptions when the shard goes or Run ends.
	Subscribe func(ctx context.Context, shard string) ([]*results.Subscription, error)
	// Added is told the shards a Refresh began to listen to: jobs may have
	// been pushed to them before the listening began.
	Added func(ctx context.Context, shards []string)
}

// Watcher keeps the shards of a worker's routes: for each route, its
// current shards (queue.ShardNames of its stored count) and any other shard
// of it still in the routes set (a shard of an earlier count, drained until
// it is pruned). The fetcher, reaper, retention and promoter work them all;
// the worker listens on the wake and cancel channels of each.
type Watcher struct {
	cfg    Config
	groups atomic.Pointer[[][]string] // per route, in preference order: its shards, shard 0 first
	turn   atomic.Uint64              // rotates the shard each route's fetch starts at

	mu      sync.Mutex
	subs    map[string][]*results.Subscription // shards listened to by Refresh (not by the worker itself)
	seen    map[string]bool                    // every shard listened to
	changed chan struct{}                      // a shard count was set (ShardsChannel)

	// State of Refresh, owned by its caller (the worker's Run, then Run).
	counts   []any    // the counts read last, by route
	earlier  []string // shards of earlier counts that held jobs at the last look
	readsAgo int      // refreshes since the last look
	reReads  int      // looks still due at the next refreshes, after a change
}

// listedEvery is how many refreshes pass between looks at the shards of
// earlier counts while no count changes: a look finds the shards a producer
// with a stale count wrote to, a delayed job or retry became due in, or a
// replay put a job back in. A change of a count looks at once and at the
// two refreshes after, ShardRefresh apart, while producers still learn of it.
const listedEvery = 1

// New returns the Watcher of cfg.Routes, which knows only the routes
// themselves until its first Refresh.
func New(cfg Config) *Watcher {
	s := &Watcher{cfg: cfg, subs: map[string][]*results.Subscription{}, seen: map[string]bool{}, changed: make(chan struct{}, 1)}
	groups := make([][]string, len(cfg.Routes))
	for i, r := range cfg.Routes {
		groups[i] = []string{r}
		s.seen[r] = true // the worker listens on the routes themselves
	}
	s.groups.Store(&groups)
	return s
}

// All returns every shard of the worker's routes, in preference order.
func (s *Watcher) All() []string {
	var out []string
	for _, g := range *s.groups.Load() {
		out = append(out, g...)
	}
	return out
}

// Now is the engine's Config.RoutesNow: every shard, routes in preference
// order, each route's shards starting one further on at each call, so that
// no shard of a busy route is always fetched last.
func (s *Watcher) Now() []string {
	groups := *s.groups.Load()
	sharded := false
	for _, g := range groups {
		sharded = sharded || len(g) > 1
	}
	if !sharded {
		return s.cfg.Routes
	}
	t := s.turn.Add(1)
	var out []string
	for _, g := range groups {
		start := int(t % uint64(len(g)))
		out = append(append(out, g[start:]...), g[:start]...)
	}
	return out
}

// Refresh reads the shard counts of the worker's routes (one HMGET) and,
// when one of them was ever sharded, the routes set (at the first refresh,
// when a count changed, and every listedEvery refreshes), then listens on
// the channels of the shards it did not know and wakes the fetcher for them.
func (s *Watcher) Refresh(ctx context.Context) error {
	q := s.cfg.Queue
	routes := s.cfg.Routes
	if len(routes) == 0 {
		return nil
	}
	vals, err := q.Client().HMGet(ctx, queue.RouteShardsKey(q.Namespace()), routes...).Result()
	if err != nil {
		return err
	}
	counts := make([]int, len(routes))
	for i := range routes {
		counts[i] = 1
		if v, ok := vals[i].(string); ok {
			if k, err := strconv.Atoi(v); err == nil && queue.CheckShards(k) == nil {
				counts[i] = k
			}
		}
	}
	sharded := slices.ContainsFunc(vals, func(v any) bool { return v != nil })
	changed := s.counts == nil || !slices.Equal(vals, s.counts)
	switch {
	case !sharded:
		s.reReads = 0 // nothing to look at again: no shard of an earlier count
	case changed:
		s.reReads = 2
	}
	if sharded && (changed || s.reReads > 0 || s.readsAgo >= listedEvery) {
		if s.earlier, err = s.earlierShards(ctx, counts); err != nil {
			return err
		}
		if !changed {
			s.reReads--
		}
		s.counts, s.readsAgo = vals, 0
	}
	s.readsAgo++
	groups := make([][]string, len(routes))
	for i, r := range routes {
		groups[i] = queue.RouteShards(r, counts[i], s.earlier)
	}
	added, err := s.listen(ctx, groups)
	s.groups.Store(&groups)
	if len(added) > 0 {
		s.cfg.Added(ctx, added)
	}
	return err
}

// earlierShards returns the shards of the worker's routes in the routes set
// that are not among the current ones (counts, by route) and hold a job to
// run or recover: those a fetch must still look at. An empty one is left
// out, so that a count that shrank does not cost every fetch a round trip
// per empty shard until the routes set forgets them.
func (s *Watcher) earlierShards(ctx context.Context, counts []int) ([]string, error) {
	q := s.cfg.Queue
	listed, err := q.Routes(ctx)
	if err != nil {
		return nil, err
	}
	var earlier []string
	for i, r := range s.cfg.Routes {
		earlier = append(earlier, queue.RouteShards(r, counts[i], listed)[counts[i]:]...)
	}
	holding, err := q.Holding(ctx, earlier)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(earlier, func(sh string) bool { return !holding[sh] }), nil
}

// listen subscribes to the wake and cancel channels of the shards in groups
// not yet listened to, and drops those of shards no longer in them; added
// is the shards it began to listen to.
func (s *Watcher) listen(ctx context.Context, groups [][]string) (added []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]bool{}
	for _, g := range groups {
		for _, sh := range g {
			want[sh] = true
			if s.seen[sh] {
				continue
			}
			subs, err := s.cfg.Subscribe(ctx, sh)
			if err != nil {
				return added, err
			}
			s.subs[sh], s.seen[sh] = subs, true
			added = append(added, sh)
		}
	}
	for sh, subs := range s.subs {
		if !want[sh] {
			for _, sub := range subs {
				sub.Close()
			}
			delete(s.subs, sh)
			delete(s.seen, sh)
		}
	}
	return added, nil
}

// Run refreshes until ctx ends — at once when a shard count is announced
// (queue.ShardsChannel), every queue.WorkerShardRefresh besides (a missed
// announcement), and every queue.ShardRefresh while a change is new or
// earlier shards drain — then drops the subscriptions it made.
func (s *Watcher) Run(ctx context.Context) {
	q := s.cfg.Queue
	sub, err := s.cfg.Listener.SubscribeFunc(ctx, queue.ShardsChannel(q.Namespace()), func([]byte) {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	})
	if err != nil {
		s.cfg.Logger.Warn("bananas: cannot listen for changes of shard counts; reading them every "+queue.WorkerShardRefresh.String(), "err", err)
	} else {
		defer sub.Close()
	}
	t := time.NewTimer(s.untilNext(false))
	defer t.Stop()
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, subs := range s.subs {
			for _, sub := range subs {
				sub.Close()
			}
		}
	}()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.changed:
		}
		err := s.Refresh(ctx)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			s.cfg.Logger.Warn("bananas: cannot read the shards of the worker's routes; working the shards known", "err", err)
		case err == nil && failing:
			s.cfg.Logger.Info("bananas: the shards of the worker's routes read again")
		}
		failing = err != nil
		t.Reset(s.untilNext(failing))
	}
}

// untilNext is how long to wait for the next refresh: short while a change
// is new, a read failed, or shards of an earlier count still hold jobs
// (they are dropped from the fetches at the first look that finds them
// empty). The long wait ends on the process's beat (queue.UntilBeat), with
// its other periodic calls: a read of its own at another instant would
// wake an otherwise idle Redis for it alone.
func (s *Watcher) untilNext(failing bool) time.Duration {
	if s.reReads > 0 || failing || len(s.earlier) > 0 {
		return queue.ShardRefresh
	}
	return queue.UntilBeat(queue.WorkerShardRefresh)
}

// Served adds to served, routes that live workers serve, the current
// shards of each (so pruning keeps them; shards of an earlier count are
// left to be pruned once idle).
func Served(ctx context.Context, q *queue.Queue, served map[string]bool) error {
	counts, err := q.AllShards(ctx)
	if err != nil {
		return err
	}
	for r, n := range counts {
		if served[r] {
			for _, sh := range queue.ShardNames(r, n) {
				served[sh] = true
			}
		}
	}
	return nil
}

// Of returns every shard of route that holds or may hold jobs, the
// route itself first: its current shards and the others still listed.
func Of(ctx context.Context, q *queue.Queue, route string) ([]string, error) {
	n, err := q.Shards(ctx, route)
	if err != nil {
		return nil, err
	}
	listed, err := q.Routes(ctx)
	if err != nil {
		return nil, err
	}
	return queue.RouteShards(route, n, listed), nil
}
