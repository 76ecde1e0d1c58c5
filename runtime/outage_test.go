package runtime_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
)

// A Redis outage under a running worker (which runs the promoter and cron
// too) is logged by each background loop once when it starts and once when
// it ends, every line in the configured JSON format; go-redis adds no line
// of its own format. A command against a Redis that is not there prints its
// own error and nothing else.
func TestOutage_EachLoopLogsItOnceWhenItStartsAndOnceWhenItEnds(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "cronapp")
	if out, err := exec.Command("go", "build", "-o", bin, "../examples/cron").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	srv := redistest.Start(t)
	cmd := exec.Command(bin, "worker")
	ns := redistest.Namespace(t)
	cmd.Env = []string{"REDIS_URL=" + srv.URL(), "BANANAS_NAMESPACE=" + ns, "LOG_FORMAT=json", "SHUTDOWN_TIMEOUT=1s"}
	var stdout, stderr safeBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, 10*time.Second, "the worker to start", func() bool { return strings.Contains(stderr.String(), "worker started") })

	// The promoter and the reaper work the routes the worker keeps: wait
	// until it keeps its route, as a worker alone on it does at once.
	rdb := srv.Client(t)
	keeper := queue.RouteKeys(ns, "default").Keeper()
	waitFor(t, 10*time.Second, "the worker to keep its route", func() bool { return rdb.Exists(ctxT(t), keeper).Val() == 1 })
	loops := []string{"promoter", "cron", "heartbeat", "reaper", "keeper"}
	said := func(msg, loop string) int { return count(t, stderr.String(), msg, loop) }
	srv.Stop()
	waitFor(t, 20*time.Second, "every loop to report the outage", func() bool {
		for _, l := range loops {
			if said("bananas: outage: ", l) == 0 {
				return false
			}
		}
		return true
	})
	// Some more passes of each loop fail meanwhile, quietly.
	time.Sleep(3 * time.Second) // the outage lasting: what is measured is the silence during it
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "every loop to report the outage over", func() bool {
		for _, l := range loops {
			if said("bananas: outage over: ", l) == 0 {
				return false
			}
		}
		return true
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	recv(t, done, 15*time.Second, "the worker to exit")

	log := stderr.String()
	for _, l := range loops {
		if s, e := said("bananas: outage: ", l), said("bananas: outage over: ", l); s != 1 || e != 1 {
			t.Errorf("loop %s said the outage started %d times and ended %d times; want once each", l, s, e)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if !json.Valid([]byte(line)) || strings.Contains(line, "pool.go") {
			t.Errorf("with LOG_FORMAT=json, a line that is not the program's JSON: %q", line)
		}
	}
	if t.Failed() {
		t.Logf("log:\n%s", log)
	}

	dead := exec.Command(bin, "queues")
	dead.Env = []string{fmt.Sprintf("REDIS_URL=redis://127.0.0.1:%d", freeTCPPort(t))}
	var out safeBuffer
	dead.Stdout, dead.Stderr = &out, &out
	if err := dead.Run(); err == nil {
		t.Fatal("queues against a dead Redis exited 0")
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "queues: connect ") {
		t.Fatalf("queues against a dead Redis printed:\n%s\nwant only its own error", out.String())
	}
}

// count is how many JSON log lines of log have a message starting with msg
// and a loop attribute starting with loop.
func count(t *testing.T, log, msg, loop string) int {
	n := 0
	for _, line := range strings.Split(log, "\n") {
		var rec struct{ Msg, Loop string }
		if json.Unmarshal([]byte(line), &rec) == nil && strings.HasPrefix(rec.Msg, msg) && strings.HasPrefix(rec.Loop, loop) {
			n++
		}
	}
	return n
}
