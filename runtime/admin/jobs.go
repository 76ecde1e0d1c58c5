package admin

import "github.com/bananas-go/bananas/queue"

// Priority orders jobs within a route (queue's word).
type Priority = queue.Priority

// Status is where a job is in its life (queue's word).
type Status = queue.Status

// EarlierLife is a life a job had before it was replayed from the
// dead-letter queue.
type EarlierLife = queue.EarlierLife

// JobQuery selects a page of jobs.
type JobQuery struct {
	// Route is the route to list; "" lists every route, one after the other.
	Route string
	// State is pending, scheduled, processing or failed (dead-lettered);
	// "active" and "dead" are taken for the last two.
	State Status
	// Priority narrows pending jobs to one priority.
	Priority Priority
	// Task is a task name; "" is any.
	Task string
	// Text matches jobs whose id or last error holds it, case-insensitively.
	Text string
	// Cursor is the Next of the page before; "" is the first page.
	Cursor string
	// Limit is the most jobs a page holds (default 50, at most 500). A page
	// may hold fewer and still have a Next: a filter that matches little
	// reads a bounded number of jobs per page.
	Limit int
	// Newest lists the most recent first instead of the order the route
	// runs (or killed) them.
	Newest bool
}

// Canceled is the answer to a cancel: the job and its status after it,
// canceled, or processing while the worker running it has yet to act.
type Canceled struct {
	ID     string `json:"id"`
	Status Status `json:"status"`
}

// Map maps each element of xs through f, into an empty list (not null)
// when there is none.
func Map[T, V any](xs []T, f func(T) V) []V {
	out := make([]V, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}
