package queue

import (
	"context"
	"fmt"
	"time"
)

// batchAck is scripts/batch_ack.lua (SettleBatch).
var batchAck = newScript("batch_ack")

// BatchEnd is how one run of a batch (runtime.HandleBatch) ended, for
// SettleBatch: completed with Record (stored for TTL; 0 stores none, as
// Ack), or failed as Failure says (as Fail).
type BatchEnd struct {
	D        *Dispatch
	Record   []byte
	TTL      time.Duration
	Failure  *Failure  // nil: the run completed
	Finished time.Time // when the handler returned, for the run-time buckets of the stats series
}

// SettleBatch records the ends of a batch's runs together: one script call
// per route among them (a batch's jobs share their route, but for a task
// whose route is sharded), each job settled as Ack or Fail settles it, with
// its own record, attempts and ending. It returns each end's Ending, in
// order: EndCompleted, EndRetrying, EndDead, EndSnoozed, EndOrphan (the job
// was gone: its lease released), or EndStale (the lease was no longer the
// run's, or the job's key held garbage, left leased for the reaper:
// nothing written).
//
// When err is not nil the outcome of the failed call's ends is unknown:
// their leases expire, and the reaper recovers whatever did not land.
func (js Jobs) SettleBatch(ctx context.Context, ends []BatchEnd, now time.Time) ([]Ending, error) {
	out := make([]Ending, len(ends))
	var routes []string
	byRoute := map[string][]int{}
	for i, e := range ends {
		if byRoute[e.D.Route] == nil {
			routes = append(routes, e.D.Route)
		}
		byRoute[e.D.Route] = append(byRoute[e.D.Route], i)
	}
	for _, route := range routes {
		at := byRoute[route]
		part := make([]BatchEnd, len(at))
		for j, i := range at {
			part[j] = ends[i]
		}
		got, err := js.settleRoute(ctx, route, part, now)
		if err != nil {
			return out, fmt.Errorf("settle a batch of %d jobs on route %s: %w", len(part), route, err)
		}
		for j, i := range at {
			if j < len(got) {
				out[i] = got[j]
			}
		}
	}
	return out, nil
}

// settleRoute settles ends of one route in one script call. A batch whose
// runs all completed, the common case, goes through ack.lua, which takes
// five arguments and one key per job where batch_ack.lua, which can also
// fail a job, takes nine and three: completing the same jobs costs Redis
// less (BenchmarkFetchSettleBatch). Both are fenced by each job's token,
// which the first run released, so either is harmless twice.
func (js Jobs) settleRoute(ctx context.Context, route string, ends []BatchEnd, now time.Time) ([]Ending, error) {
	completions := make([]ackReq, 0, len(ends))
	for _, e := range ends {
		if e.Failure != nil {
			break
		}
		completions = append(completions, ackReq{d: e.D, record: e.Record, ttl: e.TTL, finished: e.Finished})
	}
	out := make([]Ending, len(ends))
	if len(completions) == len(ends) {
		flags, err := js.ackMany(ctx, route, completions)
		if err != nil {
			return nil, err
		}
		for i, ok := range flags {
			if ok {
				out[i] = EndCompleted
			}
		}
		return out, nil
	}
	keys, args := js.batchAckCall(route, ends, now)
	res, err := batchAck.Run(ctx, js.q.rdb, keys, args...).Result()
	if err != nil {
		return nil, err
	}
	for i, v := range ints(res) {
		if i < len(out) {
			out[i] = Ending(v)
		}
	}
	return out, nil
}

// batchAckCall is the keys and arguments of batch_ack.lua for ends of one
// route.
func (js Jobs) batchAckCall(route string, ends []BatchEnd, now time.Time) (keys []string, args []any) {
	k := js.q.Keys(route)
	keys = make([]string, 0, 22+3*len(ends))
	keys = append(keys, k.Active(), k.Leases(), k.Stats(), k.Payloads(), k.Groups(), k.Series(HourOf(now)),
		k.Scheduled(), k.Dead(), k.Cancels(), js.q.Ended.key(k))
	onlyHeard := 1 // standalone: PUBSUB NUMSUB sees every subscriber
	if js.q.cluster {
		onlyHeard = 0 // a subscriber may be on another node
	}
	// The completed runs' waits (first runs only: a retry's wait is its
	// backoff) and run times, summed into the stats series' buckets as
	// ackCall sums them.
	var times timeBuckets
	for _, e := range ends {
		if e.Failure == nil {
			times.add(e.D, e.Finished)
		}
	}
	buckets := times.args()
	args = make([]any, 0, 5+len(buckets)+9*len(ends))
	args = append(args, resultChannelPrefix(js.q.ns), onlyHeard, ms(now), ScheduleChannel(js.q.ns), len(buckets)/2)
	args = append(args, buckets...)
	for _, e := range ends {
		d := e.D
		job := k.Job(d.ID)
		keys = append(keys, k.Result(d.ID), job, d.uniqueOr(k, job))
		how, record, ttl, light, msg, retryAt := "c", e.Record, recordTTL(e.TTL), 0, "", int64(0)
		if d.light {
			light = 1
		}
		if f := e.Failure; f != nil {
			how, record, ttl, msg, retryAt = "r", f.Record, max(1, durMS(f.TTL)), f.Message, ms(f.RetryAt)
			switch {
			case f.Final:
				how = "d"
			case f.Snooze:
				how = "s"
			}
		}
		args = append(args, d.ID, d.Token, how, record, ttl, light, msg, retryAt, ms(d.StartedAt()))
	}
	keys = append(keys, k.FlowKeys()...)
	return keys, args
}
