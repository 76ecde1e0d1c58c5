package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { Main(m) }

func connect(t *testing.T, s *Server) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func TestStart_AnswersOnAFreePortNot5432(t *testing.T) {
	t.Parallel()
	s := Start(t)
	if s.Port() == 5432 {
		t.Fatal("a test server must never use port 5432")
	}
	var v string
	if err := connect(t, s).QueryRow(context.Background(), "SELECT current_user").Scan(&v); err != nil || v != "postgres" {
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

// A server stopped as by a crash answers no connection, old or new, and
// once resumed serves on the same URL what it committed before the stop.
func TestStopResume_KeepsCommittedRows(t *testing.T) {
	t.Parallel()
	s := Start(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')"); err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	s.Stop()
	if _, err := conn.Exec(ctx, "INSERT INTO t VALUES ('lost')"); err == nil {
		t.Fatal("a connection made before Stop still answered after it")
	}
	if c, err := pgx.Connect(ctx, s.URL()); err == nil {
		_ = c.Close(ctx)
		t.Fatal("connected to a stopped server")
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	var v string
	if err := connect(t, s).QueryRow(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != "kept" {
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
	ctx := context.Background()
	for _, url := range []string{a, b} {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		var db string
		var tables int
		err = conn.QueryRow(ctx, "SELECT current_database(), (SELECT count(*) FROM pg_tables WHERE schemaname = 'public')").Scan(&db, &tables)
		_ = conn.Close(ctx)
		if err != nil || tables != 0 || !strings.Contains(url, "/"+db+"?") {
			t.Fatalf("%s: database %q with %d tables, %v", url, db, tables, err)
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
