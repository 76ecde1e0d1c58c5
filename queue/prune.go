package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RouteIdleTTL is how long a route stays in the routes set while it holds no
// job and nothing serves it: past that, PruneRoutes removes it, and listings
// and metrics stop reading it. An enqueue to it adds it back.
const RouteIdleTTL = 24 * time.Hour

// RoutesIdleKey is the HASH of routes seen idle by PruneRoutes: route ->
// "<unix ms first seen idle>:<its enqueued counter then>".
func RoutesIdleKey(ns string) string { return ns + ":routes-idle" }

// pruneBatch is how many routes one pipelined round trip checks.
const pruneBatch = 500

// PruneRoutes removes from the routes set the routes that have been idle for
// RouteIdleTTL: holding no job (ready, scheduled, leased, dead, or a light
// job's payload), neither paused nor with limits of its own (an operator's
// choice stays listed), not in keep (the routes live workers serve and cron
// entries fire to), and not enqueued to since they were first seen so (their
// enqueued counter, which every enqueue bumps in the same script as its
// write, is unchanged). It returns the routes removed.
//
// A route is seen idle at one call and removed at a later one, at least
// RouteIdleTTL on; a call finding it busy forgets it. Removal is safe against
// an enqueue racing it, on a cluster too, where the routes set and the route
// live on different slots: the route is checked on its slot, removed from the
// set, then checked again, and put back when an enqueue landed meanwhile; an
// enqueue that lands after that check adds the route itself (every process
// adds a route after writing to it, see routeWritten).
func (o Ops) PruneRoutes(ctx context.Context, keep map[string]bool, now time.Time) ([]string, error) {
	routes, err := o.q.rdb.SMembers(ctx, RoutesKey(o.q.ns)).Result()
	if err != nil {
		return nil, fmt.Errorf("prune routes: %w", err)
	}
	idle, err := o.q.rdb.HGetAll(ctx, RoutesIdleKey(o.q.ns)).Result()
	if err != nil {
		return nil, fmt.Errorf("prune routes: %w", err)
	}
	var pruned []string
	for start := 0; start < len(routes); start += pruneBatch {
		batch := routes[start:min(start+pruneBatch, len(routes))]
		fps, err := o.fingerprints(ctx, batch)
		if err != nil {
			return pruned, err
		}
		var forget []string
		remember := map[string]any{}
		for i, r := range batch {
			seen, had := idle[r]
			delete(idle, r)
			if keep[r] || fps[i] == "" {
				if had {
					forget = append(forget, r)
				}
				continue
			}
			since, fp, ok := parseIdle(seen)
			if !ok || fp != fps[i] {
				remember[r] = strconv.FormatInt(now.UnixMilli(), 10) + ":" + fps[i]
				continue
			}
			if now.Sub(since) < RouteIdleTTL {
				continue
			}
			gone, err := o.pruneRoute(ctx, r, fp)
			if err != nil {
				return pruned, err
			}
			forget = append(forget, r)
			if gone {
				pruned = append(pruned, r)
			}
		}
		if err := o.writeIdle(ctx, remember, forget); err != nil {
			return pruned, err
		}
	}
	// Entries of routes no longer in the set: removed by hand, or by a
	// prune that died between its removal and its check after it (the
	// entry is forgotten only after that check). A route written to since
	// its entry goes back into the set before the entry goes.
	var stale []string
	for r := range idle {
		stale = append(stale, r)
	}
	if err := o.relistWritten(ctx, stale, idle); err != nil {
		return pruned, err
	}
	return pruned, o.writeIdle(ctx, nil, stale)
}

