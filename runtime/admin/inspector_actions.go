package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
)

// JobActions are the operator's actions on one job, or on the dead jobs of
// a route: the Inspector's below, a fake's in the surfaces' tests.
type JobActions interface {
	// Cancel cancels job id and returns its status after the call:
	// canceled, or processing while the worker holding it has yet to act.
	Cancel(ctx context.Context, id string) (Status, error)
	Delete(ctx context.Context, id string) error
	// RunNow moves scheduled job id (delayed, or waiting for its retry) to
	// pending now, its attempts as they were; a pending job is left as it
	// is, another state is ErrWrongState.
	RunNow(ctx context.Context, id string) error
	// Replay moves dead job id back to its ready list, its attempts reset.
	Replay(ctx context.Context, id string) error
	// ReplayDead replays the failed jobs of route ("" every route) and task
	// ("" every task) and says how many.
	ReplayDead(ctx context.Context, route, task string) (int, error)
	// PurgeDead deletes the failed jobs of route and task that died more
	// than olderThan ago (0: all) and says how many.
	PurgeDead(ctx context.Context, route, task string, olderThan time.Duration) (int, error)
}

// RouteActions are the operator's actions on a route's flow of jobs.
type RouteActions interface {
	Pause(ctx context.Context, route string) error
	Resume(ctx context.Context, route string) error
	// CancelWaiting cancels every pending and scheduled job of route (of
	// task, when given) and says how many it canceled.
	CancelWaiting(ctx context.Context, route, task string) (int, error)
	// RunScheduled moves every scheduled job of route (of task, when
	// given) — delayed, or waiting for its retry — to its ready list now,
	// as RunNow moves one, and says how many.
	RunScheduled(ctx context.Context, route, task string) (int, error)
}

// queueState is the queue's word for a listing state.
func queueState(s Status) (string, error) {
	switch s {
	case queue.StatusPending, "":
		return "pending", nil
	case queue.StatusScheduled:
		return "scheduled", nil
	case queue.StatusProcessing, "active":
		return "active", nil
	case queue.StatusFailed, "dead":
		return "dead", nil
	case queue.StatusCompleted, queue.StatusCanceled, queue.StatusExpired:
		return "", badQuery("state", "state %q: finished jobs are not listed; a completed, canceled or expired job is kept as its result record "+
			"for its result TTL (RESULT_TTL_SUCCESS, 1h by default; RESULT_TTL_FAILURE, 24h, for a canceled one) and shown by its id "+
			"(job ID, GET /api/v1/jobs/{id}), and searched in the task history when the program keeps one (HISTORY_URL: app history, GET /api/v1/history). Listed states: pending, scheduled, processing or failed", s)
	}
	return "", badQuery("state", "state %q: use pending, scheduled, processing or failed", s)
}

func statusOfState(state string) Status {
	switch state {
	case "scheduled":
		return queue.StatusScheduled
	case "active":
		return queue.StatusProcessing
	case "dead":
		return queue.StatusFailed
	}
	return queue.StatusPending
}

