// Package e2e has no code of its own: its tests run the runtime — workers,
// the CLI, the HTTP API — with the task history in this module's PostgreSQL
// store, against real PostgreSQL and redis-server processes. They live here,
// not beside the runtime's tests, because the core module requires no
// PostgreSQL driver.
package e2e
