package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
)

// Job returns a snapshot of job id, or an error matching ErrJobNotFound:
// what Redis holds of it, or once Redis has let it go, its newest row in
// the task history (WithHistory).
func (c *Client) Job(ctx context.Context, id string) (*bananastype.Job, error) {
	s, err := c.q.Jobs.Lookup(ctx, id)
	if errors.Is(err, queue.ErrNotFound) {
		return c.jobFromHistory(ctx, id)
	}
	if err != nil {
		return nil, fmt.Errorf("bananas: %w", err)
	}
	j := jobOfState(s)
	c.unpackJob(&j)
	if args := declaredArgsJSON(j.Name, j.ArgsMsgpack); args != nil {
		j.Args = args
	}
	return &j, nil
}

// jobOfState is the job s describes: a finished job is its result record
// (what it was comes from there, as enqueued), any other its hash or
// payload.
func jobOfState(s *queue.JobState) bananastype.Job {
	if s.Status == queue.StatusCompleted && s.Result != nil {
		if rec, err := results.Decode(s.Result); err == nil {
			j := rec.Job(queue.ShardBase(s.Route))
			j.ArgsMsgpack, j.Result = rec.Args, rec.Value
			return j
		}
	}
	j := bananastype.Job{
		ID: s.ID, Name: s.Name, Route: queue.ShardBase(s.Route), Priority: s.Priority, Status: s.Status,
		Description: s.Envelope.Description, Attempts: attempts(s.Attempts, s.Status == queue.StatusProcessing), MaxRetries: s.MaxRetries, Error: s.Error,
		Timeout:   time.Duration(s.Envelope.Timeout) * time.Millisecond,
		CreatedAt: s.CreatedAt, ScheduledAt: s.RunAt, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt,
		LeaseDeadline: s.LeaseDeadline, ArgsMsgpack: s.Envelope.Args, FailedAt: s.FailedAt, FailedStartedAt: s.FailedStartedAt, Earlier: earlierLives(s.Earlier),
		Workflow: s.Envelope.Workflow,
	}
	if p := s.Progress; p != nil && s.Status == queue.StatusProcessing {
		j.Progress = &bananastype.Progress{Percent: p.Percent, Note: p.Note, At: p.At}
	}
	return j
}

// attempts is Job.Attempts of a job stored with failed runs counted
// (the queue's count: failures and lost leases), running or not.
func attempts(failed int, running bool) int {
	if running {
		return failed + 1
	}
	return failed
}

// EarlierLife is a life a job had before it was replayed from the
// dead-letter queue.
type EarlierLife = queue.EarlierLife

// earlierLives reads the earlier lives a job's hash or result record keeps;
// one that does not parse is left out.
func earlierLives(kept []string) []EarlierLife {
	var out []EarlierLife
	for _, s := range kept {
		if l, ok := queue.ParseEarlierLife(s); ok {
			out = append(out, l)
		}
	}
	return out
}