// Jobs lists one page of jobs. Pages are cursor-based: a job that stays where
// it is appears once across the pages however many jobs move meanwhile, and a
// page costs the same at any depth.
func (in *Inspector) Jobs(ctx context.Context, jq JobQuery) (bananastype.JobPage, error) {
	state, err := queueState(jq.State)
	if err != nil {
		return bananastype.JobPage{}, err
	}
	if jq.Priority != "" && !queue.ValidPriority(jq.Priority) {
		return bananastype.JobPage{}, badQuery("priority", "priority %q: use high, normal or low", jq.Priority)
	}
	if jq.Limit == 0 {
		jq.Limit = 50
	}
	if jq.Limit < 1 || jq.Limit > 500 {
		return bananastype.JobPage{}, badQuery("limit", "limit %d: want 1 to 500", jq.Limit)
	}
	routes, err := in.routesOr(ctx, jq.Route)
	if err != nil {
		return bananastype.JobPage{}, err
	}
	sort.Strings(routes)
	if jq.Newest {
		sort.Sort(sort.Reverse(sort.StringSlice(routes)))
	}
	// A listing over several routes (every route, or a sharded route's
	// shards) says in its cursor which route it stopped in.
	multi := jq.Route == "" || len(routes) > 1
	start, inner, err := routeCursor(routes, jq, multi)
	if err != nil {
		return bananastype.JobPage{}, err
	}
	// Checked before any script runs, so that a forged cursor is a bad query
	// naming the cursor, never a failed call to Redis.
	cq := queue.ListQuery{State: state, Priority: jq.Priority, Cursor: inner, Newest: jq.Newest}
	if err := queue.CheckCursor(cq); err != nil {
		return bananastype.JobPage{}, badQuery("cursor", "%s", strings.TrimPrefix(err.Error(), queue.ErrBadQuery.Error()+": "))
	}
	page := bananastype.JobPage{Jobs: []bananastype.Job{}}
	for i := start; i < len(routes) && len(page.Jobs) < jq.Limit; i++ {
		got, err := in.q.Ops.ListJobs(ctx, queue.ListQuery{
			Route: routes[i], State: state, Priority: jq.Priority, Task: jq.Task, Text: jq.Text,
			Cursor: inner, Limit: jq.Limit - len(page.Jobs), Newest: jq.Newest,
		})
		if errors.Is(err, queue.ErrBadQuery) {
			why := strings.TrimPrefix(err.Error(), queue.ErrBadQuery.Error()+": ")
			return bananastype.JobPage{}, fmt.Errorf("%w: %s", ErrBadQuery, why)
		}
		if err != nil {
			return bananastype.JobPage{}, err
		}
		inner = ""
		for _, j := range got.Jobs {
			page.Jobs = append(page.Jobs, bananastype.Job{
				ID: j.ID, Name: j.Name, Route: queue.ShardBase(j.Route), Priority: Priority(j.Priority), Status: statusOfState(j.State),
				Description: j.Description, Attempts: attempts(j.Attempts, j.State == "active"), MaxRetries: j.MaxRetries, Error: in.openError(j.ID, j.Error),
				CreatedAt: j.CreatedAt, ScheduledAt: j.RunAt, FinishedAt: j.DiedAt, LeaseDeadline: j.LeaseDeadline,
			})
		}
		if got.Next != "" {
			page.Next = got.Next
			if multi {
				page.Next = routes[i] + "/" + got.Next
			}
			break
		}
		if len(page.Jobs) >= jq.Limit && i+1 < len(routes) && multi {
			// The page is full at a route's end: the next page starts at
			// the next route that holds a job in the state, if any does,
			// so that no cursor leads to an empty page.
			r, err := in.nextHolding(ctx, routes[i+1:], state, jq.Priority)
			if err != nil {
				return bananastype.JobPage{}, err
			}
			if r != "" {
				page.Next = r + "/"
			}
		}
	}
	return page, nil
}

// nextHolding is the first of routes that holds a job in the queue's
// listing state (at priority p, when set), or "" when none does: one
// pipelined read of their depths.
func (in *Inspector) nextHolding(ctx context.Context, routes []string, state string, p Priority) (string, error) {
	depths, err := in.q.Ops.Depths(ctx, routes)
	if err != nil {
		return "", err
	}
	for _, d := range depths {
		n := d.High + d.Normal + d.Low // keyed jobs included
		switch {
		case state == queue.ListScheduled:
			n = d.Scheduled
		case state == queue.ListActive:
			n = d.Active
		case state == queue.ListDead:
			n = d.Dead
		case p == queue.High:
			n = d.High
		case p == queue.Normal:
			n = d.Normal
		case p == queue.Low:
			n = d.Low
		}
		if n > 0 {
			return d.Route, nil
		}
	}
	return "", nil
}

