// Package api is the HTTP API (/api/v1/…, docs/OPERATIONS.md): routing, authentication, body
// limits, query parsing and the JSON error shape. It serves what an
// admin.Admin answers (admin.Inspector, or a fake in tests): the admin
// layer decides what each answer holds, and admin's view types write it.
//
// Its routes are one table (endpoints.go): each entry is a mux route and,
// through Endpoints, an operation of the OpenAPI document, so a route is
// declared once. An action's entry with a Button is also the dashboard's
// form for it (Actions), which the dashboard serves through the entry's
// own handler.
//
// # What it owns, and what it must not know
//
// api owns the HTTP surface: which method and path does what, the bearer
// tokens (constant-time compare, runtime/internal/access) and the role each
// endpoint needs (its entry's Role: a call beyond its token's role is a 403
// naming the role), that each action is recorded in the audit log as taken
// by the token's name (admin.Audited; a call beyond its role as denied),
// read-only mode, the 413 for a body over the
// limit, the 4xx JSON error naming the field, and that no request, however
// hostile, panics the process or gets a 5xx for its input, and the one
// mapping of admin.Classify's classes to HTTP statuses (httpError). It
// knows nothing of Redis, of tasks or of how a job is stored: it imports
// runtime/admin (and openapi for the table's entry type), never the
// runtime, the CLI or the dashboard. The JSON shapes of its answers are the
// CLI's --json shapes, admin's.
package api
