package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Ending is how a job's run ended: the one vocabulary of run ends, from
// the scripts that record them (fail.lua, reap.lua, requeue.lua answer with
// its numbers) up to the engine's job ends, the metrics, the workflows and
// the hooks (bananastype.JobEnd). EndStale (nothing changed), EndOrphan
// (only a lease released) and EndCorrupt (what Redis held of the job was
// garbage: set aside, the job dead-lettered as a stub) end no run that a
// worker tells of; each of the others ends one.
type Ending int

const (
	EndStale    Ending = 0 // the lease was no longer this dispatch's: nothing changed
	EndRetrying Ending = 1 // the run failed; the job is scheduled again for a retry
	EndDead     Ending = 2 // the run failed for good; the job is dead-lettered
	EndOrphan   Ending = 3 // the job hash was gone; only the lease was released
	// EndCorrupt (reap.go): dead-lettered because what Redis held of the job
	// was garbage.
	EndSnoozed Ending = 5 // rescheduled without counting a failure (Failure.Snooze, RetryAfter)
	// EndCanceled: the job was canceled while it ran, or its run was asked
	// to cancel and its worker died (Reap) or shut down (Requeue) before
	// acting on it: neither retried nor dead-lettered.
	EndCanceled   Ending = 6
	EndHandedBack Ending = 7 // back at the front of its ready list, no attempt counted (Requeue)
	EndCompleted  Ending = 8 // the run succeeded; its result record is stored (Ack)
)

var endings = [...]string{EndStale: "stale", EndRetrying: "retrying", EndDead: "dead", EndOrphan: "orphan", EndCorrupt: "corrupt",
	EndSnoozed: "snoozed", EndCanceled: "canceled", EndHandedBack: "handed back", EndCompleted: "completed"}

func (e Ending) String() string {
	if e >= 0 && int(e) < len(endings) {
		return endings[e]
	}
	return "unknown"
}

// Status is where the end left the job: completed, scheduled (retrying,
// snoozed), failed (dead), canceled, or pending (handed back); "" for the
// endings that end no run.
func (e Ending) Status() Status {
	switch e {
	case EndCompleted:
		return StatusCompleted
	case EndRetrying, EndSnoozed:
		return StatusScheduled
	case EndDead:
		return StatusFailed
	case EndCanceled:
		return StatusCanceled
	case EndHandedBack:
		return StatusPending
	}
	return ""
}

// Ack completes d: its result record is stored under its result key for ttl
// and published, what the job was is dropped, and its lease released. It
// reports false when the lease was lost (nothing changed). A ttl of 0 (or
// less) stores no record: the end is published and appended to the ended
// list as usual, and the job leaves nothing in Redis (Envelope.KeepNothing).
// Concurrent acks of one route are coalesced into one script call, which goes
// out on its own or with the route's next fetch, whichever comes first.
func (js Jobs) Ack(ctx context.Context, d *Dispatch, record []byte, ttl time.Duration) (bool, error) {
	ok, err := js.q.acks.do(ctx, d.Route, ackReq{d: d, record: record, ttl: ttl, finished: js.q.Now()})
	if err != nil {
		return false, fmt.Errorf("ack job %s: %w", d.ID, err)
	}
	return ok, nil
}

// AckAsync is Ack without the wait: done is called with Ack's answer (the
// error is the Redis call's, which carried other acks too) once the coalesced
// call that carries it returns, on the goroutine that made the call: the one
// flushing the acks, or a fetch they rode on. done must not block. A worker
// that does not wait for its acks has no goroutine to park and wake per job.
func (js Jobs) AckAsync(d *Dispatch, record []byte, ttl time.Duration, done func(ok bool, err error)) {
	js.q.acks.doAsync(d.Route, ackReq{d: d, record: record, ttl: ttl, finished: js.q.Now()}, done)
}

type ackReq struct {
	d        *Dispatch
	record   []byte
	ttl      time.Duration
	finished time.Time // when the handler returned, for the run-time buckets of the stats series
}

// ackMany runs ack.lua for a batch of one route.
func (js Jobs) ackMany(ctx context.Context, route string, reqs []ackReq) ([]bool, error) {
	keys, args := js.ackCall(route, reqs)
	// Retry-safe: fenced by each job's token, which the first run released.
	res, err := js.q.s.ack.Run(ctx, js.q.rdb, keys, args...).Result()
	if err != nil {
		return nil, err
	}
	return ackFlags(res, len(reqs)), nil
}

