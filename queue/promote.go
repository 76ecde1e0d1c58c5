package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

const promoteBatch = 500

// Promote moves the scheduled jobs of route that are due at now to their ready
// lists, in batches, and returns how many moved. Every due job leaves the
// scheduled set: one that cannot run (its priority is garbage, its job key is
// not a hash) is dead-lettered instead, and an entry without a job dropped,
// each reported through the queue's warnings (see promote.lua).
func (js Jobs) Promote(ctx context.Context, route string, now time.Time) (int, error) {
	k := js.q.Keys(route)
	total := 0
	for {
		ids, err := js.q.rdb.ZRangeByScore(ctx, k.Scheduled(), &redis.ZRangeBy{
			Min: "-inf", Max: strconv.FormatInt(ms(now), 10), Count: promoteBatch,
		}).Result()
		if err != nil || len(ids) == 0 {
			return total, err
		}
		keys := []string{k.Scheduled(), k.List(High), k.List(Normal), k.List(Low), k.Dead(), k.Stats()}
		args := []any{ms(now), k.WakeChannel()}
		for _, id := range ids {
			keys = append(keys, k.Job(id), k.Garbage(id))
			args = append(args, id)
		}
		keys = append(keys, k.Idle())
		keys = append(keys, k.FlowKeys()...)
		// Retry-safe: each id moves only while it is still scheduled and due.
		res, err := js.q.s.promote.Run(ctx, js.q.rdb, keys, args...).Slice()
		if err != nil {
			return total, fmt.Errorf("promote route %s: %w", route, err)
		}
		if len(res) > 0 {
			n, _ := res[0].(int64)
			total += int(n)
		}
		for _, r := range res[min(1, len(res)):] {
			why, _ := r.(string)
			js.q.warn("bananas: promoter met a bad entry", "route", route, "why", why)
		}
		if len(ids) < promoteBatch {
			return total, nil
		}
	}
}

// NextDue returns the earliest run-at among the scheduled jobs of the routes
// (one pipelined round trip), and false when none is scheduled.
func (js Jobs) NextDue(ctx context.Context, routes []string) (time.Time, bool, error) {
	pipe := js.q.rdb.Pipeline()
	cmds := make([]*redis.ZSliceCmd, len(routes))
	for i, r := range routes {
		cmds[i] = pipe.ZRangeWithScores(ctx, js.q.Keys(r).Scheduled(), 0, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return time.Time{}, false, err
	}
	var next time.Time
	found := false
	for _, c := range cmds {
		for _, z := range c.Val() {
			t := time.UnixMilli(int64(z.Score))
			if !found || t.Before(next) {
				next, found = t, true
			}
		}
	}
	return next, found, nil
}
