package runtime_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
)

// A runtime.Main binary shuts down gracefully on SIGTERM and SIGINT: it
// stops, says so, and exits 0.
func TestMain_SignalsShutDownGracefully(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "cronapp")
	if out, err := exec.Command("go", "build", "-o", bin, "../examples/cron").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	srv := redistest.Shared(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(bin, "worker")
		cmd.Env = []string{"REDIS_URL=" + srv.URL(), "BANANAS_NAMESPACE=" + redistest.Namespace(t)}
		var out safeBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the worker to start", func() bool { return strings.Contains(out.String(), "worker started") })
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if err := recv(t, done, 15*time.Second, "the worker to exit after "+sig.String()); err != nil {
			t.Fatalf("after %s the worker exited with %v:\n%s", sig, err, out.String())
		}
		if !strings.Contains(out.String(), "worker stopped") {
			t.Fatalf("after %s no graceful stop was logged:\n%s", sig, out.String())
		}
	}
}

// safeBuffer is a bytes.Buffer safe to write from the process's copier while the test reads it.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
