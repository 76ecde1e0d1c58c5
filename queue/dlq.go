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
// reset. It returns ErrNotFound when the job is not in the dead-letter set (a
// dead-letter entry whose job is gone is dropped, and also ErrNotFound), and
// an error saying why when the job cannot be made ready as it is stored (its
// priority is garbage, say): repair it and replay again.
func (q *Queue) Replay(ctx context.Context, id string) error {
	route, err := q.RouteOfJob(ctx, id)
	if err != nil {
		return err
	}
	code, why, err := q.replay(ctx, q.Keys(route), id)
	switch {
	case err != nil:
		return fmt.Errorf("replay job %s: %w", id, err)
	case code == replayed:
		return nil
	case code == replayUnfit:
		return fmt.Errorf("replay job %s: %s", id, why)
	case code == replayOrphan:
		return fmt.Errorf("replay job %s: %s: %w", id, why, ErrNotFound)
	case code == replayAbsent:
		return fmt.Errorf("replay job %s: not in the dead-letter queue: %w", id, ErrNotFound)
	}
	return fmt.Errorf("replay job %s: replay.lua answered %d", id, code)
}

// Outcomes of replay.lua.
const (
	replayAbsent = 0 // not in the dead-letter set
	replayed     = 1
	replayOrphan = 2 // an entry without a job: dropped
	replayUnfit  = 3 // cannot be made ready as stored: left dead
)

// replay runs replay.lua for id: its outcome, and the reason for an entry it
// dropped or left.
func (q *Queue) replay(ctx context.Context, k Keys, id string) (int64, string, error) {
	keys := []string{k.Job(id), k.Dead(), k.List(High), k.List(Normal), k.List(Low), k.Result(id), k.Stats()}
	// Retry-safe: the job moves only while it is in the dead-letter set (a
	// second run answers that it is not).
	res, err := q.s.replay.Run(ctx, q.rdb, keys, id, k.WakeChannel()).Slice()
	if err != nil {
		return 0, "", err
	}
	if len(res) != 2 {
		return 0, "", fmt.Errorf("replay.lua replied %v", res)
	}
	code, _ := res[0].(int64)
	why, _ := res[1].(string)
	return code, why, nil
}

// ReplayAll replays every job of route that was dead-lettered when it started,
// and returns how many. A job that cannot be replayed as stored stays dead
// and is reported through the queue's warnings; the others are replayed all
// the same. Jobs that die again meanwhile are not replayed a second time.
func (q *Queue) ReplayAll(ctx context.Context, route string) (int, error) {
	k := q.Keys(route)
	newest, err := q.rdb.ZRangeWithScores(ctx, k.Dead(), -1, -1).Result()
	if err != nil || len(newest) == 0 {
		return 0, err
	}
	upTo := strconv.FormatFloat(newest[0].Score, 'f', -1, 64)
	total, left := 0, int64(0)
	for {
		// The jobs left dead stay at the front of what is read: skip them.
		ids, err := q.rdb.ZRangeByScore(ctx, k.Dead(), &redis.ZRangeBy{
			Min: "-inf", Max: upTo, Offset: left, Count: 500,
		}).Result()
		if err != nil || len(ids) == 0 {
			return total, err
		}
		for _, id := range ids {
			code, why, err := q.replay(ctx, k, id)
			if err != nil {
				return total, fmt.Errorf("replay job %s: %w", id, err)
			}
			switch code {
			case replayed:
				total++
			case replayUnfit:
				left++
				q.warn("bananas: a dead-lettered job cannot be replayed", "route", route, "job", id, "why", why)
			case replayOrphan:
				q.warn("bananas: dropped a dead-letter entry", "route", route, "job", id, "why", why)
			}
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
			keys = append(keys, k.Job(id), k.Result(id), k.Garbage(id))
			args = append(args, id)
		}
		// Retry-safe: each id goes only while it is still dead and old enough.
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
