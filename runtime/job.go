package runtime

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
)

// ErrDuplicate is matched (errors.Is) by the error of an enqueue that found its
// job already there: same WithID id, or same args within a Unique window. The
// id returned with it is the existing job's.
var ErrDuplicate = admin.ErrDuplicate

// ErrJobNotFound is matched by the error of Job and Await for an id that does
// not exist (never enqueued, or its record expired), and for a job that
// completed keeping nothing (ResultTTL(0), result_ttl=0) when no task
// history holds it.
var ErrJobNotFound = admin.ErrJobNotFound

// ErrWrongTask is matched by the error of Await for an id whose job belongs to
// another task: its result could not be decoded as this task's.
var ErrWrongTask = errors.New("bananas: job of another task")

// SkipRetry, returned by a handler (alone or wrapped with %w), ends the job
// at once in the dead-letter queue, whatever retries it has left: for
// failures no retry can fix.
//
//lint:ignore ST1012 the name is public API that handlers return
var SkipRetry = errors.New("bananas: skip retry")

// RetryAfter returns an error that, returned by a handler (alone or wrapped
// with %w), runs the job again after d without counting a failure: its
// attempts and retries left are as before (a rate limit, a resource not
// ready yet). d is at least a millisecond.
func RetryAfter(d time.Duration) error { return &retryAfter{d: d} }

type retryAfter struct{ d time.Duration }

func (e *retryAfter) Error() string { return fmt.Sprintf("bananas: retry after %s", e.d) }

// JobError is the error Await and Call return for a job that failed for good
// (dead-lettered) or was canceled: its last error message and its attempts
// (bananastype.Job.Attempts).
type JobError struct {
	ID       string
	Name     string
	Message  string
	Attempts int
	// Canceled: the job did not fail, it was canceled (Inspector.Cancel,
	// `job cancel`, the API); the error then matches ErrJobCanceled.
	Canceled bool
	// Expired: the job did not start before its expiry (ExpireIn,
	// ExpireAt) and never ran; the error then matches ErrExpired.
	Expired bool
}

// ErrJobCanceled is matched (errors.Is) by the *JobError of a job that was
// canceled.
var ErrJobCanceled = errors.New("bananas: job canceled")

// Is makes a canceled job's error match ErrJobCanceled, and an expired
// one's ErrExpired.
func (e *JobError) Is(target error) bool {
	return target == ErrJobCanceled && e.Canceled || target == ErrExpired && e.Expired
}

func (e *JobError) Error() string {
	if e.Expired {
		return fmt.Sprintf("bananas: job %s (%s) expired before it started", e.ID, e.Name)
	}
	if e.Canceled {
		return fmt.Sprintf("bananas: job %s (%s) was canceled: %s", e.ID, e.Name, e.Message)
	}
	return fmt.Sprintf("bananas: job %s (%s) failed after %d attempt(s): %s", e.ID, e.Name, e.Attempts, e.Message)
}

// Job describes the run a handler is part of, as CurrentJob and a
// Middleware (HookWorkBegin) see it: the job's identity, this run's
// attempt, and the envelope's headers and workflow. It is not
// bananastype.Job, the job as Redis or the task history holds it: a
// run's job is read from the envelope its worker leased, on every run's
// path, and carries what a snapshot has not (this run's number, the
// headers, the trails of a workflow step's predecessors) and none of what
// only a read of Redis gives (status, failures, result, lease).
type Job struct {
	ID       string
	Name     string
	Route    string
	Priority Priority
	Attempt  int // 1 on the first run, 2 on the first retry, ...
	// Workflow is the id of the workflow the job is a step of, "" for a
	// job of no workflow.
	Workflow string

	headers *map[string]string // the envelope's (Header, Headers); a pointer keeps Job comparable
}

// Header returns the job's header key (runtime.Header, EnqueueHook), ""
// when it has none of that name.
func (j Job) Header(key string) string {
	if j.headers == nil {
		return ""
	}
	return (*j.headers)[key]
}

// AfterHeader is the header of a workflow step's job that holds the trails
// its predecessors' runs left (LeaveTrail), comma-separated: Job.After.
const AfterHeader = "bananas-after"

// After returns the trails the runs of a workflow step's predecessors left
// (LeaveTrail), in the order of the predecessors (a Gather's standing for
// it), at most 8; nil for a job of no workflow, a first
// step, or predecessors that left none.
func (j Job) After() []string {
	v := j.Header(AfterHeader)
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// Headers returns a copy of the job's headers, nil when it has none.
func (j Job) Headers() map[string]string {
	if j.headers == nil {
		return nil
	}
	return maps.Clone(*j.headers)
}

// None stands for a missing argument or result type: a task declared
// func(ctx) error is a *Task[None, None].
type None struct{}
