package engine

import (
	"context"
	"sync"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// ProgressFlusher keeps the last progress of each run in memory and writes
// the runs that changed in one pipelined round trip at most once per
// period, so that a job costs Redis at most one write per period
// however often its handler calls Progress. A worker runs one (Run) beside
// its engine; it sleeps while no run reports.
type ProgressFlusher struct {
	q      Queue
	every  time.Duration
	outage *scheduler.OutageLog

	kick  chan struct{} // a run reported, or a write waits to be tried again
	mu    sync.Mutex
	dirty map[progressKey]queue.ProgressWrite
}

type progressKey struct{ route, id, token string }

// NewProgressFlusher returns the flusher of a worker's runs over q, writing
// at most once per every; outage logs its failing writes and their end.
func NewProgressFlusher(q Queue, every time.Duration, outage *scheduler.OutageLog) *ProgressFlusher {
	return &ProgressFlusher{q: q, every: every, outage: outage, kick: make(chan struct{}, 1), dirty: map[progressKey]queue.ProgressWrite{}}
}

// Now is the queue's time, which a reported value is stamped with.
func (f *ProgressFlusher) Now() time.Time { return f.q.Now() }

// Set makes w the value its run's next flush writes.
func (f *ProgressFlusher) Set(w queue.ProgressWrite) {
	f.mu.Lock()
	f.dirty[progressKey{w.Route, w.ID, w.Token}] = w
	f.mu.Unlock()
	f.wake()
}

// wake tells Run there is something to write, without waiting.
func (f *ProgressFlusher) wake() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// Run flushes until ctx ends, then once more, so that the last values said
// before the worker stopped are written. It sleeps while no run reports,
// and flushes at most once per period: at once when the last flush is a
// period old, else when it will be.
func (f *ProgressFlusher) Run(ctx context.Context) {
	final := func() {
		last, cancel := context.WithTimeout(context.WithoutCancel(ctx), progressCallTimeout)
		defer cancel()
		f.flush(last)
	}
	var last time.Time
	for {
		select {
		case <-f.kick:
		case <-ctx.Done():
			final()
			return
		}
		if wait := f.every - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				final()
				return
			}
		}
		last = time.Now()
		call, cancel := context.WithTimeout(ctx, progressCallTimeout)
		f.flush(call)
		cancel()
	}
}

// progressCallTimeout bounds one flush: a Redis that does not answer holds
// the values back (they wait for the next flush), never the loop.
const progressCallTimeout = 5 * time.Second

// flush writes the runs that changed since the last flush. A write that did
// not reach Redis is kept for the next flush, unless its run said something
// newer meanwhile or its value would have expired already.
func (f *ProgressFlusher) flush(ctx context.Context) {
	f.mu.Lock()
	if len(f.dirty) == 0 {
		f.mu.Unlock()
		return
	}
	ws := make([]queue.ProgressWrite, 0, len(f.dirty))
	for _, w := range f.dirty {
		ws = append(ws, w)
	}
	clear(f.dirty)
	f.mu.Unlock()

	failed, err := f.q.WriteProgress(ctx, ws)
	if err == nil {
		f.outage.OK("progress")
		return
	}
	f.outage.Failed("progress", err)
	now := f.Now()
	f.mu.Lock()
	for _, w := range failed {
		k := progressKey{w.Route, w.ID, w.Token}
		if _, newer := f.dirty[k]; !newer && w.At.Add(w.TTL).After(now) {
			f.dirty[k] = w
		}
	}
	again := len(f.dirty) > 0
	f.mu.Unlock()
	if again {
		f.wake() // a period from now: Run waits out the period since this flush
	}
}
