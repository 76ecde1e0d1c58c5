package pgtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { Main(m) }

// value is the one value sql returns on s's database postgres.
func value(s *Server, sql string) (string, error) {
	rows, err := s.query(context.Background(), "postgres", sql)
	if err != nil {
		return "", err
	}
	if len(rows) != 1 {
		return "", fmt.Errorf("%s returned %q; want one value", sql, rows)
	}
	return rows[0], nil
}

func TestStart_AnswersOnAFreePortNot5432(t *testing.T) {
	t.Parallel()
	s := Start(t)
	if s.Port() == 5432 {
		t.Fatal("a test server must never use port 5432")
	}
	if v, err := value(s, "SELECT current_user"); err != nil || v != "postgres" {
		t.Fatalf("current_user = %q, %v; want postgres", v, err)
	}
	//lint:ignore SA4000 each call may start a server: two calls must return the one shared server
	if Shared(t) != Shared(t) {
		t.Fatal("Shared returned two servers")
	}
}

// On a machine without PostgreSQL, a test that needs it fails with the
// command that installs it.
func TestStart_WithoutPostgreSQLSaysHowToInstallIt(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	saved := debianInitdb
	debianInitdb = filepath.Join(t.TempDir(), "*", "bin", "initdb")
	t.Cleanup(func() { debianInitdb = saved })
	_, err := start()
	if err == nil || !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Fatalf("start without PostgreSQL: %v; want the command that installs it", err)
	}
}

// A server stopped as by a crash answers no query, and once resumed serves
// on the same URL what it committed before the stop.
func TestStopResume_KeepsCommittedRows(t *testing.T) {
	t.Parallel()
	s := Start(t)
	ctx := context.Background()
	if _, err := s.query(ctx, "postgres", "CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')"); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if _, err := s.query(ctx, "postgres", "INSERT INTO t VALUES ('lost')"); err == nil {
		t.Fatal("a stopped server answered a query")
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if v, err := value(s, "SELECT v FROM t"); err != nil || v != "kept" {
		t.Fatalf("after Resume: %q, %v; want kept", v, err)
	}
}

// Each call makes a database of its own, empty, on the one server.
func TestDatabase_OneEmptyDatabasePerCall(t *testing.T) {
	t.Parallel()
	s := Shared(t)
	a, b := s.Database(t), s.Database(t)
	if a == b {
		t.Fatal("two calls returned one database")
	}
	for _, url := range []string{a, b} {
		name := url[strings.LastIndex(url, "/")+1 : strings.Index(url, "?")]
		rows, err := s.query(context.Background(), name,
			"SELECT current_database(), (SELECT count(*) FROM pg_tables WHERE schemaname = 'public')")
		if err != nil || len(rows) != 1 || rows[0] != name+"|0" {
			t.Fatalf("%s: %q, %v; want database %s with no tables", url, rows, err, name)
		}
	}
}

// Close of a stopped server removes its System V shared memory segment,
// which postgres removes itself only when it shuts down.
func TestClose_AfterStopLeavesNoSharedMemory(t *testing.T) {
	t.Parallel()
	s, err := start()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(s.dir, "data", "postmaster.pid"))
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	f := strings.Fields(strings.Split(string(b), "\n")[6])
	id, _ := strconv.Atoi(f[len(f)-1])
	s.Stop()
	s.Close()
	var ds unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err == nil {
		t.Fatalf("shared memory segment %d still there after Close", id)
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Fatalf("directory %s still there after Close: %v", s.dir, err)
	}
}

// Pause freezes postgres and every process of it, as a frozen host would,
// and Continue thaws them: the server answers again after.
func TestPauseContinue_FreezesEveryProcessAndThawsThem(t *testing.T) {
	t.Parallel()
	s := Start(t)
	s.Pause()
	pid := s.cmd.Process.Pid
	pids := append([]int{pid}, childrenOf(pid)...)
	if len(pids) < 2 {
		t.Fatalf("postgres %d has no child processes", pid)
	}
	stopped := func(state byte) bool { return state == 'T' }
	for _, p := range pids {
		waitState(t, p, "stopped (T) after Pause", stopped)
	}
	s.Continue()
	for _, p := range pids {
		waitState(t, p, "running after Continue", func(state byte) bool { return !stopped(state) })
	}
	if v, err := value(s, "SELECT 1"); err != nil || v != "1" {
		t.Fatalf("after Continue: %q, %v; want 1", v, err)
	}
}

// waitState waits until process pid's state satisfies ok, or it has
// exited (postgres forks short-lived processes, and one may end meanwhile):
// a signal is delivered asynchronously, so the state lags a moment behind
// the kill.
func waitState(t *testing.T, pid int, want string, ok func(state byte) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, state, _ := stat(pid)
		if !alive(pid) || ok(state) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d is in state %c; want %s", pid, state, want)
		}
		time.Sleep(time.Millisecond) // polling /proc, bounded by the deadline
	}
}

// A query the server rejects returns the server's error, and the server
// goes on answering.
func TestQuery_ReturnsTheServersError(t *testing.T) {
	t.Parallel()
	s := Shared(t)
	_, err := s.query(context.Background(), "postgres", "SELECT no_such_column")
	if err == nil || !strings.Contains(err.Error(), `column "no_such_column" does not exist`) {
		t.Fatalf("query of a missing column: %v; want the server's error", err)
	}
	if rows, err := s.query(context.Background(), "postgres", "SELECT 1, NULL, 'a b' UNION ALL SELECT 2, 'x', ''"); err != nil ||
		fmt.Sprint(rows) != "[1||a b 2|x|]" {
		t.Fatalf("after the error: %q, %v", rows, err)
	}
}
