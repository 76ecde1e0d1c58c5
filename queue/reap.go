package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Garbage is where a script sets aside what a job key held when it was not a
// job hash (a string, a list, ...): the job is dead-lettered as a stub in its
// place, and the value is kept for inspection until the stub is purged.
func (k Keys) Garbage(id string) string { return k.base + "garbage:" + id }

// EndCorrupt is the ending of a job that was dead-lettered because what Redis
// held of it was garbage (a field that is not a number, a job key that is not
// a hash); its error says what was wrong, and the queue's warning names it.
const EndCorrupt Ending = 4

// Expired is a job whose lease ran out, as the reaper found it.
type Expired struct {
	ID         string
	Name       string
	Priority   Priority  // "" when its hash and payload do not say
	CreatedAt  time.Time // zero when its hash and payload do not say
	Attempts   int       // failed runs before the lost one
	MaxRetries int
	Envelope   Envelope // zero when it cannot be decoded
	// CancelRequested: a cancel was asked while it ran. It ends canceled
	// (EndCanceled), with the verdict's record, which must then be a
	// canceled one.
	CancelRequested bool
}

// Verdict is what the caller decides for an expired job: when to retry it, and
// the record to store if it dies instead (a failure's), or ends canceled.
type Verdict struct {
	RetryAt time.Time
	Record  []byte
	TTL     time.Duration
}

const (
	reapBatch = 100 // the most jobs one Reap recovers, and one script call carries
	reapPage  = 100 // expired lease groups read at a time
)

// Reap recovers up to reapBatch jobs of route whose lease expired at or before
// now: each counts a failed attempt and is retried or dead-lettered, but for
// one with a cancel request pending, which ends canceled. decide is
// asked for each; the returned outcomes are per job reaped. An entry that is
// garbage is dealt with on its own (see reap.lua) and reported through the
// queue's warnings.
//
// Expired groups are taken oldest first, a page at a time. Groups left
// holding jobs the script passed over (a race it lost) are paged past, so a
// page of groups that cannot be reaped now never hides the newer ones.
func (js Jobs) Reap(ctx context.Context, route string, now time.Time, decide func(Expired) Verdict) (map[string]Ending, error) {
	out := make(map[string]Ending)
	offset := int64(0)
	for len(out) < reapBatch {
		tokens, err := js.q.rdb.ZRangeByScore(ctx, js.q.Keys(route).Active(), &redis.ZRangeBy{
			Min: "-inf", Max: strconv.FormatInt(ms(now), 10), Offset: offset, Count: reapPage,
		}).Result()
		if err != nil {
			return out, fmt.Errorf("read expired leases of route %s: %w", route, err)
		}
		if len(tokens) == 0 {
			break
		}
		before := len(out)
		kept, dropped, err := js.reapPage(ctx, route, now, tokens, reapBatch-len(out), decide, out)
		if err != nil {
			return out, err
		}
		if len(tokens) < reapPage {
			break
		}
		if len(out) == before && dropped == 0 {
			kept = len(tokens) // nothing moved: never read this page again
		}
		offset += int64(kept)
	}
	return out, nil
}

