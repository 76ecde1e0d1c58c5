package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/engine"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

// LeaveTrail sets what this run leaves for the workflow steps after its
// job's step: once it completes, each of them reads it in Job.After. A
// tracing middleware leaves its span's context there, so that a step's span
// links to its predecessors'. At most 128 bytes of printable
// ASCII without commas. The run of a job of no workflow leaves nothing (and
// no error); a later call replaces an earlier one. ctx is the handler's, or
// a middleware's.
func LeaveTrail(ctx context.Context, trail string) error {
	v, ok := ctx.Value(jobKey{}).(jobValue)
	if !ok {
		return errors.New("bananas: LeaveTrail: ctx is not a job's (call it with the context a handler or middleware received)")
	}
	if err := record.CheckTrail(trail); err != nil {
		return fmt.Errorf("bananas: LeaveTrail: %w", err)
	}
	if v.trail != nil {
		*v.trail = trail
	}
	return nil
}

type jobKey struct{}

// jobValue is what a handler's context holds under jobKey: its job
// (CurrentJob), the client of the worker running it (Once) and where its
// progress goes (Progress).
type jobValue struct {
	job      Job
	c        *Client
	progress progressRun
	trail    *string // LeaveTrail's, for a workflow step's run; nil for other jobs
}

// CurrentJob returns the job whose handler received ctx.
func CurrentJob(ctx context.Context) (Job, bool) {
	v, ok := ctx.Value(jobKey{}).(jobValue)
	return v.job, ok
}

// clientOf returns the client of the worker whose handler received ctx, or nil.
func clientOf(ctx context.Context) *Client {
	v, _ := ctx.Value(jobKey{}).(jobValue)
	return v.c
}

// jobOf is the Job a handler's context carries (CurrentJob).
func jobOf(d *queue.Dispatch) Job {
	j := Job{ID: d.ID, Name: d.Name, Route: queue.ShardBase(d.Route), Priority: Priority(d.Priority), Attempt: d.Attempts + 1, Workflow: d.Envelope.Workflow}
	if d.Envelope.Headers != nil {
		j.headers = &d.Envelope.Headers
	}
	return j
}

// progressRun is where the Progress calls of one run go: the worker's
// flusher, under the run's shard route and lease token.
type progressRun struct {
	to           *engine.ProgressFlusher
	route, token string
}

// handlerValue is the engine's Config.JobValue for a worker of c: what the
// context of d's handler holds under jobKey, its Progress calls going to
// progress.
func handlerValue(c *Client) func(d *queue.Dispatch, progress *engine.ProgressFlusher) any {
	return func(d *queue.Dispatch, progress *engine.ProgressFlusher) any {
		v := jobValue{job: jobOf(d), c: c, progress: progressRun{to: progress, route: d.Route, token: d.Token}}
		if d.Envelope.Workflow != "" {
			v.trail = new(string)
		}
		return v
	}
}
