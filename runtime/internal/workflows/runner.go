package workflows

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

// ErrPermanent marks an error of Make that making the job again cannot
// mend (args over the payload limit, a template that does not read): the
// step fails with it.
var ErrPermanent = errors.New("step cannot be made")

// Runner moves the workflows of one namespace on.
type Runner struct {
	// Store is the Redis side: the namespace's *queue.Queue.
	Store Store
	// Make makes the jobs of steps of workflow wf, each under its JobID,
	// and returns one error per step (nil: made; a job already there under
	// that id is made). An error matching ErrPermanent fails the step; any
	// other leaves it for the keeper.
	//
	// own: the caller's own script call marked these steps creating, all at
	// once, so any maker before it made all of them (the keeper makes every
	// step creating) or none, and Make may check only the last job of each
	// call (the plain enqueue's check). Otherwise, as for the keeper, whose
	// steps may be a union of several callers' (some made, some not), it
	// checks each job.
	Make func(ctx context.Context, wf string, steps []record.ReadyStep, own bool) []error
	// CancelJob cancels job id; a job not found or already ended is not an
	// error.
	CancelJob func(ctx context.Context, id string) error
	// StepResult, when set, is how workflow wf's record keeps the result of
	// its step's job, given as the job stores it (sealed for the job): the
	// value the steps after it are made of. An error matching ErrPermanent
	// (a result that does not open) fails the step with it; any other (a
	// key this process does not hold) leaves the end for the keeper.
	StepResult func(wf, job string, stored []byte) ([]byte, error)
	// TTLs are how long an ended workflow's record is kept.
	TTLs record.TTLs
	// Grace is how long after a submission, or a step made, the keeper
	// first looks: the caller should be done by then.
	Grace time.Duration
	// ParkAtMost is how long the keeper leaves a workflow that only waits
	// (timers and signal waits armed, no job to watch) before it looks
	// again, when no wait is due sooner; zero: 5 minutes.
	ParkAtMost time.Duration
	Logger     *slog.Logger
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

// Submit stores workflow id and makes the jobs of its first steps. Once
// the workflow is stored the submission has succeeded: a first step whose
// job could not be made now is made by the keeper, within the grace.
func (r *Runner) Submit(ctx context.Context, id string, steps []record.NewStep, final int) error {
	now := r.Store.Now()
	ready, own, err := r.Store.Submit(ctx, id, steps, final, r.Grace, now)
	if err != nil {
		return err
	}
	// A wait armed now whose timeout comes before the keeper's first look.
	var due time.Time
	for _, s := range steps {
		if s.Kind == record.KindSignal && len(s.After) == 0 && s.Wait > 0 && (due.IsZero() || now.Add(s.Wait).Before(due)) {
			due = now.Add(s.Wait)
		}
	}
	r.watchDue(ctx, id, due)
	if len(ready) == 0 && hasWaitRoot(steps) {
		// Only waits to start with: no job for the keeper to make, so it
		// need not look after the grace; it looks when the first wait is
		// due, and at least every ParkAtMost.
		at := now.Add(r.parkAtMost())
		if !due.IsZero() && due.Before(at) {
			at = due
		}
		if err := r.Store.Park(ctx, id, at); err != nil {
			r.logger().Warn("bananas: park a workflow that only waits (its keeper looks after the grace)", "workflow", id, "err", err)
		}
	}
	if err := r.makeAll(ctx, id, ready, own); err != nil {
		r.logger().Warn("bananas: make the first steps of a workflow (its keeper will)", "workflow", id, "err", err)
	}
	return nil
}

// StepEnded advances workflow wf, whose step's job ended as how said, with
// value its result (completed) or its error, and trail what its run left
// for the steps after it (Store.Advance).
func (r *Runner) StepEnded(ctx context.Context, wf string, step int, job string, how queue.Ending, value []byte, trail string) error {
	return r.stepEnded(ctx, wf, step, job, how, value, trail, true)
}

// stepEnded is StepEnded; own as Make's (false when the end was read back
// by the keeper, whose advance may return steps another caller is making).
func (r *Runner) stepEnded(ctx context.Context, wf string, step int, job string, how queue.Ending, value []byte, trail string, own bool) error {
	if how == queue.EndCompleted && r.StepResult != nil {
		kept, err := r.StepResult(wf, job, value)
		switch {
		case err == nil:
			value = kept
		case errors.Is(err, ErrPermanent):
			how, value = queue.EndDead, []byte(err.Error())
		default:
			return err
		}
	}
	a, err := r.Store.Advance(ctx, wf, step, job, how, value, trail, r.TTLs)
	if err != nil {
		return err
	}
	r.watchDue(ctx, wf, a.Due)
	if err := r.makeAll(ctx, wf, a.Ready, own); err != nil {
		return err
	}
	if err := r.makeAll(ctx, wf, a.Again, false); err != nil {
		return err
	}
	if a.Status == record.Completed {
		return r.Store.Settle(ctx, wf)
	}
	return nil
}

// makeAll makes the jobs of ready steps of wf and records them made; a
// step that cannot be made fails. The jobs of steps whose workflow was
// canceled meanwhile are canceled. On an error the steps stay creating,
// and the keeper makes them.
func (r *Runner) makeAll(ctx context.Context, wf string, ready []record.ReadyStep, own bool) error {
	if len(ready) == 0 {
		return nil
	}
	made := make([]record.ReadyStep, 0, len(ready))
	var failed []record.ReadyStep
	var errs []error
	for i, err := range r.Make(ctx, wf, ready, own) {
		s := ready[i]
		switch {
		case err == nil:
			made = append(made, s)
		case errors.Is(err, ErrPermanent):
			s.Args = []byte(err.Error())
			failed = append(failed, s)
		default:
			errs = append(errs, err)
		}
	}
	canceled, err := r.Store.StepsCreated(ctx, wf, made)
	if err != nil {
		return err
	}
	for _, id := range canceled {
		if err := r.CancelJob(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range failed {
		// Made as far as it goes: the step is created, then fails.
		if _, err := r.Store.StepsCreated(ctx, wf, []record.ReadyStep{s}); err != nil {
			return err
		}
		if err := r.stepEnded(ctx, wf, s.Index, s.JobID, queue.EndDead, s.Args, "", own); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		_ = r.Store.Watch(ctx, wf, r.Store.Now().Add(r.Grace))
		return fmt.Errorf("workflow %s: make steps: %w", wf, errors.Join(errs...))
	}
	return nil
}

// Cancel cancels workflow id: its steps not yet run are canceled, and
// those running are asked to stop; the steps whose waiting jobs the cancel
// ended show so at once. It returns the status after the call.
func (r *Runner) Cancel(ctx context.Context, id string) (string, error) {
	st, jobs, err := r.Store.Cancel(ctx, id, r.TTLs.Failed, r.Store.Now())
	if err != nil {
		return "", err
	}
	var errs []error
	for _, j := range jobs {
		if err := r.CancelJob(ctx, j); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return st, err
	}
	return st, r.ReadEnds(ctx, id)
}

// Retry runs the failed and canceled steps of workflow id again, each
// under the job id rerunAs gives it. Completed steps keep their results.
// A step whose job ended unheard of (its worker died, or it was canceled
// where no worker runs) is read back first, so a retry runs it again too;
// and a step that kept a job which completed meanwhile completes at once.
// It returns how many steps it reset.
func (r *Runner) Retry(ctx context.Context, id string) (int, error) {
	if err := r.ReadEnds(ctx, id); err != nil {
		return 0, err
	}
	n, err := r.retry(ctx, id)
	if err == nil && n > 0 {
		err = r.ReadEnds(ctx, id)
	}
	return n, err
}

// retry is Retry without its reads of the steps' ends. An error of rerunAs
// stops it before the record changes.
func (r *Runner) retry(ctx context.Context, id string) (int, error) {
	rec, err := r.Store.Read(ctx, id)
	if err != nil {
		return 0, err
	}
	// Watched before any job is replayed: its end is heard of even should
	// this process die before the record says so.
	if err := r.Store.Watch(ctx, id, r.Store.Now().Add(r.Grace)); err != nil {
		return 0, err
	}
	ids := map[int]string{}
	for k, s := range rec.Steps {
		if s.State != record.StepFailed && s.State != record.StepCanceled {
			continue
		}
		ids[k] = ""
		if s.Gather || s.Kind != record.KindTask {
			continue // no job: a wait is armed again
		}
		job, err := r.rerunAs(ctx, s.JobID)
		if err != nil {
			return 0, fmt.Errorf("workflow %s: retry step %s: %w", id, s.Label, err)
		}
		if job != s.JobID {
			ids[k] = job
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	a, err := r.Store.Retry(ctx, id, ids, r.Store.Now())
	if err != nil {
		return 0, err
	}
	r.watchDue(ctx, id, a.Due)
	return len(ids), r.makeAll(ctx, id, a.Ready, false) // a resent call returns every step creating
}

// rerunAs is the job id a retried step runs under, given its job old. A
// step never gets a second job while its job may run: a dead job is
// replayed and kept; a job found waiting or running (replayed by another
// call: an `app dlq replay --all`, a concurrent retry, a replay whose reply
// was lost and whose resend found it replayed) or completed is kept, and
// the step is made again under it, which stores nothing — so no dead job
// of it is left to replay and run it again. Only a job that can run no
// more (canceled, gone) is given a fresh id. A replay that fails while the
// job is still dead (the server unreachable, a job that cannot be replayed
// as stored) fails the retry: a fresh id would leave the dead job for a
// later replay to run the step again.
//
// The replay and the read are two calls: a job found running by the first
// can die before the second. Such a job is replayed again, not left dead
// beside a fresh id; only a job read dead twice whose replay found no
// dead-letter entry both times (purged) is given a fresh id.
func (r *Runner) rerunAs(ctx context.Context, old string) (string, error) {
	for try := 1; ; try++ {
		replayErr := r.Store.Replay(ctx, old)
		if replayErr == nil {
			return old, nil
		}
		states, err := r.Store.LookupMany(ctx, []string{old})
		if err != nil {
			return "", err
		}
		st := states[0]
		how, _, ended := JobEnd(old, st)
		if !ended || how == queue.EndCompleted {
			return old, nil
		}
		if st == nil || st.Status != queue.StatusFailed {
			break // canceled or gone: it runs no more
		}
		if !errors.Is(replayErr, queue.ErrNotFound) {
			return "", replayErr
		}
		if try == 2 {
			break // dead, and no dead-letter entry to replay it from
		}
	}
	return freshJobID(old, r.Store.Now()), nil
}

// freshJobID is a new job id of the step whose job was old: on old's
// route, or, for an id of the shape of a keyed step of a sharded route
// (<workflow>-<step>, located by searching the routes), of that shape.
func freshJobID(old string, now time.Time) string {
	if route, ok := queue.RouteOf(old); ok {
		return queue.NewID(route, now)
	}
	step := "r"
	if i := strings.LastIndexByte(old, '-'); i >= 0 {
		step = old[i+1:]
	}
	return ulid.MustNew(ulid.Timestamp(now), ulid.DefaultEntropy()).String() + "-" + step
}

// Replayed runs step k of workflow id again under its own job id, which
// was just replayed from the dead-letter set: the step and the steps its
// failure canceled wait again, and the workflow runs.
func (r *Runner) Replayed(ctx context.Context, id string, k int, job string) error {
	rec, err := r.Store.Read(ctx, id)
	if err != nil {
		return err
	}
	if k < 0 || k >= len(rec.Steps) || rec.Steps[k].JobID != job || rec.Steps[k].State != record.StepFailed {
		return nil
	}
	next := make([][]int, len(rec.Steps))
	for m, s := range rec.Steps {
		for _, p := range s.After {
			if p >= 0 && p < len(next) {
				next[p] = append(next[p], m)
			}
		}
	}
	ids := map[int]string{k: ""}
	for stack := next[k]; len(stack) > 0; {
		m := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, seen := ids[m]; !seen && rec.Steps[m].State == record.StepCanceled {
			ids[m] = "" // never made: it keeps its job id
			stack = append(stack, next[m]...)
		}
	}
	a, err := r.Store.Retry(ctx, id, ids, r.Store.Now())
	if err != nil {
		return err
	}
	r.watchDue(ctx, id, a.Due)
	return r.makeAll(ctx, id, a.Ready, false) // a resent call returns every step creating
}

// Check looks at workflow id as the keeper does: it makes the jobs of the
// steps left creating, reads the end of every step whose job ended without
// the workflow hearing of it, and takes the workflow out of the index once
// nothing of it is left to watch.
func (r *Runner) Check(ctx context.Context, id string) error {
	rec, err := r.Store.Read(ctx, id)
	if errors.Is(err, record.ErrNotFound) {
		return r.Store.Settle(ctx, id) // expired, or its submitter died before storing it
	}
	if err != nil {
		return err
	}
	now := r.Store.Now()
	if due, armed := nextDue(rec); armed && !due.IsZero() && !due.After(now) {
		made, err := r.fire(ctx, id)
		if err != nil {
			return err
		}
		if made {
			// The fire made steps, and their jobs: the workflow has a
			// step to watch, and Due put it back a period later, when
			// the rest of a look (ends unheard of, steps left creating)
			// is done — but not later than a wait this fire left armed.
			// Timers due together cost a look of four round trips each,
			// not seven.
			r.watchDue(ctx, id, nextDueAfter(rec, now))
			return nil
		}
		if rec, err = r.Store.Read(ctx, id); err != nil {
			return err
		}
	}
	watching := hasCreating(rec)
	var errs []error
	live, err := r.readEnds(ctx, id, rec)
	if err != nil {
		errs = append(errs, err)
	}
	for _, s := range rec.Steps {
		watching = watching || s.State == record.StepCreated
	}
	watching = watching || live
	if hasCreating(rec) {
		a, err := r.Store.CreatingSteps(ctx, id)
		if err != nil {
			return err
		}
		if err := r.makeAll(ctx, id, a.Ready, false); err != nil {
			errs = append(errs, err)
		}
	}
	if !watching && rec.Status != record.Running {
		if _, armed := nextDue(rec); !armed {
			return r.Store.Settle(ctx, id)
		}
	}
	if due, armed := nextDue(rec); armed && !watching && !hasCreating(rec) && len(errs) == 0 {
		// It only waits: looked at next when its first wait is due, and
		// at least every ParkAtMost.
		at := r.Store.Now().Add(r.parkAtMost())
		if !due.IsZero() && due.Before(at) {
			at = due
		}
		if err := r.Store.Park(ctx, id, at); err != nil {
			errs = append(errs, err)
		}
	}
	if due, armed := nextDue(rec); armed && !due.IsZero() {
		// Due put the workflow back a period later: a wait due before
		// then brings it back to its due time (Park only moves it later).
		r.watchDue(ctx, id, due)
	}
	return errors.Join(errs...)
}

// nextDueAfter is the earliest due time after t of rec's armed waits (zero:
// none).
func nextDueAfter(rec *record.Workflow, t time.Time) time.Time {
	var due time.Time
	for _, s := range rec.Steps {
		if s.State == record.StepArmed && s.Due.After(t) && (due.IsZero() || s.Due.Before(due)) {
			due = s.Due
		}
	}
	return due
}

// hasWaitRoot says whether a step of steps is a wait without predecessors.
func hasWaitRoot(steps []record.NewStep) bool {
	for _, s := range steps {
		if s.Kind != record.KindTask && len(s.After) == 0 {
			return true
		}
	}
	return false
}

// nextDue is the earliest due time of rec's armed waits (zero: none has
// one) and whether it has any armed.
func nextDue(rec *record.Workflow) (due time.Time, armed bool) {
	for _, s := range rec.Steps {
		if s.State != record.StepArmed {
			continue
		}
		armed = true
		if !s.Due.IsZero() && (due.IsZero() || s.Due.Before(due)) {
			due = s.Due
		}
	}
	return due, armed
}

// parkAtMost is how long the keeper leaves a workflow that only waits.
func (r *Runner) parkAtMost() time.Duration {
	if r.ParkAtMost > 0 {
		return r.ParkAtMost
	}
	return 5 * time.Minute
}

// watchDue has the keeper look at workflow wf at due (zero: nothing to
// do). A failure is logged: the keeper looks at a running workflow every
// period anyway.
func (r *Runner) watchDue(ctx context.Context, wf string, due time.Time) {
	if due.IsZero() {
		return
	}
	if err := r.Store.Watch(ctx, wf, due); err != nil {
		r.logger().Warn("bananas: have the keeper look at a workflow's wait when it is due", "workflow", wf, "err", err)
	}
}

// fire fires workflow id's waits that are due and makes the steps that
// follow; made says that it made some, every one, and the workflow runs
// on.
func (r *Runner) fire(ctx context.Context, id string) (made bool, err error) {
	a, err := r.Store.Fire(ctx, id, r.TTLs)
	if err != nil {
		return false, err
	}
	if err := r.makeAll(ctx, id, a.Ready, true); err != nil {
		return false, err
	}
	r.watchDue(ctx, id, a.Due)
	return len(a.Ready) > 0 && a.Status == record.Running, nil
}

// Signal gives workflow id the signal name of id sig with payload (of Go
// type gotype, "" unchecked): it completes the first armed wait of that
// name and makes the steps that follow, or is kept for a wait not reached
// yet. A resend with the same sig is no second signal. A refusal matches
// record.ErrNotFound, ErrNoSuchWait, ErrWorkflowEnded, ErrSignalsReceived
// or ErrSignalType.
func (r *Runner) Signal(ctx context.Context, id, name, sig string, payload []byte, gotype string) (record.Signaled, error) {
	// The steps the signal makes ready are watched as any step is: should
	// this process die before their jobs are made, the keeper makes them
	// within the grace. The watch rides with the script, in one round trip,
	// so the jobs go out in the next: a signal's next step starts a fetch
	// after that, nothing else in between.
	res, err := r.Store.Signal(ctx, id, name, sig, payload, gotype, r.TTLs, r.Store.Now().Add(r.Grace))
	if err != nil || res.Duplicate || res.Kept {
		return res, err
	}
	if err := r.makeAll(ctx, id, res.Ready, true); err != nil {
		r.logger().Warn("bananas: make the steps after a signal (its keeper will)", "workflow", id, "err", err)
	}
	// A wait the signal armed (one after the completed wait): the keeper
	// looks when it is due. After the jobs, since the watch above already
	// covers a death before this call.
	r.watchDue(ctx, id, res.Due)
	if res.Status == record.Completed {
		_ = r.Store.Settle(ctx, id)
	}
	return res, nil
}

func hasCreating(rec *record.Workflow) bool {
	for _, s := range rec.Steps {
		if s.State == record.StepCreating {
			return true
		}
	}
	return false
}

// JobEnd is how job stands, as its snapshot st (nil: not found) tells:
// whether it ended, and how and with what (its result, or its error) for
// Advance. The queue reads any job that is only its result record
// as completed: the record says whether it completed, failed or was
// canceled.
func JobEnd(job string, st *queue.JobState) (how queue.Ending, value []byte, ended bool) {
	if st == nil {
		return queue.EndDead, []byte("its job " + job + " is gone: its record expired or was deleted"), true
	}
	if !st.Status.Finished() {
		return 0, nil, false
	}
	var rec results.Record
	if len(st.Result) > 0 {
		var err error
		if rec, err = results.Decode(st.Result); err != nil {
			return queue.EndDead, []byte("its job's result record does not read: " + err.Error()), true
		}
	}
	switch {
	case st.Status == queue.StatusCompleted && (rec.OK || len(st.Result) == 0):
		return queue.EndCompleted, rec.Value, true
	case st.Status == queue.StatusCanceled || rec.Canceled:
		return queue.EndCanceled, []byte(orText(rec.Error, st.Error, "canceled")), true
	}
	return queue.EndDead, []byte(orText(rec.Error, st.Error, "failed")), true
}

// readEnds looks up, in one pipelined round trip, the jobs of rec's created
// steps and of its failed ones, and advances workflow id with each end it
// has not heard of: a created step's job that ended, a failed step's dead
// job replayed and completed. live reports a failed step's replayed job
// that may still run.
func (r *Runner) readEnds(ctx context.Context, id string, rec *record.Workflow) (live bool, err error) {
	var steps []int
	var jobs []string
	for k, s := range rec.Steps {
		if (s.State == record.StepCreated || s.State == record.StepFailed) && !s.Gather && s.JobID != "" {
			steps, jobs = append(steps, k), append(jobs, s.JobID)
		}
	}
	if len(jobs) == 0 {
		return false, nil
	}
	states, err := r.Store.LookupMany(ctx, jobs)
	if err != nil {
		return false, err
	}
	var errs []error
	for i, k := range steps {
		how, value, ended := JobEnd(jobs[i], states[i])
		if rec.Steps[k].State == record.StepFailed {
			// Only a replayed job tells anything new: watched until it is
			// dead again or completed.
			if states[i] == nil || !ended {
				live = live || states[i] != nil
				continue
			}
			if how != queue.EndCompleted {
				continue
			}
		} else if !ended {
			continue
		}
		errs = append(errs, r.stepEnded(ctx, id, k, jobs[i], how, value, "", false))
	}
	return live, errors.Join(errs...)
}

// ReadEnds advances workflow id with the end of every step whose job ended
// without the workflow hearing of it yet (a worker that died before it
// advanced, a job canceled while it waited): what the keeper does, at once.
func (r *Runner) ReadEnds(ctx context.Context, id string) error {
	rec, err := r.Store.Read(ctx, id)
	if err != nil {
		return err
	}
	_, err = r.readEnds(ctx, id, rec)
	return err
}

func orText(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
