package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/internal/metrics"
)

// run is one dispatched job on this worker.
type run struct {
	d        *queue.Dispatch
	ctx      *jobCtx               // the handler's context
	group    *timeoutGroup         // the runs fetched with it that share its timeout, and so its deadline
	cause    atomic.Pointer[error] // why the run was canceled, if it was
	settled  atomic.Bool           // its outcome is decided: by the handler's return or by its timeout, whichever comes first
	settling atomic.Bool           // its outcome is being written, or shutdown handed it back: set once, by whichever comes first
	freed    bool                  // its slot was handed on when the handler returned (see freeSlot)
	m        *metrics.Series       // its job's metrics, resolved once at start
}

// Causes with which a run's context is canceled when the job is no longer this
// worker's to finish: whatever the handler returns then is not written.
var (
	errLeaseLost = errors.New("bananas: lease lost")
	errHandedBck = errors.New("bananas: handed back at shutdown")
	// errCanceled: an operator canceled the job (Inspector.Cancel); the
	// worker records it as canceled at once, without a retry.
	errCanceled = errors.New("bananas: job canceled")
)

// lateHandler is how long past its timeout a handler may return before the
// worker says it ignores its context: a handler that honours it returns
// within a moment of the deadline.
const lateHandler = 100 * time.Millisecond

// settleTimeout bounds the Redis calls that record a run's outcome.
const settleTimeout = 10 * time.Second

// cancel cancels r's handler context because the job is no longer this
// worker's to finish (errLeaseLost, errHandedBck); whatever the handler
// returns then is not written.
func (r *run) cancel(cause error) {
	r.cause.CompareAndSwap(nil, &cause)
	r.ctx.cancel(context.Canceled)
}

// canceled is the cause given to cancel, or nil.
func (r *run) canceled() error {
	if p := r.cause.Load(); p != nil {
		return *p
	}
	return nil
}

// startAll starts the jobs of one fetch, each in a slot fetchLoop reserved.
// Jobs with the same timeout share a deadline and one timer (timeoutGroup);
// usually that is the whole batch.
func (w *Worker) startAll(ds []*queue.Dispatch) {
	if len(ds) == 0 {
		return
	}
	now := time.Now()
	var groups []*timeoutGroup
	runs := make([]*run, len(ds))
	for i, d := range ds {
		timeout := time.Duration(d.Envelope.Timeout) * time.Millisecond
		if timeout <= 0 {
			timeout = w.opts.JobTimeout
		}
		k := slices.IndexFunc(groups, func(g *timeoutGroup) bool { return g.timeout == timeout })
		if k < 0 {
			k = len(groups)
			groups = append(groups, &timeoutGroup{timeout: timeout})
		}
		g := groups[k]
		job := Job{ID: d.ID, Name: d.Name, Route: d.Route, Priority: Priority(d.Priority), Attempt: d.Attempts + 1}
		r := &run{d: d, ctx: newJobCtx(now.Add(timeout), job), group: g, m: w.c.metrics.For(d.Route, d.Priority, d.Name)}
		observeWait(r)
		g.runs = append(g.runs, r)
		runs[i] = r
	}
	// Tracked before any timer is armed: a timer that fires records the
	// timeout and then untracks the run, and an untrack before the track
	// would leave the run tracked for good (shutdown waiting on it). The
	// window was a Fail round trip wide, against a loop of microseconds,
	// but only this order closes it. Timers are armed before any run
	// starts: the last run of a group to end stops the group's timer.
	for _, r := range runs {
		w.track(r)
	}
	for _, g := range groups {
		g.left.Store(int32(len(g.runs)))
		g.timer = time.AfterFunc(g.timeout, func() { w.expire(g) })
	}
	for _, r := range runs {
		w.start(r)
	}
}

