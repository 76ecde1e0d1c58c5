package engine

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// batchFake is fakeQueue with FetchBatch: it hands out one job of a flow
// through FetchBatch, and records what it was asked.
type batchFake struct {
	*fakeQueue
	mu    sync.Mutex
	asked []string // task, per and n of each FetchBatch call, formatted
	job   *queue.Dispatch
}

func (q *batchFake) FetchBatch(_ context.Context, route string, _ []queue.Priority, task string, per, n int, _, _ time.Time) ([]*queue.Dispatch, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.asked = append(q.asked, route+" "+task)
	if q.job == nil || per != 10 {
		return nil, nil
	}
	d := q.job
	q.job = nil
	return []*queue.Dispatch{d}, nil
}

// A worker with a keyed batch task fetches it with FetchBatch on the
// task's route (its shards alike), and gives each of its jobs its timeout
// plus the batch's linger, the longest the job may wait for its batch.
func TestBatch_KeyedBatchTaskIsFetchedByKeyWithItsLingerAddedToItsTimeout(t *testing.T) {
	d := job()
	d.Flow = "t|k"
	q := &batchFake{fakeQueue: &fakeQueue{ackOK: true}, job: d}
	ran := make(chan time.Duration, 1)
	e := New(Config{
		Queue: q, Metrics: &fakeMetrics{}, Logger: slog.New(slog.DiscardHandler), ID: "w1",
		Routes: []string{"r"}, Priorities: []queue.Priority{queue.Normal}, Tasks: []string{"t"},
		FetchJobs: true, Concurrency: 10, Lease: time.Minute, ShutdownTimeout: time.Second, JobTimeout: time.Minute,
		ResultTTL: time.Hour, FailureTTL: time.Hour, SafetyPoll: 5 * time.Millisecond,
		RetryDelay: func(queue.Envelope, int) time.Duration { return time.Second },
		Exec: func(ctx context.Context, got *queue.Dispatch) Outcome {
			dl, _ := ctx.Deadline()
			if got.Flow == "t|k" {
				ran <- time.Until(dl)
			}
			return Outcome{}
		},
		JobKey: struct{}{}, JobValue: func(*queue.Dispatch) any { return nil },
		State:   func(int) []byte { return nil },
		Batches: []Batch{{Task: "t", Route: "r", Size: 10, Linger: time.Hour, Keyed: true}},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case left := <-ran:
		if left < time.Hour {
			t.Fatalf("the batch job ran with %s left of its deadline, want its timeout (1m) plus its linger (1h)", left)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the job FetchBatch handed out did not run within 10s")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.asked) == 0 || q.asked[0] != "r t" {
		t.Fatalf("FetchBatch was asked %v, want route r, task t", q.asked)
	}
}
