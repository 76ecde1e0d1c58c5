package runtime_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// syncBuffer is a log sink safe for the worker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A handler that ignores its context keeps its slot past its timeout (Go
// cannot stop it). The timeout is recorded at the deadline, and when the
// handler finally returns the worker says so once, naming the task.
func TestHandler_IgnoringItsTimeoutIsReportedOnceWithItsTask(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := testtasks.Echo.With(c)
		var logs syncBuffer
		returned := make(chan struct{})
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{
			JobTimeout: 50 * time.Millisecond,
			Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
		}))
		runtime.Handle(w, task, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			defer close(returned)
			time.Sleep(400 * time.Millisecond) // ignores ctx: the behaviour under test
			return testtasks.Reply{}, nil
		})
		startWorker(t, w)
		id, err := task.Enqueue(ctx, testtasks.Msg{}, runtime.MaxRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := task.Await(ctx, id); err == nil || !strings.Contains(err.Error(), "timed out") {
			t.Fatalf("Await = %v; want the timeout recorded at the deadline", err)
		}
		recv(t, returned, 5*time.Second, "the handler to return")
		waitFor(t, 5*time.Second, "the late return to be logged", func() bool {
			return strings.Contains(logs.String(), "handler returned long after its timeout")
		})
		line := ""
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "handler returned long after its timeout") {
				if line != "" {
					t.Fatalf("logged twice:\n%s\n%s", line, l)
				}
				line = l
			}
		}
		if !strings.Contains(line, "task=t_echo") || !strings.Contains(line, "timeout=50ms") {
			t.Fatalf("log line %q; want the task and its timeout", line)
		}
	})
}

// A worker that registers tasks whose route it does not take says so at
// start, one line per route, naming the tasks: otherwise their jobs wait in
// silence for a worker that may not exist.
func TestWorker_TasksOfRoutesItDoesNotTakeAreReportedAtStart(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		var logs syncBuffer
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"default"}, Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
		gpu := runtime.NewTask[testtasks.Msg, runtime.None]("t_render", runtime.Route("gpu"))
		runtime.Handle(w, gpu, func(context.Context, testtasks.Msg) (runtime.None, error) { return runtime.None{}, nil })
		runtime.Handle(w, testtasks.Echo, func(_ context.Context, m testtasks.Msg) (testtasks.Reply, error) { return testtasks.Reply{}, nil })
		startWorker(t, w)
		waitFor(t, 5*time.Second, "the warning", func() bool { return strings.Contains(logs.String(), "does not take") })
		var lines []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "does not take") {
				lines = append(lines, l)
			}
		}
		if len(lines) != 1 || !strings.Contains(lines[0], "route=gpu") || !strings.Contains(lines[0], "tasks=t_render") {
			t.Fatalf("warnings %q; want one naming route gpu and task t_render", lines)
		}
	})
}
