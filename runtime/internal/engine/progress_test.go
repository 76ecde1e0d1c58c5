package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// progressQueue records the progress writes it is given and fails the
// first one: a failing write to Redis on cue, which only a fake can make.
type progressQueue struct {
	Queue // the other methods are not called

	mu     sync.Mutex
	writes [][]queue.ProgressWrite
	wrote  chan struct{}
}

func (q *progressQueue) Now() time.Time { return time.Now() }

func (q *progressQueue) WriteProgress(_ context.Context, ws []queue.ProgressWrite) ([]queue.ProgressWrite, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.writes = append(q.writes, ws)
	q.wrote <- struct{}{}
	if len(q.writes) == 1 {
		return ws, errors.New("redis is down")
	}
	return nil, nil
}

// A run's value is written once per period, the last one said; a write
// that failed is tried again at the next flush without another Set.
func TestProgressFlusher_WritesTheLastValueAndRetriesAFailure(t *testing.T) {
	q := &progressQueue{wrote: make(chan struct{}, 8)}
	f := NewProgressFlusher(q, time.Millisecond, scheduler.NewOutageLog(slog.New(slog.DiscardHandler), "progress"))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()

	w := queue.ProgressWrite{Route: "r", ID: "j", TTL: time.Minute, Progress: queue.Progress{Token: "t", Percent: 10, At: f.Now()}}
	f.Set(w)
	for range 2 { // the failed write, then its retry
		select {
		case <-q.wrote:
		case <-time.After(10 * time.Second):
			t.Fatal("no write")
		}
	}
	cancel()
	<-done
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.writes) < 2 {
		t.Fatalf("writes = %v, want the failed one and its retry", q.writes)
	}
	for i, ws := range q.writes[:2] {
		if len(ws) != 1 || ws[0].Percent != 10 {
			t.Fatalf("write %d = %v, want the run's 10%%", i, ws)
		}
	}
}
