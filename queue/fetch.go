package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Dispatch is one job handed to a worker under a lease.
type Dispatch struct {
	ID, Route, Token string
	Name             string
	Priority         Priority
	Attempts         int // failed runs before this one
	MaxRetries       int
	CreatedAt        time.Time
	Envelope         Envelope
	// BadEnvelope is set when the stored job cannot be decoded; the job must be
	// dead-lettered with it (retrying cannot help).
	BadEnvelope error
	// LastError is the failure of the run before this one, if any.
	LastError string
	// FailedAt holds when the failed runs before this one ended, oldest
	// first: the last FailuresKept of them.
	FailedAt []time.Time
	// FailedStartedAt holds when each run of FailedAt started, in the same
	// order; the zero time where it was not kept.
	FailedStartedAt []time.Time
	// Earlier holds the lives the job had before it was replayed, as
	// replay.lua keeps them (ParseEarlierLife reads one), oldest first: its
	// result record carries them on.
	Earlier []string
	// Flow is the flow ("task|key", see flow.go) of a keyed job taken by
	// FetchBatch, which hands a batch handler one flow's jobs together; ""
	// for a job taken by any other fetch.
	Flow string
	// light: the job came with its payload (no hash of its own); ack.lua then
	// needs no job key for it.
	light bool
	// uniqueKey is the suffix of the unique key the job holds (its hash's
	// field u; "" for none), and uniqueUntil its field uu: the scripts that
	// end the job are given the key to free (see scripts/_unique.lua).
	uniqueKey, uniqueUntil string
}

// UniqueKey returns the suffix of the unique key the job was enqueued with
// (Keys.Unique names the key), or "".
func (d *Dispatch) UniqueKey() string { return d.uniqueKey }

