package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
)

// Inspector lists and acts on the jobs, routes, cron entries and workers of a
// client's namespace. It is the one admin layer: the CLI, the HTTP API and the
// dashboard all call it, so no listing or action is written twice. Its tasks
// are those the register functions put on a worker (the generated Register):
// they decode args and results to JSON and read JSON submissions.
//
// Every action is one Redis script that checks before it writes, so an
// action on a job that moved meanwhile (a delete of a job that started) is an
// error naming the job's state, never a half-done change.
type Inspector struct {
	c   *Client
	reg *Worker // the registered tasks and cron entries; never run

	served servedRoutes // for the warning of a submission to a route nobody takes
	paused pausedRoutes // for the warning of a submission to a paused route

	// The OpenAPI document, built once: the tasks do not change.
	openapiOnce sync.Once
	openapiDoc  []byte
	openapiErr  error
}

// NewInspector returns the admin layer of c for the tasks that register
// (the generated Register functions) put on a worker.
func NewInspector(c *Client, register ...func(*Worker)) *Inspector {
	reg := NewWorker(c, WorkerOptions{})
	for _, r := range register {
		r(reg)
	}
	return &Inspector{c: c, reg: reg}
}

// Inspector returns the admin layer of w's client with w's tasks.
func (w *Worker) Inspector() *Inspector { return &Inspector{c: w.c, reg: w} }

// Tasks describes the registered tasks, by name.
func (in *Inspector) Tasks() []TaskInfo {
	out := make([]TaskInfo, 0, len(in.reg.handlers))
	for _, name := range in.reg.Tasks() {
		info := in.reg.handlers[name].info()
		for _, e := range in.reg.cron {
			if e.Name == name {
				info.Cron = &admin.CronSpec{Spec: e.Spec, TZ: e.TZ}
			}
		}
		out = append(out, info)
	}
	return out
}

// RouteInfo is one route's state: its jobs in each place, whether it is
// paused, how long its oldest pending job has waited, and how many live
// RouteInfo is one route's depths and state (see admin.Route).
type RouteInfo = admin.Route

// Routes describes every known route (see KnownRoutes), by name, in a few
// pipelined round trips whatever the depth of the queues: a route without
// a job — paused, given limits or shards, routed to by a registered task,
// taken by a live worker — is one with zeros. A sharded route is one entry,
// its shards' counts summed.
func (in *Inspector) Routes(ctx context.Context) ([]RouteInfo, error) {
	routes, takers, err := in.knownRoutes(ctx)
	if err != nil {
		return nil, err
	}
	depths, err := in.c.q.Depths(ctx, routes)
	if err != nil {
		return nil, err
	}
	depths = queue.MergeShards(depths)
	now := in.c.q.Now()
	out := make([]RouteInfo, len(depths))
	for i, d := range depths {
		out[i] = RouteInfo{
			Route: d.Route, High: d.High, Normal: d.Normal, Low: d.Low, Scheduled: d.Scheduled, Active: d.Active, Dead: d.Dead,
			Paused: d.Paused, OldestPending: d.OldestPending, Workers: takers[d.Route], HistoryBacklog: d.Ended,
			HeldKeys: d.Held, Throttled: d.Throttled, LimitRunning: d.KeyedRunning,
		}
		if !d.OldestPending.IsZero() {
			out[i].OldestPendingAge = max(now.Sub(d.OldestPending), 0)
		}
	}
	return out, nil
}

// knownRoutes is every route the admin layer knows: those of the routes
// set, shards by name (every route a job was enqueued to, paused or given
// limits, until idle for queue.RouteIdleTTL), then, by name, the routes of
// the registered tasks, of the live workers and of sharded routes. takers
// counts the live workers taking each route.
func (in *Inspector) knownRoutes(ctx context.Context) (routes []string, takers map[string]int, err error) {
	if routes, err = in.c.q.Routes(ctx); err != nil {
		return nil, nil, err
	}
	if takers, err = in.c.routeTakers(ctx); err != nil {
		return nil, nil, err
	}
	sharded, err := in.c.q.AllShards(ctx)
	if err != nil {
		return nil, nil, err
	}
	have := map[string]bool{}
	for _, r := range routes {
		have[queue.ShardBase(r)] = true
	}
	add := func(r string) {
		// A worker's heartbeat is read from Redis: a name that is not a
		// route is not one.
		if !have[r] && queue.CheckRoute(r) == nil {
			have[r] = true
			routes = append(routes, r)
		}
	}
	for _, name := range in.reg.Tasks() {
		if h := in.reg.handlers[name]; h.info != nil {
			add(h.info().Route)
		}
	}
	for r := range takers {
		add(r)
	}
	for r := range sharded {
		add(r)
	}
	sort.Strings(routes)
	return routes, takers, nil
}

