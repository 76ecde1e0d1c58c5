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

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/internal/pgtest"
	"github.com/bananas-go/bananas/queue"
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

func row(id string, ended time.Time) bananastype.Job {
	return bananastype.Job{
		ID: id, Attempts: 1, Name: "email.send", Route: "default", Priority: "normal",
		Status: queue.StatusCompleted, Args: json.RawMessage(`{"to":"a@b.c"}`),
		CreatedAt: ended.Add(-2 * time.Second), StartedAt: ended.Add(-time.Second), FinishedAt: ended,
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

func write(t *testing.T, s *Store, rows ...bananastype.Job) {
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
	failed := bananastype.Job{
		ID: "01JOB", Life: 1, Attempts: 3, Name: "email.send", Route: "mail", Priority: "high",
		Status: queue.StatusFailed, Args: json.RawMessage(`{"to":"a@b.c","n":[1,2.5,true,null]}`),
		ResultJSON: json.RawMessage(`{"sent":false}`), Error: "smtp: 550 no such user",
		CreatedAt: ended.Add(-time.Minute), StartedAt: ended.Add(-1500 * time.Millisecond), FinishedAt: ended,
		Worker: "host-1/42",
	}
	canceled := bananastype.Job{
		ID: "01JOB", Life: 0, Attempts: 1, Name: "email.send", Route: "mail", Priority: "low",
		Status: queue.StatusCanceled, Error: "canceled while waiting",
		CreatedAt: ended.Add(-time.Hour), FinishedAt: ended.Add(-30 * time.Minute),
	}
	write(t, s, canceled, failed)
	got, err := s.Job(context.Background(), "01JOB")
	if err != nil {
		t.Fatal(err)
	}
	want := []bananastype.Job{failed, canceled} // newest first
	for i := range want {
		want[i].CreatedAt, want[i].FinishedAt = want[i].CreatedAt.UTC(), want[i].FinishedAt.UTC()
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
	if err := s.Write(context.Background(), []bananastype.Job{r}); err == nil {
		t.Fatal("Write of status done succeeded")
	}
}

func TestWrite_SameBatchTwiceStoresEachRowOnce(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	var batch []bananastype.Job
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
	var all []bananastype.Job
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
		batch []bananastype.Job
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
