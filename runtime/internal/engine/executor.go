package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
)

// executor runs fetched jobs, each on a runner, under its timeout, and
// records what each run came to.
type executor struct {
	cfg     *Config
	slots   *slots
	runs    *runs
	handoff chan *run     // a run to a runner waiting for one (see start)
	stopped chan struct{} // closed when the engine stops: idle runners exit
}

// lateHandler is how long past its timeout a handler may return before the
// worker says it ignores its context: a handler that honours it returns
// within a moment of the deadline.
const lateHandler = 100 * time.Millisecond

// startAll starts the jobs of one fetch, each in a slot the fetcher
// reserved. Jobs with the same timeout share a deadline and one timer
// (timeoutGroup); usually that is the whole batch.
func (x *executor) startAll(ds []*queue.Dispatch) {
	if len(ds) == 0 {
		return
	}
	now := time.Now()
	var groups []*timeoutGroup
	runs := make([]*run, len(ds))
	for i, d := range ds {
		timeout := time.Duration(d.Envelope.Timeout) * time.Millisecond
		if timeout <= 0 {
			timeout = x.cfg.JobTimeout
		}
		if len(x.cfg.Batches) > 0 {
			timeout += x.cfg.lingerOf(d.Name) // the wait for its batch to fill
		}
		k := slices.IndexFunc(groups, func(g *timeoutGroup) bool { return g.timeout == timeout })
		if k < 0 {
			k = len(groups)
			groups = append(groups, &timeoutGroup{timeout: timeout})
		}
		g := groups[k]
		r := &run{d: d, ctx: newJobCtx(now.Add(timeout), d.ID, x.cfg.JobKey, x.cfg.JobValue(d)), group: g,
			m: x.cfg.Metrics.For(d.Route, string(d.Priority), d.Name)}
		// A retry's wait is its backoff, which the histogram would take for
		// a backlog, so only first runs count; so does a job whose creation
		// time could not be read (garbage), which would be a wait of decades.
		if d.Attempts == 0 && !d.CreatedAt.IsZero() {
			r.m.Waited(d.StartedAt().Sub(d.CreatedAt))
		}
		g.runs = append(g.runs, r)
		runs[i] = r
	}
	// Tracked before any timer is armed: a timer that fires records the
	// timeout and then untracks the run, and an untrack before the track
	// would leave the run tracked for good (shutdown waiting on it). Timers
	// are armed before any run starts: the last run of a group to end stops
	// the group's timer.
	for _, r := range runs {
		x.runs.track(r)
	}
	for _, g := range groups {
		g.left.Store(int32(len(g.runs)))
		g.timer = time.AfterFunc(g.timeout, func() { x.expire(g) })
	}
	for _, r := range runs {
		x.start(r)
	}
}

// expire times out the runs of g whose outcome is not decided yet: their
// context ends with context.DeadlineExceeded and the timeout is recorded at
// once, whether or not the handler honours its context.
func (x *executor) expire(g *timeoutGroup) {
	for _, r := range g.runs {
		if r.decided.Load() {
			continue
		}
		r.ctx.cancel(context.DeadlineExceeded)
		go func() {
			if r.canceled() == nil && r.decided.CompareAndSwap(false, true) {
				x.fail(r, fmt.Sprintf("timed out after %s", g.timeout), false, 0)
			}
		}()
	}
}

// start runs r on a runner, holding the slot the fetcher reserved for it
// until its Exec returns. A runner that finished its job waits for the next
// one (handoff) instead of exiting, so a busy worker does not pay a
// goroutine per job — its creation, and the stack growth of every handler's
// first call — and a new runner starts only when none is waiting. There is
// a runner per job running or recording a failure (2×Concurrency at most:
// an ack is not waited for) plus those between two jobs, so never more than
// 4×Concurrency; they exit when the engine stops.
func (x *executor) start(r *run) {
	select {
	case x.handoff <- r:
	default:
		go x.runner(r)
	}
}

// runner runs r, then every run handed to it until the engine stops. An ack
// is not waited for: its callback ends the run, and the runner is free for
// the next job meanwhile.
func (x *executor) runner(r *run) {
	for {
		if !x.execute(r) {
			x.end(r)
		}
		select {
		case r = <-x.handoff:
		case <-x.stopped:
			return
		}
	}
}

// end gives back what r held once its outcome is recorded (or dropped): its
// record token when its slot was handed on, else its slot.
func (x *executor) end(r *run) {
	r.group.ended()
	r.ctx.cancel(context.Canceled)
	if r.handedOn {
		x.slots.returnToken()
		return
	}
	x.slots.release()
}