// reapPage reaps up to budget jobs leased in the expired groups tokens,
// adding their outcomes to out. It returns how many of the groups still hold
// a job afterwards (where the next page starts) and how many it found empty
// (dropped if still expired).
func (js Jobs) reapPage(ctx context.Context, route string, now time.Time, tokens []string, budget int,
	decide func(Expired) Verdict, out map[string]Ending) (kept, dropped int, err error) {
	k := js.q.Keys(route)
	page, err := js.readPageLeases(ctx, k, route, tokens, budget)
	if err != nil {
		return 0, 0, err
	}
	fields, pays, asked, err := js.readExpired(ctx, k, page.ids)
	if err != nil {
		return 0, 0, fmt.Errorf("read expired jobs of route %s: %w", route, err)
	}
	keys := []string{k.Active(), k.Leases(), k.Scheduled(), k.Dead(), k.Stats(), k.Payloads(), k.Groups(), k.Series(HourOf(now)), k.Cancels()}
	args := []any{ms(now), resultChannelPrefix(js.q.ns), ScheduleChannel(js.q.ns), len(page.empty)}
	args = append(args, page.empty...)
	for i, id := range page.ids {
		ukey := k.Job(id)
		if u := uniqueHeld(fields[i], pays[i]); u != "" {
			ukey = k.Unique(u)
		}
		keys = append(keys, k.Job(id), k.Result(id), k.Garbage(id), ukey)
		if id == "" { // not a job: the script drops its lease, nothing to decide
			args = append(args, id, page.owners[i], "", 0, "", 1, 0)
			continue
		}
		verdict := decide(expiredJob(id, fields[i], pays[i], asked[i]))
		cancelRead := 0
		if asked[i] {
			cancelRead = 1
		}
		args = append(args, id, page.owners[i], fields[i]["a"], ms(verdict.RetryAt), verdict.Record, max(1, durMS(verdict.TTL)), cancelRead)
	}
	keys = append(keys, js.q.Ended.key(k))
	keys = append(keys, k.FlowKeys()...)
	// Retry-safe: a job is reaped only while its lease, attempts and group
	// expiry are as read above; the first run changed them.
	res, err := js.q.s.reap.Run(ctx, js.q.rdb, keys, args...).Result()
	if err != nil {
		return 0, 0, fmt.Errorf("reap route %s: %w", route, err)
	}
	replies, _ := res.([]any)
	for i, id := range page.ids {
		var o Ending
		if i < len(replies) {
			o = js.reapReply(route, replies[i])
		}
		if o != EndStale {
			out[id] = o
			page.left[page.owners[i]]--
		}
	}
	return page.kept(tokens), len(page.empty), nil
}

// pageLeases is what one page of expired groups holds, as read before the
// reap script runs.
type pageLeases struct {
	left   map[string]int // group token -> jobs leased in it
	ids    []string       // the jobs to reap, up to the budget
	owners []string       // the group token of each of ids
	empty  []any          // tokens of the groups that hold no job
}

// readPageLeases reads which jobs the expired groups tokens still lease and
// picks up to budget of them to reap.
func (js Jobs) readPageLeases(ctx context.Context, k Keys, route string, tokens []string, budget int) (pageLeases, error) {
	// The jobs still leased by the expired groups, read after the groups: a
	// group read first has all its leases by then (a fetch writes both at
	// once), so one found empty here is empty for good. Only groups whose
	// worker stopped renewing expire, so this read of every lease of the
	// route is rare.
	leases, err := js.q.rdb.HGetAll(ctx, k.Leases()).Result()
	if err != nil {
		return pageLeases{}, fmt.Errorf("read leases of route %s: %w", route, err)
	}
	page := pageLeases{left: make(map[string]int, len(tokens))}
	for _, t := range tokens {
		page.left[t] = 0
	}
	for id, t := range leases {
		if _, ok := page.left[t]; !ok {
			continue
		}
		// A group with a leased job is not empty, even when its job waits for
		// the next pass (over budget): dropping it would leave that job
		// leased to a group no reaper ever sees again.
		page.left[t]++
		if len(page.ids) < budget {
			page.ids, page.owners = append(page.ids, id), append(page.owners, t)
		}
	}
	for _, t := range tokens {
		if page.left[t] == 0 {
			page.empty = append(page.empty, t)
		}
	}
	return page, nil
}

// kept is how many of the groups tokens still lease a job.
func (p pageLeases) kept(tokens []string) int {
	kept := 0
	for _, t := range tokens {
		if p.left[t] > 0 {
			kept++
		}
	}
	return kept
}

