// Package historian moves the jobs that ended for good from Redis into the
// task history: it reads the head of each kept route's ended list (package
// queue, ended.go), writes those records to a history.Store as rows, and
// only then drops them from Redis. A store that is down or slow leaves them
// waiting in Redis, within a cap past which the oldest are dropped and
// counted; a writer killed mid-batch leaves them to be written again, which
// the store keeps once (rows are keyed by job id, life and attempt).
//
// It owns that loop and the retention sweep. It must not know task types
// (the caller's Row turns a record into a row, args and result as JSON) or
// which worker keeps which route (the caller's Routes says): one writer per
// route at a time is the keeper's lock, not this package's.
package historian

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
)

// Defaults of Writer's fields.
const (
	DefaultBatch     = 1000
	DefaultBacklog   = 1_000_000
	DefaultRetention = 30 * 24 * time.Hour
	DefaultInterval  = time.Second
	maxBackoff       = 30 * time.Second
	sweepEvery       = time.Hour
	// logEvery is the most often a lasting condition (a backlog behind,
	// rows dropped past the cap) is logged again: a log line a round
	// would bury everything else.
	logEvery = 5 * time.Minute
	// behindBatches: the history falls behind when more than this many
	// batches wait in Redis, and has caught up when less than one does.
	behindBatches = 10
)

// Writer is one worker's history writer.
type Writer struct {
	Queue  *queue.Queue
	Store  history.Store
	Routes func() []string // the routes to move, each the worker keeps
	// Row turns a record of route into its row (args and result as JSON).
	Row func(route string, rec results.Record) bananastype.Job
	// Batch is the most records a write carries; Cap the most a route's
	// ended list keeps (the oldest past it are dropped); Retention how long
	// rows are kept; Interval how often an idle writer looks. Zero: the
	// defaults above.
	Batch     int
	Cap       int64
	Retention time.Duration
	Interval  time.Duration
	Logger    *slog.Logger
	// Dropped is told of records dropped past the cap; Written of rows
	// written; Backlog of how many records a route's list held at its last
	// read (the batch read, or the list's length when the batch was full).
	// Each may be nil.
	Dropped func(route string, n int64)
	Written func(route string, n int)
	Backlog func(route string, n int64)
	// Migrate, when set, creates or migrates the store's schema before the
	// first write, retried like a write until it succeeds: a worker starts
	// and runs its jobs while the store is down.
	Migrate func(ctx context.Context) error

	behind     time.Time // when the backlog went past behindBatches; zero: not behind
	behindLog  time.Time // the last log of the backlog behind
	dropped    int64     // records dropped past the cap since the last log of them
	droppedLog time.Time // the last log of records dropped
}

