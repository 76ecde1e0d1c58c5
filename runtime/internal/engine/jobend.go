package engine

import (
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
)

// A job's end, as the engine tells it: built here and nowhere else, beside
// the records it stores (record.go), and told to Config.Sinks once the Redis
// write that recorded it succeeded. An end whose write failed, or that
// changed nothing (its lease was lost), is not told: what became of its job
// is not this worker's to say.

// JobEndSink receives the ends of a worker's jobs, one call per recorded
// end. It is called on the engine's path (an ack's callback, a runner, the
// reaper, shutdown), so it must return at once: a sink with work to do
// hands the end to a goroutine of its own.
type JobEndSink interface {
	JobEnded(bananastype.JobEnd)
}

// tell gives e to every sink.
func (c *Config) tell(e bananastype.JobEnd) {
	for _, s := range c.Sinks {
		s.JobEnded(e)
	}
}

// runEnd starts the end of d's run on this worker, judged at now; a
// hand-back's end is only that.
func (c *Config) runEnd(d *queue.Dispatch, how queue.Ending, now time.Time) bananastype.JobEnd {
	return bananastype.JobEnd{
		ID: d.ID, Task: d.Name, Route: queue.ShardBase(d.Route), Priority: d.Priority, Ending: how,
		Attempt: d.Attempts + 1, StartedAt: d.StartedAt(), EndedAt: now, Worker: c.ID,
		Workflow: d.Envelope.Workflow, Step: d.Envelope.Step,
	}
}

// completedEnd is the end of d's run that succeeded with result, record
// stored.
func (c *Config) completedEnd(d *queue.Dispatch, result, record []byte, now time.Time) bananastype.JobEnd {
	end := c.runEnd(d, queue.EndCompleted, now)
	end.Result, end.Record = result, record
	return end
}

// failureEnd is the end of d's run that failed (or snoozed) with msg, as
// fail.lua recorded it (how): to run again at retryAt, or dead-lettered with
// record, which is stored only then.
func (c *Config) failureEnd(d *queue.Dispatch, how queue.Ending, msg string, retryAt time.Time, record []byte, now time.Time) bananastype.JobEnd {
	end := c.runEnd(d, how, now)
	end.Error = msg
	if how == queue.EndDead {
		end.Record = record
	} else {
		end.RetryAt = retryAt
	}
	return end
}

// canceledEnd is the end of d's run canceled (why), record stored.
func (c *Config) canceledEnd(d *queue.Dispatch, why string, record []byte, now time.Time) bananastype.JobEnd {
	end := c.runEnd(d, queue.EndCanceled, now)
	end.Error, end.Record = why, record
	return end
}

// reapedEnd is the end of e, an expired job of route the reaper recovered
// at now as out said, with verdict v; false when out recorded no end.
func (c *Config) reapedEnd(e queue.Expired, route string, out queue.Ending, v queue.Verdict, now time.Time) (bananastype.JobEnd, bool) {
	end := bananastype.JobEnd{
		ID: e.ID, Task: e.Name, Route: queue.ShardBase(route), Priority: e.Priority, Attempt: e.Attempts + 1, EndedAt: now,
		Worker: c.ID, Recovered: true, Record: v.Record,
	}
	switch out {
	case queue.EndRetrying:
		end.Ending, end.Error, end.RetryAt, end.Record = queue.EndRetrying, expiredLease, v.RetryAt, nil
	case queue.EndDead:
		end.Ending, end.Error = queue.EndDead, expiredLease
	case queue.EndCanceled:
		end.Ending, end.Error = queue.EndCanceled, canceledLost
	default:
		return bananastype.JobEnd{}, false
	}
	return end, true
}

// canceledBeforeRunEnd is the end of e, a job of a lost fetch of route
// that ended canceled on its hand-back at now, record stored: its attempt is
// the run the fetch leased it for, as the record's (record.go).
func (c *Config) canceledBeforeRunEnd(e queue.Expired, route string, record []byte, now time.Time) bananastype.JobEnd {
	return bananastype.JobEnd{
		ID: e.ID, Task: e.Name, Route: queue.ShardBase(route), Priority: e.Priority, Ending: queue.EndCanceled, Attempt: e.Attempts + 1,
		Error: canceledBeforeRun, EndedAt: now, Worker: c.ID, Record: record,
	}
}

// recordsFailure reports whether out, fail.lua's answer, recorded the end
// of a failed (or snoozed) run.
func recordsFailure(out queue.Ending) bool {
	return out == queue.EndRetrying || out == queue.EndDead || out == queue.EndSnoozed
}
