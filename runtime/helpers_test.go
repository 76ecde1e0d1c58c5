package runtime_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

func TestMain(m *testing.M) {
	if url := os.Getenv("BANANAS_TEST_WORKER_URL"); url != "" {
		runWorkerProcess(url, os.Getenv("BANANAS_TEST_WORKER_NS"))
		return
	}
	if spec := os.Getenv(chaosWorkerEv); spec != "" {
		runChaosWorker(spec)
		return
	}
	redistest.Main(m)
}

// eachBackend runs f as parallel subtests against the embedded server (a
// private one per test) and a real redis-server (shared, a namespace per test).
func eachBackend(t *testing.T, f func(t *testing.T, c *runtime.Client)) {
	t.Helper()
	redistest.EachURL(t, func(t *testing.T, url string) { f(t, connect(t, url)) })
}

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

// quiet is a logger for workers under test; set BANANAS_TEST_LOG=1 to see them.
func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fastOpts are worker options with short leases and retries so tests finish quickly.
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
		o.Logger = quiet()
	}
	return o
}

// startWorker runs w until the test ends (or stop is called) and fails the
// test if Run returns an error.
func startWorker(t *testing.T, w *runtime.Worker) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
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
	t.Cleanup(stop)
	return stop
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

// recv waits for a value on ch with a deadline.
func recv[T any](t *testing.T, ch <-chan T, within time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
		t.Fatalf("timed out after %s waiting for %s", within, what)
		var zero T
		return zero
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func jobStatus(t *testing.T, c *runtime.Client, id string) runtime.Status {
	t.Helper()
	return jobInfo(t, c, id).Status
}

// jobInfo is c.Job(id), the test failing on its error.
func jobInfo(t *testing.T, c *runtime.Client, id string) *bananastype.Job {
	t.Helper()
	info, err := c.Job(context.Background(), id)
	if err != nil {
		t.Fatalf("Job(%s): %v", id, err)
	}
	return info
}