// expire times out the runs of g whose outcome is not decided yet: their
// context ends with context.DeadlineExceeded and the timeout is recorded at
// once, whether or not the handler honours its context.
func (w *Worker) expire(g *timeoutGroup) {
	for _, r := range g.runs {
		if r.settled.Load() {
			continue
		}
		r.ctx.cancel(context.DeadlineExceeded)
		go func() {
			if r.canceled() == nil && r.settled.CompareAndSwap(false, true) {
				w.failRun(r, jobLog{w.opts.Logger, r.d}, fmt.Sprintf("timed out after %s", g.timeout), false, 0)
			}
		}()
	}
}

// start runs r on a runner, holding the slot fetchLoop reserved for it until
// its handler returns. A runner that finished its job waits for the next one
// (handoff) instead of exiting, so a busy worker does not pay a goroutine per
// job — its creation, and the stack growth of every handler's first call —
// and a new runner starts only when none is waiting. There is a runner per
// job running or recording a failure (2×Concurrency at most: an ack is not
// waited for) plus those between two jobs, so never more than
// 4×Concurrency; they exit when Run returns.
func (w *Worker) start(r *run) {
	select {
	case w.handoff <- r:
	default:
		go w.runner(r)
	}
}

// runner runs r, then every run handed to it until the worker stops.
func (w *Worker) runner(r *run) {
	for {
		w.runJob(r)
		select {
		case r = <-w.handoff:
		case <-w.stopped:
			return
		}
	}
}

// runJob runs r and gives its slot back (or its settling token, when the
// slot was handed on early: see freeSlot) once r's outcome is recorded. An
// ack is not waited for: its callback ends the run, and the runner is free
// for the next job meanwhile.
func (w *Worker) runJob(r *run) {
	if w.execute(r) {
		return
	}
	w.endRun(r)
}

// endRun gives back what r held once its outcome is recorded (or dropped).
func (w *Worker) endRun(r *run) {
	r.group.ended()
	r.ctx.cancel(context.Canceled)
	if r.freed {
		<-w.settling
		return
	}
	w.slotReleased()
}

// freeSlot hands r's slot to the next job once its handler has returned, so
// the next fetch does not wait for r's outcome to reach Redis: with fast
// handlers the ack's round trip, not the handler, would otherwise bound a
// worker's throughput. r takes a settling token instead (at most Concurrency
// outcomes in flight); when none is free, r keeps its slot until it is
// recorded, as before.
func (w *Worker) freeSlot(r *run) {
	select {
	case w.settling <- struct{}{}:
	default:
		return
	}
	r.freed = true
	w.slotReleased()
}

// slotReleased gives back a slot and wakes fetchLoop if it waits for as many
// free slots as there are now (wantFree): with fast handlers a wake per job,
// each only to count the slots and wait again, was a park and a wake-up per
// job. fetchLoop stores wantFree before it counts the free slots and parks;
// this gives the slot back, then loads wantFree. Both are atomics, so one of
// the two sees the other: no wake-up is lost.
func (w *Worker) slotReleased() {
	if int32(w.opts.Concurrency)-w.held.Add(-1) >= w.wantFree.Load() {
		notify(w.slotFreed)
	}
}

// outcome is what a handler returned.
type outcome struct {
	result []byte
	err    error
}

