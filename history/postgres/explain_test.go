package postgres

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/queue"
	"github.com/jackc/pgx/v5"
)

var explainFlag = flag.Bool("explain", false, "TestSearchPlans: fill a table with 100,000 rows and log the searches' plans (docs/HISTORY.md)")

// fill writes n rows over days days ending at end: 20 tasks, 5 routes, 90%
// completed, 8% failed, 2% canceled, args naming one of 1,000 customers
// and a number below 100. Then VACUUM ANALYZE, as autovacuum would: it
// also moves the GIN index's pending entries into the index proper.
func fill(t *testing.T, s *Store, n, days int, end time.Time) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	span := time.Duration(days) * 24 * time.Hour
	var batch []bananastype.Job
	for i := range n {
		ended := end.Add(-time.Duration(rng.Int64N(int64(span)))).Truncate(time.Millisecond)
		r := row(fmt.Sprintf("01J%07d", i), ended)
		r.Name = fmt.Sprintf("task.t%02d", rng.IntN(20))
		r.Route = fmt.Sprintf("route%d", rng.IntN(5))
		r.Args, _ = json.Marshal(map[string]any{"customer": map[string]any{"id": fmt.Sprintf("c-%d", rng.IntN(1000))}, "n": rng.IntN(100)})
		switch p := rng.IntN(100); {
		case p < 8:
			r.Status, r.Error = queue.StatusFailed, []string{"dial tcp: i/o timeout", "smtp: 550 no such user", "context deadline exceeded"}[rng.IntN(3)]
		case p < 10:
			r.Status, r.Error = queue.StatusCanceled, "canceled by the dashboard"
		}
		batch = append(batch, r)
		if len(batch) == 1000 || i == n-1 {
			write(t, s, batch...)
			batch = batch[:0]
		}
	}
	if _, err := s.pool.Exec(context.Background(), "VACUUM ANALYZE bananas_history"); err != nil {
		t.Fatal(err)
	}
}

func explain(t *testing.T, s *Store, sql string, args ...any) string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), "EXPLAIN (ANALYZE, COSTS OFF) "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

var seqScanOfRows = regexp.MustCompile(`Seq Scan on (\S+) .*rows=[1-9]|Seq Scan on (\S+) [^\n]*\n\s+Filter[^\n]*\n\s+Rows Removed`)

// Over 100,000 rows of a week, every search reads its page through an
// index (text through pg_trgm's): no sequential scan reads a row. Run with -explain
// (-v to see the plans).
func TestSearchPlans_EverySearchReadsAnIndex(t *testing.T) {
	if !*explainFlag {
		t.Skip("fills a table with 100,000 rows: run with -explain")
	}
	s := newStore(t)
	// Seven whole days: a partition holding a sliver of a day is read
	// whole, rightly, and would pass for a sequential scan of the table.
	end := day(time.Now())
	fill(t, s, 100_000, 7, end)
	first, err := s.Search(context.Background(), history.Query{Task: "task.t03"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		q       history.Query
		indexed bool
	}{
		{"newest", history.Query{}, true},
		{"task", history.Query{Task: "task.t03"}, true},
		{"task, page 2", history.Query{Task: "task.t03", Cursor: first.Next}, true},
		{"route", history.Query{Route: "route2"}, true},
		{"status failed", history.Query{Status: queue.StatusFailed}, true},
		{"one hour", history.Query{Since: end.Add(-50 * time.Hour), Until: end.Add(-49 * time.Hour)}, true},
		{"args customer.id (a string)", history.Query{Args: map[string]string{"customer.id": "c-42"}}, true},
		{"args n (a number, 1% of rows)", history.Query{Args: map[string]string{"n": "42"}}, true},
		{"text in the error, frequent", history.Query{Text: "no such user"}, true},
		{"text in the id, one row", history.Query{Text: "01J0004242"}, true},
	} {
		sql, args, _, err := searchSQL(tc.q)
		if err != nil {
			t.Fatal(err)
		}
		plan := explain(t, s, sql, args...)
		t.Logf("-- %s\n%s\n%s", tc.name, sql, plan)
		if m := seqScanOfRows.FindString(plan); tc.indexed && m != "" {
			t.Errorf("%s: a sequential scan reads rows: %s", tc.name, m)
		}
	}
	t.Logf("-- job\n%s", explain(t, s, "SELECT "+columns+" FROM bananas_history WHERE id = $1"+order, "01J0004242"))
}
