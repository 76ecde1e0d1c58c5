package bananastype

import (
	"time"

	"github.com/bananas-go/bananas/queue"
)

// JobEnd is one recorded end of a job's run, as a worker tells it to the
// subscribers of its work-end hook (WorkerOptions.OnJobEnd, the metrics,
// the workflows): built once, by the worker's engine, when the Redis write
// that recorded the end succeeded. There is one JobEnd per end, never one
// for an end whose write failed or came too late (its lease was lost, and
// the job is another run's).
type JobEnd struct {
	ID    string
	Task  string
	Route string // the route, not the shard
	// Priority is empty for a recovered job whose stored form did not say.
	Priority queue.Priority
	// Ending is how the run ended:
	//   - queue.EndCompleted: the run succeeded; Result is its encoded
	//     result.
	//   - queue.EndRetrying: the run failed (Error); the job runs again at
	//     RetryAt.
	//   - queue.EndSnoozed: the run asked to run again at RetryAt
	//     (RetryAfter), no failure counted.
	//   - queue.EndDead: the run failed for good; the job is dead-lettered.
	//   - queue.EndCanceled: the job was canceled while it ran, or while the
	//     fetch that leased it was lost (it never ran).
	//   - queue.EndHandedBack: the worker stopped before the run ended; the
	//     job is back at the front of its queue, no attempt counted.
	// Status says where that left the job.
	Ending  queue.Ending
	RetryAt time.Time // EndRetrying, EndSnoozed: when the job runs again
	// Attempt is the run's number: 1 for the first, one more after each
	// failed run.
	Attempt int
	// Error is the run's failure (EndRetrying, EndDead, EndSnoozed), or why
	// it was canceled.
	Error string
	// StartedAt is when the run started (zero when Recovered); EndedAt when
	// its end was recorded, on the Redis server's clock.
	StartedAt, EndedAt time.Time
	// Result is the msgpack-encoded result of a completed run; Trail what
	// the run left for the workflow steps after its job's (runtime.LeaveTrail).
	Result []byte
	Trail  string
	// Record is the encoded result record (package results) the end stored:
	// a completed, dead or canceled job's; nil when it stored none.
	Record []byte
	// Worker is the id of the worker that recorded the end (Worker.ID).
	Worker string
	// Recovered: the job's lease expired on the worker that ran it (it
	// crashed or lost Redis), and this worker's reaper recovered it: a
	// retry, the dead-letter queue, or canceled if a cancel was asked
	// meanwhile.
	Recovered bool
	// Workflow is the id of the workflow the job is a step of, Step the
	// step's index in it; "" for a job of no workflow, and for an end the
	// reaper recorded (the workflow's keeper reads those back).
	Workflow string
	Step     int
}

// Status is where the end left the job: completed, scheduled (retrying or
// snoozed), failed (dead-lettered), canceled, or pending (handed back).
func (e JobEnd) Status() queue.Status { return e.Ending.Status() }
