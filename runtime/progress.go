package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// MaxProgressNote is the most bytes of a progress note that are kept: a
// longer note is cut at a rune boundary (Progress).
const MaxProgressNote = queue.MaxProgressNote

// ProgressEvery is how often a worker writes its running jobs' progress to
// Redis: each job's last value of the period, at most one write per job.
const ProgressEvery = 250 * time.Millisecond

// Progress tells how far the job whose handler received ctx has got:
// percent, 0 to 100, and a short note for a person ("resizing 3 of 8").
// Client.Job, `job ID`, the HTTP API and the dashboard show the last value
// of the job's current run while it runs; a retry starts with none.
//
// Progress only records the value in the worker's memory and returns: it
// never waits for Redis, and however often it is called, the worker writes
// a job's progress at most once per ProgressEvery (the last value, the
// final one of a run included). So it may be called in a tight loop. What
// is shown may lag what was said by up to ProgressEvery and a round trip.
//
// A note over MaxProgressNote bytes is cut to fit at a rune boundary, and
// invalid UTF-8 in it is replaced. Progress returns an error, storing
// nothing, when percent is outside 0..100 or when ctx is not a handler's
// context (the one a handler received, or one derived from it).
func Progress(ctx context.Context, percent int, note string) error {
	v, ok := ctx.Value(jobKey{}).(jobValue)
	if !ok || v.progress.to == nil {
		return errors.New("bananas: Progress: ctx is not a handler's context (call it with the context the handler received, or one derived from it)")
	}
	if percent < 0 || percent > 100 {
		return fmt.Errorf("bananas: Progress: percent %d is outside 0..100", percent)
	}
	r := v.progress
	ttl := progressTTL
	if dl, ok := ctx.Deadline(); ok {
		// The run cannot outlast its deadline; its value need not either.
		ttl = min(max(time.Until(dl), 0)+progressTTLMargin, progressTTL)
	}
	r.to.set(queue.ProgressWrite{
		Route: r.route, ID: v.job.ID, TTL: ttl,
		Progress: queue.Progress{Attempt: v.job.Attempt, Token: r.token, Percent: percent, Note: cutNote(note), At: r.to.now()},
	})
	return nil
}

const (
	// progressTTL bounds how long a stored progress value lives: the run's
	// deadline and progressTTLMargin, at most this.
	progressTTL       = 24 * time.Hour
	progressTTLMargin = time.Minute
)

// cutNote is note valid UTF-8 and at most MaxProgressNote bytes, cut at a
// rune boundary.
func cutNote(note string) string {
	note = strings.ToValidUTF8(note, "\uFFFD")
	if len(note) <= MaxProgressNote {
		return note
	}
	cut := MaxProgressNote
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut]
}

// progressRun is where the Progress calls of one run go: the worker's
// flusher, under the run's shard route and lease token.
type progressRun struct {
	to           *progressFlusher
	route, token string
}

// progressFlusher keeps the last progress of each run in memory and writes
// the runs that changed in one pipelined round trip at most once per
// ProgressEvery, so that a job costs Redis at most one write per period
// however often its handler calls Progress. A worker runs one (Run) beside
// its engine; it sleeps while no run reports.
type progressFlusher struct {
	q      *queue.Queue
	every  time.Duration
	outage *scheduler.OutageLog

	kick  chan struct{} // a run reported, or a write waits to be tried again
	mu    sync.Mutex
	dirty map[progressKey]queue.ProgressWrite
}

type progressKey struct{ route, id, token string }

func newProgressFlusher(q *queue.Queue, outage *scheduler.OutageLog) *progressFlusher {
	return &progressFlusher{q: q, every: ProgressEvery, outage: outage, kick: make(chan struct{}, 1), dirty: map[progressKey]queue.ProgressWrite{}}
}

func (f *progressFlusher) now() time.Time { return f.q.Now() }

// set makes w the value its run's next flush writes.
func (f *progressFlusher) set(w queue.ProgressWrite) {
	f.mu.Lock()
	f.dirty[progressKey{w.Route, w.ID, w.Token}] = w
	f.mu.Unlock()
	f.wake()
}

// wake tells Run there is something to write, without waiting.
func (f *progressFlusher) wake() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// Run flushes until ctx ends, then once more, so that the last values said
// before the worker stopped are written. It sleeps while no run reports,
// and flushes at most once per period: at once when the last flush is a
// period old, else when it will be.
func (f *progressFlusher) Run(ctx context.Context) {
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
func (f *progressFlusher) flush(ctx context.Context) {
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

	failed, err := f.q.Jobs.WriteProgress(ctx, ws)
	if err == nil {
		f.outage.OK("progress")
		return
	}
	f.outage.Failed("progress", err)
	now := f.now()
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

// handlerValue is what the context of d's handler holds under jobKey.
func (w *Worker) handlerValue(d *queue.Dispatch) any {
	v := jobValue{job: jobOf(d), c: w.c, progress: progressRun{to: w.progress, route: d.Route, token: d.Token}}
	if d.Envelope.Workflow != "" {
		v.trail = new(string)
	}
	return v
}
