package postgres

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

func partitions(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'bananas_history'::regclass ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestMigrate_MakesTodaysAndTomorrowsPartitions(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	today := day(time.Now())
	got := partitions(t, s)
	for _, d := range []time.Time{today, today.AddDate(0, 0, 1)} {
		if !slices.Contains(got, partitionName(d)) {
			t.Errorf("partitions %v; want %s among them", got, partitionName(d))
		}
	}
}

// Two processes migrating one fresh database at once, and again, leave one
// schema at the newest version, each version recorded once.
func TestMigrate_TwiceAndConcurrentlyFromTwoStores(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).Database(t)
	ctx := context.Background()
	stores := make([]*Store, 2)
	for i := range stores {
		s, err := Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		stores[i] = s
	}
	for range 2 {
		var wg sync.WaitGroup
		errs := make([]error, len(stores))
		for i, s := range stores {
			wg.Go(func() { errs[i] = s.Migrate(ctx) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	var n, maxVersion int
	if err := stores[0].pool.QueryRow(ctx, "SELECT count(*), max(version) FROM bananas_history_versions").Scan(&n, &maxVersion); err != nil {
		t.Fatal(err)
	}
	if n != len(migrations) || maxVersion != len(migrations) {
		t.Fatalf("%d versions recorded, newest %d; want %d, %d", n, maxVersion, len(migrations), len(migrations))
	}
	write(t, stores[1], row("a", base))
	if got := search(t, stores[0], history.Query{}); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("rows %v; want [a]", got)
	}
}

// DropBefore a time in the middle of a day drops the partitions of the days
// before it, deletes that day's rows before it, and keeps every later row.
func TestDropBefore_DropsOldDaysAndKeepsNewerRows(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	at := func(d, h int) time.Time { return base.AddDate(0, 0, d).Add(time.Duration(h) * time.Hour) }
	write(t, s, row("d0", at(0, 5)), row("d1", at(1, 23)), row("d2-early", at(2, 6)), row("d2-late", at(2, 18)), row("d3", at(3, 1)))
	if err := s.DropBefore(context.Background(), at(2, 12)); err != nil {
		t.Fatal(err)
	}
	if got := search(t, s, history.Query{}); !slices.Equal(got, []string{"d3", "d2-late"}) {
		t.Fatalf("rows %v; want [d3 d2-late]", got)
	}
	got := partitions(t, s)
	for d := range 4 {
		name := partitionName(base.AddDate(0, 0, d))
		if has := slices.Contains(got, name); has != (d >= 2) {
			t.Errorf("partition %s there: %v; want %v (partitions %v)", name, has, d >= 2, got)
		}
	}
	// A row of a dropped day written again gets its partition back.
	write(t, s, row("d0", at(0, 5)))
	if got := search(t, s, history.Query{Until: at(1, 0)}); !slices.Equal(got, []string{"d0"}) {
		t.Fatalf("rows before day 1 %v; want [d0]", got)
	}
}

// Writes fail while PostgreSQL is away and succeed once it is back: the
// pool replaces its broken connections.
func TestWrite_FailsWhileServerIsDownAndWorksAfterResume(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	s := openURL(t, srv.URL())
	write(t, s, row("before", base))
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := s.Write(ctx, []bananastype.Job{row("during", base.Add(time.Hour))})
	cancel()
	if err == nil {
		t.Fatal("Write succeeded while the server was stopped")
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	write(t, s, row("after", base.Add(2*time.Hour)))
	if got := search(t, s, history.Query{}); !slices.Equal(got, []string{"after", "before"}) {
		t.Fatalf("rows %v; want [after before]", got)
	}
}

// history.Open of a postgres:// or postgresql:// URL opens a store that
// migrates (history.Migrator), and writes once migrated.
func TestRegistry_OpensPostgresURLs(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).Database(t)
	for _, u := range []string{url, "postgresql" + url[len("postgres"):]} {
		st, err := history.Open(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.(history.Migrator).Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := st.Write(context.Background(), []bananastype.Job{row("a", base)}); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
}

// A program that imports package history but not this one links no
// PostgreSQL driver.
func TestHistory_LinksNoPostgreSQLDriver(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/bananas-go/bananas/history").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "jackc") || strings.Contains(string(out), "history/postgres") {
		t.Fatalf("package history depends on the driver or on this package:\n%s", out)
	}
}

// A store names its database for a log without the password.
func TestStore_StringNamesTheDatabaseWithoutThePassword(t *testing.T) {
	t.Parallel()
	st, err := history.Open(context.Background(), "postgres://bob:s3cret@db.example:6543/hist?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := st.(fmt.Stringer).String(); got != "postgres://bob@db.example:6543/hist" {
		t.Fatalf("String() = %q; want postgres://bob@db.example:6543/hist", got)
	}
}
