// Package proctest runs the test binary again as a child process, for tests
// only: the crash tests of runtime, scheduler and outbox start a worker, a
// scheduler or a relay in a process of its own, read what it says on
// stdout, and SIGKILL it mid-work, as a crash of its host would. The child
// is the same binary, running no test: its TestMain sees the variable that
// Start adds to its environment and plays the part that variable names.
//
// It imports nothing of this repository, so any package's tests can use
// it, in any of its modules.
package proctest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Child is the test binary run again as a child process.
type Child struct {
	Cmd *exec.Cmd
	// Lines are the lines the child prints on stdout, closed once its
	// stdout is.
	Lines <-chan string
}

// Start starts the test binary again, running no test (-test.run=^$),
// with env (KEY=value) added to its environment. The child is killed when
// the test ends, and what it printed on stderr is logged if the test
// failed.
func Start(t testing.TB, env ...string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer // written by exec's copier until Wait returns
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("the child process's stderr:\n%s", stderr.String())
		}
	})
	lines := make(chan string, 1024)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	return &Child{Cmd: cmd, Lines: lines}
}

// Await fails the test unless the next line the child prints, within the
// time given, is want.
func (c *Child) Await(t testing.TB, want string, within time.Duration) {
	t.Helper()
	if err := c.next(want, within); err != nil {
		t.Fatal(err)
	}
}

// next is Await's check: nil if the next line, within the time given, is
// want.
func (c *Child) next(want string, within time.Duration) error {
	select {
	case line, ok := <-c.Lines:
		if !ok {
			return fmt.Errorf("the child process ended before it said %q", want)
		}
		if line != want {
			return fmt.Errorf("the child process said %q, want %q", line, want)
		}
		return nil
	case <-time.After(within):
		return fmt.Errorf("the child process did not say %q within %s", want, within)
	}
}

// Kill kills the child with SIGKILL and waits until it has exited.
func (c *Child) Kill(t testing.TB) {
	t.Helper()
	if err := c.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.Cmd.Wait()
}
