package outbox

import (
	"context"
	"slices"
	"time"
)

// reportEvery bounds how often a relay looks for rows of tasks it does not
// move, to log them.
const reportEvery = time.Minute

// reportUnknown logs, at most every reportEvery, the rows of tasks the
// relay does not move (RelayOptions.Tasks): they stay until a relay of a
// program that registers their task moves them.
func (r *Relay) reportUnknown(ctx context.Context) {
	if r.o.Tasks == nil || time.Since(r.lastScan) < reportEvery {
		return
	}
	r.lastScan = time.Now()
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	rows, err := r.pool.Query(ctx, `SELECT task, count(*), min(created_at) FROM bananas_outbox
		WHERE NOT (task = ANY($1)) GROUP BY task ORDER BY task`, r.o.Tasks)
	if err != nil {
		return // the next batch reports PostgreSQL's trouble
	}
	defer rows.Close()
	for rows.Next() {
		var task string
		var n int64
		var oldest time.Time
		if rows.Scan(&task, &n, &oldest) != nil {
			return
		}
		r.o.Logger.Warn("bananas: outbox relay: the outbox holds jobs of a task this program's worker does not register; they stay until a relay of a program that registers it moves them",
			"task", task, "rows", n, "oldest", oldest, "registered", slices.Clip(r.o.Tasks))
	}
}
