package queue

// A facet is a view of the Queue that owns one concern's transitions and
// reads; it is a field of the Queue (q.Jobs, q.Ops, ...), a value holding
// the Queue, so a call through it costs what a method of the Queue costs.
// Facets share the Queue's client, keys, scripts and clock and nothing else:
// each one's methods are declared in its own files (see the package doc).

// Jobs is the life of a job: enqueue (enqueue.go), fetch and hand-back
// (fetch.go), ack, failure, requeue and lease renewal (settle.go), the
// reaper (reap.go), the promotion of due jobs (promote.go), progress
// (progress.go), waiting workers (idle.go), cancel and delete (admin.go),
// and the reads of one job (inspect.go).
type Jobs struct{ q *Queue }

// Flows is flow control: the limits of routes and tasks (limits.go), the
// state of a route's flows and the sweep that puts held flows back
// (flow.go).
type Flows struct{ q *Queue }

// Ops is what operators do and read across jobs: pause and resume
// (admin.go), the dead-letter queue (dlq.go), depths, counters and the
// dead list (inspect.go), the jobs listing (list.go), the stats series
// (series.go), and the pruning of idle routes (prune.go).
type Ops struct{ q *Queue }

// Ended is the routes' ended lists, which the task history drains
// (ended.go).
type Ended struct{ q *Queue }