// ackCall is the keys and arguments of ack.lua for a batch of one route.
func (js Jobs) ackCall(route string, reqs []ackReq) (keys []string, args []any) {
	k := js.q.Keys(route)
	now := js.q.Now()
	keys = make([]string, 0, 6+2*len(reqs))
	keys = append(keys, k.Active(), k.Leases(), k.Stats(), k.Payloads(), k.Groups(), k.Series(HourOf(now)))
	for _, r := range reqs {
		keys = append(keys, k.Result(r.d.ID))
	}
	onlyHeard := 1 // standalone: PUBSUB NUMSUB sees every subscriber
	if js.q.cluster {
		onlyHeard = 0 // a subscriber may be on another node
	}
	// The stats series' time buckets, summed here so that the script adds a few
	// counts per call, not two per job: the wait of a first run (a retry's
	// wait is its backoff, not a backlog), and the run time. A stale ack's
	// times count too; stale acks are rare, and the buckets are for charts.
	var times timeBuckets
	for _, r := range reqs {
		times.add(r.d, r.finished)
	}
	buckets := times.args()
	args = make([]any, 0, 4+len(buckets)+5*len(reqs))
	args = append(args, resultChannelPrefix(js.q.ns), onlyHeard, ms(now), len(buckets)/2)
	args = append(args, buckets...)
	// Acks of one fetch share its token, and most share a TTL: each is boxed
	// once per call rather than once per job.
	var tok, ttl any
	var lastTok string
	var lastTTL int64
	for _, r := range reqs {
		jk := 0
		if !r.d.light || r.d.uniqueKey != "" {
			keys = append(keys, k.Job(r.d.ID))
			jk = len(keys) // Lua's 1-based index of the key just added
			// Its unique key follows, for the ack to free (a negated index says so).
			if r.d.uniqueKey != "" {
				keys = append(keys, k.Unique(r.d.uniqueKey))
				jk = -jk
			}
		}
		if tok == nil || r.d.Token != lastTok {
			tok, lastTok = r.d.Token, r.d.Token
		}
		if ms := recordTTL(r.ttl); ttl == nil || ms != lastTTL {
			ttl, lastTTL = ms, ms
		}
		args = append(args, r.d.ID, tok, r.record, ttl, jk)
	}
	keys = append(keys, js.q.Ended.key(k))
	keys = append(keys, k.FlowKeys()...)
	return keys, args
}

// recordTTL is ack.lua's result TTL argument for ttl: at least 1 ms for a
// record that is kept, however short, and 0 for none (KeepNothing).
func recordTTL(ttl time.Duration) int64 {
	if ttl <= 0 {
		return 0
	}
	return max(1, durMS(ttl))
}

// ackFlags turns ack.lua's reply into one flag per ack: completed or not.
func ackFlags(res any, n int) []bool {
	flags := ints(res)
	out := make([]bool, n)
	for i := range out {
		out[i] = i < len(flags) && flags[i] == 1
	}
	return out
}

// Failure says how a failed run ends.
type Failure struct {
	Message string
	RetryAt time.Time // when to run again if attempts allow
	Final   bool      // dead-letter now, whatever the attempts
	Snooze  bool      // reschedule for RetryAt without counting a failure (the handler asked to run later)
	Record  []byte    // the failure record stored if the job dies
	TTL     time.Duration
}

// Fail ends a failed run of d: retry at f.RetryAt while attempts allow, else
// dead-letter with f.Record stored and published.
func (js Jobs) Fail(ctx context.Context, d *Dispatch, f Failure, now time.Time) (Ending, error) {
	k := js.q.Keys(d.Route)
	keys := []string{k.Job(d.ID), k.Active(), k.Leases(), k.Scheduled(), k.Dead(), k.Result(d.ID), k.Stats(), k.Payloads(), k.Groups(),
		k.Series(HourOf(now)), k.Cancels(), js.q.Ended.key(k), d.uniqueOr(k, k.Job(d.ID))}
	keys = append(keys, k.FlowKeys()...)
	final := 0
	switch {
	case f.Final:
		final = 1
	case f.Snooze:
		final = 2
	}
	// Retry-safe: fenced by the dispatch's token, which the first run released.
	n, err := js.q.s.fail.Run(ctx, js.q.rdb, keys, d.ID, d.Token, ms(now), f.Message, ms(f.RetryAt), final,
		f.Record, max(1, durMS(f.TTL)), ResultChannel(js.q.ns, d.ID), ms(d.StartedAt()), ScheduleChannel(js.q.ns)).Int()
	if err != nil {
		return EndStale, fmt.Errorf("fail job %s: %w", d.ID, err)
	}
	return Ending(n), nil
}

