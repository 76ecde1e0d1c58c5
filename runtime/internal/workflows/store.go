package workflows

import (
	"context"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// Store is the Redis side of workflows: package queue's workflow scripts
// and reads (queue/workflow.go, queue/workflow_list.go), and the lookup of
// steps' jobs. Redis(q) is the one a program uses; the machine calls
// nothing else of Redis, so its tests can run it against a fake.
//
// Every call is harmless when made twice: a reply can be lost after the
// script ran, and the Runner and the keeper make it again.
type Store interface {
	// Now is the time as Redis knows it (queue.Queue.Now).
	Now() time.Time
	Submit(ctx context.Context, id string, steps []queue.WorkflowStep, final int, grace time.Duration, now time.Time) (ready []queue.ReadyStep, own bool, err error)
	Advance(ctx context.Context, id string, step int, job string, how queue.Ending, value []byte, trail string, keep queue.WorkflowTTLs) (queue.WorkflowAdvance, error)
	StepsCreated(ctx context.Context, id string, steps []queue.ReadyStep) ([]string, error)
	Cancel(ctx context.Context, id string, keep time.Duration, now time.Time) (status string, jobs []string, err error)
	Retry(ctx context.Context, id string, ids map[int]string, now time.Time) (queue.WorkflowAdvance, error)
	CreatingSteps(ctx context.Context, id string) (queue.WorkflowAdvance, error)
	Read(ctx context.Context, id string) (*queue.WorkflowRecord, error)
	Due(ctx context.Context, now, next time.Time, n int) ([]string, error)
	Settle(ctx context.Context, id string) error
	Watch(ctx context.Context, id string, at time.Time) error
	PruneList(ctx context.Context, before time.Time, offset, n int) (kept int, end bool, err error)
	// Replay moves dead job id back to its ready list (queue.ErrNotFound:
	// it is not dead).
	Replay(ctx context.Context, id string) error
	// LookupMany reads the jobs of ids, in order; nil for one not found.
	LookupMany(ctx context.Context, ids []string) ([]*queue.JobState, error)
}

// Redis is the Store of a program: the Workflows facet of q, with q's
// clock, the replay of a dead step's job and the reads of steps' jobs.
func Redis(q *queue.Queue) Store { return redisStore{Workflows: q.Workflows, q: q} }

type redisStore struct {
	queue.Workflows
	q *queue.Queue
}

func (s redisStore) Now() time.Time { return s.q.Now() }

func (s redisStore) Replay(ctx context.Context, id string) error { return s.q.Ops.Replay(ctx, id) }

func (s redisStore) LookupMany(ctx context.Context, ids []string) ([]*queue.JobState, error) {
	return s.q.Jobs.LookupMany(ctx, ids)
}