// execute runs the handler of r under its timeout and records the outcome. It
// returns only when the handler has returned, so a slot is never reused while
// a timed-out handler that ignores its context is still running. The timeout
// is recorded by expire the moment the deadline passes; whichever of the
// two settles r first wins (run.settled). It reports whether the outcome is
// still on its way (an ack: see ackRun), in which case its callback ends r.
func (w *Worker) execute(r *run) (pending bool) {
	d := r.d
	log := jobLog{w.opts.Logger, d}
	if d.BadEnvelope != nil {
		r.settled.Store(true)
		w.failRun(r, log, fmt.Sprintf("cannot decode job: %v", d.BadEnvelope), true, 0)
		return false
	}
	h := w.handlers[d.Name]
	if h == nil {
		r.settled.Store(true)
		w.failRun(r, log, fmt.Sprintf("no handler for task %q on worker %s (it handles: %v)", d.Name, w.id, w.Tasks()), false, 0)
		return false
	}

	log.Debug("bananas: job started")
	began := time.Now()
	o := runHandler(r.ctx, h, d.Envelope.Args, w.middleware, r.ctx.job)
	w.freeSlot(r)
	r.m.Ran(time.Since(began))
	if !r.settled.CompareAndSwap(false, true) {
		// Timed out or canceled, already recorded. Go cannot stop a
		// goroutine: a handler that ignores its context keeps its slot
		// until it returns.
		if r.canceled() == errCanceled {
			return false
		}
		if late := time.Since(r.ctx.deadline); late >= lateHandler {
			w.c.metrics.Overran(d.Name)
			log.Warn("bananas: handler returned long after its timeout, holding its slot meanwhile; handlers must return when their context ends",
				"timeout", r.group.timeout, "late", late.Round(time.Millisecond))
		}
		return false
	}
	if r.canceled() == nil && errors.Is(r.ctx.Err(), context.DeadlineExceeded) {
		// The handler returned at its deadline, before expire recorded it.
		w.failRun(r, log, fmt.Sprintf("timed out after %s", r.group.timeout), false, 0)
		return false
	}
	if cause := r.canceled(); cause != nil {
		if cause == errCanceled {
			// Canceled as it returned: canceled it is, as the operator saw.
			w.finishCanceled(r)
			return false
		}
		log.Info("bananas: job result dropped", "why", cause)
		return false
	}
	if o.err != nil {
		var de *decodeError
		var ra *retryAfter
		if errors.As(o.err, &ra) {
			w.failRun(r, log, errorText(o.err), false, max(ra.d, time.Millisecond))
			return false
		}
		w.failRun(r, log, errorText(o.err), errors.As(o.err, &de) || errors.Is(o.err, SkipRetry), 0)
		return false
	}
	if err := checkPayload("result of ", d.Name, len(o.result), w.c.maxPayload); err != nil {
		w.failRun(r, log, err.Error(), true, 0)
		return false
	}
	return w.ackRun(r, log, o.result)
}

// runHandler calls the handler through the worker's middleware, turning a
// panic into a failure with its stack.
func runHandler(ctx context.Context, h *handler, args []byte, mw Middleware, job Job) (o outcome) {
	defer func() {
		if p := recover(); p != nil {
			o = outcome{err: fmt.Errorf("panic: %v\n%s", p, debug.Stack())}
		}
	}()
	return callHandler(ctx, h, args, mw, job)
}

// cancelJob cancels the runs of job id on this worker, if any: their
// context ends with errCanceled as its cause, and the job is recorded as
// canceled at once (finishCanceled), whether or not the handler honours its
// context — as a timeout is.
func (w *Worker) cancelJob(id string) {
	w.mu.Lock()
	var runs []*run
	for r := range w.running {
		if r.d.ID == id {
			runs = append(runs, r)
		}
	}
	w.mu.Unlock()
	for _, r := range runs {
		r.cancel(errCanceled)
		if r.canceled() == errCanceled && r.settled.CompareAndSwap(false, true) {
			go w.finishCanceled(r)
		}
	}
}

// finishCanceled records r's job as canceled: its record stored and
// announced (Await returns an error matching ErrJobCanceled), its lease
// released, no retry.
func (w *Worker) finishCanceled(r *run) {
	defer w.untrack(r)
	d := r.d
	log := jobLog{w.opts.Logger, d}
	if !r.settling.CompareAndSwap(false, true) {
		log.Info("bananas: job cancel dropped", "why", errHandedBck)
		return
	}
	now := w.c.q.Now()
	rec := recordOf(d.ID, d.Name, d.Priority, d.CreatedAt, d.MaxRetries, d.Envelope)
	rec.Error, rec.Canceled, rec.Attempts, rec.FinishedAt, rec.StartedAt = "canceled while running", true, d.Attempts, now.UnixMilli(), unixMS(d.StartedAt())
	rec.FailedAt = failedAtMS(d.FailedAt)
	encoded, _ := results.Encode(rec)
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	ok, err := w.c.q.FinishCanceled(ctx, d, encoded, ttlOr(d.Envelope.FailureTTL, w.opts.FailureTTL))
	switch {
	case err != nil:
		log.Warn("bananas: record of a canceled job failed; it runs again when its lease expires", "err", err)
	case !ok:
		log.Info("bananas: job cancel dropped", "why", "its lease was lost meanwhile")
	default:
		r.m.Canceled()
		log.Info("bananas: job canceled while running")
	}
}

