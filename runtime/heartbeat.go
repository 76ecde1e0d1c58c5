package runtime

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"time"

	"github.com/bananas-go/bananas/runtime/internal/engine"
)

// WorkerState is one live worker, as its heartbeat describes it.
type WorkerState struct {
	ID          string     `json:"id"`
	Host        string     `json:"host"`
	PID         int        `json:"pid"`
	Mode        string     `json:"mode,omitempty"`
	Routes      []string   `json:"routes"`
	Priorities  []Priority `json:"priorities"`
	JobTypes    []string   `json:"job_types,omitempty"`
	Concurrency int        `json:"concurrency"`
	InFlight    int        `json:"in_flight"`
	Started     time.Time  `json:"started"`
	LastBeat    time.Time  `json:"last_beat"`
}

// heartbeatState is the engine's Config.State: w's heartbeat record, given
// its runs in flight.
func (w *Worker) heartbeatState() func(inFlight int) []byte {
	started := w.c.q.Now().UTC() // UTC: the --json convention (views.go)
	host, _ := os.Hostname()
	return func(inFlight int) []byte {
		st := WorkerState{
			ID: w.id, Host: host, PID: os.Getpid(), Mode: w.mode, Routes: w.opts.Routes,
			Priorities: w.opts.Priorities, JobTypes: w.opts.JobTypes, Concurrency: w.opts.Concurrency,
			InFlight: inFlight, Started: started, LastBeat: w.c.q.Now().UTC(),
		}
		if w.opts.SchedulerOnly { // runs no jobs; promotes every route there is
			st.Concurrency, st.Routes, st.Priorities, st.Mode = 0, []string{}, []Priority{}, ModeSchedulerOnly
		}
		b, _ := json.Marshal(st)
		return b
	}
}

// routeTakers counts, per route, the live workers (from their heartbeats)
// that take its jobs.
func (c *Client) routeTakers(ctx context.Context) (map[string]int, error) {
	ws, err := c.Workers(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, w := range ws {
		if w.Concurrency > 0 {
			for _, r := range w.Routes {
				out[r]++
			}
		}
	}
	return out, nil
}

// Workers lists the live workers of the client's namespace, by id.
func (c *Client) Workers(ctx context.Context) ([]WorkerState, error) {
	beats, err := c.q.Beats(ctx, c.q.Now(), engine.HeartbeatTTL)
	if err != nil {
		return nil, err
	}
	out := make([]WorkerState, 0, len(beats))
	for _, b := range beats {
		var st WorkerState
		if json.Unmarshal(b, &st) == nil {
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