// Job returns a snapshot of job id, or an error matching ErrJobNotFound.
// Its args and result are also JSON: as their Go types when its task is
// registered here, else as stored, decoded without their types (Untyped
// says so): a program that does not know the task still shows what the
// job holds.
func (in *Inspector) Job(ctx context.Context, id string) (*JobInfo, error) {
	info, err := in.c.Job(ctx, id)
	if err != nil {
		return nil, err
	}
	args, result := in.JSON(info)
	if string(args) != "null" {
		info.Args = args
	}
	if string(result) != "null" {
		info.ResultJSON = result
	}
	if h := in.reg.handlers[info.Name]; h != nil && h.argsJSON != nil {
		return info, nil
	}
	if info.Args == nil && len(info.ArgsMsgpack) > 0 {
		if b, err := untypedJSON(info.ArgsMsgpack); err == nil {
			info.Args, info.Untyped = b, true
		}
	}
	if info.ResultJSON == nil && len(info.Result) > 0 {
		if b, err := untypedJSON(info.Result); err == nil {
			info.ResultJSON, info.Untyped = b, true
		}
	}
	return info, nil
}

// JSON renders a job's args and result as the JSON of their Go types,
// decoded by the task's generated code; null when the task is not
// registered here or the bytes do not decode.
func (in *Inspector) JSON(info *JobInfo) (args, result json.RawMessage) {
	args, result = json.RawMessage("null"), json.RawMessage("null")
	h := in.reg.handlers[info.Name]
	if h == nil || h.argsJSON == nil {
		if info.Args != nil { // a task declared in the program but not registered here
			args = info.Args
		}
		return
	}
	switch {
	case info.Args != nil: // Client.Job decoded them already, with the same generated code
		args = info.Args
	case len(info.ArgsMsgpack) > 0:
		if b, err := h.argsJSON(info.ArgsMsgpack); err == nil {
			args = b
		}
	}
	if len(info.Result) > 0 {
		if b, err := h.resultJSON(info.Result); err == nil {
			result = b
		}
	}
	return
}

// Enqueue enqueues a job of the task named name with args in JSON, decoded
// exactly by the task's generated decoder: an unknown field, a key that
// matches only case-insensitively, a wrong type, empty input or null is an
// error naming what is wrong (it matches ErrBadArgs).
func (in *Inspector) Enqueue(ctx context.Context, name string, args []byte, opts ...Option) (string, error) {
	h := in.reg.handlers[name]
	if h == nil {
		return "", in.unknownTask(name)
	}
	return h.enqueueJSON(ctx, in.c, args, opts)
}

// Replay moves dead job id back to its ready list with its attempts reset.
// A job that exists but is not dead-lettered is an error matching
// ErrWrongState that names its state.
func (in *Inspector) Replay(ctx context.Context, id string) error {
	// A workflow's step goes back under its keeper's watch first, so that
	// the workflow hears of its end even should its worker die; once
	// replayed, the step and the steps its failure canceled wait again.
	var step *queue.JobState
	if st, err := in.c.q.Lookup(ctx, id); err == nil && st.Envelope.Workflow != "" {
		step = st
		if err := in.c.q.WatchWorkflow(ctx, st.Envelope.Workflow, in.c.q.Now().Add(in.c.workflowRunner().Grace)); err != nil {
			return err
		}
	}
	err := in.c.q.Replay(ctx, id)
	if err == nil && step != nil {
		return in.c.workflowRunner().Replayed(ctx, step.Envelope.Workflow, step.Envelope.Step, id)
	}
	if errors.Is(err, queue.ErrNotFound) {
		if info, jerr := in.c.Job(ctx, id); jerr == nil && info.Status != StatusFailed {
			return wrongState("replay", id, info.Status)
		}
		return fmt.Errorf("%w: %s", ErrJobNotFound, id)
	}
	return err
}

// Workers lists the live workers, from their heartbeats.
func (in *Inspector) Workers(ctx context.Context) ([]WorkerState, error) { return in.c.Workers(ctx) }

// Cron reads the state of every registered cron entry.
func (in *Inspector) Cron(ctx context.Context) ([]CronStatus, error) { return in.reg.CronStatus(ctx) }

// routesOr is route alone (with its shards) when it is set, else every
// route and shard.
func (in *Inspector) routesOr(ctx context.Context, route string) ([]string, error) {
	if route != "" {
		if err := queue.CheckRoute(route); err != nil {
			return nil, badQuery("route", "route: %w", err)
		}
		return in.c.shardsOf(ctx, route)
	}
	return in.c.q.Routes(ctx)
}

// badQuery is an error matching ErrBadQuery about the parameter field.
func badQuery(field, format string, args ...any) error { return admin.BadQuery(field, format, args...) }

// Errors of the admin layer, matched with errors.Is (see package admin).
var (
	// ErrUnknownTask: no task of that name is registered in this program.
	ErrUnknownTask = admin.ErrUnknownTask
	// ErrBadArgs: JSON args that the task's decoder refuses.
	ErrBadArgs = admin.ErrBadArgs
	// ErrBadQuery: a listing or action parameter that is not valid.
	ErrBadQuery = admin.ErrBadQuery
	// ErrPayloadTooLarge: args or a result over the payload limit (MaxPayload).
	ErrPayloadTooLarge = admin.ErrPayloadTooLarge
	// ErrWrongState: the job is not in a state the action applies to (a
	// delete of a running job); the message names its state.
	ErrWrongState = admin.ErrWrongState
	// ErrUnknownRoute: a route that no job, registered task or live worker
	// has (Pause, Resume); the message lists the known ones.
	ErrUnknownRoute = admin.ErrUnknownRoute
)
