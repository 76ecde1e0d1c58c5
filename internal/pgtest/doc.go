// Package pgtest starts real PostgreSQL servers for tests, and for nothing
// else: a private server per test (Start) and one shared per test binary
// (Shared, stopped by Main), on which tests isolate themselves by database
// (Database).
//
// The tests of history/postgres and of outbox import it: an internal
// package is open to every package whose path lies under the core's, in
// whichever module. It is part of the core module, which must require no
// PostgreSQL driver (modules_test.go), so it speaks the few messages of
// PostgreSQL's protocol it needs itself (wire.go): trust authentication and
// simple queries. The stores' own tests connect with their driver.
//
// A server is a fresh cluster made by initdb in a temporary directory,
// listening on a free loopback port (never 5432) with trust authentication
// for the user postgres, fsync off, and dies with the test process. It owns
// starting, stopping (Stop, as a crash), freezing (Pause, Continue) and
// resuming those processes; it must not know any schema: the stores under
// test create their own.
//
// initdb and postgres refuse to run as root, so when the tests run as root
// the server runs as the system user postgres, which the Debian package
// postgresql creates along with the binaries (/usr/lib/postgresql/<ver>/bin).
package pgtest
