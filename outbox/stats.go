package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bananas-go/bananas/runtime/admin"
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
			"task", task, "rows", n, "oldest", oldest, "registered", r.o.Tasks)
	}
}

// Outbox reads the outbox's backlog now: its rows by task, each with its
// oldest row's age on the database's clock, and whether the relay moves
// the task (RelayOptions.Tasks). Relayed is this relay's count.
func (r *Relay) Outbox(ctx context.Context) (admin.Outbox, error) {
	rows, err := r.pool.Query(ctx, `SELECT task, count(*), min(created_at),
		(extract(epoch FROM clock_timestamp() - min(created_at)) * 1000)::bigint
		FROM bananas_outbox GROUP BY task ORDER BY task`)
	if noTable(err) {
		return admin.Outbox{Relayed: r.Relayed()}, nil
	}
	if err != nil {
		return admin.Outbox{}, fmt.Errorf("outbox: read the backlog: %w", err)
	}
	defer rows.Close()
	o := admin.Outbox{Relayed: r.Relayed()}
	var t admin.OutboxTask
	var ageMS int64
	_, err = pgx.ForEachRow(rows, []any{&t.Task, &t.Pending, &t.OldestAt, &ageMS}, func() error {
		t.OldestAge = time.Duration(ageMS) * time.Millisecond
		t.Registered = r.o.Tasks == nil || slices.Contains(r.o.Tasks, t.Task)
		o.Tasks = append(o.Tasks, t)
		o.Pending += t.Pending
		if o.OldestAt.IsZero() || t.OldestAt.Before(o.OldestAt) {
			o.OldestAt, o.OldestAge = t.OldestAt, t.OldestAge
		}
		return nil
	})
	if noTable(err) {
		return admin.Outbox{Relayed: r.Relayed()}, nil
	}
	if err != nil {
		return admin.Outbox{}, fmt.Errorf("outbox: read the backlog: %w", err)
	}
	return o, nil
}

// noTable reports whether err says the outbox's table does not exist: no
// relay has made the schema yet, so no row waits.
func noTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01" // undefined_table
}
