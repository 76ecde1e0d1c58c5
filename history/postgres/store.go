package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bananas-go/bananas/history"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

func init() {
	open := func(ctx context.Context, url string) (history.Store, error) {
		s, err := Open(ctx, url)
		if err != nil {
			return nil, err
		}
		if err := s.Migrate(ctx); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
	history.Register("postgres", open)
	history.Register("postgresql", open)
}

// Store is the task history in one PostgreSQL database. Safe for concurrent
// use, by several processes too.
type Store struct {
	pool *pgxpool.Pool
}

var _ history.Store = (*Store)(nil)

// Open connects to the database url names (postgres://user@host/db, with
// pgx's parameters: sslmode, search_path, pool_max_conns and the others) and
// checks that it answers. It does not create the schema: Migrate does,
// and history.Open of a postgres:// URL calls both.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("history/postgres: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("history/postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("history/postgres: connect to %s: %w", cfg.ConnConfig.Host, err)
	}
	return &Store{pool: pool}, nil
}

// Close closes the store's connections.
func (s *Store) Close() { s.pool.Close() }

// batchRows is how many rows one INSERT carries: 14 parameters a row, far
// below PostgreSQL's 65,535 parameters a statement.
const batchRows = 1000

// Write stores rows, each once: a row whose key is stored already is left
// as it is (ON CONFLICT DO NOTHING). It creates the day partitions the rows
// need when one is missing. Rows go in key order, so that two writers of
// overlapping batches wait for each other's rows in one order and never
// deadlock.
func (s *Store) Write(ctx context.Context, rows []history.Row) error {
	if len(rows) == 0 {
		return nil
	}
	for i := range rows {
		if err := valid(&rows[i]); err != nil {
			return err
		}
	}
	sorted := slices.Clone(rows)
	slices.SortFunc(sorted, compareKeys)
	for start := 0; start < len(sorted); start += batchRows {
		chunk := sorted[start:min(start+batchRows, len(sorted))]
		err := s.insert(ctx, chunk)
		if isNoPartition(err) {
			if err = s.ensurePartitions(ctx, days(chunk)); err == nil {
				err = s.insert(ctx, chunk)
			}
		}
		if err != nil {
			return fmt.Errorf("history/postgres: write %d rows: %w", len(chunk), err)
		}
	}
	return nil
}

func valid(r *history.Row) error {
	switch {
	case r.ID == "":
		return errors.New("history/postgres: a row without an id")
	case !r.Status.Valid():
		return fmt.Errorf("history/postgres: row %s has status %q; want completed, failed or canceled", r.ID, r.Status)
	case r.EndedAt.IsZero():
		return fmt.Errorf("history/postgres: row %s has no end time", r.ID)
	}
	return nil
}

func compareKeys(a, b history.Row) int {
	return cmp.Or(strings.Compare(a.ID, b.ID), cmp.Compare(a.Life, b.Life), cmp.Compare(a.Attempt, b.Attempt), a.EndedAt.Compare(b.EndedAt))
}

const columns = "id, life, attempt, task, route, priority, status, args, result, error, enqueued_at, started_at, ended_at, worker"

// insert writes rows in one multi-row INSERT.
func (s *Store) insert(ctx context.Context, rows []history.Row) error {
	var sql strings.Builder
	sql.WriteString("INSERT INTO bananas_history (" + columns + ") VALUES ")
	args := make([]any, 0, len(rows)*14)
	for i, r := range rows {
		if i > 0 {
			sql.WriteByte(',')
		}
		n := len(args)
		fmt.Fprintf(&sql, "($%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d)",
			n+1, n+2, n+3, n+4, n+5, n+6, n+7, n+8, n+9, n+10, n+11, n+12, n+13, n+14)
		args = append(args, rowArgs(r)...)
	}
	sql.WriteString(" ON CONFLICT DO NOTHING")
	_, err := s.pool.Exec(ctx, sql.String(), args...)
	return err
}

// rowArgs is r as the values of columns, in their order.
func rowArgs(r history.Row) []any {
	return []any{r.ID, r.Life, r.Attempt, r.Task, r.Route, r.Priority, string(r.Status),
		jsonArg(r.Args), jsonArg(r.Result), r.Error, r.EnqueuedAt.UTC(), timeArg(r.StartedAt), r.EndedAt.UTC(), r.Worker}
}

// jsonArg is JSON for a jsonb column, nil (SQL NULL) when none.
func jsonArg(j []byte) any {
	if len(j) == 0 || string(j) == "null" {
		return nil
	}
	return string(j)
}

func timeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

// isNoPartition reports whether err is PostgreSQL's "no partition of
// relation found for row": a row of a day with no partition yet.
func isNoPartition(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23514" && strings.Contains(pe.Message, "no partition")
}

// days are the UTC days the rows ended on.
func days(rows []history.Row) []time.Time {
	var out []time.Time
	for _, r := range rows {
		d := day(r.EndedAt)
		if !slices.ContainsFunc(out, d.Equal) {
			out = append(out, d)
		}
	}
	return out
}

func day(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}
