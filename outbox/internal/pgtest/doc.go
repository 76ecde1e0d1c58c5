// Package pgtest starts real PostgreSQL servers for the outbox's tests: a
// private server per test (Start) and one shared per test binary (Shared,
// stopped by Main), on which tests isolate themselves by database
// (Database). It is history/postgres's internal/pgtest (whose tests cover
// it), held here too because an internal package is visible only inside
// the tree it sits in, and the two modules are siblings.
//
// A server is a fresh cluster made by initdb in a temporary directory,
// listening on a free loopback port (never 5432) with trust authentication
// for the user postgres, fsync off, and dies with the test process. It owns
// starting, stopping (Stop, as a crash) and resuming those processes; it must
// not know any schema: the stores under test create their own.
//
// initdb and postgres refuse to run as root, so when the tests run as root
// the server runs as the system user postgres, which the Debian package
// postgresql creates along with the binaries (/usr/lib/postgresql/<ver>/bin).
package pgtest
