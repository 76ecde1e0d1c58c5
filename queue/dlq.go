package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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
func (o Ops) Replay(ctx context.Context, id string) error {
	route, err := o.q.RouteOfJob(ctx, id)
	if err != nil {
		return err
	}
	code, why, err := o.replay(ctx, o.q.Keys(route), id, "")
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
	case code == replayHeld:
		return &KeyHeldError{ID: id, Holder: why}
	}
	return fmt.Errorf("replay job %s: replay.lua answered %d", id, code)
}

// replayToken is a replay call's token: a resend of the call (its reply
// lost) finds it on the job it replayed, and answers replayed again.
func replayToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Outcomes of replay.lua.
const (
	replayAbsent = 0 // not in the dead-letter set
	replayed     = 1
	replayOrphan = 2 // an entry without a job: dropped
	replayUnfit  = 3 // cannot be made ready as stored: left dead
	replayOther  = 4 // of another task than asked: left dead
	replayHeld   = 5 // its unique key is another job's: left dead
)

// KeyHeldError is the error of a replay of a dead job whose unique key
// another job took since the job died: the job stays dead until that job
// frees the key. It matches ErrKeyHeld.
type KeyHeldError struct {
	ID, Holder string
}

func (e *KeyHeldError) Error() string {
	return fmt.Sprintf("replay job %s: its unique key is held by job %s; replay it once that job frees the key", e.ID, e.Holder)
}

func (e *KeyHeldError) Unwrap() error { return ErrKeyHeld }

// ErrKeyHeld is matched by the error of a replay refused because the job's
// unique key is held by another job (KeyHeldError).
var ErrKeyHeld = errors.New("unique key held by another job")

// replay runs replay.lua for id, if it is a job of task ("" any): its
// outcome, and the reason for an entry it dropped or left.
func (o Ops) replay(ctx context.Context, k Keys, id, task string) (int64, string, error) {
	keys := []string{k.Job(id), k.Dead(), k.List(High), k.List(Normal), k.List(Low), k.Result(id), k.Stats(), k.Idle(),
		o.q.Jobs.uniqueOf(ctx, k, id)}
	keys = append(keys, k.FlowKeys()...)
	// Retry-safe: the job moves only while it is in the dead-letter set (a
	// second run answers that it is not).
	res, err := o.q.s.replay.Run(ctx, o.q.rdb, keys, id, k.WakeChannel(), task, ms(o.q.Now()), replayToken()).Slice()
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
// and returns how many: ReplayDead for every task.
func (o Ops) ReplayAll(ctx context.Context, route string) (int, error) {
	return o.ReplayDead(ctx, route, "")
}

// ReplayDead replays the jobs of route of task ("" every task) that were
// dead-lettered when it started, and returns how many. A job that cannot be
// replayed as stored stays dead and is reported through the queue's
// warnings; the others are replayed all the same. Jobs that die again
// meanwhile are not replayed a second time. It reads the dead-letter set 500
// entries at a time, and with a task the names of a page in one round trip,
// so that only the jobs of that task cost a script call each.
func (o Ops) ReplayDead(ctx context.Context, route, task string) (int, error) {
	k := o.q.Keys(route)
	newest, err := o.q.rdb.ZRangeWithScores(ctx, k.Dead(), -1, -1).Result()
	if err != nil || len(newest) == 0 {
		return 0, err
	}
	upTo := strconv.FormatFloat(newest[0].Score, 'f', -1, 64)
	total, left := 0, int64(0)
	for {
		// The jobs left dead stay at the front of what is read: skip them.
		ids, err := o.q.rdb.ZRangeByScore(ctx, k.Dead(), &redis.ZRangeBy{
			Min: "-inf", Max: upTo, Offset: left, Count: 500,
		}).Result()
		if err != nil || len(ids) == 0 {
			return total, err
		}
		ids, others, err := o.deadOfTask(ctx, k, ids, task)
		if err != nil {
			return total, err
		}
		left += int64(others)
		for _, id := range ids {
			code, why, err := o.replay(ctx, k, id, task)
			if err != nil {
				return total, fmt.Errorf("replay job %s: %w", id, err)
			}
			switch code {
			case replayed:
				total++
			case replayOther:
				left++
			case replayUnfit:
				left++
				o.q.warn("bananas: a dead-lettered job cannot be replayed", "route", route, "job", id, "why", why)
			case replayOrphan:
				o.q.warn("bananas: dropped a dead-letter entry", "route", route, "job", id, "why", why)
			case replayHeld:
				left++
				o.q.warn("bananas: a dead-lettered job's unique key is held by another job; it stays dead", "route", route, "job", id, "holder", why)
			}
		}
	}
}

// deadOfTask keeps the ids of dead jobs of task (all of them for ""), their
// names read in one round trip, and says how many it left out. An id whose
// name cannot be read (its job gone, its key not a hash) is left out too:
// replay.lua would leave it for the same reason.
func (o Ops) deadOfTask(ctx context.Context, k Keys, ids []string, task string) ([]string, int, error) {
	if task == "" {
		return ids, 0, nil
	}
	pipe := o.q.rdb.Pipeline()
	names := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		names[i] = pipe.HGet(ctx, k.Job(id), "n")
	}
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	var keep []string
	for i, c := range names {
		err := c.Err()
		switch {
		case err == nil && c.Val() == task:
			keep = append(keep, ids[i])
		case err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err):
			return nil, 0, fmt.Errorf("read dead jobs of route %s: %w", k.Route(), err)
		}
	}
	return keep, len(ids) - len(keep), nil
}

// Purge deletes the dead-lettered jobs of route that died at or before cutoff,
// and returns how many: PurgeDead for every task. The retention sweep passes
// now - DeadRetention.
func (o Ops) Purge(ctx context.Context, route string, cutoff time.Time) (int, error) {
	return o.PurgeDead(ctx, route, "", cutoff)
}

// PurgeDead deletes the dead-lettered jobs of route of task ("" every task)
// that died at or before olderThan, and returns how many. It goes through the
// dead-letter set 500 entries a call, oldest first.
func (o Ops) PurgeDead(ctx context.Context, route, task string, olderThan time.Time) (int, error) {
	k := o.q.Keys(route)
	total, offset := 0, int64(0)
	for {
		// The jobs of other tasks stay at the front of what is read: skip them.
		ids, err := o.q.rdb.ZRangeByScore(ctx, k.Dead(), &redis.ZRangeBy{
			Min: "-inf", Max: strconv.FormatInt(ms(olderThan), 10), Offset: offset, Count: 500,
		}).Result()
		if err != nil || len(ids) == 0 {
			return total, err
		}
		keys := []string{k.Dead()}
		args := []any{ms(olderThan), task}
		for _, id := range ids {
			keys = append(keys, k.Job(id), k.Result(id), k.Garbage(id))
			args = append(args, id)
		}
		// Retry-safe: each id goes only while it is still dead and old enough.
		res, err := o.q.s.purge.Run(ctx, o.q.rdb, keys, args...).Int64Slice()
		if err != nil {
			return total, fmt.Errorf("purge route %s: %w", route, err)
		}
		if len(res) != 2 {
			return total, fmt.Errorf("purge route %s: purge.lua replied %v", route, res)
		}
		total += int(res[0])
		offset += res[1]
		if res[0]+res[1] == 0 { // none of the page was still there: stop rather than go round
			return total, nil
		}
	}
}