// routeCursor finds where a listing of several routes (multi) resumes:
// across routes the cursor is "route/inner", the route it stopped in and the
// queue's cursor within it; routes are in the listing's order.
func routeCursor(routes []string, jq JobQuery, multi bool) (start int, inner string, err error) {
	if !multi || jq.Cursor == "" {
		return 0, jq.Cursor, nil
	}
	r, c, ok := strings.Cut(jq.Cursor, "/")
	i := sort.SearchStrings(routes, r)
	if jq.Newest {
		i = indexOf(routes, r)
	}
	if !ok || i < 0 || i >= len(routes) || routes[i] != r {
		return 0, "", badQuery("cursor", "cursor %q is not one this listing gave", jq.Cursor)
	}
	return i, c, nil
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// Delete removes a pending or scheduled job for good; a job in another
// state is an error matching ErrWrongState that names it.
func (in *Inspector) Delete(ctx context.Context, id string) error {
	return in.refusal(ctx, "delete", id, in.q.Jobs.Delete(ctx, id))
}

// Cancel cancels job id: a pending or scheduled job is removed and finishes
// as canceled at once (queue.StatusCanceled; Await returns an error matching
// ErrJobCanceled); a running job has its context cancelled on the worker
// that holds it, which finishes it as canceled, without a retry. The status
// returned is queue.StatusCanceled, or queue.StatusProcessing while the worker has yet to
// act. Any other state is an error matching ErrWrongState.
func (in *Inspector) Cancel(ctx context.Context, id string) (Status, error) {
	info, err := in.rt.Job(ctx, id)
	if err != nil {
		return "", err
	}
	if info.Status.Finished() {
		// Refused here, not only by the script: a second cancel within the
		// millisecond of the first builds the same record, which the script
		// takes for a retry of the first call and answers "canceled".
		return "", wrongState("cancel", id, info.Status)
	}
	encoded, ttl, err := in.rt.CanceledRecord(info)
	if err != nil {
		return "", err
	}
	out, err := in.q.Jobs.Cancel(ctx, id, encoded, ttl)
	if err != nil {
		return "", in.refusal(ctx, "cancel", id, err)
	}
	if out == queue.CancelRequested {
		return queue.StatusProcessing, nil // the worker holding it counts it when it acts
	}
	in.rt.Canceled(info.Route, info.Priority, info.Name)
	return queue.StatusCanceled, nil
}

// Pause stops every worker, in every process, from taking jobs of route
// within about a second; enqueues go on. Resume undoes it at once. A route
// that nothing knows (see KnownRoutes) is an error matching ErrUnknownRoute
// that lists the known ones: pausing a typo would answer success and stop
// nothing.
func (in *Inspector) Pause(ctx context.Context, route string) error {
	if err := in.checkKnownRoute(ctx, route, false); err != nil {
		return err
	}
	// Listed first, so that a paused route shows in Routes however long it
	// holds no job (the routes set keeps a paused route, see PruneRoutes).
	if err := in.q.AddRoute(ctx, route); err != nil {
		return err
	}
	// The route itself first: SetShards pauses the shards it makes when
	// it finds the route paused, and this reads the shards after.
	if err := in.q.Ops.Pause(ctx, route); err != nil {
		return err
	}
	return in.eachShard(ctx, route, in.q.Ops.Pause)
}

// eachShard runs f on every shard of route but the route itself.
func (in *Inspector) eachShard(ctx context.Context, route string, f func(context.Context, string) error) error {
	shards, err := in.shardsOf(ctx, route)
	if err != nil {
		return err
	}
	for _, s := range shards[1:] {
		if err := f(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// Resume lets workers take jobs of route again, at once. A route that is
// neither known (see KnownRoutes) nor paused is an error matching
// ErrUnknownRoute.
func (in *Inspector) Resume(ctx context.Context, route string) error {
	if err := in.checkKnownRoute(ctx, route, true); err != nil {
		return err
	}
	if err := in.q.Ops.Resume(ctx, route); err != nil {
		return err
	}
	return in.eachShard(ctx, route, in.q.Ops.Resume)
}

// KnownRoutes are the routes something knows, sorted: those of the routes
// set (a job was enqueued to them, or they were paused or given limits,
// and they have not been idle for queue.RouteIdleTTL since; a paused route
// or one with limits of its own stays), those the registered tasks enqueue
// to, those a live worker takes and the sharded ones. Routes lists the
// same routes.
func (in *Inspector) KnownRoutes(ctx context.Context) ([]string, error) {
	known, _, err := in.knownRoutes(ctx)
	if err != nil {
		return nil, err
	}
	return queue.BaseRoutes(known), nil
}

// checkKnownRoute refuses a route that is not valid or that nothing knows;
// orPaused lets a paused route through, so that a pause can be undone
// whatever else knows its route.
func (in *Inspector) checkKnownRoute(ctx context.Context, route string, orPaused bool) error {
	if err := queue.CheckRoute(route); err != nil {
		return badQuery("route", "route: %w", err)
	}
	known, err := in.KnownRoutes(ctx)
	if err != nil || slices.Contains(known, route) {
		return err
	}
	if orPaused {
		paused, err := in.q.Ops.PausedRoutes(ctx, []string{route})
		if err != nil || paused[route] {
			return err
		}
	}
	return fmt.Errorf("%w %q: no job, registered task, live worker, pause, limit or shard count names it (known routes: %s; a typo?)", ErrUnknownRoute, route, strings.Join(known, ", "))
}

// CancelWaiting cancels every pending and scheduled job of route (of task,
// when given), as Cancel cancels one, and says how many it canceled: each
// ends canceled, and its waiters wake. A job that starts or finishes
// meanwhile is left alone (running jobs are not asked to stop), so the
// count may be less than the listing showed. A route that nothing knows is
// an error matching ErrUnknownRoute.
func (in *Inspector) CancelWaiting(ctx context.Context, route, task string) (int, error) {
	if err := in.checkKnownRoute(ctx, route, true); err != nil {
		return 0, err
	}
	n := 0
	for _, state := range []Status{queue.StatusPending, queue.StatusScheduled} {
		q := JobQuery{Route: route, State: state, Task: task, Limit: 500}
		for {
			page, err := in.Jobs(ctx, q)
			if err != nil {
				return n, err
			}
			for _, j := range page.Jobs {
				st, err := in.Cancel(ctx, j.ID)
				switch {
				case errors.Is(err, ErrWrongState), errors.Is(err, ErrJobNotFound):
					continue // it moved since the listing
				case err != nil:
					return n, err
				case st == queue.StatusCanceled:
					n++
				}
			}
			if page.Next == "" {
				break
			}
			q.Cursor = page.Next
		}
	}
	return n, nil
}

// ReplayDead replays the dead jobs of route ("" every route) of task (""
// every task), and says how many.
func (in *Inspector) ReplayDead(ctx context.Context, route, task string) (int, error) {
	routes, err := in.routesOr(ctx, route)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, r := range routes {
		n, err := in.q.Ops.ReplayDead(ctx, r, task)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// PurgeDead deletes for good the dead jobs of route ("" every route) of task
// ("" every task) that died more than olderThan ago (0: all), and says how
// many.
func (in *Inspector) PurgeDead(ctx context.Context, route, task string, olderThan time.Duration) (int, error) {
	routes, err := in.routesOr(ctx, route)
	if err != nil {
		return 0, err
	}
	cutoff := in.q.Now().Add(-olderThan)
	if olderThan == 0 {
		cutoff = in.q.Now().Add(time.Hour) // every one, even one dying now on a clock a little ahead
	}
	total := 0
	for _, r := range routes {
		n, err := in.q.Ops.PurgeDead(ctx, r, task, cutoff)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// refusal turns the queue's refusal of action on job id into the runtime's
// error. A refusal for the job's state names the state as Job reports it:
// the queue sees a finished job only as one with a result record, and a
// canceled or failed job is not "completed" to whoever asked.
func (in *Inspector) refusal(ctx context.Context, action, id string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, queue.ErrNotFound):
		return fmt.Errorf("%w: %s", ErrJobNotFound, id)
	case errors.Is(err, queue.ErrWrongState):
		if info, jerr := in.rt.Job(ctx, id); jerr == nil {
			return wrongState(action, id, info.Status)
		}
		// The queue's own words, without the sentinel's text that ErrWrongState repeats.
		why := strings.TrimPrefix(err.Error(), queue.ErrWrongState.Error()+": ")
		return fmt.Errorf("%w: %s", ErrWrongState, why)
	}
	return err
}

// RunCron enqueues one job of cron entry name now, as a tick would (its
// route, priority and zero args), and returns its id. It leaves the entry's
// schedule alone: its next run, last run, run count and last job are the
// scheduler's, and the next tick fires as planned.
func (in *Inspector) RunCron(ctx context.Context, name string) (string, error) {
	e, err := in.rt.CronJob(name, in.q.Now())
	if err != nil {
		return "", err
	}
	holder, err := in.q.Jobs.EnqueueOne(ctx, e.Route, e.Priority, e.Job)
	if err != nil {
		return "", fmt.Errorf("run cron entry %s: %w", name, err)
	}
	if holder != "" {
		// A task enqueued uniquely: the job that holds its key runs instead.
		return holder, fmt.Errorf("run cron entry %s: %w: job %s already holds its unique key", name, ErrDuplicate, holder)
	}
	in.rt.Enqueued(e.Route, e.Priority, name, 1)
	return e.Job.ID, nil
}

// attempts is Job.Attempts of a job stored with failed runs counted (the
// queue's count: failures and lost leases), running or not.
func attempts(failed int, running bool) int {
	if running {
		return failed + 1
	}
	return failed
}

// wrongState is the error of action refused on job id because it is status.
func wrongState(action, id string, status Status) error {
	return fmt.Errorf("%w: cannot %s job %s: it is %s", ErrWrongState, action, id, status)
}

// unservedWarning says, when no live worker (from their heartbeats) takes
// the route of job id, that the job waits until one does; "" otherwise, or
// when the heartbeats cannot be read (the job was enqueued all the same).
func (in *Inspector) unservedWarning(ctx context.Context, id string) string {
	route, ok := queue.RouteOf(id)
	if !ok {
		return ""
	}
	route = queue.ShardBase(route)
	takers, err := in.served.read(ctx, in.rt.RouteTakers)
	if err != nil || takers[route] > 0 {
		return ""
	}
	return fmt.Sprintf("no live worker takes route %s (from their heartbeats); job %s waits until one does", route, id)
}

// servedRoutes keeps, for a second, how many live workers take each route
// as their heartbeats said at the last read, so that a stream of
// submissions reads the heartbeats once a second rather than once a
// submission (a round trip per request that cut the API's submission rate
// by a third). Heartbeats are written every 5 s: a second-old count says what
// a fresh one would, and a route a worker starts taking loses its warning
// within a second of that worker's first heartbeat.
type servedRoutes struct {
	mu     sync.Mutex
	at     time.Time
	takers map[string]int
}

const servedRoutesFor = time.Second

// read returns the counts, read by fresh when they are older than
// servedRoutesFor. Concurrent callers wait for one read.
func (s *servedRoutes) read(ctx context.Context, fresh func(context.Context) (map[string]int, error)) (map[string]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.takers != nil && time.Since(s.at) < servedRoutesFor {
		return s.takers, nil
	}
	takers, err := fresh(ctx)
	if err != nil {
		return nil, err
	}
	s.at, s.takers = time.Now(), takers
	return takers, nil
}

// RunNow moves scheduled job id (delayed, or waiting for its retry) to its
// ready list now, its attempts as they were; a pending job is left as it
// is. Any other state is an error matching ErrWrongState, an unknown id
// ErrJobNotFound.
func (in *Inspector) RunNow(ctx context.Context, id string) error {
	return in.refusal(ctx, "run", id, in.q.Jobs.RunNow(ctx, id))
}

// RunScheduled moves every scheduled job of route (of task, when given) to
// its ready list now, each as RunNow moves it, and says how many: a job
// that started or left meanwhile is passed over. A route nothing knows is
// an error matching ErrNotFound that lists the known ones.
func (in *Inspector) RunScheduled(ctx context.Context, route, task string) (int, error) {
	if err := in.checkKnownRoute(ctx, route, true); err != nil {
		return 0, err
	}
	n := 0
	q := JobQuery{Route: route, State: queue.StatusScheduled, Task: task, Limit: 500}
	for {
		page, err := in.Jobs(ctx, q)
		if err != nil {
			return n, err
		}
		for _, j := range page.Jobs {
			switch err := in.RunNow(ctx, j.ID); {
			case errors.Is(err, ErrWrongState), errors.Is(err, ErrJobNotFound):
				continue // it moved since the listing
			case err != nil:
				return n, err
			}
			n++
		}
		if page.Next == "" {
			return n, nil
		}
		q.Cursor = page.Next
	}
}
