package queue

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrWrongState is wrapped by the error of an action on a job that is not in
// a state the action applies to (a delete of a running job, a cancel of a
// dead one); the message names the state.
var ErrWrongState = errors.New("job is in the wrong state")

// Pause stops every worker, in every process, from taking jobs of route (a
// route or one shard of it, see ShardNames):
// fetch.lua and claim.lua take nothing from a paused route, while enqueues go
// on and jobs already running finish. The route need not have had a job yet:
// a route can be paused before its first enqueue. Pausing a paused route
// changes nothing.
func (o Ops) Pause(ctx context.Context, route string) error {
	if err := CheckShardRoute(route); err != nil {
		return err
	}
	// Retry-safe: a second run finds the route paused.
	if err := o.q.s.pause.Run(ctx, o.q.rdb, []string{o.q.Keys(route).Paused()}, ms(o.q.Now())).Err(); err != nil {
		return fmt.Errorf("pause route %s: %w", route, err)
	}
	return nil
}

// Resume lets workers take jobs of route again, and wakes its idle workers so
// that they fetch at once. Resuming a route that is not paused changes
// nothing.
func (o Ops) Resume(ctx context.Context, route string) error {
	if err := CheckShardRoute(route); err != nil {
		return err
	}
	k := o.q.Keys(route)
	// Retry-safe: a second run finds nothing to resume and wakes nobody.
	if err := o.q.s.resume.Run(ctx, o.q.rdb, []string{k.Paused(), k.Idle()}, k.WakeChannel(), ms(o.q.Now())).Err(); err != nil {
		return fmt.Errorf("resume route %s: %w", route, err)
	}
	return nil
}

// PausedRoutes tells, for each of routes, whether it is paused, in one
// pipelined round trip: a worker asks it for the routes it serves.
func (o Ops) PausedRoutes(ctx context.Context, routes []string) (map[string]bool, error) {
	out := make(map[string]bool, len(routes))
	if len(routes) == 0 {
		return out, nil
	}
	pipe := o.q.rdb.Pipeline()
	for _, r := range routes {
		pipe.Exists(ctx, o.q.Keys(r).Paused())
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("read paused routes: %w", err)
	}
	for i, c := range cmds {
		n, _ := c.(interface{ Val() int64 })
		out[routes[i]] = n != nil && n.Val() > 0
	}
	return out, nil
}

// CancelOutcome is what Cancel did.
type CancelOutcome int

const (
	// Canceled: the job was waiting (pending or scheduled); it is gone and
	// its record stored and announced as its result.
	Canceled CancelOutcome = 1
	// CancelRequested: the job is running; the worker holding it is asked to
	// stop, and finishes it with FinishCanceled.
	CancelRequested CancelOutcome = 2
)

// Delete removes a pending or scheduled job for good: its id leaves its list
// or the scheduled set, and its payload or hash goes, counted as "deleted". A
// unique key the job holds until started or ended is freed with it (one held
// until completed stays for its TTL). A job in another state is an error
// wrapping ErrWrongState that names the state, and an unknown id ErrNotFound.
// Sent twice, the second call answers ErrNotFound: the first deleted the job.
func (js Jobs) Delete(ctx context.Context, id string) error {
	_, err := js.remove(ctx, id, "delete", nil, 0)
	return err
}

// Cancel cancels job id. A job waiting to run (pending or scheduled) is
// removed as Delete removes it, and record, opaque bytes made by the caller,
// becomes its result for ttl and is announced on its result channel so that
// waiters wake (Canceled, counted as "canceled"). A running job is left to the
// worker holding it: its id joins the route's cancels set and is published
// on the route's cancel channel (CancelRequested); the worker finishes it with
// FinishCanceled. The request stands for that run: a job that ends otherwise
// first (completed, failed, lease lost) drops it (see CancelRequests). A dead
// or completed job is an error wrapping ErrWrongState that names the state,
// and an unknown id ErrNotFound.
func (js Jobs) Cancel(ctx context.Context, id string, record []byte, ttl time.Duration) (CancelOutcome, error) {
	return js.remove(ctx, id, "cancel", record, ttl)
}

// Outcomes of remove.lua.
const (
	removeRefused   = 0
	removed         = 1
	removeRequested = 2
)

