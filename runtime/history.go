package runtime

import (
	"context"
	"fmt"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/runtime/internal/ext"
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
	c.openRow(&j)
	return &j, nil
}
