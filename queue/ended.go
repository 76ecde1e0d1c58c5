package queue

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The task history (package history) keeps every job that ended for good —
// completed, dead, canceled — in a store of its own, written in batches off
// the job's path. So that no end is lost between Redis and that store, the
// script that ends a job also appends its record to the route's ended list
// (Keys.Ended), in the same atomic step, when the queue keeps ends
// (Ended.Keep). A worker reads the head of the list (Head), stores it, and
// only then drops it (Stored): a store that is down or slow, or a worker
// killed mid-batch, leaves the records in Redis to be stored again (stores
// keep a row once, keyed by the job's id, life and attempt). Shed keeps the
// list within a cap, dropping the oldest and counting them.

// Keep makes the scripts this queue runs append every job's end to its
// route's ended list, for the task history. A process whose queue does not
// keep ends (no history configured) ends jobs without it.
func (e Ended) Keep(on bool) { e.q.keepEnded.Store(on) }

// Kept reports whether Ended.Keep is on.
func (e Ended) Kept() bool { return e.q.keepEnded.Load() }

// key is the key an ending script appends to: the route's ended list
// when the queue keeps ends, else the route's stats key again, which the
// scripts read as "keep none" (see bn_ended in scripts/_prelude.lua).
func (e Ended) key(k Keys) string {
	if e.q.keepEnded.Load() {
		return k.Ended()
	}
	return k.Stats()
}

// Head returns up to n records from the head (the oldest) of route's ended
// list, as stored by the scripts (results.Encode). A key holding another
// type is garbage that the next end replaces: it reads as empty.
func (e Ended) Head(ctx context.Context, route string, n int) ([][]byte, error) {
	if n < 1 {
		return nil, fmt.Errorf("ended records of route %s: n must be >= 1, got %d", route, n)
	}
	vals, err := e.q.rdb.LRange(ctx, e.q.Keys(route).Ended(), 0, int64(n-1)).Result()
	if err != nil {
		if isWrongType(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("ended records of route %s: %w", route, err)
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out, nil
}

// Stored drops from the head of route's ended list the records just read by
// Ended and stored: it reports false, dropping nothing, when the head is no
// longer those records (another worker stored and dropped them, or Shed
// dropped them), so a record is never dropped unstored.
func (e Ended) Stored(ctx context.Context, route string, records [][]byte) (bool, error) {
	if len(records) == 0 {
		return true, nil
	}
	// Retry-safe: a second run finds the head moved on and drops nothing.
	n, err := e.q.s.stored.Run(ctx, e.q.rdb, []string{e.q.Keys(route).Ended()}, len(records), records[0], records[len(records)-1]).Int()
	if err != nil {
		return false, fmt.Errorf("drop stored records of route %s: %w", route, err)
	}
	return n == 1, nil
}

// Shed keeps route's ended list within limit records, dropping the oldest
// past it; it returns how many it dropped, which are counted in the route's
// stats (history_dropped) too.
func (e Ended) Shed(ctx context.Context, route string, limit int64) (int64, error) {
	if limit < 1 {
		return 0, fmt.Errorf("shed ended records of route %s: the limit must be >= 1, got %d", route, limit)
	}
	k := e.q.Keys(route)
	// Retry-safe: a second run finds the list within the limit.
	n, err := e.q.s.shed.Run(ctx, e.q.rdb, []string{k.Ended(), k.Stats()}, limit).Int64()
	if err != nil {
		return 0, fmt.Errorf("shed ended records of route %s: %w", route, err)
	}
	return n, nil
}

// Backlog returns how many records wait in each route's ended list.
func (e Ended) Backlog(ctx context.Context, routes []string) (map[string]int64, error) {
	cmds := make([]*redis.IntCmd, len(routes))
	_, err := e.q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range routes {
			cmds[i] = p.LLen(ctx, e.q.Keys(r).Ended())
		}
		return nil
	})
	out := make(map[string]int64, len(routes))
	for i, r := range routes {
		n, cerr := cmds[i].Result()
		switch {
		case cerr == nil:
			out[r] = n
		case isWrongType(cerr):
			out[r] = 0
		default:
			return nil, fmt.Errorf("ended records backlog: %w", cerr)
		}
	}
	if err != nil && !isWrongType(err) {
		return nil, fmt.Errorf("ended records backlog: %w", err)
	}
	return out, nil
}
