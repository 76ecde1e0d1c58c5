package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ExpiredRecordTTL is how long the record of a job that expired before it
// started (StatusExpired) is kept under its result key.
const ExpiredRecordTTL = 24 * time.Hour

// expireBatch bounds one call of expire.lua.
const expireBatch = 200

// expiredMark starts fetch.lua's entry for a job it set aside expired.
const expiredMark = "expired:"

// Lapsed is a job that expire.lua ended expired: never run, its record
// stored and announced.
type Lapsed struct {
	ID, Name string
	Priority Priority // "" when the job did not say
}

// ExpireDue ends expired every job of route whose expiry (NewJob.ExpireAt)
// passed at now before it started: pending, scheduled, keyed, on a paused
// route or set aside by a fetch. The keeper runs it on each pass (the
// promoter, before it promotes, so a delayed job past its expiry ends
// rather than becomes ready). A route with no job of an expiry costs one
// ZRANGEBYSCORE.
func (js Jobs) ExpireDue(ctx context.Context, route string, now time.Time) ([]Lapsed, error) {
	k := js.q.Keys(route)
	var out []Lapsed
	for {
		ids, err := js.q.rdb.ZRangeByScore(ctx, k.Expiry(), &redis.ZRangeBy{
			Min: "-inf", Max: strconv.FormatInt(ms(now), 10), Count: expireBatch,
		}).Result()
		if err != nil && isWrongType(err) {
			return out, nil // garbage under the key: no job can be found there
		}
		if err != nil || len(ids) == 0 {
			return out, err
		}
		got, err := js.EndExpired(ctx, route, ids, now)
		out = append(out, got...)
		if err != nil || len(ids) < expireBatch {
			return out, err
		}
	}
}

// EndExpired runs expire.lua on ids of route: each whose expiry passed at
// now and that has not started ends expired; the others are left alone
// (an entry of a job that started or is gone is dropped). An expiry frees
// the unique key a job holds until started or ended. It returns the jobs it
// ended.
func (js Jobs) EndExpired(ctx context.Context, route string, ids []string, now time.Time) ([]Lapsed, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	k := js.q.Keys(route)
	ukeys := js.uniquesOf(ctx, k, ids)
	keys := make([]string, 0, 22+3*len(ids))
	keys = append(keys, k.Expiry(), k.Payloads(), k.List(High), k.List(Normal), k.List(Low), k.Scheduled(),
		k.Leases(), k.Stats(), k.Series(HourOf(now)), js.q.Ended.key(k))
	args := make([]any, 0, 3+len(ids))
	args = append(args, ms(now), durMS(ExpiredRecordTTL), resultChannelPrefix(js.q.ns))
	for i, id := range ids {
		keys = append(keys, k.Job(id), k.Result(id), ukeys[i])
		args = append(args, id)
	}
	keys = append(keys, k.FlowKeys()...)
	// Retry-safe: a job ends only while its entry in the expiry set is due,
	// and its end drops the entry.
	res, err := js.q.runWrite(ctx, js.q.s.expire, keys, args...)
	if err != nil {
		return nil, fmt.Errorf("expire jobs of route %s: %w", route, err)
	}
	flat := strs(res)
	out := make([]Lapsed, 0, len(flat)/3)
	for i := 0; i+2 < len(flat); i += 3 {
		out = append(out, Lapsed{ID: flat[i], Name: flat[i+1], Priority: Priority(flat[i+2])})
	}
	return out, nil
}

// uniquesOf reads, in one round trip, the unique key each of ids holds
// (uniqueHeld: its hash's field u, or a light job's payload): a job holding
// none, or whose read fails, gets its own key, and the script frees nothing
// for it (a failed read leaves the key to its ttl).
func (js Jobs) uniquesOf(ctx context.Context, k Keys, ids []string) []string {
	cmds := make([]*redis.StringCmd, len(ids))
	pays := make([]*redis.StringCmd, len(ids))
	_, _ = js.q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGet(ctx, k.Job(id), "u")
			pays[i] = p.HGet(ctx, k.Payloads(), id)
		}
		return nil
	})
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = k.Job(id)
		var pay *string
		if s, err := pays[i].Result(); err == nil {
			pay = &s
		}
		u, _ := cmds[i].Result()
		if u = uniqueHeld(map[string]string{"u": u}, pay); u != "" {
			out[i] = k.Unique(u)
		}
	}
	return out
}

// endSetAside ends the jobs a fetch set aside expired (fetch.lua's
// "expired:<id>" entries). When that fails the jobs stay in the expiry set
// and the next sweep (ExpireDue) ends them: they are never run either way.
func (js Jobs) endSetAside(ctx context.Context, route string, ids []string, now time.Time) {
	if _, err := js.EndExpired(ctx, route, ids, now); err != nil {
		js.q.warn("bananas: could not end jobs found expired at fetch; the expiry sweep will", "route", route, "err", err)
	}
}

// setAsideID is the id of a job in fetch.lua's dropped entry why, when the
// fetch set it aside expired.
func setAsideID(why string) (string, bool) {
	if !strings.HasPrefix(why, expiredMark) {
		return "", false
	}
	return why[len(expiredMark):], true
}
