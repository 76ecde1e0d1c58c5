// Package api is the HTTP API (/api/v1/…, docs/OPERATIONS.md): routing, authentication, body
// limits, query parsing and the JSON error shape. It serves whatever a Backend
// answers, and the Backend — the runtime's admin layer — decides what each
// answer holds.
//
// # What it owns, and what it must not know
//
// api owns the HTTP surface: which method and path does what, the bearer
// token (constant-time compare), read-only mode, the 413 for a body over the
// limit, the 4xx JSON error naming the field, and that no request, however
// hostile, panics the process or gets a 5xx for its input. It knows nothing of
// Redis, of tasks or of how a job is stored: it must not import the runtime,
// queue or results packages. The JSON shapes of its answers are the CLI's
// --json shapes, built by the runtime.
package api
