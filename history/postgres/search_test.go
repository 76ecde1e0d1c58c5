package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/internal/pgtest"
	"github.com/bananas-go/bananas/queue"
)

func ids(rows []bananastype.Job) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, r.ID)
	}
	return out
}

func search(t *testing.T, s *Store, q history.Query) []string {
	t.Helper()
	p, err := s.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return ids(p.Rows)
}

func TestSearch_ByEachFilterNewestFirst(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	at := func(h int) time.Time { return base.Add(time.Duration(h) * time.Hour) }
	a := row("a", at(1))
	b := row("b", at(2))
	b.Name, b.Route = "report.build", "reports"
	b.Args = json.RawMessage(`{"customer":{"id":42,"vip":true},"to":"x@y.z"}`)
	c := row("c", at(30)) // the next day
	c.Status, c.Error = queue.StatusFailed, "SMTP: 550 No Such User"
	c.Args = json.RawMessage(`{"customer":{"id":"42"}}`)
	d := row("d-100%", at(31))
	d.Status, d.Error = queue.StatusCanceled, "canceled"
	d.Args = json.RawMessage(`{"customer":{"id":"7"},"note":"42"}`)
	write(t, s, a, b, c, d)

	for _, tc := range []struct {
		name string
		q    history.Query
		want []string
	}{
		{"everything", history.Query{}, []string{"d-100%", "c", "b", "a"}},
		{"task", history.Query{Task: "report.build"}, []string{"b"}},
		{"route", history.Query{Route: "default"}, []string{"d-100%", "c", "a"}},
		{"status", history.Query{Status: queue.StatusFailed}, []string{"c"}},
		{"since", history.Query{Since: at(2)}, []string{"d-100%", "c", "b"}},
		{"until", history.Query{Until: at(2)}, []string{"a"}},
		{"since and until", history.Query{Since: at(2), Until: at(31)}, []string{"c", "b"}},
		{"text in the error, any case", history.Query{Text: "no such"}, []string{"c"}},
		{"text in the id", history.Query{Text: "D-1"}, []string{"d-100%"}},
		{"text with a wildcard character is literal", history.Query{Text: "100%"}, []string{"d-100%"}},
		{"text with an underscore is literal", history.Query{Text: "_"}, []string{}},
		{"args number or string", history.Query{Args: map[string]string{"customer.id": "42"}}, []string{"c", "b"}},
		{"args string", history.Query{Args: map[string]string{"customer.id": "7"}}, []string{"d-100%"}},
		{"args boolean", history.Query{Args: map[string]string{"customer.vip": "true"}}, []string{"b"}},
		{"args top level", history.Query{Args: map[string]string{"to": "a@b.c"}}, []string{"a"}},
		{"args two paths", history.Query{Args: map[string]string{"customer.id": "42", "to": "x@y.z"}}, []string{"b"}},
		{"args no match", history.Query{Args: map[string]string{"customer.id": "4"}}, []string{}},
		{"filters together", history.Query{Route: "default", Since: at(2), Args: map[string]string{"customer.id": "42"}}, []string{"c"}},
	} {
		if got := search(t, s, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v; want %v", tc.name, got, tc.want)
		}
	}
}

