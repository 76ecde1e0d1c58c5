package e2e_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

// The PostgreSQL servers of these tests are private to each (pgtest.Start,
// stopped by the test's cleanup); the redis-servers are shared, stopped here.
func TestMain(m *testing.M) { redistest.Main(m) }

type histArgs struct{ N int }
type histResult struct{ Double int }

func sharedRedisURL(t *testing.T) string { return redistest.Shared(t).URL() }

// connect is a client of url in a namespace of the test's own, closed when
// the test ends.
func connect(t *testing.T, url string, opts ...runtime.ConnectOption) *runtime.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := runtime.Connect(ctx, url, append([]runtime.ConnectOption{runtime.WithNamespace(redistest.Namespace(t))}, opts...)...)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// fastOpts are worker options with short leases and retries so tests finish
// quickly, and a worker that logs nothing.
func fastOpts(o runtime.WorkerOptions) runtime.WorkerOptions {
	if o.Lease == 0 {
		o.Lease = time.Second
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = 5 * time.Second
	}
	if o.Backoff == nil {
		o.Backoff = func(int) time.Duration { return 10 * time.Millisecond }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// startWorker runs w until the test ends and fails the test if Run returns
// an error or does not return once its context has ended.
func startWorker(t *testing.T, w *runtime.Worker) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("worker.Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("worker.Run did not return 30s after its context ended")
		}
	})
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// historyRowsAsText reads every row of the task history in database db,
// every column as text (row_to_json), by the row's job id.
func historyRowsAsText(t *testing.T, ctx context.Context, db string) map[string]string {
	t.Helper()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, "SELECT id, row_to_json(h)::text FROM bananas_history h")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var id, text string
		if err := rows.Scan(&id, &text); err != nil {
			t.Fatal(err)
		}
		out[id] = text
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
