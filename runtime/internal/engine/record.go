package engine

import (
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
)

// The result records a finished job leaves, built here and nowhere else:
// what the job was, as enqueued (a completed job is only its record, and
// Job(id) reads it from there), and how it ended.

// The attempt number a record carries is the run it describes, 1-based:
// the job's failed runs before it, plus one. A job leased by a fetch whose
// reply was lost describes the run it was leased for (bananastype.Job counted it as
// running), even though its handler never started. Only a job canceled while
// waiting (CanceledRecord) describes no run: it carries its failed runs.

// recordOf starts the record of d's run: the job as enqueued, its attempt,
// its failures and the run's start.
func recordOf(d *queue.Dispatch) results.Record {
	rec := jobRecord(d.ID, d.Name, d.Priority, d.CreatedAt, d.MaxRetries, d.Envelope)
	rec.Attempts, rec.StartedAt, rec.FailedAt = d.Attempts+1, unixMS(d.StartedAt()), failedAtMS(d.FailedAt)
	rec.FailedStartedAt = startedAtMS(d.FailedStartedAt)
	rec.Earlier = d.Earlier
	return rec
}

// failureRecord is the record of d's run failing with msg at now, stored if
// the failure is its last (fail.lua): the run's failure time ends the list,
// as the script writes it in the job's hash.
func failureRecord(d *queue.Dispatch, msg string, now time.Time) results.Record {
	rec := jobRecord(d.ID, d.Name, d.Priority, d.CreatedAt, d.MaxRetries, d.Envelope)
	rec.Error, rec.Attempts, rec.FinishedAt = msg, d.Attempts+1, now.UnixMilli()
	rec.StartedAt = unixMS(d.StartedAt()) // the failed run's: the history shows when it started
	rec.FailedAt, rec.Earlier = append(failedAtMS(d.FailedAt), now.UnixMilli()), d.Earlier
	if n := len(rec.FailedAt); n > queue.FailuresKept {
		rec.FailedAt = rec.FailedAt[n-queue.FailuresKept:]
	}
	if len(d.FailedStartedAt) == len(d.FailedAt) { // both or neither: the starts line up with the failures
		rec.FailedStartedAt = append(startedAtMS(d.FailedStartedAt), unixMS(d.StartedAt()))
		if n := len(rec.FailedStartedAt); n > queue.FailuresKept {
			rec.FailedStartedAt = rec.FailedStartedAt[n-queue.FailuresKept:]
		}
	}
	return rec
}

// expiredRecord is the record of e, a job leased by a run that will not
// report (its lease expired, or the fetch that leased it was lost), ending
// at now with msg: failed (stored if that was its last attempt) or, when
// canceled, canceled because a cancel was asked meanwhile (canceledLost,
// canceledBeforeRun).
func expiredRecord(e queue.Expired, msg string, canceled bool, now time.Time) results.Record {
	rec := jobRecord(e.ID, e.Name, e.Priority, e.CreatedAt, e.MaxRetries, e.Envelope)
	rec.Error, rec.Canceled, rec.Attempts, rec.FinishedAt = msg, canceled, e.Attempts+1, now.UnixMilli()
	return rec
}

// canceledBeforeRun is the error of a job canceled while the fetch that
// leased it was lost.
const canceledBeforeRun = "canceled before it ran (the fetch that leased it was lost)"

// canceledLost is the error of a job canceled while it ran whose worker
// stopped before it acted on the cancel.
const canceledLost = "canceled while running; its worker stopped (crashed or lost Redis) before it finished"

// canceledShutdown is the error of a job canceled while it ran whose worker
// shut down before it acted on the cancel.
const canceledShutdown = "canceled while running; its worker shut down before it finished"

// canceledAtShutdown is the encoded record of d ending canceled at now:
// asked to cancel while it ran, its worker shut down before acting on it.
func canceledAtShutdown(d *queue.Dispatch, now time.Time) []byte {
	rec := recordOf(d)
	rec.Error, rec.Canceled, rec.FinishedAt = canceledShutdown, true, now.UnixMilli()
	encoded, _ := results.Encode(rec)
	return encoded
}

// CanceledRecord is the encoded record of a job canceled before it ran
// (admin.Inspector.Cancel).
func CanceledRecord(id, name string, priority queue.Priority, created time.Time, maxRetries, attempts int, e queue.Envelope, failedAt []time.Time, earlier []queue.EarlierLife, now time.Time) ([]byte, error) {
	rec := jobRecord(id, name, priority, created, maxRetries, e)
	rec.Error, rec.Canceled, rec.Attempts, rec.FinishedAt, rec.FailedAt = "canceled", true, attempts, now.UnixMilli(), failedAtMS(failedAt)
	for _, l := range earlier {
		rec.Earlier = append(rec.Earlier, l.String())
	}
	return results.Encode(rec)
}

func jobRecord(id, name string, priority queue.Priority, created time.Time, maxRetries int, e queue.Envelope) results.Record {
	return results.Record{
		ID: id, Name: name, Priority: string(priority), CreatedAt: unixMS(created),
		Args: e.Args, MaxRetries: maxRetries, Timeout: e.Timeout, Description: e.Description, Workflow: e.Workflow,
	}
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

// startedAtMS is the starts of failed runs as unix milliseconds, 0 for one
// not kept.
func startedAtMS(ts []time.Time) []int64 {
	if len(ts) == 0 {
		return nil
	}
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = unixMS(t)
	}
	return out
}

func unixMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// stamp names the worker in rec when the end also goes to the task
// history, which shows who ran the job; a record that goes to Redis alone
// stays without it (a few bytes less a job).
func (c *Config) stamp(rec *results.Record) {
	if c.Queue.KeepsEnded() {
		rec.Worker = c.ID
	}
}
