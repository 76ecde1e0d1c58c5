package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/testserver"
)

// Server is a redis-server process this test binary started on a free loopback port.
type Server struct {
	port   int
	dir    string
	bin    string
	args   []string
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	once   sync.Once
}

func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }
func (s *Server) URL() string  { return "redis://" + s.Addr() + "/0" }

// Client returns a new client of the server, closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Close kills the server and removes its directory. Idempotent.
func (s *Server) Close() {
	s.once.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
		_ = os.RemoveAll(s.dir)
	})
}

// Start starts a private server for one test, stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return testserver.Private(t, func() (*Server, error) { return start(nil) })
}

var (
	sharedServer  testserver.Shared[*Server]
	sharedCluster testserver.Shared[*Cluster]
)

// Shared returns the one server of this test process, started on first use.
func Shared(t testing.TB) *Server {
	t.Helper()
	return sharedServer.Get(t, func() (*Server, error) { return start(nil) })
}

// Main runs the tests and stops the shared servers: call it from TestMain.
func Main(m *testing.M) { testserver.Main(m, &sharedServer, &sharedCluster) }

// start launches redis-server with extra flags on a free port, retrying with
// another port if the one picked was taken meanwhile.
func start(extra []string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redistest: redis-server is not on PATH; install it (Debian: apt-get install redis-server)")
	}
	var last error
	for range 5 {
		s, err := tryStart(bin, extra)
		if err == nil {
			return s, nil
		}
		last = err
	}
	return nil, last
}

func tryStart(bin string, extra []string) (*Server, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--protected-mode", "no", "--logfile", filepath.Join(dir, "redis.log")}, extra...)
	s := &Server{port: port, dir: dir, bin: bin, args: args}
	if err := s.run(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// run starts the server's process and waits until it answers PING.
func (s *Server) run() error {
	cmd := exec.Command(s.bin, s.args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start redis-server: %w", err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	exited := s.exited
	go func() { _ = cmd.Wait(); close(exited) }()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("redistest: redis-server on port %d exited at start:\n%s", s.port, tail(filepath.Join(s.dir, "redis.log")))
		default:
		}
		if time.Now().After(deadline) {
			log := tail(filepath.Join(s.dir, "redis.log"))
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redistest: redis-server on port %d did not answer PING within 10s:\n%s", s.port, log)
		}
		time.Sleep(20 * time.Millisecond) // readiness wait, bounded by the deadline above
	}
}

// StartPersistent starts a private server that writes every command to its
// append-only file before it answers (appendfsync always), stopped when the
// test ends: what it acknowledged survives Restart.
func StartPersistent(t testing.TB) *Server {
	t.Helper()
	return testserver.Private(t, func() (*Server, error) {
		return start([]string{"--appendonly", "yes", "--appendfsync", "always"})
	})
}

// Restart kills the server as a crash would (SIGKILL, no shutdown) and starts
// it again on the same port, in the same directory, with the same flags, and
// waits until it answers. Not safe for concurrent use with Close.
func (s *Server) Restart() error {
	s.Stop()
	return s.Resume()
}

// Stop kills the server as a crash would (SIGKILL) and waits until it has
// exited; its port and directory stay for Resume. An outage, for tests of
// what clients do while Redis is away. Not safe for concurrent use with
// Close.
func (s *Server) Stop() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Resume starts a stopped server again on the same port, in the same
// directory, with the same flags, and waits until it answers.
func (s *Server) Resume() error { return s.run() }

// FreePort picks a free port in 10000–22999: below the kernel's ephemeral
// range (32768 and up on Linux), so no outgoing connection takes it between
// this check and redis-server's bind, and with a cluster node's bus port
// (the port + 10000) free and below that range too.
func FreePort() (int, error) {
	free := func(port int) bool {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return false
		}
		_ = l.Close()
		return true
	}
	for range 200 {
		if port := 10000 + mrand.IntN(13000); free(port) && free(port+10000) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("redistest: no free port in 10000-22999 after 200 tries")
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// Namespace returns a key namespace unique to this test.
func Namespace(t testing.TB) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := unsafeChars.ReplaceAllString(t.Name(), "_")
	if len(name) > 48 {
		name = name[len(name)-48:]
	}
	return "t-" + name + "-" + hex.EncodeToString(b[:])
}