// remove runs remove.lua for Delete ("delete") and Cancel ("cancel").
func (js Jobs) remove(ctx context.Context, id, mode string, record []byte, ttl time.Duration) (CancelOutcome, error) {
	route, err := js.q.RouteOfJob(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("%s job %s: %w", mode, id, err)
	}
	k := js.q.Keys(route)
	now := js.q.Now()
	keys := []string{k.Job(id), k.Payloads(), k.List(High), k.List(Normal), k.List(Low), k.Scheduled(),
		k.Leases(), k.Dead(), k.Result(id), k.Stats(), k.Cancels(), k.Series(HourOf(now)), js.q.Ended.key(k), js.uniqueOf(ctx, k, id)}
	keys = append(keys, k.FlowKeys()...)
	args := []any{id, mode, "", 0, "", "", ms(now)}
	if mode == "cancel" {
		args = []any{id, mode, record, max(1, durMS(ttl)), ResultChannel(js.q.ns, id), k.CancelChannel(), ms(now)}
	}
	// Retry-safe: a second run finds the job gone (a cancel finds its own
	// record) or the cancel request already made.
	res, err := js.q.s.remove.Run(ctx, js.q.rdb, keys, args...).Slice()
	if err != nil {
		return 0, fmt.Errorf("%s job %s: %w", mode, id, err)
	}
	if len(res) != 2 {
		return 0, fmt.Errorf("%s job %s: remove.lua replied %v", mode, id, res)
	}
	code, _ := res[0].(int64)
	state, _ := res[1].(string)
	switch {
	case code == removed:
		return Canceled, nil
	case code == removeRequested:
		return CancelRequested, nil
	case code == removeRefused && state == "":
		return 0, fmt.Errorf("%s job %s: %w", mode, id, ErrNotFound)
	case code == removeRefused:
		return 0, fmt.Errorf("%w: cannot %s job %s: it is %s", ErrWrongState, mode, id, stateWords[state])
	}
	return 0, fmt.Errorf("%s job %s: remove.lua answered %d", mode, id, code)
}

// uniqueOf reads the unique key job id holds (uniqueHeld), for a script
// that may free it, and returns its key, or the job's own key when it holds
// none or the read fails (the script then frees nothing, and the key's TTL
// ends it).
func (js Jobs) uniqueOf(ctx context.Context, k Keys, id string) string {
	return js.uniquesOf(ctx, k, []string{id})[0]
}

// stateWords says remove.lua's states of a job it refused.
var stateWords = map[string]string{
	"processing": "processing",
	"dead":       "dead-lettered",
	"completed":  "completed",
	"stranded":   "in no ready list although it is stored (garbage in Redis)",
}

// FinishCanceled ends d, a running job whose cancellation its worker
// honoured: as Ack does, fenced by d's lease token, its record (the caller's
// "canceled" result) is stored for ttl and announced, its lease released and
// what the job was dropped; its cancel request goes, and it is counted as
// "canceled". It reports false when the lease was lost (nothing changed).
func (js Jobs) FinishCanceled(ctx context.Context, d *Dispatch, record []byte, ttl time.Duration) (bool, error) {
	k := js.q.Keys(d.Route)
	now := js.q.Now()
	keys := []string{k.Active(), k.Leases(), k.Stats(), k.Payloads(), k.Groups(), k.Result(d.ID), k.Job(d.ID), k.Cancels(), k.Series(HourOf(now)), js.q.Ended.key(k), d.uniqueOr(k, k.Job(d.ID))}
	keys = append(keys, k.FlowKeys()...)
	// Retry-safe: fenced by the dispatch's token, which the first run released.
	n, err := js.q.s.canceled.Run(ctx, js.q.rdb, keys, d.ID, d.Token, record, max(1, durMS(ttl)), ResultChannel(js.q.ns, d.ID), ms(now)).Int()
	if err != nil {
		return false, fmt.Errorf("finish canceled job %s: %w", d.ID, err)
	}
	return n == 1, nil
}

// CancelRequests returns which of ids, jobs of route running here, have a
// cancel request. Workers ask at each lease renewal, having missed a message
// on the cancel channel or not; the call also drops every request of the
// route whose job is no longer leased (it ended otherwise), which is what
// keeps the cancels set from outliving its jobs.
func (js Jobs) CancelRequests(ctx context.Context, route string, ids []string) ([]string, error) {
	k := js.q.Keys(route)
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	// Retry-safe: a second run finds nothing left to drop.
	res, err := js.q.s.cancels.Run(ctx, js.q.rdb, []string{k.Cancels(), k.Leases()}, args...).Result()
	if err != nil {
		return nil, fmt.Errorf("read cancel requests of route %s: %w", route, err)
	}
	return strs(res), nil
}
