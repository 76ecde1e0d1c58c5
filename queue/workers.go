package queue

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Beat records worker id as alive at now with its state (opaque bytes: the
// runtime's JSON), kept for ttl, and forgets the workers silent for longer.
func (q *Queue) Beat(ctx context.Context, id string, state []byte, now time.Time, ttl time.Duration) error {
	pipe := q.rdb.Pipeline()
	pipe.Set(ctx, WorkerKey(q.ns, id), state, ttl)
	pipe.ZAdd(ctx, WorkersKey(q.ns), redis.Z{Score: float64(now.UnixMilli()), Member: id})
	pipe.ZRemRangeByScore(ctx, WorkersKey(q.ns), "-inf", strconv.FormatInt(now.Add(-ttl).UnixMilli(), 10))
	_, err := pipe.Exec(ctx)
	return err
}

// EndBeats removes worker id from the live workers, for a worker that stops.
func (q *Queue) EndBeats(ctx context.Context, id string) error {
	pipe := q.rdb.Pipeline()
	pipe.ZRem(ctx, WorkersKey(q.ns), id)
	pipe.Del(ctx, WorkerKey(q.ns, id))
	_, err := pipe.Exec(ctx)
	return err
}

// Beats returns the states of the workers that beat within ttl of now, by
// id; a worker whose state expired between the two reads is left out.
func (q *Queue) Beats(ctx context.Context, now time.Time, ttl time.Duration) ([][]byte, error) {
	cutoff := now.Add(-ttl).UnixMilli()
	ids, err := q.rdb.ZRangeByScore(ctx, WorkersKey(q.ns), &redis.ZRangeBy{Min: strconv.FormatInt(cutoff, 10), Max: "+inf"}).Result()
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(ids))
	for _, id := range ids {
		b, err := q.rdb.Get(ctx, WorkerKey(q.ns, id)).Bytes()
		if err != nil {
			continue
		}
		out = append(out, b)
	}
	return out, nil
}

// EvictionPolicy returns the maxmemory-policy of the server, or of the first
// master of a cluster whose policy is not noeviction: under memory pressure
// such a server deletes keys, and a deleted key is a lost job or result. An
// error means the policy cannot be read (CONFIG is refused to the user, or
// the server is the embedded one).
func (q *Queue) EvictionPolicy(ctx context.Context) (string, error) {
	read := func(ctx context.Context, c redis.Cmdable) (string, error) {
		m, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
		if err != nil {
			return "", err
		}
		return m["maxmemory-policy"], nil
	}
	cc, ok := q.rdb.(*redis.ClusterClient)
	if !ok {
		return read(ctx, q.rdb)
	}
	var mu sync.Mutex
	policy := "noeviction"
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		p, err := read(ctx, c)
		if err == nil && p != "noeviction" {
			mu.Lock()
			policy = p
			mu.Unlock()
		}
		return err
	})
	return policy, err
}