// recordOf starts the record a finished job leaves: what the job was, as
// enqueued, so that `job ID` shows it after its hash is gone.
func recordOf(id, name, priority string, created time.Time, maxRetries int, e queue.Envelope) results.Record {
	return results.Record{
		ID: id, Name: name, Priority: priority, CreatedAt: unixMS(created),
		Args: e.Args, MaxRetries: maxRetries, Timeout: e.Timeout, Description: e.Description,
	}
}

// ackRun records r's success. The ack is coalesced with others and not
// waited for (it reports true: pending): its callback, run by whoever
// completes the coalesced call, logs the answer, stops renewing r's lease
// and ends r (endRun).
func (w *Worker) ackRun(r *run, log jobLog, result []byte) (pending bool) {
	if !r.settling.CompareAndSwap(false, true) {
		log.Info("bananas: job result dropped", "why", errHandedBck)
		return false
	}
	d := r.d
	now := w.c.q.Now()
	rec := recordOf(d.ID, d.Name, d.Priority, d.CreatedAt, d.MaxRetries, d.Envelope)
	rec.OK, rec.Value, rec.Attempts, rec.FinishedAt, rec.Error = true, result, d.Attempts, now.UnixMilli(), d.LastError
	rec.StartedAt, rec.FailedAt = unixMS(d.StartedAt()), failedAtMS(d.FailedAt)
	encoded, err := results.Encode(rec)
	if err != nil {
		log.Warn("bananas: encode result record", "err", err)
		w.untrack(r)
		return false
	}
	// No timeout of its own: acks are coalesced, and the shared Redis call is
	// bounded by the committer (10 s, as settleTimeout); a timer and a context
	// per job here cost more than the rest of the ack.
	w.c.q.AckAsync(d, encoded, ttlOr(d.Envelope.ResultTTL, w.opts.ResultTTL), func(ok bool, err error) {
		switch {
		case err != nil:
			log.Warn("bananas: ack's outcome unknown (the Redis call failed); if it did not land, the job runs again when its lease expires", "err", err)
		case !ok:
			log.Warn("bananas: job finished but no longer leased to this run (its lease was lost, or a resent ack completed it already); this result not written")
		default:
			r.m.Succeeded()
			log.Debug("bananas: job succeeded", "took", now.Sub(d.StartedAt()).Round(time.Microsecond))
		}
		w.untrack(r)
		w.endRun(r)
	})
	return true
}