// uniqueOr returns the key of the unique key d holds, or or when it holds
// none: a script's KEYS take the job's own key again in its place.
func (d *Dispatch) uniqueOr(k Keys, or string) string {
	if d.uniqueKey == "" {
		return or
	}
	return k.Unique(d.uniqueKey)
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
//
// When the call's outcome is unknown (no reply: a timeout, a cut connection)
// the error is a *LostFetch: jobs may be leased under its token that nobody
// will run, and the caller hands them back (HandBack). Jobs leased but whose
// hashes could not be read are handed back here, without counting an attempt.
func (js Jobs) Fetch(ctx context.Context, route string, priorities []Priority, n int, leaseUntil, now time.Time) ([]*Dispatch, error) {
	return js.FetchOrWait(ctx, route, priorities, n, leaseUntil, now, Waiter{})
}

// Waiter is a worker that waits for jobs of a route when a fetch finds
// fewer than it asked for: it is registered in the route's idle set
// (Keys.Idle) until Until, and the next job made ready there is announced
// on Channel (Keys.WakeChannelOf) to it alone. The zero Waiter registers
// nothing.
type Waiter struct {
	Channel string
	Until   time.Time
	// Due, when set, is told when the fetch left a flow held back by a limit
	// (see flow.go) and took fewer than n: the time that flow, or the route's
	// own rate, lets a job start, when the worker should fetch again
	// (nothing else wakes it then).
	Due func(at time.Time)
}

// FetchOrWait is Fetch that, when it takes fewer than n jobs, registers w
// in the same script: no job made ready after the fetch looked can miss
// the worker, and a push wakes only workers that wait.
func (js Jobs) FetchOrWait(ctx context.Context, route string, priorities []Priority, n int, leaseUntil, now time.Time, w Waiter) ([]*Dispatch, error) {
	keys := js.fetchKeys(route, priorities)
	if keys == nil || n < 1 {
		return nil, nil
	}
	token := fetchToken(now)
	args := []any{n, ms(leaseUntil), token, w.Channel, ms(w.Until), priorityDigits(priorities), ms(now)}
	var res any
	var err error
	// Retry-safe, alone or with the acks riding along (go-redis resends a
	// whole pipeline): fetch.lua answers a second run of one token with the
	// jobs the first leased, and ack.lua is fenced by each job's token.
	if acks := js.q.acks.ride(route); acks != nil {
		res, err = js.fetchWithAcks(ctx, route, keys, args, acks)
	} else {
		res, err = js.q.s.fetch.Run(ctx, js.q.rdb, keys, args...).Result()
	}
	if err != nil {
		return nil, lostOr(fmt.Errorf("fetch from route %s: %w", route, err), route, token, leaseUntil)
	}
	reply := strs(res)
	if at, ok := dueOf(reply); ok && w.Due != nil {
		w.Due(at)
	}
	return js.load(ctx, route, reply, leaseUntil, now)
}

// fetchKeys are fetch.lua's KEYS for route at priorities: nil when no
// priority is given.
func (js Jobs) fetchKeys(route string, priorities []Priority) []string {
	k := js.q.Keys(route)
	lists := k.Lists(priorities)
	if len(lists) == 0 {
		return nil
	}
	keys := append([]string{k.Active(), k.Leases(), k.Payloads(), k.Groups(), k.Paused(), k.Idle(), k.Expiry()}, lists...)
	return append(keys, k.FlowKeys()...)
}

// LostFetch is the error of a fetch or claim whose outcome is unknown: the
// script may have leased jobs under Token that the caller never heard of.
// Nobody would run them, and the reaper would count an attempt against each
// once the lease ran out; HandBack returns them to their lists instead.
type LostFetch struct {
	Route, Token string
	Until        time.Time // the lease deadline the call asked for
	// IDs, when set, are the only jobs to hand back: the call's reply came
	// and its other jobs are running. Nil means every job leased under Token.
	IDs []string
	Err error
	// offered are the canceled records a HandBack whose reply was lost
	// offered, by job id: a retry offers them again, so it reports the jobs
	// the lost run ended canceled (handback.lua finds their record stored).
	offered map[string]CanceledJob
}

func (e *LostFetch) Error() string { return e.Err.Error() }
func (e *LostFetch) Unwrap() error { return e.Err }

// lostOr wraps err in a *LostFetch unless it is the script's own refusal
// (its checks failed, and scripts write nothing before their checks pass).
// Any other error, an error reply included, leaves the outcome unknown:
// go-redis answers with its last attempt's error, and an earlier attempt may
// have run the script and lost its reply (READONLY, LOADING, TRYAGAIN after
// a timeout are what a failover looks like). Handing back a fetch that never
// ran finds nothing to hand back.
func lostOr(err error, route, token string, until time.Time) error {
	if refused(err) {
		return err
	}
	return &LostFetch{Route: route, Token: token, Until: until, Err: err}
}

// refused reports whether err is a script's refusal of its arguments or of
// what it found (every script's own errors start "bananas: ").
func refused(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && strings.Contains(err.Error(), "bananas: ")
}

// fetchWithAcks runs ack.lua for the acks riding along and fetch.lua in one
// pipelined round trip, answers the acks, and returns the fetch's reply. A
// script the server does not have cached (NOSCRIPT: nothing ran) is run
// again on its own, which loads it.
func (js Jobs) fetchWithAcks(ctx context.Context, route string, keys []string, args []any, acks *rider[string, ackReq, bool]) (any, error) {
	reqs := acks.ins()
	akeys, aargs := js.ackCall(route, reqs)
	pipe := js.q.rdb.Pipeline()
	ack := js.q.s.ack.EvalSha(ctx, pipe, akeys, aargs...)
	fetch := js.q.s.fetch.EvalSha(ctx, pipe, keys, args...)
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	if isNoScript(ack.Err()) {
		ack = js.q.s.ack.Run(ctx, js.q.rdb, akeys, aargs...)
	}
	if err := ack.Err(); err != nil {
		acks.finish(nil, err)
	} else {
		acks.finish(ackFlags(ack.Val(), len(reqs)), nil)
	}
	if isNoScript(fetch.Err()) {
		fetch = js.q.s.fetch.Run(ctx, js.q.rdb, keys, args...)
	}
	return fetch.Result()
}

func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// FetchTypes is Fetch for a worker that runs only some task names: it reads
// each list window by window from its head and claims the matching jobs, so
// the others stay queued for the workers that run them. It reads on past jobs
// it does not take, to the end of the list if need be: jobs nobody here runs
// must not hide the ones behind them.
func (js Jobs) FetchTypes(ctx context.Context, route string, priorities []Priority, types []string, n int, leaseUntil, now time.Time) ([]*Dispatch, error) {
	const window = 256
	k := js.q.Keys(route)
	out, err := js.fetchKeyedTypes(ctx, route, priorities, types, n, leaseUntil, now)
	if err != nil || len(out) >= n {
		return out, err
	}
	for _, list := range k.Lists(priorities) {
		for start := int64(0); len(out) < n; {
			ids, err := js.q.rdb.LRange(ctx, list, start, start+window-1).Result()
			if err != nil {
				return out, err
			}
			if len(ids) == 0 {
				break
			}
			keys := []string{list, k.Active(), k.Leases(), k.Payloads(), k.Groups(), k.Paused()}
			token := fetchToken(now)
			args := []any{n - len(out), ms(leaseUntil), token, len(types)}
			for _, t := range types {
				args = append(args, t)
			}
			for _, id := range ids {
				keys = append(keys, k.Job(id))
				args = append(args, id)
			}
			keys = append(keys, k.Expiry())
			args = append(args, ms(now))
			// Retry-safe: claim.lua answers a second run of one token with
			// the jobs the first claimed.
			res, err := js.q.s.claim.Run(ctx, js.q.rdb, keys, args...).Result()
			if err != nil {
				return out, lostOr(fmt.Errorf("claim from route %s: %w", route, err), route, token, leaseUntil)
			}
			reply := strs(res)
			if len(reply) == 1 { // the route is paused: nothing here to take
				return out, nil
			}
			got, err := js.load(ctx, route, reply, leaseUntil, now)
			out = append(out, got...)
			if err != nil {
				return out, err
			}
			if len(ids) < window {
				break
			}
			// The claimed ids left the window; the rest of it stays ahead.
			start += int64(len(ids) - len(got))
		}
	}
	return out, nil
}

// fetchKeyedTypes takes, for FetchTypes, up to n keyed jobs of the given
// task names from their flows (fetch.lua with the names: the ready lists
// are claim.lua's).
func (js Jobs) fetchKeyedTypes(ctx context.Context, route string, priorities []Priority, types []string, n int, leaseUntil, now time.Time) ([]*Dispatch, error) {
	keys := js.fetchKeys(route, priorities)
	if keys == nil || n < 1 {
		return nil, nil
	}
	token := fetchToken(now)
	args := []any{n, ms(leaseUntil), token, "", 0, priorityDigits(priorities), ms(now)}
	for _, t := range types {
		args = append(args, t)
	}
	// Retry-safe: fetch.lua answers a second run of one token with the jobs
	// the first leased.
	res, err := js.q.s.fetch.Run(ctx, js.q.rdb, keys, args...).Result()
	if err != nil {
		return nil, lostOr(fmt.Errorf("fetch keyed jobs from route %s: %w", route, err), route, token, leaseUntil)
	}
	return js.load(ctx, route, strs(res), leaseUntil, now)
}

// load turns the reply of fetch.lua or claim.lua (the call's token, then id
// and payload of each job) into dispatches: a light job from its payload, a
// job with a hash of its own from that hash, all such hashes read in one
// pipelined round trip. Entries the script dropped as garbage are reported.
// Jobs the script set aside expired are ended (endSetAside) as of now, the
// fetch's time. Jobs whose hash could not be read are handed back (HandBack) and left out;
// a job key that holds something else than a hash comes back with
// BadEnvelope set, to be dead-lettered.
func (js Jobs) load(ctx context.Context, route string, reply []string, until, now time.Time) ([]*Dispatch, error) {
	if len(reply) < 3 {
		return nil, nil
	}
	k := js.q.Keys(route)
	token := reply[0]
	out := make([]*Dispatch, 0, (len(reply)-1)/2)
	var pipe redis.Pipeliner
	var heavy []*Dispatch
	var cmds []*redis.MapStringStringCmd
	var lapsed []string        // set aside expired (expire.go)
	var startLight []*Dispatch // light jobs holding a key until they start
	defer func() {
		if len(lapsed) > 0 {
			js.endSetAside(ctx, route, lapsed, now)
		}
	}()
	for i := 1; i+1 < len(reply); i += 2 {
		if reply[i] == "" {
			if strings.HasPrefix(reply[i+1], dueMark) {
				continue
			}
			if id, ok := setAsideID(reply[i+1]); ok {
				lapsed = append(lapsed, id)
				continue
			}
			js.q.warn("bananas: dropped a ready-list entry that is not a job to run", "route", route, "why", reply[i+1])
			continue
		}
		d := &Dispatch{ID: reply[i], Token: token, Route: route}
		out = append(out, d)
		if reply[i+1] != "" {
			d.light = true
			d.fillFromPayload(reply[i+1])
			if d.uniqueUntil == "s" {
				startLight = append(startLight, d)
			}
			continue
		}
		if pipe == nil {
			pipe = js.q.rdb.Pipeline()
		}
		heavy = append(heavy, d)
		cmds = append(cmds, pipe.HGetAll(ctx, k.Job(d.ID)))
	}
	js.start(ctx, k, startLight)
	if pipe == nil {
		return out, nil
	}
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	var unread []*Dispatch
	for i, c := range cmds {
		d := heavy[i]
		if err := c.Err(); err != nil {
			if isWrongType(err) { // the key is not a job
				d.BadEnvelope = fmt.Errorf("job %s: its key cannot be read as a job: %w", d.ID, err)
				continue
			}
			unread = append(unread, d)
			continue
		}
		f := c.Val()
		d.Name, d.Priority = f["n"], Priority(f["p"])
		d.MaxRetries, d.Attempts = atoi(f["m"]), atoi(f["a"])
		d.CreatedAt, d.LastError = parseMS(f["c"]), f["err"]
		d.FailedAt, d.FailedStartedAt = failedAt(f, d.Attempts), failedStartedAt(f, d.Attempts)
		d.Earlier = earlierLives(f)
		d.Envelope, d.BadEnvelope = decodeStored(d.ID, f)
		d.uniqueKey, d.uniqueUntil = f["u"], f["uu"]
	}
	js.start(ctx, k, heavy)
	if len(unread) == 0 {
		return out, nil
	}
	read := out[:0]
	for _, d := range out {
		if !slices.Contains(unread, d) {
			read = append(read, d)
		}
	}
	ids := make([]string, len(unread))
	for i, d := range unread {
		ids[i] = d.ID
	}
	// The caller hands them back (HandBack): only these, and it decides the
	// end of those asked to cancel meanwhile.
	return read, &LostFetch{Route: route, Token: token, Until: until, IDs: ids,
		Err: fmt.Errorf("read leased jobs of route %s: %w", route, cmds[slices.Index(heavy, unread[0])].Err())}
}

// start frees, with started.lua, the unique keys that the jobs ds hold until
// their start, all in one pipelined round trip; jobs of no such key cost
// nothing. A failed call leaves the key with its job, which is leased: its
// end frees it (a completion always does), and so may its next start.
func (js Jobs) start(ctx context.Context, k Keys, ds []*Dispatch) {
	type call struct {
		keys []string
		d    *Dispatch
		cmd  *redis.Cmd
	}
	var calls []call
	pipe := js.q.rdb.Pipeline()
	for _, d := range ds {
		if d.uniqueKey == "" || d.uniqueUntil != "s" {
			continue
		}
		keys := []string{k.Leases(), k.Job(d.ID), k.Unique(d.uniqueKey), k.Payloads()}
		calls = append(calls, call{keys, d, js.q.s.started.EvalSha(ctx, pipe, keys, d.ID, d.Token)})
	}
	if len(calls) == 0 {
		return
	}
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	for _, c := range calls {
		// Retry-safe: a second run finds the key free or another job's.
		err := c.cmd.Err()
		if isNoScript(err) { // the script not loaded yet on this node: once, unpipelined
			err = js.q.s.started.Run(ctx, js.q.rdb, c.keys, c.d.ID, c.d.Token).Err()
		}
		if err != nil {
			js.q.warn("bananas: could not free a unique key held until its job started; the job's end frees it", "key", c.keys[2], "err", err)
		}
	}
}

// handBackMarked is how long past a lost fetch's lease deadline its token
// stays marked used (see handback.lua): far longer than a command held up in
// a stalled connection takes to be delivered or dropped.
const handBackMarked = 10 * time.Minute

// HandBack returns to the front of their lists, without counting an attempt,
// the jobs of a lost fetch still leased under its token (l.IDs, or all of
// them), and marks the token used until handBackMarked past its lease so that
// a late copy of the fetch takes nothing. A job asked to cancel while its
// fetch was lost is not handed back: it ends canceled, with the record and
// TTL that canceled returns for it (the caller builds every record a job
// ends with); now is when, for the route's stats series. Finding the token's jobs
// reads every lease of the route once, which only a lost fetch makes anyone
// do. Retry-safe: a second run finds nothing leased under the token, and
// when the first run's reply was lost (an error), a retry with the same l
// reports the jobs that run ended canceled.
func (js Jobs) HandBack(ctx context.Context, l *LostFetch, now time.Time, canceled func(Expired) Verdict) (LostHandBack, error) {
	ids := l.IDs
	if ids == nil {
		leases, err := js.q.rdb.HGetAll(ctx, js.q.Keys(l.Route).Leases()).Result()
		if err != nil {
			return LostHandBack{}, fmt.Errorf("hand back jobs of route %s: %w", l.Route, err)
		}
		for id, t := range leases {
			if t == l.Token {
				ids = append(ids, id)
			}
		}
		// Oldest first: ids from NewID sort by their millisecond. The
		// leases hash does not keep the fetch's order, so within a
		// millisecond the order is the ids'.
		slices.Sort(ids)
	}
	for id := range l.offered {
		if !slices.Contains(ids, id) {
			ids = append(ids, id) // ended canceled by a run whose reply was lost
		}
	}
	out, err := js.handBack(ctx, l, ids, now, canceled)
	if err != nil {
		return LostHandBack{}, fmt.Errorf("hand back jobs of route %s: %w", l.Route, err)
	}
	l.offered = nil
	return out, nil
}

// LostHandBack is what a HandBack did: how many jobs went back to their
// lists, and the jobs that ended canceled instead.
type LostHandBack struct {
	Back     int
	Canceled []CanceledJob
}

// CanceledJob is a job of a lost fetch that ended canceled on its
// hand-back, with the record it was given.
type CanceledJob struct {
	Expired
	Record []byte
	ttl    time.Duration
	ukey   string // the unique key it holds (read with its hash), or its job key
}

// handBack runs handback.lua for ids leased under l's token, with a
// canceled record for each job that has a cancel request, or that l offered
// one to in a run whose reply was lost. Only those jobs' hashes are read;
// a job that ends canceled frees the unique key its hash names (the others
// pass their job key again).
func (js Jobs) handBack(ctx context.Context, l *LostFetch, ids []string, now time.Time, canceled func(Expired) Verdict) (LostHandBack, error) {
	k := js.q.Keys(l.Route)
	verdicts, err := js.handBackVerdicts(ctx, k, l, ids, canceled)
	if err != nil {
		return LostHandBack{}, err
	}
	keys := make([]string, 0, 24+3*len(ids))
	keys = append(keys, k.Active(), k.Leases(), k.Payloads(), k.Groups(), k.List(High), k.List(Normal), k.List(Low),
		k.Cancels(), k.Stats(), k.Series(HourOf(now)))
	args := make([]any, 0, 5+3*len(ids))
	args = append(args, l.Token, ms(l.Until.Add(handBackMarked)), k.WakeChannel(), resultChannelPrefix(js.q.ns), ms(now))
	for i, id := range ids {
		ukey := k.Job(id)
		if c, ok := l.offered[id]; ok && c.ukey != "" {
			ukey = c.ukey
		}
		keys = append(keys, k.Job(id), k.Result(id), ukey)
		v := verdicts[i]
		args = append(args, id, v.Record, max(1, durMS(v.TTL)))
	}
	keys = append(keys, k.Idle(), js.q.Ended.key(k))
	keys = append(keys, k.FlowKeys()...)
	// Retry-safe: fenced by the token, which the first run released.
	res, err := js.q.s.handback.Run(ctx, js.q.rdb, keys, args...).Slice()
	if err != nil {
		return LostHandBack{}, err
	}
	var out LostHandBack
	if len(res) == 2 {
		n, _ := res[0].(int64)
		out.Back = int(n)
		ended, _ := res[1].([]any)
		for _, x := range ended {
			if id, ok := x.(string); ok {
				out.Canceled = append(out.Canceled, l.offered[id])
			}
		}
	}
	return out, nil
}

// handBackVerdicts is the verdict for each of ids: the canceled record l
// offered it in an earlier run, else, for a job with a cancel request,
// canceled's, which l keeps (offered) until a run's reply comes. It reads
// the cancel requests in one command, then only the asked jobs' hashes.
func (js Jobs) handBackVerdicts(ctx context.Context, k Keys, l *LostFetch, ids []string, canceled func(Expired) Verdict) ([]Verdict, error) {
	verdicts := make([]Verdict, len(ids))
	if len(ids) == 0 {
		return verdicts, nil
	}
	asked, err := cancelsAsked(js.q.rdb.SMIsMember(ctx, k.Cancels(), members(ids)...), len(ids))
	if err != nil {
		return nil, err
	}
	var read []string
	var at []int // read[j] is ids[at[j]]
	for i, id := range ids {
		if c, ok := l.offered[id]; ok {
			verdicts[i] = Verdict{Record: c.Record, TTL: c.ttl}
		} else if asked[i] && id != "" {
			read, at = append(read, id), append(at, i)
		}
	}
	if len(read) == 0 {
		return verdicts, nil
	}
	pipe := js.q.rdb.Pipeline()
	jobs := readJobs(ctx, pipe, k, read)
	_, _ = pipe.Exec(ctx) // each command's own error is read by jobs
	fields, pays, err := jobs()
	if err != nil {
		return nil, err
	}
	if l.offered == nil {
		l.offered = map[string]CanceledJob{}
	}
	for j, id := range read {
		e := expiredJob(id, fields[j], pays[j], true)
		v := canceled(e)
		verdicts[at[j]] = v
		ukey := k.Job(id)
		if u := uniqueHeld(fields[j], pays[j]); u != "" {
			ukey = k.Unique(u)
		}
		l.offered[id] = CanceledJob{Expired: e, Record: v.Record, ttl: v.TTL, ukey: ukey}
	}
	return verdicts, nil
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
