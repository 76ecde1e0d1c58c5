package redistest

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// make test on a machine without redis-server, where it cannot install it,
// stops at once with the command to run (exit 2) instead of failing every
// test that needs a server.
func TestTestDeps_MissingRedisStopsWithTheCommandToRun(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("/bin/sh", "../../scripts/test-deps.sh")
	cmd.Env = []string{"PATH=" + t.TempDir(), "BANANAS_NO_INSTALL=1"}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("test-deps.sh without redis-server: %v\n%s; want exit 2", err, out)
	}
	if !strings.Contains(string(out), "apt-get install -y redis-server") {
		t.Fatalf("output %q; want the command to run", out)
	}
}

// With redis-server on PATH it passes without a word.
func TestTestDeps_RedisOnPathPasses(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is not on PATH; make test installs it first")
	}
	out, err := exec.Command("/bin/sh", "../../scripts/test-deps.sh").CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Fatalf("test-deps.sh = %v, %q; want silence and exit 0", err, out)
	}
}
