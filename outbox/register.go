package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bananas-go/bananas/runtime"
)

// init makes runtime.Main run a relay of OUTBOX_URL in its workers: a
// blank import of this package is enough.
func init() {
	runtime.RegisterOutbox(func(ctx context.Context, cfg runtime.OutboxConfig) (runtime.OutboxRelay, error) {
		pool, err := pgxpool.New(ctx, cfg.URL) // connects on first use: a worker starts while PostgreSQL is down
		if err != nil {
			return nil, fmt.Errorf("outbox: %w", err)
		}
		tasks := cfg.Tasks
		if tasks == nil {
			tasks = []string{}
		}
		r := NewRelay(pool, cfg.Client, RelayOptions{Tasks: tasks, Logger: cfg.Logger})
		r.ownsPool = true
		return r, nil
	})
}
