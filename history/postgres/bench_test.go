package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// The ways of writing a batch idempotently, measured against each other
// for 1,000 rows (docs/HISTORY.md): the store's INSERT of unnested arrays,
// a multi-row INSERT (14 parameters a row), and COPY into a temporary table
// then INSERT ... SELECT. Run with:
//
//	go -C history/postgres test . -run '^$' -bench Write1000 -benchtime 200x
func BenchmarkWrite1000(b *testing.B) {
	for _, m := range []struct {
		name  string
		write func(context.Context, *Store, []bananastype.Job) error
	}{
		{"UnnestInsert", func(ctx context.Context, s *Store, rows []bananastype.Job) error { return s.insert(ctx, rows) }},
		{"MultiRowInsert", multiRowInsert},
		{"CopyThenInsert", copyThenInsert},
	} {
		for _, again := range []bool{false, true} {
			name := m.name + "/new"
			if again {
				name = m.name + "/again"
			}
			b.Run(name, func(b *testing.B) {
				s := openBench(b) // a database of its own: each method writes into an empty table
				n := 0
				batch := benchBatch(m.name, n)
				for b.Loop() {
					if !again {
						n++
						b.StopTimer()
						batch = benchBatch(m.name, n)
						b.StartTimer()
					}
					if err := m.write(context.Background(), s, batch); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func openBench(b *testing.B) *Store {
	s, err := Open(context.Background(), pgtest.Shared(b).Database(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	if err := s.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	if err := s.ensurePartitions(context.Background(), []time.Time{base}); err != nil {
		b.Fatal(err)
	}
	return s
}

// benchBatch is 1,000 rows of one day, with a realistic small args and
// result, distinct for each (method, n).
func benchBatch(method string, n int) []bananastype.Job {
	rows := make([]bananastype.Job, 1000)
	for i := range rows {
		r := row(fmt.Sprintf("%s-%06d-%04d", method, n, i), base.Add(time.Duration(n*1000+i)*time.Millisecond))
		r.Args = []byte(`{"customer":{"id":"c-1234","plan":"pro"},"to":"someone@example.com","template":"welcome"}`)
		r.ResultJSON = []byte(`{"message_id":"0b9f1c2e-5d1a-4c55-9a53-7f3d1a2b3c4d"}`)
		rows[i] = r
	}
	return rows
}

func multiRowInsert(ctx context.Context, s *Store, rows []bananastype.Job) error {
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
func rowArgs(r bananastype.Job) []any {
	return []any{r.ID, r.Life, r.Attempts, r.Name, r.Route, string(r.Priority), string(r.Status),
		jsonText(r.Args), jsonText(r.ResultJSON), r.Error, r.CreatedAt.UTC(), timePtr(r.StartedAt), r.FinishedAt.UTC(), r.Worker}
}

func copyThenInsert(ctx context.Context, s *Store, rows []bananastype.Job) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMPORARY TABLE bananas_history_batch
			(LIKE bananas_history INCLUDING DEFAULTS) ON COMMIT DROP`); err != nil {
			return err
		}
		src := make([][]any, len(rows))
		for i, r := range rows {
			src[i] = rowArgs(r)
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"bananas_history_batch"},
			[]string{"id", "life", "attempt", "task", "route", "priority", "status", "args", "result", "error", "enqueued_at", "started_at", "ended_at", "worker"},
			pgx.CopyFromRows(src)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO bananas_history (`+columns+`) SELECT `+columns+` FROM bananas_history_batch ON CONFLICT DO NOTHING`)
		return err
	})
}
