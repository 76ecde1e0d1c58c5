package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/history/postgres/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// newStore is a migrated store in a database of the test's own.
func newStore(t *testing.T) *Store {
	t.Helper()
	return openURL(t, pgtest.Shared(t).Database(t))
}

func openURL(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// base is a fixed day well in the past, so tests make its partitions
// themselves and no test depends on today's.
var base = time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)

func row(id string, ended time.Time) history.Row {
	return history.Row{
		ID: id, Attempt: 1, Task: "email.send", Route: "default", Priority: "normal",
		Status: history.Completed, Args: json.RawMessage(`{"to":"a@b.c"}`),
		EnqueuedAt: ended.Add(-2 * time.Second), StartedAt: ended.Add(-time.Second), EndedAt: ended,
		Worker: "w1",
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func count(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), "SELECT count(*) FROM bananas_history").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func write(t *testing.T, s *Store, rows ...history.Row) {
	t.Helper()
	if err := s.Write(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
}

func TestWrite_ReadsBackEveryField(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	paris, _ := time.LoadLocation("Europe/Paris")
	ended := time.Date(2026, 3, 10, 23, 30, 0, 123_000_000, paris) // the 10th in Paris, the 10th in UTC
	failed := history.Row{
		ID: "01JOB", Life: 1, Attempt: 3, Task: "email.send", Route: "mail", Priority: "high",
		Status: history.Failed, Args: json.RawMessage(`{"to":"a@b.c","n":[1,2.5,true,null]}`),
		Result: json.RawMessage(`{"sent":false}`), Error: "smtp: 550 no such user",
		EnqueuedAt: ended.Add(-time.Minute), StartedAt: ended.Add(-1500 * time.Millisecond), EndedAt: ended,
		Worker: "host-1/42",
	}
	canceled := history.Row{
		ID: "01JOB", Life: 0, Attempt: 1, Task: "email.send", Route: "mail", Priority: "low",
		Status: history.Canceled, Error: "canceled while waiting",
		EnqueuedAt: ended.Add(-time.Hour), EndedAt: ended.Add(-30 * time.Minute),
	}
	write(t, s, canceled, failed)
	got, err := s.Job(context.Background(), "01JOB")
	if err != nil {
		t.Fatal(err)
	}
	want := []history.Row{failed, canceled} // newest first
	for i := range want {
		want[i].EnqueuedAt, want[i].EndedAt = want[i].EnqueuedAt.UTC(), want[i].EndedAt.UTC()
		if !want[i].StartedAt.IsZero() {
			want[i].StartedAt = want[i].StartedAt.UTC()
		}
	}
	// jsonb keeps a document's meaning, not its text: keys come back in
	// its order (shorter first).
	if len(got) == 2 && jsonEqual(got[0].Args, want[0].Args) {
		got[0].Args = want[0].Args
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Job =\n%+v\nwant\n%+v", got, want)
	}
	if none, err := s.Job(context.Background(), "unknown"); err != nil || none == nil || len(none) != 0 {
		t.Fatalf("Job(unknown) = %#v, %v; want an empty slice", none, err)
	}
}

func TestWrite_RejectsARowWithoutAValidStatus(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r := row("a", base)
	r.Status = "done"
	if err := s.Write(context.Background(), []history.Row{r}); err == nil {
		t.Fatal("Write of status done succeeded")
	}
}

func TestWrite_SameBatchTwiceStoresEachRowOnce(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	var batch []history.Row
	for i := range 30 {
		batch = append(batch, row(fmt.Sprintf("j%02d", i), base.Add(time.Duration(i)*time.Hour))) // two days
	}
	write(t, s, batch...)
	write(t, s, batch...)
	if n := count(t, s); n != 30 {
		t.Fatalf("%d rows stored; want 30", n)
	}
}

// Two writers of overlapping batches, in opposite orders, each larger
// than one INSERT carries, spanning days whose partitions neither has made
// yet, store each row once.
func TestWrite_ConcurrentOverlappingBatchesStoreEachRowOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).Database(t)
	s, other := openURL(t, url), openURL(t, url)
	var all []history.Row
	for i := range 2000 {
		all = append(all, row(fmt.Sprintf("j%04d", i), base.Add(time.Duration(i)*time.Minute))) // two days
	}
	a := slices.Clone(all[:1500])
	b := slices.Clone(all[500:])
	slices.Reverse(b)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, w := range []struct {
		s     *Store
		batch []history.Row
	}{{s, a}, {other, b}} {
		wg.Go(func() { errs[i] = w.s.Write(context.Background(), w.batch) })
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("Write: %v, %v", errs[0], errs[1])
	}
	if n := count(t, s); n != 2000 {
		t.Fatalf("%d rows stored; want 2000", n)
	}
}
