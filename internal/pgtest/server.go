package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/internal/testserver"
)

// Server is a postgres process this test binary started on a free loopback port.
type Server struct {
	port   int
	dir    string // holds data/ (the cluster) and postgres.log; also the socket directory
	bin    string // the directory of initdb and postgres
	cred   *syscall.Credential
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	once   sync.Once
}

// URL is the server's URL for the user postgres and the database postgres.
func (s *Server) URL() string {
	return "postgres://postgres@127.0.0.1:" + strconv.Itoa(s.port) + "/postgres?sslmode=disable"
}

// Port is the port the server listens on.
func (s *Server) Port() int { return s.port }

// Close stops the server and removes its directory. Idempotent. It asks
// for an immediate shutdown (SIGQUIT), in which postgres removes its System
// V shared memory segment; a server that Stop killed, or that does not exit
// within 5 s, is killed and its segment removed here.
func (s *Server) Close() {
	s.once.Do(func() {
		select {
		case <-s.exited:
			s.removeShm()
		default:
			_ = s.cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-s.exited:
			case <-time.After(5 * time.Second):
				s.Stop()
				s.removeShm()
			}
		}
		_ = os.RemoveAll(s.dir)
	})
}

// Start starts a private server for one test, stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return testserver.Private(t, start)
}

var shared testserver.Shared[*Server]

// Shared returns the one server of this test process, started on first use.
// Tests that share it isolate themselves by their own names (a database, a
// schema or keys of their own), never by the server's state.
func Shared(t testing.TB) *Server {
	t.Helper()
	return shared.Get(t, start)
}

// Main runs the tests and stops the shared server: call it from TestMain.
func Main(m *testing.M) { testserver.Main(m, &shared) }

// Stop kills the server as a crash would (SIGKILL to postgres and to each
// of its backends) and waits until they have exited; its port and
// directory stay for Resume. An outage, for tests of what clients do while
// PostgreSQL is away: no connection made before Stop answers after it.
// Not safe for concurrent use with Close.
func (s *Server) Stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	killAll(s.cmd.Process.Pid)
	<-s.exited
}

// Resume starts a stopped server again on the same port, in the same
// directory, and waits until it answers. PostgreSQL recovers from its
// write-ahead log first, so what it committed before Stop is there.
func (s *Server) Resume() error { return s.run() }

// start makes a cluster and starts postgres on a free port, retrying with
// another port if the one picked was taken meanwhile.
func start() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin, cred: cred}
	if err := s.initdb(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	for range 5 {
		if s.port, err = redistest.FreePort(); err != nil {
			break
		}
		if err = s.run(); err == nil {
			return s, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

// debianInitdb is where Debian's package postgresql puts initdb, off PATH.
var debianInitdb = "/usr/lib/postgresql/*/bin/initdb"

// binDir finds the directory of initdb, postgres and psql: initdb's on
// PATH or, as Debian installs it, /usr/lib/postgresql/<version>/bin (the
// newest version).
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		// A link on PATH (as /usr/local/bin/initdb to Debian's) is followed
		// to the directory that holds the rest of PostgreSQL's programs.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "postgres")); err == nil {
			return filepath.Dir(p), nil
		}
	}
	found, _ := filepath.Glob(debianInitdb)
	sort.Slice(found, func(i, j int) bool { return pgVersion(found[i]) > pgVersion(found[j]) })
	if len(found) > 0 {
		return filepath.Dir(found[0]), nil
	}
	return "", errors.New("pgtest: PostgreSQL's initdb is neither on PATH nor in /usr/lib/postgresql/*/bin; install it (Debian: apt-get install postgresql)")
}

func pgVersion(initdb string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(filepath.Dir(initdb))), 64)
	return v
}

// credential is the user postgres's when this process runs as root (initdb
// and postgres refuse root), and nil (this process's user) otherwise.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and PostgreSQL refuses root, but there is no user postgres to run it as (Debian: apt-get install postgresql creates it): %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("pgtest: user postgres has uid %q, gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	return s.commandContext(context.Background(), name, args...)
}

func (s *Server) commandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: s.cred}
	cmd.Dir = s.dir
	return cmd
}

// initdb makes the cluster in s.dir/data, owned by the user postgres runs as.
func (s *Server) initdb() error {
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: chown %s to postgres: %w", s.dir, err)
		}
	}
	out, err := s.command("initdb", "-D", filepath.Join(s.dir, "data"), "--auth=trust", "-U", "postgres",
		"--no-sync", "--encoding=UTF8", "--locale=C").CombinedOutput()
	if err != nil && s.cred != nil {
		return fmt.Errorf("pgtest: initdb as the user postgres in %s (which it must be able to reach: set TMPDIR elsewhere if not): %w\n%s", s.dir, err, out)
	}
	if err != nil {
		return fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	return nil
}

// run starts postgres and waits until it answers a query.
func (s *Server) run() error {
	logPath := filepath.Join(s.dir, "postgres.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := s.command("postgres", "-D", filepath.Join(s.dir, "data"),
		"-c", "listen_addresses=127.0.0.1", "-p", strconv.Itoa(s.port), "-k", s.dir,
		"-c", "fsync=off", "-c", "full_page_writes=off",
		// Dynamic shared memory in files under data/, not /dev/shm, so that
		// a server killed by Stop or by the test's end leaves nothing
		// behind once its directory is gone.
		"-c", "dynamic_shared_memory_type=mmap")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	exited := s.exited
	go func() { _ = cmd.Wait(); close(exited) }()
	return s.waitReady(exited, logPath)
}

func (s *Server) waitReady(exited chan struct{}, logPath string) error {
	const within = 30 * time.Second
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := s.query(ctx, "postgres", "SELECT 1")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("pgtest: postgres on port %d exited at start:\n%s", s.port, tail(logPath))
		default:
		}
		if time.Now().After(deadline) {
			_ = s.cmd.Process.Kill()
			<-exited
			return fmt.Errorf("pgtest: postgres on port %d did not answer within %s: %v\n%s", s.port, within, err, tail(logPath))
		}
		time.Sleep(20 * time.Millisecond) // readiness wait, bounded by the deadline above
	}
}

// query runs sql on database of s with PostgreSQL's own client, psql (this
// package is part of the core module, which requires no PostgreSQL driver),
// and returns its rows, a line each, their fields separated by |. An error
// holds what psql said: the server's message, or why it could not connect.
func (s *Server) query(ctx context.Context, database, sql string) ([]string, error) {
	out, err := s.commandContext(ctx, "psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", "postgres", "-d", database, "-c", sql).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && len(exit.Stderr) > 0 {
			return nil, fmt.Errorf("psql: %s", strings.TrimSpace(string(exit.Stderr)))
		}
		return nil, fmt.Errorf("psql: %w", err)
	}
	text := strings.TrimRight(string(out), "\n")
	if text == "" {
		return nil, nil
	}
	return strings.Split(text, "\n"), nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}