// relistWritten adds back to the routes set each of routes that holds
// something or whose enqueued counter moved since its idle entry was made.
func (o Ops) relistWritten(ctx context.Context, routes []string, idle map[string]string) error {
	if len(routes) == 0 {
		return nil
	}
	fps, err := o.fingerprints(ctx, routes)
	if err != nil {
		return err
	}
	var written []any
	for i, r := range routes {
		if _, fp, ok := parseIdle(idle[r]); !ok || fps[i] != fp {
			written = append(written, r)
		}
	}
	if len(written) == 0 {
		return nil
	}
	if err := o.q.rdb.SAdd(ctx, RoutesKey(o.q.ns), written...).Err(); err != nil {
		return fmt.Errorf("prune routes: list again the routes written to since: %w", err)
	}
	return nil
}

// pruneRoute removes route from the routes set if it is still idle with
// enqueued counter fp, and puts it back when a check after the removal finds
// it written to meanwhile. It reports whether the route stays removed.
func (o Ops) pruneRoute(ctx context.Context, route, fp string) (bool, error) {
	now, err := o.fingerprints(ctx, []string{route})
	if err != nil || now[0] != fp {
		return false, err
	}
	if err := o.q.rdb.SRem(ctx, RoutesKey(o.q.ns), route).Err(); err != nil {
		return false, fmt.Errorf("prune route %s: %w", route, err)
	}
	after, err := o.fingerprints(ctx, []string{route})
	if err == nil && after[0] == fp {
		return true, nil
	}
	// Written to meanwhile, or unknown: the route goes back.
	if err := o.q.rdb.SAdd(ctx, RoutesKey(o.q.ns), route).Err(); err != nil {
		return false, fmt.Errorf("prune route %s: put it back after an enqueue raced the removal: %w", route, err)
	}
	return false, nil
}

// fingerprints runs prune.lua for each route in one pipelined round trip:
// "" for a route holding something, else its enqueued counter.
func (o Ops) fingerprints(ctx context.Context, routes []string) ([]string, error) {
	pipe := o.q.rdb.Pipeline()
	for _, r := range routes {
		keys := pruneKeys(o.q.Keys(r))
		o.q.s.prune.EvalSha(ctx, pipe, keys)
	}
	cmds, _ := pipe.Exec(ctx) // each command's own error is read below
	out := make([]string, len(routes))
	var retry []int
	for i, c := range cmds {
		if isNoScript(c.Err()) {
			retry = append(retry, i)
			continue
		}
		s, err := c.(interface{ Text() (string, error) }).Text()
		if err != nil {
			return nil, fmt.Errorf("check route %s for pruning: %w", routes[i], err)
		}
		out[i] = s
	}
	for _, i := range retry { // loads the script, then runs it
		keys := pruneKeys(o.q.Keys(routes[i]))
		s, err := o.q.s.prune.Run(ctx, o.q.rdb, keys).Text()
		if err != nil {
			return nil, fmt.Errorf("check route %s for pruning: %w", routes[i], err)
		}
		out[i] = s
	}
	return out, nil
}

// pruneKeys are the keys of a route prune.lua reads.
func pruneKeys(k Keys) []string {
	return []string{k.List(High), k.List(Normal), k.List(Low), k.Scheduled(), k.Leases(), k.Dead(), k.Payloads(), k.Stats(), k.Paused(), k.Limits()}
}

func parseIdle(v string) (since time.Time, fp string, ok bool) {
	ts, fp, found := strings.Cut(v, ":")
	n, err := strconv.ParseInt(ts, 10, 64)
	if !found || err != nil {
		return time.Time{}, "", false
	}
	return time.UnixMilli(n), fp, true
}

func (o Ops) writeIdle(ctx context.Context, set map[string]any, del []string) error {
	if len(set) == 0 && len(del) == 0 {
		return nil
	}
	pipe := o.q.rdb.Pipeline()
	if len(set) > 0 {
		pipe.HSet(ctx, RoutesIdleKey(o.q.ns), set)
	}
	if len(del) > 0 {
		pipe.HDel(ctx, RoutesIdleKey(o.q.ns), del...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("prune routes: record idle routes: %w", err)
	}
	return nil
}
