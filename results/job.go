package results

import (
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
)

// Job is the job r records, of route (the route's, not a shard's): what it
// was and how it ended, the one reading of a record that Client.Job and the
// task history's rows share. Its args and result are left to the caller,
// which holds them as it needs them (msgpack in ArgsMsgpack and Result, or
// their JSON in Args and ResultJSON).
func (r Record) Job(route string) bananastype.Job {
	j := bananastype.Job{
		ID: r.ID, Name: r.Name, Route: route, Priority: queue.Priority(r.Priority), Status: r.status(),
		Description: r.Description, Attempts: r.Attempts, MaxRetries: r.MaxRetries, Error: r.Error,
		Timeout:   time.Duration(r.Timeout) * time.Millisecond,
		CreatedAt: fromMS(r.CreatedAt), StartedAt: fromMS(r.StartedAt), FinishedAt: fromMS(r.FinishedAt),
		Life: len(r.Earlier), Worker: r.Worker, Workflow: r.Workflow,
	}
	for _, ms := range r.FailedAt {
		j.FailedAt = append(j.FailedAt, fromMS(ms))
	}
	if len(r.FailedStartedAt) == len(r.FailedAt) {
		for _, ms := range r.FailedStartedAt {
			j.FailedStartedAt = append(j.FailedStartedAt, fromMS(ms))
		}
	}
	for _, s := range r.Earlier {
		if l, ok := queue.ParseEarlierLife(s); ok {
			j.Earlier = append(j.Earlier, l)
		}
	}
	return j
}

// status is how the job r records ended.
func (r Record) status() queue.Status {
	switch {
	case r.OK:
		return queue.StatusCompleted
	case r.Canceled:
		return queue.StatusCanceled
	case r.Expired:
		return queue.StatusExpired
	}
	return queue.StatusFailed
}

// fromMS is unix milliseconds as a time in UTC, 0 the zero time.
func fromMS(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