// Requeue hands d back to the front of its ready list without counting an
// attempt (graceful shutdown): EndHandedBack, or EndStale when the lease was lost
// and EndOrphan when the job was gone. A job asked to cancel while it ran is
// not handed back but ends canceled (EndCanceled) as FinishCanceled ends
// it, with canceled, the caller's canceled record, stored for ttl; now is
// when, for the route's stats series.
func (js Jobs) Requeue(ctx context.Context, d *Dispatch, canceled []byte, ttl time.Duration, now time.Time) (Ending, error) {
	k := js.q.Keys(d.Route)
	keys := []string{k.Job(d.ID), k.Active(), k.Leases(), k.List(High), k.List(Normal), k.List(Low), k.Payloads(), k.Groups(),
		k.Cancels(), k.Result(d.ID), k.Stats(), k.Series(HourOf(now)), k.Idle(), js.q.Ended.key(k), d.uniqueOr(k, k.Job(d.ID))}
	keys = append(keys, k.FlowKeys()...)
	// Retry-safe: fenced by the dispatch's token, which the first run released.
	n, err := js.q.s.requeue.Run(ctx, js.q.rdb, keys, d.ID, d.Token, k.WakeChannel(),
		canceled, max(1, durMS(ttl)), ResultChannel(js.q.ns, d.ID), ms(now)).Int()
	if err != nil {
		return EndStale, fmt.Errorf("hand back job %s: %w", d.ID, err)
	}
	switch n {
	case 1:
		return EndHandedBack, nil
	case 3:
		return EndOrphan, nil
	case 6:
		return EndCanceled, nil
	}
	return EndStale, nil
}

// Renew extends the leases of running jobs of one route until until, and
// returns the dispatches whose lease was lost (the same job may run again
// elsewhere, or here, under a newer token: only these lost theirs).
func (js Jobs) Renew(ctx context.Context, route string, running []*Dispatch, until time.Time) ([]*Dispatch, error) {
	if len(running) == 0 {
		return nil, nil
	}
	k := js.q.Keys(route)
	args := make([]any, 0, 1+2*len(running))
	args = append(args, ms(until))
	for _, d := range running {
		args = append(args, d.ID, d.Token)
	}
	// Retry-safe: setting a deadline twice sets it once.
	res, err := js.q.s.renew.Run(ctx, js.q.rdb, []string{k.Active(), k.Leases()}, args...).Result()
	if err != nil {
		return nil, fmt.Errorf("renew leases on route %s: %w", route, err)
	}
	var lost []*Dispatch
	for _, i := range ints(res) {
		if i >= 1 && int(i) <= len(running) {
			lost = append(lost, running[i-1])
		}
	}
	return lost, nil
}

// timeBuckets sums the stats series' time buckets of a call's completions:
// the wait of a first run (a retry's wait is its backoff, not a backlog)
// and the run time of each.
type timeBuckets struct{ waits, runs [SeriesBuckets]int }

// add counts the completion at finished of the run of d.
func (b *timeBuckets) add(d *Dispatch, finished time.Time) {
	started := d.StartedAt()
	if d.Attempts == 0 && !d.CreatedAt.IsZero() {
		b.waits[SeriesBucket(started.Sub(d.CreatedAt))]++
	}
	b.runs[SeriesBucket(finished.Sub(started))]++
}

// args is the buckets as ack.lua and batch_ack.lua take them: pairs of a
// field (w<i> a wait, t<i> a run time) and its count, empty buckets left out.
func (b *timeBuckets) args() []any {
	var out []any
	for i := range SeriesBuckets {
		if b.waits[i] > 0 {
			out = append(out, "w"+strconv.Itoa(i), b.waits[i])
		}
		if b.runs[i] > 0 {
			out = append(out, "t"+strconv.Itoa(i), b.runs[i])
		}
	}
	return out
}
