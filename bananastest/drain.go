package bananastest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
)

// Report is what a Drain ran: every end of a run a worker recorded, in
// order, and their count by outcome.
type Report struct {
	Ends []bananastype.JobEnd
	// Completed runs succeeded; Retried failed and will run again; Dead
	// failed for good (dead-lettered); Snoozed asked to run later
	// (runtime.RetryAfter); Canceled were canceled.
	Completed, Retried, Dead, Snoozed, Canceled int
}

func (r *Report) add(e bananastype.JobEnd) {
	r.Ends = append(r.Ends, e)
	switch e.Ending {
	case queue.EndCompleted:
		r.Completed++
	case queue.EndDead:
		r.Dead++
	case queue.EndSnoozed:
		r.Snoozed++
	case queue.EndRetrying:
		r.Retried++
	case queue.EndCanceled:
		r.Canceled++
	}
}

// String is one line per end, after a summary: "3 run(s): 2 completed, 1 dead".
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d run(s): %d completed, %d retried, %d dead, %d snoozed, %d canceled",
		len(r.Ends), r.Completed, r.Retried, r.Dead, r.Snoozed, r.Canceled)
	for _, e := range r.Ends {
		fmt.Fprintf(&b, "\n\t%s %s attempt %d: %s", e.Task, e.ID, e.Attempt, e.Ending)
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
// they are. It runs workers of its own over every known route, stopped
// before it returns; they run the registered cron entries as any worker
// does, so a tick that falls within a Drain adds its job (a test of a cron
// task enqueues one with h.Inspector.RunCron). Past Options.DrainTimeout it fails t, listing what is
// still waiting.
func (h *Harness) Drain(t TB) Report {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(h.opts.DrainTimeout)
	var report Report
	for {
		routes, err := h.Inspector.KnownRoutes(ctx)
		if err != nil {
			t.Fatalf("bananastest: Drain: read the known routes: %v", err)
			return report
		}
		if err := h.round(ctx, routes, &report, deadline); err != nil {
			t.Fatalf("bananastest: Drain: %v\nran: %s", err, report)
			return report
		}
		// The worker has stopped and told every end: what is read now
		// moves only by the clock, and the report knows every retry.
		left, err := h.leftToRun(ctx, routes, retried(report.Ends))
		if err != nil {
			t.Fatalf("bananastest: Drain: %v\nran: %s", err, report)
			return report
		}
		if left == "" {
			return report
		}
		if time.Now().After(deadline) {
			t.Fatalf("bananastest: Drain: jobs still to run after %s:\n%s\nran: %s", h.opts.DrainTimeout, left, report)
			return report
		}
	}
}

// round runs one worker over routes until two readings in a row find
// nothing left to run (a reading of the routes is not atomic, so one may
// miss a job that moves while it reads), or the deadline; the worker has
// stopped, and report has every end it recorded, when round returns.
func (h *Harness) round(ctx context.Context, routes []string, report *Report, deadline time.Time) error {
	var mu sync.Mutex
	w := h.newWorker(routes, func(e bananastype.JobEnd) {
		mu.Lock()
		report.add(e)
		mu.Unlock()
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	var waitErr error
	for idle := 0; idle < 2 && waitErr == nil; {
		mu.Lock()
		ids := retried(report.Ends)
		mu.Unlock()
		left, err := h.leftToRun(ctx, routes, ids)
		switch {
		case err != nil:
			waitErr = err
		case left == "":
			idle++
		case time.Now().After(deadline):
			idle = 2 // the caller reads what is left, and fails
		default:
			idle = 0
		}
		select {
		case runErr := <-done:
			stop()
			return fmt.Errorf("the worker stopped: %v", runErr)
		case <-time.After(2 * time.Millisecond):
		}
	}
	stop()
	if runErr := <-done; runErr != nil {
		return fmt.Errorf("the worker stopped: %v", runErr)
	}
	return waitErr
}

// retryGrace is how far past the local clock a retry of this Drain's may be
// scheduled and still count as due: the worker reckons a retry's time on
// the Redis server's clock, which it estimates.
const retryGrace = 100 * time.Millisecond

// retried is the set of jobs whose last end in ends is a retry (or snooze):
// they run again, and Drain waits for them once due.
func retried(ends []bananastype.JobEnd) map[string]bool {
	ids := map[string]bool{}
	for _, e := range ends {
		ids[e.ID] = e.Ending == queue.EndRetrying || e.Ending == queue.EndSnoozed
	}
	return ids
}

// leftToRun describes what in routes is still to run, "" when nothing is:
// jobs pending in an unpaused route, running, or scheduled and due (the
// retries of ids within retryGrace).
func (h *Harness) leftToRun(ctx context.Context, routes []string, ids map[string]bool) (string, error) {
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
			if due, err = h.dueScheduled(ctx, r.Route, ids); err != nil {
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
// now, which a worker's promoter makes pending.
func (h *Harness) dueScheduled(ctx context.Context, route string, ids map[string]bool) (int, error) {
	now := time.Now()
	due := 0
	q := admin.JobQuery{Route: route, State: runtime.StatusScheduled, Limit: 500}
	for {
		page, err := h.Inspector.Jobs(ctx, q)
		if err != nil {
			return 0, fmt.Errorf("list the scheduled jobs of route %s: %w", route, err)
		}
		for _, j := range page.Jobs {
			by := now
			if ids[j.ID] {
				by = now.Add(retryGrace)
			}
			if !j.ScheduledAt.After(by) {
				due++
			}
		}
		if page.Next == "" {
			return due, nil
		}
		q.Cursor = page.Next
	}
}
