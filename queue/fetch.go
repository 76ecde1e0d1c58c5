package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Dispatch is one job handed to a worker under a lease.
type Dispatch struct {
	ID, Route, Token string
	Name             string
	Priority         string
	Attempts         int // failed runs before this one
	MaxRetries       int
	CreatedAt        time.Time
	Envelope         Envelope
	// BadEnvelope is set when the stored job cannot be decoded; the job must be
	// dead-lettered with it (retrying cannot help).
	BadEnvelope error
	// LastError is the failure of the run before this one, if any.
	LastError string
	// light: the job came with its payload (no hash of its own); ack.lua then
	// needs no job key for it.
	light bool
}

// Fetch takes up to n ready jobs of route from the lists of the given
// priorities (strictly highest first, FIFO within each), leasing them until
// leaseUntil. One round trip for light jobs (those enqueued ready to run),
// and one more, pipelined, to read the hashes of the others.
//
// Acks of the route waiting for their turn (see Ack) go out in the same round
// trip, pipelined ahead of the fetch: a busy worker fetches right after its
// handlers return, which is when their acks are queued, so the two share one
// write and one read on each side instead of two of each.
func (q *Queue) Fetch(ctx context.Context, route string, priorities []string, n int, leaseUntil, now time.Time) ([]*Dispatch, error) {
	k := q.Keys(route)
	lists := k.Lists(priorities)
	if len(lists) == 0 || n < 1 {
		return nil, nil
	}
	keys := append([]string{k.Active(), k.Leases(), k.Payloads(), k.Groups()}, lists...)
	args := []any{n, ms(leaseUntil), fetchToken(now)}
	var res any
	var err error
	if acks := q.acks.ride(route); acks != nil {
		res, err = q.fetchWithAcks(ctx, route, keys, args, acks)
	} else {
		res, err = q.s.fetch.Run(ctx, q.rdb, keys, args...).Result()
	}
	if err != nil {
		return nil, fmt.Errorf("fetch from route %s: %w", route, err)
	}
	return q.load(ctx, route, strs(res))
}

// fetchWithAcks runs ack.lua for the acks riding along and fetch.lua in one
// pipelined round trip, answers the acks, and returns the fetch's reply. A
// script the server does not have cached (NOSCRIPT: nothing ran) is run
// again on its own, which loads it.
func (q *Queue) fetchWithAcks(ctx context.Context, route string, keys []string, args []any, acks *rider[string, ackReq, bool]) (any, error) {
	reqs := acks.ins()
	akeys, aargs := q.ackCall(route, reqs)
	pipe := q.rdb.Pipeline()
	ack := q.s.ack.EvalSha(ctx, pipe, akeys, aargs...)
	fetch := q.s.fetch.EvalSha(ctx, pipe, keys, args...)
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	if isNoScript(ack.Err()) {
		ack = q.s.ack.Run(ctx, q.rdb, akeys, aargs...)
	}
	if err := ack.Err(); err != nil {
		acks.finish(nil, err)
	} else {
		acks.finish(ackFlags(ack.Val(), len(reqs)), nil)
	}
	if isNoScript(fetch.Err()) {
		fetch = q.s.fetch.Run(ctx, q.rdb, keys, args...)
	}
	return fetch.Result()
}

func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// FetchTypes is Fetch for a worker that runs only some task names: it reads a
// window of each list and claims the matching jobs, so the others stay queued
// for the workers that run them.
func (q *Queue) FetchTypes(ctx context.Context, route string, priorities, types []string, n int, leaseUntil, now time.Time) ([]*Dispatch, error) {
	const window = 256
	k := q.Keys(route)
	var out []*Dispatch
	for _, list := range k.Lists(priorities) {
		if len(out) >= n {
			break
		}
		ids, err := q.rdb.LRange(ctx, list, 0, window-1).Result()
		if err != nil {
			return out, err
		}
		if len(ids) == 0 {
			continue
		}
		keys := []string{list, k.Active(), k.Leases(), k.Payloads(), k.Groups()}
		args := []any{n - len(out), ms(leaseUntil), fetchToken(now), len(types)}
		for _, t := range types {
			args = append(args, t)
		}
		for _, id := range ids {
			keys = append(keys, k.Job(id))
			args = append(args, id)
		}
		res, err := q.s.claim.Run(ctx, q.rdb, keys, args...).Result()
		if err != nil {
			return out, fmt.Errorf("claim from route %s: %w", route, err)
		}
		got, err := q.load(ctx, route, strs(res))
		out = append(out, got...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// load turns the reply of fetch.lua or claim.lua (the call's token, then id
// and payload of each job) into dispatches: a light job from its payload, a
// job with a hash of its own from that hash, all such hashes read in one
// pipelined round trip.
func (q *Queue) load(ctx context.Context, route string, reply []string) ([]*Dispatch, error) {
	if len(reply) < 3 {
		return nil, nil
	}
	k := q.Keys(route)
	token := reply[0]
	out := make([]*Dispatch, 0, (len(reply)-1)/2)
	var pipe redis.Pipeliner
	var heavy []*Dispatch
	var cmds []*redis.MapStringStringCmd
	for i := 1; i+1 < len(reply); i += 2 {
		d := &Dispatch{ID: reply[i], Token: token, Route: route}
		out = append(out, d)
		if reply[i+1] != "" {
			d.light = true
			d.fillFromPayload(reply[i+1])
			continue
		}
		if pipe == nil {
			pipe = q.rdb.Pipeline()
		}
		heavy = append(heavy, d)
		cmds = append(cmds, pipe.HGetAll(ctx, k.Job(d.ID)))
	}
	if pipe == nil {
		return out, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		// The light jobs can run; the others stay leased to nobody until
		// their lease expires and the reaper recovers them.
		light := out[:0]
		for _, d := range out {
			if d.light {
				light = append(light, d)
			}
		}
		return light, fmt.Errorf("read leased jobs of route %s: %w", route, err)
	}
	for i, c := range cmds {
		d, f := heavy[i], c.Val()
		d.Name, d.Priority = f["n"], f["p"]
		d.MaxRetries, d.Attempts = atoi(f["m"]), atoi(f["a"])
		d.CreatedAt, d.LastError = fromMS(f["c"]), f["err"]
		d.Envelope, d.BadEnvelope = decodeStored(d.ID, f)
	}
	return out, nil
}

// StartedAt returns when the dispatch was leased, read off its token.
func (d *Dispatch) StartedAt() time.Time { return tokenTime(d.Token) }

func tokenTime(token string) time.Time {
	for i := 0; i < len(token); i++ {
		if token[i] == '-' {
			n, err := strconv.ParseInt(token[:i], 36, 64)
			if err != nil {
				return time.Time{}
			}
			return time.UnixMilli(n)
		}
	}
	return time.Time{}
}
