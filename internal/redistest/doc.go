// Package redistest starts real redis-server processes for tests: a private
// server per test (Start), one shared per test binary (Shared), and a real
// three-master Redis Cluster (StartCluster, SharedCluster). Servers listen on
// free loopback ports — never 6379 — keep nothing on disk, and die with the
// test process. Tests isolate themselves by namespace (Namespace), never by
// sharing a database.
//
// SecondRun checks that scripts are harmless when run twice: it runs each
// script call again with the same arguments and compares the namespace
// (Snapshot, Diff).
package redistest