// 120 rows, many ending in the same millisecond, read 50 at a time: every
// row once, newest first, and the last page says it is the last.
func TestSearch_PagesThrough120RowsEachOnceNewestFirst(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	var batch []bananastype.Job
	for i := range 120 {
		r := row(fmt.Sprintf("j%03d", i%40), base.Add(time.Duration(i/7)*time.Hour)) // 7 rows an hour, over two days
		r.Life = i / 40
		batch = append(batch, r)
	}
	write(t, s, batch...)
	var got []bananastype.Job
	q := history.Query{Limit: 50}
	pages := 0
	for {
		p, err := s.Search(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		got = append(got, p.Rows...)
		if p.Next == "" {
			break
		}
		if pages > 3 {
			t.Fatal("more than 3 pages of 50 for 120 rows")
		}
		q.Cursor = p.Next
	}
	if pages != 3 || len(got) != 120 {
		t.Fatalf("%d pages, %d rows; want 3 pages, 120 rows", pages, len(got))
	}
	seen := map[string]bool{}
	for i, r := range got {
		key := fmt.Sprintf("%s/%d/%d", r.ID, r.Life, r.Attempts)
		if seen[key] {
			t.Fatalf("row %s twice", key)
		}
		seen[key] = true
		if i > 0 && r.FinishedAt.After(got[i-1].FinishedAt) {
			t.Fatalf("row %d (%s) is newer than the one before it", i, r.FinishedAt)
		}
	}
}

func TestSearch_LimitDefaultsTo50AndStopsAt500(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	var batch []bananastype.Job
	for i := range 510 {
		batch = append(batch, row(fmt.Sprintf("j%03d", i), base.Add(time.Duration(i)*time.Second)))
	}
	write(t, s, batch...)
	for _, tc := range []struct{ limit, want int }{{0, 50}, {7, 7}, {1000, 500}} {
		if got := search(t, s, history.Query{Limit: tc.limit}); len(got) != tc.want {
			t.Errorf("Limit %d: %d rows; want %d", tc.limit, len(got), tc.want)
		}
	}
}

func TestSearch_BadCursorOrStatusIsAClearError(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for _, q := range []history.Query{
		{Cursor: "not a cursor"},
		{Cursor: "e30"}, // base64 of {}
		{Status: "done"},
		{Args: map[string]string{"customer..id": "1"}},
	} {
		_, err := s.Search(context.Background(), q)
		if err == nil || !strings.HasPrefix(err.Error(), "history/postgres: ") || strings.Contains(err.Error(), "SQLSTATE") {
			t.Errorf("Search(%+v) = %v; want an error of this package", q, err)
		}
	}
}

// A search that runs past the store's search timeout (here one waiting on
// a lock another transaction holds, which the timeout counts) is stopped by
// PostgreSQL and reported as history.ErrSearchTimeout; the URL's
// search_timeout sets the timeout.
func TestSearch_StoppedPastTheSearchTimeout(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).Database(t)
	s := openURL(t, url+"&search_timeout=100ms")
	write(t, s, row("a", base))
	if got := search(t, s, history.Query{}); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("rows %v; want [a]", got)
	}
	ctx := context.Background()
	locker := openURL(t, url)
	tx, err := locker.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "LOCK TABLE bananas_history IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	bounded, cancel := context.WithTimeout(ctx, 10*time.Second) // a search the timeout does not stop waits for the lock
	defer cancel()
	if _, err := s.Search(bounded, history.Query{Text: "abc"}); !errors.Is(err, history.ErrSearchTimeout) {
		t.Fatalf("Search while the table is locked: %v; want ErrSearchTimeout", err)
	}
	if _, err := s.Job(bounded, "a"); !errors.Is(err, history.ErrSearchTimeout) {
		t.Fatalf("Job while the table is locked: %v; want ErrSearchTimeout", err)
	}
	_ = tx.Rollback(ctx)
	// The writes keep no such bound, and the pool's sessions none either.
	write(t, s, row("b", base.Add(time.Minute)))
	if got := search(t, s, history.Query{}); !slices.Equal(got, []string{"b", "a"}) {
		t.Fatalf("rows %v; want [b a]", got)
	}
	if _, err := Open(ctx, url+"&search_timeout=soon"); err == nil || !strings.Contains(err.Error(), "search_timeout") {
		t.Fatalf("Open with search_timeout=soon: %v; want a refusal naming it", err)
	}
}

// A job that expired before it started is a row of status expired, found
// by that status.
func TestSearch_AnExpiredJobIsStoredAndFoundByItsStatus(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	e := row("e", base.Add(time.Hour))
	e.Status, e.Error, e.StartedAt = queue.StatusExpired, "expired before it started", time.Time{}
	write(t, s, row("a", base.Add(2*time.Hour)), e)
	if got := search(t, s, history.Query{Status: queue.StatusExpired}); !slices.Equal(got, []string{"e"}) {
		t.Fatalf("search of status expired = %v; want [e]", got)
	}
}
