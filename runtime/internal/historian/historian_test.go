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

func (downStore) Write(context.Context, []history.Row) error  { return errors.New("down") }
func (downStore) DropBefore(context.Context, time.Time) error { return nil }

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
			Row:     func(route string, rec results.Record) history.Row { return historian.RowOf(route, rec, nil, nil) },
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

func (s *switchStore) Write(_ context.Context, rows []history.Row) error {
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
		Row: func(route string, rec results.Record) history.Row { return historian.RowOf(route, rec, nil, nil) },
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