// execute runs r's Exec under its timeout and records the outcome. It
// returns only when Exec has returned, so a slot is never reused while a
// timed-out handler that ignores its context is still running. The timeout
// is recorded by expire the moment the deadline passes; whichever of the two
// decides r first wins (run.decided). It reports whether the outcome is
// still on its way (an ack: see ack), in which case its callback ends r.
func (x *executor) execute(r *run) (pending bool) {
	d := r.d
	log := jobLog{x.cfg.Logger, d}
	if d.BadEnvelope != nil {
		r.decided.Store(true)
		x.fail(r, fmt.Sprintf("cannot decode job: %v", d.BadEnvelope), true, 0)
		return false
	}
	if !x.cfg.handles(d.Name) {
		r.decided.Store(true)
		x.fail(r, fmt.Sprintf("no handler for task %q on worker %s (it handles: %v)", d.Name, x.cfg.ID, x.cfg.Tasks), false, 0)
		return false
	}
	log.Debug("bananas: job started")
	began := time.Now()
	o := x.cfg.Exec(r.ctx, d)
	r.handedOn = x.slots.handOn()
	r.m.Ran(time.Since(began))
	// A run of a batch joins its batch's record (together) or, its outcome
	// recorded elsewhere or dropped, leaves it.
	together, joins := x.settles(o), false
	if together {
		defer func() {
			if !joins {
				x.leave(o.Together)
			}
		}()
	}
	if !r.decided.CompareAndSwap(false, true) {
		// Timed out or canceled, already recorded. Go cannot stop a
		// goroutine: a handler that ignores its context keeps its slot
		// until it returns.
		if r.canceled() == errCanceled {
			return false
		}
		if late := time.Since(r.ctx.deadline); late >= lateHandler {
			x.cfg.Metrics.Overran(d.Name)
			log.Warn("bananas: handler returned long after its timeout, holding its slot meanwhile; handlers must return when their context ends",
				"timeout", r.group.timeout, "late", late.Round(time.Millisecond))
		}
		return false
	}
	if r.canceled() == nil && errors.Is(r.ctx.Err(), context.DeadlineExceeded) {
		// The handler returned at its deadline, before expire recorded it.
		x.fail(r, fmt.Sprintf("timed out after %s", r.group.timeout), false, 0)
		return false
	}
	if cause := r.canceled(); cause != nil {
		if cause == errCanceled {
			// Canceled as it returned: canceled it is, as the operator saw.
			x.finishCanceled(r)
			return false
		}
		log.Info("bananas: job result dropped", "why", cause)
		return false
	}
	if together {
		joins = true
		return x.together(r, o)
	}
	if o.Failed {
		x.fail(r, o.Message, o.Final, o.Snooze)
		return false
	}
	r.trail = o.Trail
	return x.ack(r, o.Result)
}

// ack records r's success. The ack is coalesced with others and not waited
// for (it reports true: pending): its callback, run by whoever completes the
// coalesced call, logs the answer, stops renewing r's lease and ends r.
func (x *executor) ack(r *run, result []byte) (pending bool) {
	d := r.d
	log := jobLog{x.cfg.Logger, d}
	if !r.recording.CompareAndSwap(false, true) {
		log.Info("bananas: job result dropped", "why", errHandedBack)
		return false
	}
	now := x.cfg.Queue.Now()
	encoded, err := x.completion(d, result, now)
	if err != nil {
		log.Warn("bananas: encode result record", "err", err)
		x.runs.untrack(r)
		return false
	}
	// No timeout of its own: acks are coalesced, and the shared Redis call is
	// bounded by the committer (10 s, as callTimeout); a timer and a context
	// per job here cost more than the rest of the ack.
	x.cfg.Queue.AckAsync(d, encoded, successTTL(d.Envelope.ResultTTL, x.cfg.ResultTTL), func(ok bool, err error) {
		switch {
		case err != nil:
			log.Warn("bananas: ack's outcome unknown (the Redis call failed); if it did not land, the job runs again when its lease expires", "err", err)
		case !ok:
			log.Warn("bananas: job finished but no longer leased to this run (its lease was lost, or a resent ack completed it already); this result not written")
		default:
			log.Debug("bananas: job succeeded", "took", now.Sub(d.StartedAt()).Round(time.Microsecond))
			end := x.cfg.completedEnd(d, result, encoded, now)
			end.Trail = r.trail
			x.cfg.tell(end)
		}
		x.runs.untrack(r)
		x.end(r)
	})
	return true
}

// completion is the result record of a run of d that succeeded with
// result at now.
func (x *executor) completion(d *queue.Dispatch, result []byte, now time.Time) ([]byte, error) {
	rec := recordOf(d)
	rec.OK, rec.Value, rec.FinishedAt, rec.Error = true, result, now.UnixMilli(), d.LastError
	x.cfg.stamp(&rec)
	return results.Encode(rec)
}

// fail records a failed run: a retry after the backoff while attempts
// allow, else (or when final) the dead-letter queue. A snooze
// (runtime.RetryAfter) reschedules the job that much later without counting
// a failure.
func (x *executor) fail(r *run, msg string, final bool, snooze time.Duration) {
	defer x.runs.untrack(r)
	d := r.d
	log := jobLog{x.cfg.Logger, d}
	if !r.recording.CompareAndSwap(false, true) {
		log.Info("bananas: job failure dropped", "why", errHandedBack, "failure", firstLine(msg))
		return
	}
	now := x.cfg.Queue.Now() // the retry's run-at is judged on Redis's clock
	f := x.failure(d, msg, final, snooze, now)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	out, err := x.cfg.Queue.Fail(ctx, d, f, now)
	x.failed(d, msg, f, out, err, now)
}