// Run moves records until ctx ends.
func (w *Writer) Run(ctx context.Context) {
	w.defaults()
	w.Logger.Info("bananas: task history on: jobs that end for good are written to the history store, waiting in Redis while it is away",
		"store", where(w.Store), "retention", w.Retention.String(), "backlog_cap", w.Cap, "batch", w.Batch)
	backoff := time.Duration(0)
	var swept time.Time
	failing := false
	for ctx.Err() == nil {
		more, err := w.round(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			if !failing {
				w.Logger.Warn("bananas: the task history cannot be written; finished jobs wait in Redis", "err", err)
			}
			failing = true
			backoff = min(max(2*backoff, w.Interval), maxBackoff)
		case err == nil:
			if failing {
				w.Logger.Info("bananas: the task history is written again")
			}
			failing, backoff = false, 0
		}
		if !failing && time.Since(swept) >= sweepEvery {
			swept = time.Now()
			if err := w.Store.DropBefore(ctx, time.Now().Add(-w.Retention)); err != nil && ctx.Err() == nil {
				w.Logger.Warn("bananas: the task history's old rows cannot be dropped", "err", err)
			}
		}
		wait := w.Interval
		switch {
		case failing:
			wait = backoff
		case more:
			continue // a full batch: more may wait
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

func (w *Writer) defaults() {
	if w.Batch <= 0 {
		w.Batch = DefaultBatch
	}
	if w.Cap <= 0 {
		w.Cap = DefaultBacklog
	}
	if w.Retention <= 0 {
		w.Retention = DefaultRetention
	}
	if w.Interval <= 0 {
		w.Interval = DefaultInterval
	}
	if w.Logger == nil {
		w.Logger = slog.New(slog.DiscardHandler)
	}
}

// round moves one batch of every route; more reports that a batch was full.
// It reports each route's backlog, its shards' summed.
func (w *Writer) round(ctx context.Context) (more bool, err error) {
	if w.Migrate != nil {
		if err := w.Migrate(ctx); err != nil {
			return false, fmt.Errorf("migrate the schema: %w", err)
		}
		w.Migrate = nil
	}
	backlogs := map[string]int64{}
	for _, r := range w.Routes() {
		full, waiting, rerr := w.move(ctx, r)
		backlogs[queue.ShardBase(r)] += waiting
		if rerr != nil {
			err = rerr
			continue
		}
		more = more || full
	}
	total := int64(0)
	for route, n := range backlogs {
		total += n
		if w.Backlog != nil {
			w.Backlog(route, n)
		}
	}
	w.logBacklog(total, time.Now())
	return more, err
}

// logBacklog logs the history falling behind (more than behindBatches
// batches waiting in Redis over every route) when it starts and every
// logEvery while it lasts, and its catching up.
func (w *Writer) logBacklog(waiting int64, now time.Time) {
	switch {
	case waiting > int64(behindBatches*w.Batch):
		if w.behind.IsZero() {
			w.behind = now
		} else if now.Sub(w.behindLog) < logEvery {
			return
		}
		w.behindLog = now
		w.Logger.Warn("bananas: the task history falls behind: finished jobs wait in Redis to be written", "waiting", waiting,
			"behind_for", now.Sub(w.behind).Round(time.Second).String(), "backlog_cap", w.Cap)
	case waiting < int64(w.Batch) && !w.behind.IsZero():
		w.Logger.Info("bananas: the task history has caught up", "waiting", waiting, "behind_for", now.Sub(w.behind).Round(time.Second).String())
		w.behind, w.behindLog = time.Time{}, time.Time{}
	}
}

// where names the store for a log: its own words (a fmt.Stringer, such as
// the PostgreSQL store's URL without its password), or its type.
func where(s history.Store) string {
	if d, ok := s.(fmt.Stringer); ok {
		return d.String()
	}
	return fmt.Sprintf("%T", s)
}

// move writes the head of route's ended list and drops what it wrote. A
// full batch may mean a backlog past the cap: the list is shed to the cap
// first (a list shorter than a batch and the cap is not past the cap, so an
// idle route costs one read).
func (w *Writer) move(ctx context.Context, route string) (full bool, waiting int64, err error) {
	recs, err := w.Queue.Ended.Head(ctx, route, w.Batch)
	if err != nil {
		return false, 0, err
	}
	if len(recs) == w.Batch || int64(len(recs)) > w.Cap {
		if err := w.shed(ctx, route); err != nil {
			return false, 0, err
		}
		if recs, err = w.Queue.Ended.Head(ctx, route, w.Batch); err != nil {
			return false, 0, err
		}
	}
	waiting = w.waiting(ctx, route, len(recs))
	if len(recs) == 0 {
		return false, 0, nil
	}
	rows := make([]bananastype.Job, 0, len(recs))
	for _, b := range recs {
		rec, derr := results.Decode(b)
		if derr != nil {
			// Garbage, not a record a script wrote: dropped with the batch.
			w.Logger.Warn("bananas: an entry of the ended list is not a job's record; dropped", "route", route, "err", derr)
			if w.Dropped != nil {
				w.Dropped(queue.ShardBase(route), 1)
			}
			continue
		}
		row, ok := keyable(w.Row(route, rec))
		if !ok {
			// No id or no time to key it by: a store refuses such a row,
			// and would refuse the batch with it again and again.
			w.Logger.Warn("bananas: a finished job's record has no id or no time; dropped unwritten", "route", route, "id", rec.ID)
			if w.Dropped != nil {
				w.Dropped(queue.ShardBase(route), 1)
			}
			continue
		}
		rows = append(rows, row)
	}
	if len(rows) > 0 {
		if err := w.Store.Write(ctx, rows); err != nil {
			return false, waiting, err
		}
	}
	if _, err := w.Queue.Ended.Stored(ctx, route, recs); err != nil {
		return false, waiting, err
	}
	if w.Written != nil {
		w.Written(queue.ShardBase(route), len(rows))
	}
	return len(recs) == w.Batch, waiting, nil
}

// shed keeps route's ended list within the cap.
func (w *Writer) shed(ctx context.Context, route string) error {
	n, err := w.Queue.Ended.Shed(ctx, route, w.Cap)
	if err != nil || n == 0 {
		return err
	}
	w.dropped += n
	if now := time.Now(); now.Sub(w.droppedLog) >= logEvery {
		// dropped counts every route's since the last such line, which
		// comes at most every logEvery: the route named is the one whose
		// drop brought the line, and bananas_history_dropped_total has
		// each route's count.
		w.Logger.Warn("bananas: the task history's backlog is full; the oldest finished jobs were dropped unwritten",
			"dropped", w.dropped, "backlog_cap", w.Cap, "last_route", route)
		w.dropped, w.droppedLog = 0, now
	}
	if w.Dropped != nil {
		w.Dropped(queue.ShardBase(route), n)
	}
	return nil
}

// waiting is how many records route's list held at this read: read, when
// the batch was not full, else the list's length (one more read, only
// while a backlog drains).
func (w *Writer) waiting(ctx context.Context, route string, read int) int64 {
	if read < w.Batch {
		return int64(read)
	}
	m, err := w.Queue.Ended.Backlog(ctx, []string{route})
	if err != nil {
		return int64(read)
	}
	return m[route]
}

// keyable is r with an end time a store can key it by: its start, or its
// enqueue, when its end was not recorded; ok is false when it has no id or
// no time at all.
func keyable(r bananastype.Job) (bananastype.Job, bool) {
	if r.FinishedAt.IsZero() {
		r.FinishedAt = r.StartedAt
		if r.FinishedAt.IsZero() {
			r.FinishedAt = r.CreatedAt
		}
	}
	return r, r.ID != "" && !r.FinishedAt.IsZero()
}

// RowOf is the row of rec, a record of route, with args and result as
// given (JSON, or nil for null).
func RowOf(route string, rec results.Record, args, result []byte) bananastype.Job {
	row := rec.Job(queue.ShardBase(route))
	row.Args, row.ResultJSON = args, result
	return row
}
