package runtime

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/engine"
	"github.com/bananas-go/bananas/runtime/internal/routeshards"
)

// heartbeatState is the engine's Config.State: w's heartbeat record, given
// its runs in flight.
func (w *Worker) heartbeatState() func(inFlight int) []byte {
	st := w.state()
	return func(inFlight int) []byte {
		st.InFlight, st.LastBeat = inFlight, w.c.q.Now().UTC()
		b, _ := json.Marshal(st)
		return b
	}
}

// state is w as its heartbeat describes it, runs in flight aside.
func (w *Worker) state() admin.Worker {
	host, _ := os.Hostname()
	var cronRoutes []string
	for _, e := range w.cron {
		if !slices.Contains(cronRoutes, e.Route) {
			cronRoutes = append(cronRoutes, e.Route)
		}
	}
	st := admin.Worker{
		ID: w.id, Host: host, PID: os.Getpid(), Mode: w.mode, Routes: w.opts.Routes,
		Priorities: w.opts.Priorities, JobTypes: w.opts.JobTypes, CronRoutes: cronRoutes, Concurrency: w.opts.Concurrency,
		Started: w.c.q.Now().UTC(), // UTC: the --json convention (views.go)
	}
	if w.opts.SchedulerOnly { // runs no jobs; promotes every route there is
		st.Concurrency, st.Routes, st.Priorities, st.Mode = 0, []string{}, []Priority{}, ModeSchedulerOnly
	}
	return st
}

// servedRoutes is the engine's Config.ServedRoutes: the routes live workers
// (from their heartbeats) and this one, whose heartbeat may not be written
// yet, fetch from (routeTakersOf) or fire cron entries to.
func (w *Worker) servedRoutes(ctx context.Context) (map[string]bool, error) {
	ws, err := w.c.Workers(ctx)
	if err != nil {
		return nil, err
	}
	ws = append(ws, w.state())
	out := map[string]bool{}
	for r := range routeTakersOf(ws) {
		out[r] = true
	}
	for _, st := range ws {
		for _, r := range st.CronRoutes {
			out[r] = true
		}
	}
	return out, routeshards.Served(ctx, w.c.q, out)
}

// routeTakers counts, per route, the live workers (from their heartbeats)
// that take its jobs.
func (c *Client) routeTakers(ctx context.Context) (map[string]int, error) {
	ws, err := c.Workers(ctx)
	if err != nil {
		return nil, err
	}
	return routeTakersOf(ws), nil
}

// routeTakersOf counts, per route, the workers of ws that take its jobs: a
// route is served by a worker that fetches from it, which a worker that
// runs no jobs (a scheduler, Concurrency 0) does not.
func routeTakersOf(ws []admin.Worker) map[string]int {
	out := map[string]int{}
	for _, w := range ws {
		if w.Concurrency > 0 {
			for _, r := range w.Routes {
				out[r]++
			}
		}
	}
	return out
}

// Workers lists the live workers of the client's namespace, by id.
func (c *Client) Workers(ctx context.Context) ([]admin.Worker, error) {
	beats, err := c.q.Beats(ctx, c.q.Now(), engine.HeartbeatTTL)
	if err != nil {
		return nil, err
	}
	out := make([]admin.Worker, 0, len(beats))
	for _, b := range beats {
		var st admin.Worker
		if json.Unmarshal(b, &st) == nil {
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// defaultUnservedAfter is how long an Await or Call waits before it looks
// whether any live worker takes its job's route: long enough for a job that
// is merely queued behind others to start, short enough that a job nobody
// will ever run is pointed out while someone is looking.
const defaultUnservedAfter = 10 * time.Second

// warnIfUnserved arms a check, after unservedAfter, that a live worker takes
// the route of job id, and logs a warning (slog.Default) when none does: an
// Await on such a job would otherwise wait without a word. It returns the
// function that disarms it.
func (c *Client) warnIfUnserved(id string) (stop func()) {
	route, ok := queue.RouteOf(id)
	if !ok || c.unservedAfter <= 0 {
		return func() {}
	}
	t := time.AfterFunc(c.unservedAfter, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if takers, err := c.routeTakers(ctx); err == nil && takers[queue.ShardBase(route)] == 0 {
			slog.Default().Warn("bananas: waiting for a job of a route that no live worker takes; it runs when a worker of the route starts",
				"job", id, "route", route, "waited", c.unservedAfter)
		}
	})
	return func() { t.Stop() }
}
