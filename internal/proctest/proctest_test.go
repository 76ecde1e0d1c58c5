package proctest

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv, set, makes this test binary a child that prints the variable's
// words one a line, and then either exits (the last word "exit") or hangs
// until it is killed.
const childEnv = "BANANAS_PROCTEST_CHILD"

func TestMain(m *testing.M) {
	if words := os.Getenv(childEnv); words != "" {
		for _, w := range strings.Fields(words) {
			if w == "exit" {
				os.Exit(0)
			}
			fmt.Println(w)
		}
		select {} // killed here
	}
	os.Exit(m.Run())
}

// The child gets the environment, its lines come in order, and Kill leaves
// it dead of SIGKILL.
func TestStart_TheChildSaysItsLinesAndKillEndsIt(t *testing.T) {
	t.Parallel()
	c := Start(t, childEnv+"=ready set")
	c.Await(t, "ready", 20*time.Second)
	c.Await(t, "set", 20*time.Second)
	c.Kill(t)
	ws, ok := c.Cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended %v; want killed by SIGKILL", c.Cmd.ProcessState)
	}
}

// Await fails naming both lines when the child says another, and says so
// when the child ended first.
func TestAwait_FailsOnAnotherLineOrAnEndedChild(t *testing.T) {
	t.Parallel()
	c := Start(t, childEnv+"=other exit")
	if err := c.next("ready", 20*time.Second); err == nil || err.Error() != `the child process said "other", want "ready"` {
		t.Fatalf("Await of another line: %v", err)
	}
	if err := c.next("ready", 20*time.Second); err == nil || err.Error() != `the child process ended before it said "ready"` {
		t.Fatalf("Await of an ended child: %v", err)
	}
}
