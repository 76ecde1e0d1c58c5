// Package admin is the admin layer: the Inspector, which lists and acts on
// the jobs, routes, cron entries, workers, workflows and history of a
// namespace, and the vocabulary of the operator surfaces: the view types
// that only they show (a task, a worker, the per-minute stats, a route's
// limits and flows), the queries and submissions they send, their JSON (the
// HTTP API's bodies and every command's --json: one convention), the errors
// the admin layer refuses with and how each surface classes them, and the
// Admin interface that the CLI, the HTTP API and the dashboard call. A job,
// a page of jobs or of the history, a workflow, a route and a cron entry
// are package bananastype's, which hooks, the history and bananastest see
// too.
//
// # What it owns, and what it must not know
//
// It owns the shapes and the error classes, so that a listing, an action or
// a refusal is written once and every surface shows it the same way. The
// Inspector implements Admin over the queue (package queue: every listing
// and action is one of its calls) and over a Runtime, the seam through
// which package runtime gives what the program's generated tasks know
// (their descriptions, strict JSON decoders and schemas, the cron
// entries) and the client's own steps (its hooks, metrics, result
// waiters, workflow runner and history store). runtime.NewInspector and
// Worker.Inspector make one; this package imports queue and history, never
// runtime. The surfaces (runtime/internal/api, cli, dashboard) import this
// package and never runtime, and tests give them a fake Admin.
//
// It knows package queue's words (Priority, Status, EarlierLife) and
// package bananastype's types. It must
// not know Redis, HTTP, terminals, templates or task types: args and
// results arrive here already as JSON.
//
// # JSON
//
// snake_case keys; times in RFC 3339, UTC, or null when unset (never Go's
// zero time); durations as whole milliseconds in keys ending in _ms; args
// and results as the JSON of their Go types. Each view type writes its JSON
// through a private wire struct, which WireType names for the OpenAPI
// document, so the document is derived from what is written.
package admin
