package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows/redisstore"
)

// Inspector lists and acts on the jobs, routes, cron entries and workers of a
// client's namespace. It is the one admin layer: the CLI, the HTTP API and the
// dashboard all call it, so no listing or action is written twice. Its tasks
// are those its Runtime registered (the generated Register functions): they
// decode args and results to JSON and read JSON submissions. Package runtime
// makes one (runtime.NewInspector, Worker.Inspector).
//
// Every action is one Redis script that checks before it writes, so an
// action on a job that moved meanwhile (a delete of a job that started) is an
// error naming the job's state, never a half-done change.
type Inspector struct {
	q  *queue.Queue
	rt Runtime // the registered tasks and the client's own steps

	served servedRoutes // for the warning of a submission to a route nobody takes
	paused pausedRoutes // for the warning of a submission to a paused route
}

// The Inspector is the admin layer that every operator surface calls.
var _ Admin = (*Inspector)(nil)

// NewInspector returns the admin layer over q of the tasks and client that
// rt stands for.
func NewInspector(q *queue.Queue, rt Runtime) *Inspector { return &Inspector{q: q, rt: rt} }

// Runtime is the runtime the Inspector was made over.
func (in *Inspector) Runtime() Runtime { return in.rt }

// Tasks describes the registered tasks, by name.
func (in *Inspector) Tasks() []Task { return in.rt.Tasks() }

// Routes describes every known route (see KnownRoutes), by name, in a few
// pipelined round trips whatever the depth of the queues: a route without
// a job — paused, given limits or shards, routed to by a registered task,
// taken by a live worker — is one with zeros. A sharded route is one entry,
// its shards' counts summed.
func (in *Inspector) Routes(ctx context.Context) ([]bananastype.Route, error) {
	routes, takers, err := in.knownRoutes(ctx)
	if err != nil {
		return nil, err
	}
	depths, err := in.q.Ops.Depths(ctx, routes)
	if err != nil {
		return nil, err
	}
	depths = queue.MergeShards(depths)
	now := in.q.Now()
	out := make([]bananastype.Route, len(depths))
	for i, d := range depths {
		out[i] = bananastype.Route{
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
	if routes, err = in.q.Routes(ctx); err != nil {
		return nil, nil, err
	}
	if takers, err = in.rt.RouteTakers(ctx); err != nil {
		return nil, nil, err
	}
	sharded, err := in.q.AllShards(ctx)
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
	for _, t := range in.rt.Tasks() {
		add(t.Route)
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
func (in *Inspector) Job(ctx context.Context, id string) (*bananastype.Job, error) {
	info, err := in.rt.Job(ctx, id)
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
	if t, ok := in.rt.Task(info.Name); ok && t.ArgsJSON != nil {
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
func (in *Inspector) JSON(info *bananastype.Job) (args, result json.RawMessage) {
	args, result = json.RawMessage("null"), json.RawMessage("null")
	h, ok := in.rt.Task(info.Name)
	if !ok || h.ArgsJSON == nil {
		if info.Args != nil { // a task declared in the program but not registered here
			args = info.Args
		}
		return
	}
	switch {
	case info.Args != nil: // Client.Job decoded them already, with the same generated code
		args = info.Args
	case len(info.ArgsMsgpack) > 0:
		if b, err := h.ArgsJSON(info.ArgsMsgpack); err == nil {
			args = b
		}
	}
	if len(info.Result) > 0 {
		if b, err := h.ResultJSON(info.Result); err == nil {
			result = b
		}
	}
	return
}

// Replay moves dead job id back to its ready list with its attempts reset.
// A job that exists but is not dead-lettered is an error matching
// ErrWrongState that names its state.
func (in *Inspector) Replay(ctx context.Context, id string) error {
	// A workflow's step goes back under its keeper's watch first, so that
	// the workflow hears of its end even should its worker die; once
	// replayed, the step and the steps its failure canceled wait again.
	var step *queue.JobState
	if st, err := in.q.Jobs.Lookup(ctx, id); err == nil && st.Envelope.Workflow != "" {
		step = st
		if err := redisstore.New(in.q).Watch(ctx, st.Envelope.Workflow, in.q.Now().Add(in.rt.WorkflowGrace())); err != nil {
			return err
		}
	}
	err := in.q.Ops.Replay(ctx, id)
	if err == nil && step != nil {
		return in.rt.StepReplayed(ctx, step.Envelope.Workflow, step.Envelope.Step, id)
	}
	if errors.Is(err, queue.ErrNotFound) {
		if info, jerr := in.rt.Job(ctx, id); jerr == nil && info.Status != queue.StatusFailed {
			return wrongState("replay", id, info.Status)
		}
		return fmt.Errorf("%w: %s", ErrJobNotFound, id)
	}
	if errors.Is(err, queue.ErrKeyHeld) { // a conflict (409), naming the holder
		return fmt.Errorf("%w: %w", ErrDuplicate, err)
	}
	return err
}

// Workers lists the live workers, from their heartbeats.
func (in *Inspector) Workers(ctx context.Context) ([]Worker, error) { return in.rt.Workers(ctx) }

// Cron reads the state of every registered cron entry: each a schedule of
// Source code, described as Schedules describes it.
func (in *Inspector) Cron(ctx context.Context) ([]bananastype.Schedule, error) {
	out, err := in.rt.Cron(ctx)
	if err != nil {
		return nil, err
	}
	return out, in.describeSchedules(ctx, out)
}

// routesOr is route alone (with its shards) when it is set, else every
// route and shard.
func (in *Inspector) routesOr(ctx context.Context, route string) ([]string, error) {
	if route != "" {
		if err := queue.CheckRoute(route); err != nil {
			return nil, badQuery("route", "route: %w", err)
		}
		return in.shardsOf(ctx, route)
	}
	return in.q.Routes(ctx)
}

// badQuery is an error matching ErrBadQuery about the parameter field.
func badQuery(field, format string, args ...any) error { return BadQuery(field, format, args...) }

// shardsOf returns every shard of route that holds or may hold jobs, the
// route itself first: its current shards and the others still listed.
func (in *Inspector) shardsOf(ctx context.Context, route string) ([]string, error) {
	n, err := in.q.Shards(ctx, route)
	if err != nil {
		return nil, err
	}
	listed, err := in.q.Routes(ctx)
	if err != nil {
		return nil, err
	}
	return queue.RouteShards(route, n, listed), nil
}