// failRun records a failed run: a retry after the backoff while attempts
// allow, else (or when final) the dead-letter queue. A snooze (RetryAfter)
// reschedules the job that much later without counting a failure.
func (w *Worker) failRun(r *run, log jobLog, msg string, final bool, snooze time.Duration) {
	defer w.untrack(r)
	if !r.settling.CompareAndSwap(false, true) {
		log.Info("bananas: job failure dropped", "why", errHandedBck, "failure", firstLine(msg))
		return
	}
	d := r.d
	now := w.c.q.Now() // the retry's run-at is judged on Redis's clock
	attempts := d.Attempts + 1
	delay := w.retryDelay(d.Envelope, attempts)
	if snooze > 0 {
		delay = snooze
	}
	rec := recordOf(d.ID, d.Name, d.Priority, d.CreatedAt, d.MaxRetries, d.Envelope)
	rec.Error, rec.Attempts, rec.FinishedAt = msg, attempts, now.UnixMilli()
	// The record is stored only if this failure is the last (fail.lua):
	// its time ends the list, as the script writes it in the job's hash.
	rec.FailedAt = append(failedAtMS(d.FailedAt), now.UnixMilli())
	if n := len(rec.FailedAt); n > queue.FailuresKept {
		rec.FailedAt = rec.FailedAt[n-queue.FailuresKept:]
	}
	encoded, _ := results.Encode(rec)
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	out, err := w.c.q.Fail(ctx, d, queue.Failure{
		Message: msg, RetryAt: now.Add(delay), Final: final, Snooze: snooze > 0, Record: encoded,
		TTL: ttlOr(d.Envelope.FailureTTL, w.opts.FailureTTL),
	}, now)
	countFailure(r.m, snooze > 0, out, err)
	switch {
	case err != nil:
		log.Warn("bananas: recording a failure failed; the job will be recovered when its lease expires", "err", err, "failure", msg)
	case out == queue.Snoozed:
		log.Info("bananas: job asked to run again later; rescheduled, no failure counted", "retry_in", delay.Round(time.Millisecond))
	case out == queue.Retrying:
		log.Warn("bananas: job failed; retry scheduled", "err", firstLine(msg), "retry_in", delay.Round(time.Millisecond), "retries_left", d.MaxRetries-attempts)
	case out == queue.DeadEnded:
		log.Warn("bananas: job failed for good; moved to the dead-letter queue", "err", firstLine(msg), "attempts", attempts)
	case out == queue.Stale:
		log.Warn("bananas: job failed after its lease was lost; failure discarded", "err", firstLine(msg))
	}
}

// jobLog logs one job's events with its attributes. It builds nothing until
// a line is actually written: a logger.With per job cost more than the job's
// own bookkeeping when the lines were disabled anyway.
type jobLog struct {
	l *slog.Logger
	d *queue.Dispatch
}

func (j jobLog) log(level slog.Level, msg string, args ...any) {
	if !j.l.Enabled(context.Background(), level) {
		return
	}
	attrs := append([]any{"job", j.d.ID, "task", j.d.Name, "route", j.d.Route, "attempt", j.d.Attempts + 1}, args...)
	j.l.Log(context.Background(), level, msg, attrs...)
}

func (j jobLog) Debug(msg string, args ...any) { j.log(slog.LevelDebug, msg, args...) }
func (j jobLog) Info(msg string, args ...any)  { j.log(slog.LevelInfo, msg, args...) }
func (j jobLog) Warn(msg string, args ...any)  { j.log(slog.LevelWarn, msg, args...) }

// maxErrorText bounds the error a failed run records: its message and stack
// are for a person to read, and a job's hash keeps it until the job ends.
const maxErrorText = 16 << 10

// errorText is what a failed run records: the error's message, with what
// its %+v adds after it when that starts with the message — the stack trace
// that errors made by github.com/pkg/errors, cockroachdb/errors or
// go-errors/errors print — at most maxErrorText bytes of it.
func errorText(err error) string {
	msg := err.Error()
	if detail := fmt.Sprintf("%+v", err); len(detail) > len(msg) && strings.HasPrefix(detail, msg) {
		msg = detail
	}
	if len(msg) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = fmt.Sprintf("%s\n… (%d more bytes)", msg[:cut], len(msg)-cut)
	}
	return msg
}

// failedAtMS is a job's failure times as a result record holds them.
func failedAtMS(ts []time.Time) []int64 {
	if len(ts) == 0 {
		return nil
	}
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.UnixMilli()
	}
	return out
}

func ttlOr(ms int64, def time.Duration) time.Duration {
	if ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return def
}

func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}

// retryDelay is the delay before retry number attempt of a job: its task's
// own backoff (RetryBackoff, backoff=) when it has one, else the worker's.
func (w *Worker) retryDelay(env queue.Envelope, attempt int) time.Duration {
	if env.Backoff > 0 {
		return doubling(time.Duration(env.Backoff)*time.Millisecond, attempt)
	}
	return w.opts.Backoff(attempt)
}