// expiredJob is what decide is told of the expired job id: from its hash
// fields, or from its payload pay when its hash reads as no fields; asked is
// whether a cancel was requested while it ran.
func expiredJob(id string, fields map[string]string, pay *string, asked bool) Expired {
	e := Expired{ID: id, Name: fields["n"], Priority: Priority(fields["p"]), CreatedAt: parseMS(fields["c"]),
		Attempts: atoi(fields["a"]), MaxRetries: atoi(fields["m"])}
	e.Envelope, _ = decodeStored(id, fields)
	if pay != nil && len(fields) == 0 {
		var d Dispatch
		d.fillFromPayload(*pay)
		e = Expired{ID: id, Name: d.Name, Priority: d.Priority, CreatedAt: d.CreatedAt, MaxRetries: d.MaxRetries, Envelope: d.Envelope}
	}
	e.CancelRequested = asked
	return e
}

// readExpired reads the hashes, payloads and cancel requests of the jobs ids
// in one pipelined round trip. A job key that is not a hash reads as no
// fields (reap.lua sets it aside), a cancels set of another type as no
// request (reap.lua refuses it); only a failed round trip is an error.
func (js Jobs) readExpired(ctx context.Context, k Keys, ids []string) (fields []map[string]string, pays []*string, asked []bool, err error) {
	if len(ids) == 0 {
		return make([]map[string]string, 0), make([]*string, 0), make([]bool, 0), nil
	}
	pipe := js.q.rdb.Pipeline()
	jobs := readJobs(ctx, pipe, k, ids)
	cr := pipe.SMIsMember(ctx, k.Cancels(), members(ids)...)
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	if fields, pays, err = jobs(); err != nil {
		return nil, nil, nil, err
	}
	if asked, err = cancelsAsked(cr, len(ids)); err != nil {
		return nil, nil, nil, err
	}
	return fields, pays, asked, nil
}

// readJobs queues on pipe the reads of the hashes and payloads of the jobs
// ids, and returns what reads them once pipe ran: a job key that is not a
// hash reads as no fields; only a failed round trip is an error.
func readJobs(ctx context.Context, pipe redis.Pipeliner, k Keys, ids []string) func() ([]map[string]string, []*string, error) {
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, k.Job(id))
	}
	hm := pipe.HMGet(ctx, k.Payloads(), ids...)
	return func() ([]map[string]string, []*string, error) {
		fields, pays := make([]map[string]string, len(ids)), make([]*string, len(ids))
		for i, c := range cmds {
			if err := c.Err(); err != nil && !isReply(err) {
				return nil, nil, err
			}
			fields[i] = c.Val()
		}
		if err := hm.Err(); err != nil && !isReply(err) {
			return nil, nil, err
		}
		for i, v := range hm.Val() {
			if s, ok := v.(string); ok && i < len(pays) {
				pays[i] = &s
			}
		}
		return fields, pays, nil
	}
}

// cancelsAsked is which of n jobs have a cancel request, as cr (SMISMEMBER
// of the cancels set) answered: a cancels set of another type reads as no
// request (the scripts refuse it); only a failed round trip is an error.
func cancelsAsked(cr *redis.BoolSliceCmd, n int) ([]bool, error) {
	if err := cr.Err(); err != nil && !isReply(err) {
		return nil, err
	}
	asked := make([]bool, n)
	copy(asked, cr.Val())
	return asked, nil
}

// members is ids as the members of a set command.
func members(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// reapReply turns one job's reply of reap.lua into its outcome, warning of a
// bad entry with the script's reason.
func (js Jobs) reapReply(route string, r any) Ending {
	switch v := r.(type) {
	case int64:
		return Ending(v)
	case []any:
		if len(v) != 2 {
			return EndStale
		}
		code, _ := v[0].(int64)
		why, _ := v[1].(string)
		js.q.warn("bananas: reaper met a bad entry", "route", route, "why", why)
		return Ending(code)
	}
	return EndStale
}

// isReply reports whether err is the server's answer (WRONGTYPE, a script's
// error, a nil reply) rather than a failure to reach the server.
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}
