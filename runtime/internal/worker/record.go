package worker

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/engine"
	"github.com/bananas-go/bananas/runtime/internal/routeshards"
)

// record is the worker of cfg as its heartbeat describes it, runs in flight
// aside, started at now.
func record(cfg *Config, now time.Time) admin.Worker {
	host, _ := os.Hostname()
	var cronRoutes []string
	for _, e := range cfg.Cron {
		if !slices.Contains(cronRoutes, e.Route) {
			cronRoutes = append(cronRoutes, e.Route)
		}
	}
	st := admin.Worker{
		ID: cfg.ID, Host: host, PID: os.Getpid(), Mode: cfg.Mode, Routes: cfg.Routes,
		Priorities: cfg.Priorities, JobTypes: cfg.JobTypes, CronRoutes: cronRoutes, Concurrency: cfg.Concurrency,
		Started: now.UTC(), // UTC: the --json convention (views.go)
	}
	for _, t := range cfg.Tasks {
		if len(cfg.JobTypes) == 0 || slices.Contains(cfg.JobTypes, t.Name) {
			st.Tasks = append(st.Tasks, t.Name)
		}
	}
	slices.Sort(st.Tasks)
	if cfg.SchedulerOnly { // runs no jobs; promotes every route there is
		st.Concurrency, st.Routes, st.Priorities, st.Mode, st.Tasks = 0, []string{}, []queue.Priority{}, cfg.SchedulerMode, nil
	}
	return st
}

// heartbeat is the engine's Config.State: st with the runs in flight and
// the time of the beat.
func heartbeat(q *queue.Queue, st admin.Worker) func(inFlight int) []byte {
	return func(inFlight int) []byte {
		st.InFlight, st.LastBeat = inFlight, q.Now().UTC()
		b, _ := json.Marshal(st)
		return b
	}
}

// Live lists the live workers of q's namespace (those whose heartbeat is
// younger than engine.HeartbeatTTL), by id; a record that does not read is
// left out.
func Live(ctx context.Context, q *queue.Queue) ([]admin.Worker, error) {
	beats, err := q.Beats(ctx, q.Now(), engine.HeartbeatTTL)
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

// Takers counts, per route, the workers of ws that take its jobs: a route
// is served by a worker that fetches from it, which a worker that runs no
// jobs (a scheduler, Concurrency 0) does not.
func Takers(ws []admin.Worker) map[string]int {
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

// served is the engine's Config.ServedRoutes: the routes live workers
// (from their heartbeats) and self, whose heartbeat may not be written
// yet, fetch from (Takers) or fire cron entries to, with their shards.
func served(ctx context.Context, q *queue.Queue, self admin.Worker) (map[string]bool, error) {
	ws, err := Live(ctx, q)
	if err != nil {
		return nil, err
	}
	ws = append(ws, self)
	out := map[string]bool{}
	for r := range Takers(ws) {
		out[r] = true
	}
	for _, st := range ws {
		for _, r := range st.CronRoutes {
			out[r] = true
		}
	}
	return out, routeshards.Served(ctx, q, out)
}
