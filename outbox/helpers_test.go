package outbox_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bananas-go/bananas/internal/pgtest"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/outbox"
	"github.com/bananas-go/bananas/runtime"
)

// The PostgreSQL server is shared by the test binary (each test has a
// database of its own); each test starts its own redis-server, which it may
// stop, so that no test's outage is another's.
func TestMain(m *testing.M) {
	if os.Getenv(relayChildEnv) != "" {
		runRelayChild()
		return
	}
	pgtest.Main(m)
}

type mail struct {
	To string
	N  int
}

// sendMail is the task of these tests; each test registers its own
// handler on its own worker.
var sendMail = runtime.NewTask[mail, runtime.None]("outbox_send_mail")

// orphan is declared and never registered on a worker: its rows stay.
var orphan = runtime.NewTask[mail, runtime.None]("outbox_orphan")

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// database is a fresh database of the shared server, migrated, and a pool
// on it closed when the test ends.
func database(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	url := pgtest.Shared(t).Database(t)
	return migrated(t, url), url
}

// migrated is a pool on the database of url, closed when the test ends,
// with the outbox's table made.
func migrated(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(ctxT(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := outbox.Migrate(ctxT(t), pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

// connect is a client of a redis-server of the test's own (or url), in a
// namespace of its own.
func connect(t testing.TB, url string) *runtime.Client {
	t.Helper()
	c, err := runtime.Connect(ctxT(t), url, runtime.WithNamespace(redistest.Namespace(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startWorker runs a worker of c with handle registered until the test ends.
func startWorker(t testing.TB, c *runtime.Client, register func(w *runtime.Worker)) {
	t.Helper()
	w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: 8, Lease: 2 * time.Second, ShutdownTimeout: 5 * time.Second, Logger: quiet()})
	register(w)
	run(t, w.Run)
}

// startRelay runs a relay of pool into c until the test ends.
func startRelay(t testing.TB, pool *pgxpool.Pool, c *runtime.Client, o outbox.RelayOptions) *outbox.Relay {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quiet()
	}
	r := outbox.NewRelay(pool, c, o)
	run(t, r.Run)
	return r
}

// run runs f until the test ends, and fails the test if f errs or does
// not return once its context has ended.
func run(t testing.TB, f func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("did not return 30s after its context ended")
		}
	})
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pending is how many rows the outbox of pool holds.
func pending(t testing.TB, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(ctxT(t), "SELECT count(*) FROM bananas_outbox").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
