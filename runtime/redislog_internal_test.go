package runtime

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime/internal/dial"
)

// goRedisSays logs what go-redis logs, through the logger go-redis holds:
// the first client dialed installs dial.GoRedisLogger as go-redis's, so this is the
// path of go-redis's own lines (a connection handed back to a closed pool,
// a connection with unread data), which no test can provoke on demand.
func goRedisSays(*Worker) {
	dial.GoRedisLogger{}.Printf(context.Background(), "Unexpected conn[%d] state changed by hook to %v, closing it", 2, "CLOSED")
	dial.GoRedisLogger{}.Printf(context.Background(), "Conn has unread data (not push notification), removing it")
}

// An admin command prints only its own words: go-redis's lines logged while
// it runs go to the program's logger at debug level, so they stay off
// stderr at the default LOG_LEVEL and show, as debug lines, with
// LOG_LEVEL=debug. A real go-redis line (its failed dials, while Redis is
// down) stays off too: the command's error is the one line.
func TestCLI_GoRedisLinesStayOffTheCommandsStderr(t *testing.T) {
	srv := redistest.Shared(t)
	env := map[string]string{"REDIS_URL": srv.URL(), "BANANAS_NAMESPACE": redistest.Namespace(t)}
	getenv := func(k string) string { return env[k] }
	for _, args := range [][]string{{"queues"}, {"workers"}, {"dlq", "list"}} {
		var stdout, stderr bytes.Buffer
		if code := RunCommand(context.Background(), args, getenv, &stdout, &stderr, goRedisSays); code != 0 || stderr.Len() != 0 {
			t.Fatalf("%s: exit %d, stderr:\n%s\nwant 0 and nothing on stderr", args, code, stderr.String())
		}
	}

	env["LOG_LEVEL"] = "debug"
	var stderr bytes.Buffer
	if code := RunCommand(context.Background(), []string{"queues"}, getenv, &bytes.Buffer{}, &stderr, goRedisSays); code != 0 ||
		!strings.Contains(stderr.String(), `level=DEBUG msg="bananas: go-redis: Unexpected conn[2] state changed by hook to CLOSED, closing it"`) ||
		!strings.Contains(stderr.String(), `level=DEBUG msg="bananas: go-redis: Conn has unread data (not push notification), removing it"`) {
		t.Fatalf("queues with LOG_LEVEL=debug: exit %d, stderr:\n%s\nwant go-redis's lines as debug lines", code, stderr.String())
	}

	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	env["LOG_LEVEL"], env["REDIS_URL"] = "", "redis://127.0.0.1:"+strconv.Itoa(port)+"/0"
	stderr.Reset()
	code := RunCommand(context.Background(), []string{"queues"}, getenv, &bytes.Buffer{}, &stderr)
	if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); code != ExitFailure || len(lines) != 1 ||
		!strings.HasPrefix(lines[0], "queues: connect redis://127.0.0.1:") || !strings.Contains(lines[0], "connection refused") {
		t.Fatalf("queues with Redis down: exit %d, stderr:\n%s\nwant 1 and one line, the command's own error", code, stderr.String())
	}
}

// A worker logs go-redis's lines as its own structured lines: a warning at
// warn level, a connection handed back to a closed pool (harmless) at debug.
func TestWorker_LogsGoRedisLinesAsItsOwn(t *testing.T) {
	srv := redistest.Shared(t)
	env := map[string]string{"REDIS_URL": srv.URL(), "BANANAS_NAMESPACE": redistest.Namespace(t), "LOG_LEVEL": "debug", "LOG_FORMAT": "json"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var stderr bytes.Buffer
	out := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return stderr.Write(p) })
	read := func() string { mu.Lock(); defer mu.Unlock(); return stderr.String() }
	done := make(chan int, 1)
	go func() {
		done <- RunCommand(ctx, []string{"worker"}, func(k string) string { return env[k] }, &bytes.Buffer{}, out, goRedisSays)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(read(), "worker started") {
		if time.Now().After(deadline) {
			t.Fatalf("no worker started within 20s:\n%s", read())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("worker exited %d:\n%s", code, read())
	}
	for _, want := range []string{
		`"level":"DEBUG","msg":"bananas: go-redis: Unexpected conn[2] state changed by hook to CLOSED, closing it"`,
		`"level":"WARN","msg":"bananas: go-redis: Conn has unread data (not push notification), removing it"`,
	} {
		if !strings.Contains(read(), want) {
			t.Fatalf("the worker's log has no %s:\n%s", want, read())
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A short-lived process — a CLI enqueue — closes its client right after its
// enqueue: Close waits for the writes the enqueue left in flight (the
// route's note in the routes set), so none is cut off, nor hands its
// connection back to a closed pool, which go-redis logs as "Unexpected
// conn[N] state changed by hook to CLOSED".
func TestClose_WaitsForTheWritesAnEnqueueLeftInFlight(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	say := func(msg string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, msg)
	}
	dial.LogTo(slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) { say(string(p)); return len(p), nil }), &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer dial.LogTo(nil)
	url, ns := redistest.Shared(t).URL(), redistest.Namespace(t)
	task := NewTask[string, None]("t_route_note")
	for i := range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := Connect(ctx, url, WithNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		c.q.OnWarning(say)
		if _, err := task.With(c).Enqueue(ctx, "x", Route("r"+strconv.Itoa(i%5))); err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
		cancel()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lines) > 0 {
		t.Fatalf("closing right after an enqueue cut off a write it left in flight, %d times:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}
