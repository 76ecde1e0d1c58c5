package runtime

import (
	"context"
	"fmt"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/internal/ext"
	"github.com/bananas-go/bananas/runtime/internal/historian"
)

// WithHistory keeps a task history in store (such as the PostgreSQL one of
// package history/postgres): every job that ends for good — completed, dead,
// canceled — through this client is also kept in Redis, in the same atomic
// step as its end, until a worker of this client that keeps its route has
// written it to store; Job falls back to store once Redis has let a job go.
// Under Main, HISTORY_URL sets it.
func WithHistory(store history.Store) ConnectOption {
	return func(cfg *connectConfig) {
		cfg.setups = append(cfg.setups, func(c *Client) {
			ext.Put(&c.ext, historyKey{}, store)
			c.q.Ended.Keep(store != nil) // ends wait in Redis for the history
		})
	}
}

// historyKey keeps the client's history store in its extensions.
type historyKey struct{}

// History returns the client's history store, or nil when it keeps none.
func (c *Client) History() history.Store {
	return ext.Get(&c.ext, historyKey{}, func() history.Store { return nil })
}

// jobFromHistory is the newest row of job id in the client's history, or
// ErrJobNotFound.
func (c *Client) jobFromHistory(ctx context.Context, id string) (*bananastype.Job, error) {
	store := c.History()
	if store == nil {
		return nil, fmt.Errorf("%w: %s", ErrJobNotFound, id)
	}
	rows, err := store.Job(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("bananas: read job %s from the task history: %w", id, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrJobNotFound, id)
	}
	j := rows[0]
	j.FromHistory = true
	return &j, nil
}

// historyWriter returns the writer that moves the ended jobs of the routes
// w keeps into the client's history, or nil when the client keeps none.
func (w *Worker) historyWriter() *historian.Writer {
	store := w.c.History()
	if store == nil {
		return nil
	}
	return &historian.Writer{
		Queue: w.c.q, Store: store, Routes: w.keptRoutes,
		Row:       w.historyRow,
		Cap:       w.opts.HistoryBacklog,
		Retention: w.opts.HistoryRetention,
		Migrate:   w.historyMigrate(),
		Logger:    w.opts.Logger,
		Dropped:   w.c.metrics.HistoryDropped,
		Written:   w.c.metrics.HistoryWritten,
		Backlog:   w.c.metrics.HistoryBacklog,
	}
}

// historyMigrate is the writer's Migrate: the store's, when the worker
// migrates it (HistoryMigrate) and it has one.
func (w *Worker) historyMigrate() func(context.Context) error {
	if m, ok := w.c.History().(history.Migrator); ok && w.opts.HistoryMigrate {
		return m.Migrate
	}
	return nil
}

// historyRow is the row of rec with its args and result as the JSON of
// their Go types, by the task's generated code when the task is registered
// on w, or declared in the program (args only); null otherwise.
func (w *Worker) historyRow(route string, rec results.Record) bananastype.Job {
	var args, result []byte
	if h := w.handlers[rec.Name]; h != nil {
		if len(rec.Args) > 0 {
			if b, err := h.argsJSON(rec.Args); err == nil {
				args = b
			}
		}
		if len(rec.Value) > 0 && h.resultType != nil {
			if b, err := h.resultJSON(rec.Value); err == nil {
				result = b
			}
		}
	} else {
		args = declaredArgsJSON(rec.Name, rec.Args)
	}
	return historian.RowOf(route, rec, args, result)
}
