// Package bananastype holds the types a user of Bananas meets whatever
// holds or shows the thing they describe: a job (Job, the same whether
// Redis or the task history holds it), a page of jobs or of the history
// (JobPage, HistoryPage), a job's end (JobEnd, what hooks, metrics and
// workflows are told), a workflow and a page of workflows (Workflow,
// WorkflowPage; their statuses WorkflowStatuses), a route's depths and
// state (Route), a schedule with its state, made at run time or a cron
// entry of the code (Schedule, its overlap policy Overlap), and
// how times are written in JSON (Time). The status words of a job and the
// enum of how a run ended are package queue's (queue.Status,
// queue.Ending), the lowest layer that records them.
//
// # What it owns, and what it must not know
//
// It owns these shapes and their JSON (the HTTP API's bodies and every
// command's --json), so that the admin layer (runtime/admin), the surfaces,
// the worker's hooks, the task history (history.Store writes and returns
// Jobs) and bananastest see one type per thing, never a copy of it. It is a
// leaf: it imports the standard library, and queue for its words, and
// nothing else (leaf_test.go checks it). It must not know Redis, HTTP,
// PostgreSQL or task types: args and results arrive here already as JSON
// (or as msgpack, opaque).
//
// # JSON
//
// snake_case keys; times in RFC 3339, UTC, or null when unset (never Go's
// zero time); durations as whole milliseconds in keys ending in _ms; args
// and results as the JSON of their Go types. Each type writes its JSON
// through a private wire struct, which WireType names for the OpenAPI
// document, so the document is derived from what is written.
package bananastype
