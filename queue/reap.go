package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Expired is a job whose lease ran out, as the reaper found it.
type Expired struct {
	ID         string
	Name       string
	Attempts   int // failed runs before the lost one
	MaxRetries int
	Envelope   Envelope // zero when it cannot be decoded
}

// Verdict is what the caller decides for an expired job: when to retry it, and
// the failure record to store if it dies instead.
type Verdict struct {
	RetryAt time.Time
	Record  []byte
	TTL     time.Duration
}

const reapBatch = 100

// Reap recovers up to reapBatch jobs of route whose lease expired at or before
// now: each counts a failed attempt and is retried or dead-lettered. decide is
// asked for each; the returned outcomes are per job reaped.
func (q *Queue) Reap(ctx context.Context, route string, now time.Time, decide func(Expired) Verdict) (map[string]Outcome, error) {
	k := q.Keys(route)
	tokens, err := q.rdb.ZRangeByScore(ctx, k.Active(), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(ms(now), 10), Count: reapBatch,
	}).Result()
	if err != nil || len(tokens) == 0 {
		return nil, err
	}
	// The jobs still leased by the expired groups. Only groups whose worker
	// stopped renewing expire, so this read of every lease of the route is
	// rare; healthy groups leave the active set when their last job settles.
	leases, err := q.rdb.HGetAll(ctx, k.Leases()).Result()
	if err != nil {
		return nil, fmt.Errorf("read leases of route %s: %w", route, err)
	}
	held := make(map[string]bool, len(tokens))
	for _, t := range tokens {
		held[t] = false
	}
	var ids, owners []string
	for id, t := range leases {
		if _, ok := held[t]; !ok {
			continue
		}
		// A group with a leased job is not empty, even when its job waits for
		// the next pass (over reapBatch): dropping it would leave that job
		// leased to a group no reaper ever sees again.
		held[t] = true
		if len(ids) < reapBatch {
			ids, owners = append(ids, id), append(owners, t)
		}
	}
	var empty []any
	for _, t := range tokens {
		if !held[t] {
			empty = append(empty, t)
		}
	}
	pipe := q.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, k.Job(id))
	}
	var pays *redis.SliceCmd
	if len(ids) > 0 {
		pays = pipe.HMGet(ctx, k.Payloads(), ids...)
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("read expired jobs of route %s: %w", route, err)
		}
	}
	keys := []string{k.Active(), k.Leases(), k.Scheduled(), k.Dead(), k.Stats(), k.Payloads(), k.Groups()}
	args := []any{ms(now), resultChannelPrefix(q.ns), ScheduleChannel(q.ns), len(empty)}
	args = append(args, empty...)
	for i, id := range ids {
		f := cmds[i].Val()
		e := Expired{ID: id, Name: f["n"], Attempts: atoi(f["a"]), MaxRetries: atoi(f["m"])}
		e.Envelope, _ = decodeStored(id, f)
		if p, ok := pays.Val()[i].(string); ok && len(f) == 0 {
			var d Dispatch
			d.fillFromPayload(p)
			e = Expired{ID: id, Name: d.Name, MaxRetries: d.MaxRetries, Envelope: d.Envelope}
		}
		verdict := decide(e)
		keys = append(keys, k.Job(id), k.Result(id))
		args = append(args, id, owners[i], e.Attempts, ms(verdict.RetryAt), verdict.Record, max(1, durMS(verdict.TTL)))
	}
	res, err := q.s.reap.Run(ctx, q.rdb, keys, args...).Result()
	if err != nil {
		return nil, fmt.Errorf("reap route %s: %w", route, err)
	}
	out := make(map[string]Outcome, len(ids))
	for i, o := range ints(res) {
		if o != 0 {
			out[ids[i]] = Outcome(o)
		}
	}
	return out, nil
}
