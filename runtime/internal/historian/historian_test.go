package historian_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/internal/historian"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// downStore refuses every write.
type downStore struct{ history.Store }

func (downStore) Write(context.Context, []bananastype.Job) error { return errors.New("down") }
func (downStore) DropBefore(context.Context, time.Time) error    { return nil }

func TestWriter_AShardedRoutesBacklogIsTheSumOfItsShards(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, rdb *redis.Client) {
		q, err := queue.New(rdb, redistest.Namespace(t))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shards := queue.ShardNames("r", 2)
		for i, s := range shards {
			for j := range 3 + i {
				rec, _ := results.Encode(results.Record{ID: s + "-" + string(rune('a'+j)), OK: true, FinishedAt: 1})
				if err := rdb.RPush(ctx, q.Keys(s).Ended(), rec).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
		var mu sync.Mutex
		seen := map[string]int64{}
		w := &historian.Writer{
			Queue: q, Store: downStore{}, Routes: func() []string { return shards },
			Row:     func(route string, rec results.Record) bananastype.Job { return historian.RowOf(route, rec, nil, nil) },
			Backlog: func(route string, n int64) { mu.Lock(); seen[route] = n; mu.Unlock() },
		}
		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); w.Run(wctx) }()
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			got := seen["r"]
			mu.Unlock()
			if got == 7 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("backlog of r = %d; want 7 (3 + 4 over its two shards)", got)
			}
			time.Sleep(10 * time.Millisecond)
		}
		stop()
		<-done
		// Nothing was dropped: the store refused every write.
		for i, s := range shards {
			if n, err := rdb.LLen(ctx, q.Keys(s).Ended()).Result(); err != nil || n != int64(3+i) {
				t.Fatalf("%s holds %d, %v; want %d", s, n, err, 3+i)
			}
		}
	})
}

// switchStore keeps rows, or refuses every write while down.
type switchStore struct {
	history.Store
	mu   sync.Mutex
	down bool
	rows int
}

func (s *switchStore) Write(_ context.Context, rows []bananastype.Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errors.New("down")
	}
	s.rows += len(rows)
	return nil
}
func (s *switchStore) DropBefore(context.Context, time.Time) error { return nil }
func (s *switchStore) String() string                              { return "switch://test" }
func (s *switchStore) set(down bool)                               { s.mu.Lock(); s.down = down; s.mu.Unlock() }

// logLines is a slog handler's output, line by line.
type logLines struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *logLines) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.b.String()), "\n")
}
func (l *logLines) has(s string) bool { return strings.Contains(strings.Join(l.lines(), "\n"), s) }

func waitLog(t *testing.T, l *logLines, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !l.has(what) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q in:\n%s", what, strings.Join(l.lines(), "\n"))
		}
		time.Sleep(5 * time.Millisecond) // polling the log, bounded by the deadline
	}
}

// A writer says at start that the history is on, where and for how long;
// says when its backlog falls behind (more than ten batches waiting) while
// the store is down, once, and when it has caught up after.
func TestWriter_LogsThatTheHistoryIsOnAndWhenItFallsBehindAndCatchesUp(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Shared(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for j := range 25 {
		rec, _ := results.Encode(results.Record{ID: fmt.Sprint("j", j), OK: true, FinishedAt: 1})
		if err := rdb.RPush(ctx, q.Keys("r").Ended(), rec).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var log logLines
	store := &switchStore{down: true}
	w := &historian.Writer{
		Queue: q, Store: store, Routes: func() []string { return []string{"r"} }, Batch: 2, Retention: 72 * time.Hour,
		Interval: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil)),
		Row: func(route string, rec results.Record) bananastype.Job { return historian.RowOf(route, rec, nil, nil) },
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(wctx) }()
	defer func() { stop(); <-done }()
	waitLog(t, &log, "falls behind")
	first := log.lines()[0]
	for _, want := range []string{"level=INFO", "task history on", "store=switch://test", "retention=72h0m0s", "backlog_cap=1000000"} {
		if !strings.Contains(first, want) {
			t.Errorf("first log line %q does not hold %q", first, want)
		}
	}
	if !log.has("waiting=25") {
		t.Errorf("the falling behind does not say how many wait:\n%s", strings.Join(log.lines(), "\n"))
	}
	store.set(false)
	waitLog(t, &log, "caught up")
	n := 0
	for _, l := range log.lines() {
		if strings.Contains(l, "falls behind") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("falling behind logged %d times; want once:\n%s", n, strings.Join(log.lines(), "\n"))
	}
}

// keepStore keeps the rows it is given, refusing a batch with a row a
// store cannot key (no id, no end time), as the PostgreSQL store does.
type keepStore struct {
	history.Store
	mu   sync.Mutex
	rows []bananastype.Job
}

func (s *keepStore) Write(_ context.Context, rows []bananastype.Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rows {
		if r.ID == "" || r.FinishedAt.IsZero() {
			return errors.New("a row without an id or an end time")
		}
	}
	s.rows = append(s.rows, rows...)
	return nil
}
func (s *keepStore) DropBefore(context.Context, time.Time) error { return nil }
func (s *keepStore) ids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.rows {
		out = append(out, r.ID)
	}
	return out
}

// A record without an end time is written with its start as its end, one
// without an id or any time is dropped and counted: neither holds back the
// records after it.
func TestWriter_ARecordWithoutAnIDOrAnEndTimeDoesNotHoldBackItsRoute(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Shared(t).Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, rec := range []results.Record{
		{ID: "a", OK: true, FinishedAt: 1000},
		{ID: "no-end", OK: true, StartedAt: 2000},
		{ID: "", OK: true, FinishedAt: 3000},
		{ID: "no-time", OK: true},
		{ID: "b", OK: true, FinishedAt: 4000},
	} {
		b, _ := results.Encode(rec)
		if err := rdb.RPush(ctx, q.Keys("r").Ended(), b).Err(); err != nil {
			t.Fatal(err)
		}
	}
	store := &keepStore{}
	var mu sync.Mutex
	dropped := int64(0)
	w := &historian.Writer{
		Queue: q, Store: store, Routes: func() []string { return []string{"r"} }, Interval: 10 * time.Millisecond,
		Row:     func(route string, rec results.Record) bananastype.Job { return historian.RowOf(route, rec, nil, nil) },
		Dropped: func(_ string, n int64) { mu.Lock(); dropped += n; mu.Unlock() },
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(wctx) }()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for len(store.ids()) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("rows written %v; want a, no-end and b", store.ids())
		}
		time.Sleep(5 * time.Millisecond) // polling the store, bounded by the deadline
	}
	if got := strings.Join(store.ids(), " "); got != "a no-end b" {
		t.Fatalf("rows written %q; want a no-end b", got)
	}
	if !store.rows[1].FinishedAt.Equal(time.UnixMilli(2000)) {
		t.Errorf("no-end ended at %v; want its start", store.rows[1].FinishedAt)
	}
	mu.Lock()
	defer mu.Unlock()
	if dropped != 2 {
		t.Errorf("%d records dropped; want 2 (no id, no time)", dropped)
	}
}