// failure is how a failed run of d ends (see fail), judged at now. Its
// Message is msg as stored (StoredError: sealed when the worker has keys).
func (x *executor) failure(d *queue.Dispatch, msg string, final bool, snooze time.Duration, now time.Time) queue.Failure {
	delay := x.cfg.RetryDelay(d.Envelope, d.Attempts+1)
	if snooze > 0 {
		delay = snooze
	}
	stored := msg
	if x.cfg.StoredError != nil {
		stored = x.cfg.StoredError(d.ID, msg)
	}
	rec := failureRecord(d, stored, now)
	x.cfg.stamp(&rec)
	encoded, _ := results.Encode(rec)
	return queue.Failure{
		Message: stored, RetryAt: now.Add(delay), Final: final, Snooze: snooze > 0, Record: encoded,
		TTL: ttlOr(d.Envelope.FailureTTL, x.cfg.FailureTTL),
	}
}

// failed tells and logs what recording failure f of d, whose message
// was msg, came to (out, err).
func (x *executor) failed(d *queue.Dispatch, msg string, f queue.Failure, out queue.Ending, err error, now time.Time) {
	log := jobLog{x.cfg.Logger, d}
	delay, attempts := f.RetryAt.Sub(now), d.Attempts+1
	// Not recorded (the write failed, or its lease was lost), nothing is
	// told: the reaper that recovers the job once its lease expires, or
	// recovered it already, records the failed attempt and tells its end.
	if err == nil && recordsFailure(out) {
		x.cfg.tell(x.cfg.failureEnd(d, out, msg, f.RetryAt, f.Record, now))
	}
	switch {
	case err != nil:
		log.Warn("bananas: recording a failure failed; the job will be recovered when its lease expires", "err", err, "failure", msg)
	case out == queue.EndSnoozed:
		log.Info("bananas: job asked to run again later; rescheduled, no failure counted", "retry_in", delay.Round(time.Millisecond))
	case out == queue.EndRetrying:
		log.Warn("bananas: job failed; retry scheduled", "err", firstLine(msg), "retry_in", delay.Round(time.Millisecond), "retries_left", d.MaxRetries-attempts)
	case out == queue.EndDead:
		log.Warn("bananas: job failed for good; moved to the dead-letter queue", "err", firstLine(msg), "attempts", attempts)
	case out == queue.EndStale:
		log.Warn("bananas: job failed after its lease was lost; failure discarded", "err", firstLine(msg))
	}
}

// cancelJob cancels the runs of job id on this worker, if any: their
// context ends with errCanceled as its cause, and the job is recorded as
// canceled at once (finishCanceled), whether or not the handler honours its
// context — as a timeout is.
func (x *executor) cancelJob(id string) {
	for _, r := range x.runs.of(id) {
		r.cancel(errCanceled)
		if r.canceled() == errCanceled && r.decided.CompareAndSwap(false, true) {
			go x.finishCanceled(r)
		}
	}
}

// finishCanceled records r's job as canceled: its record stored and
// announced (Await returns an error matching runtime.ErrJobCanceled), its
// lease released, no retry.
func (x *executor) finishCanceled(r *run) {
	defer x.runs.untrack(r)
	d := r.d
	log := jobLog{x.cfg.Logger, d}
	if !r.recording.CompareAndSwap(false, true) {
		log.Info("bananas: job cancel dropped", "why", errHandedBack)
		return
	}
	rec := recordOf(d)
	now := x.cfg.Queue.Now()
	rec.Error, rec.Canceled, rec.FinishedAt = "canceled while running", true, now.UnixMilli()
	x.cfg.stamp(&rec)
	encoded, _ := results.Encode(rec)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	ok, err := x.cfg.Queue.FinishCanceled(ctx, d, encoded, ttlOr(d.Envelope.FailureTTL, x.cfg.FailureTTL))
	switch {
	case err != nil:
		log.Warn("bananas: record of a canceled job failed; it runs again when its lease expires", "err", err)
	case !ok:
		log.Info("bananas: job cancel dropped", "why", "its lease was lost meanwhile")
	default:
		log.Info("bananas: job canceled while running")
		x.cfg.tell(x.cfg.canceledEnd(d, rec.Error, encoded, now))
	}
}

// successTTL is how long a success's record is kept: 0 (no record at all)
// for a job that keeps nothing (queue.KeepNothing), else as ttlOr.
func successTTL(ms int64, def time.Duration) time.Duration {
	if ms == queue.KeepNothing {
		return 0
	}
	return ttlOr(ms, def)
}

func ttlOr(ms int64, def time.Duration) time.Duration {
	if ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return def
}
