package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// DeadRetention is how long dead-lettered jobs are kept by default.
const DeadRetention = 7 * 24 * time.Hour

// Replay moves a dead-lettered job back to its ready list with its attempts
// reset. It returns ErrNotFound when the job is not in the dead-letter set.
func (q *Queue) Replay(ctx context.Context, id string) error {
	route, err := q.RouteOfJob(ctx, id)
	if err != nil {
		return err
	}
	k := q.Keys(route)
	keys := []string{k.Job(id), k.Dead(), k.List(High), k.List(Normal), k.List(Low), k.Result(id), k.Stats()}
	n, err := q.s.replay.Run(ctx, q.rdb, keys, id, k.WakeChannel()).Int()
	if err != nil {
		return fmt.Errorf("replay job %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("replay job %s: not in the dead-letter queue: %w", id, ErrNotFound)
	}
	return nil
}

// ReplayAll replays every dead-lettered job of route and returns how many.
func (q *Queue) ReplayAll(ctx context.Context, route string) (int, error) {
	k := q.Keys(route)
	total := 0
	for {
		ids, err := q.rdb.ZRange(ctx, k.Dead(), 0, 499).Result()
		if err != nil || len(ids) == 0 {
			return total, err
		}
		for _, id := range ids {
			keys := []string{k.Job(id), k.Dead(), k.List(High), k.List(Normal), k.List(Low), k.Result(id), k.Stats()}
			n, err := q.s.replay.Run(ctx, q.rdb, keys, id, k.WakeChannel()).Int()
			if err != nil {
				return total, fmt.Errorf("replay job %s: %w", id, err)
			}
			if n == 0 { // an orphan entry without a job: drop it so the loop ends
				q.rdb.ZRem(ctx, k.Dead(), id)
			}
			total += n
		}
	}
}

// Purge deletes the dead-lettered jobs of route that died at or before cutoff,
// and returns how many. The retention sweep passes now - DeadRetention.
func (q *Queue) Purge(ctx context.Context, route string, cutoff time.Time) (int, error) {
	k := q.Keys(route)
	total := 0
	for {
		ids, err := q.rdb.ZRangeByScore(ctx, k.Dead(), &redis.ZRangeBy{
			Min: "-inf", Max: strconv.FormatInt(ms(cutoff), 10), Count: 500,
		}).Result()
		if err != nil || len(ids) == 0 {
			return total, err
		}
		keys := []string{k.Dead()}
		args := []any{ms(cutoff)}
		for _, id := range ids {
			keys = append(keys, k.Job(id), k.Result(id))
			args = append(args, id)
		}
		n, err := q.s.purge.Run(ctx, q.rdb, keys, args...).Int()
		if err != nil {
			return total, fmt.Errorf("purge route %s: %w", route, err)
		}
		total += n
		if n == 0 {
			return total, nil
		}
	}
}
