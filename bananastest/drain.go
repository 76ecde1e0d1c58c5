package bananastest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bananas-go/bananas/runtime"
)

// Report is what a Drain ran: every end of a run a worker recorded, in
// order, and their count by outcome.
type Report struct {
	Ends []runtime.JobEnd
	// Completed runs succeeded; Retried failed and will run again; Dead
	// failed for good (dead-lettered); Snoozed asked to run later
	// (runtime.RetryAfter); Canceled were canceled.
	Completed, Retried, Dead, Snoozed, Canceled int
}

func (r *Report) add(e runtime.JobEnd) {
	r.Ends = append(r.Ends, e)
	switch {
	case e.Status == runtime.StatusCompleted:
		r.Completed++
	case e.Status == runtime.StatusFailed:
		r.Dead++
	case e.Status == runtime.StatusScheduled && e.Snoozed:
		r.Snoozed++
	case e.Status == runtime.StatusScheduled:
		r.Retried++
	case e.Status == runtime.StatusCanceled:
		r.Canceled++
	}
}

// String is one line per end, after a summary: "3 run(s): 2 completed, 1 dead".
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d run(s): %d completed, %d retried, %d dead, %d snoozed, %d canceled",
		len(r.Ends), r.Completed, r.Retried, r.Dead, r.Snoozed, r.Canceled)
	for _, e := range r.Ends {
		fmt.Fprintf(&b, "\n\t%s %s attempt %d: %s", e.Task, e.ID, e.Attempt, e.Status)
		if e.Error != "" {
			fmt.Fprintf(&b, " (%s)", firstLine(e.Error))
		}
	}
	return b.String()
}

// Drain runs, with the registered handlers, every job that is ready on the
// harness's server, and every job those runs make ready — a retry, which
// the harness makes due at once unless its task has a backoff= of its own,
// or a job a handler enqueues — until none is left to run, and reports
// what ran. Jobs delayed into the future and paused routes are left as
// they are. It uses a worker of its own over every known route, stopped
// before it returns: a job enqueued meanwhile to a route no job had when
// Drain started is left for the next Drain. Past Options.DrainTimeout it
// fails t, listing what is still waiting.
func (h *Harness) Drain(t TB) Report {
	t.Helper()
	ctx := context.Background()
	routes, err := h.Inspector.KnownRoutes(ctx)
	if err != nil {
		t.Fatalf("bananastest: Drain: read the known routes: %v", err)
		return Report{}
	}
	var mu sync.Mutex
	var report Report
	w := h.newWorker(routes, func(e runtime.JobEnd) {
		mu.Lock()
		report.add(e)
		mu.Unlock()
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	left, waitErr := h.waitIdle(ctx, routes, done)
	stop()
	if runErr := <-done; runErr != nil {
		t.Fatalf("bananastest: Drain: the worker stopped: %v", runErr)
		return report
	}
	if waitErr != nil {
		t.Fatalf("bananastest: Drain: %v; still to run:\n%s\nran: %s", waitErr, left, report)
	}
	return report
}

// waitIdle waits until nothing in routes is left to run: no job pending in
// an unpaused route, running, or scheduled and due. It returns early when
// the worker stopped (done holds its error for the caller); on a timeout or
// a failure to read, it says what was left.
func (h *Harness) waitIdle(ctx context.Context, routes []string, done chan error) (left string, err error) {
	deadline := time.Now().Add(h.opts.DrainTimeout)
	for {
		left, err := h.leftToRun(ctx, routes)
		if err != nil || left == "" {
			return left, err
		}
		if time.Now().After(deadline) {
			return left, fmt.Errorf("jobs still to run after %s", h.opts.DrainTimeout)
		}
		select {
		case runErr := <-done:
			done <- runErr
			return left, nil
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// leftToRun describes what in routes is still to run, "" when nothing is.
func (h *Harness) leftToRun(ctx context.Context, routes []string) (string, error) {
	infos, err := h.Inspector.Routes(ctx)
	if err != nil {
		return "", fmt.Errorf("read the routes: %w", err)
	}
	var left []string
	for _, r := range infos {
		if r.Paused || !slices.Contains(routes, r.Route) {
			continue
		}
		due := 0
		if r.Scheduled > 0 {
			if due, err = h.dueScheduled(ctx, r.Route); err != nil {
				return "", err
			}
		}
		if r.Pending() > 0 || r.Active > 0 || due > 0 {
			left = append(left, fmt.Sprintf("\troute %s: %d pending, %d running, %d scheduled and due", r.Route, r.Pending(), r.Active, due))
		}
	}
	return strings.Join(left, "\n"), nil
}

// dueScheduled counts the scheduled jobs of route that are ready to run
// now, which the worker's promoter is about to make pending.
func (h *Harness) dueScheduled(ctx context.Context, route string) (int, error) {
	now := time.Now()
	due := 0
	q := runtime.JobQuery{Route: route, State: runtime.StatusScheduled, Limit: 500}
	for {
		page, err := h.Inspector.Jobs(ctx, q)
		if err != nil {
			return 0, fmt.Errorf("list the scheduled jobs of route %s: %w", route, err)
		}
		for _, j := range page.Jobs {
			if !j.ScheduledAt.After(now) {
				due++
			}
		}
		if page.Next == "" {
			return due, nil
		}
		q.Cursor = page.Next
	}
}
