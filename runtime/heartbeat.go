package runtime

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// heartbeatEvery is how often a worker announces itself; a worker silent for
// heartbeatTTL is no longer listed.
const (
	heartbeatEvery = 5 * time.Second
	heartbeatTTL   = 30 * time.Second
)

// WorkerState is one live worker, as its heartbeat describes it.
type WorkerState struct {
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	Mode        string    `json:"mode,omitempty"`
	Routes      []string  `json:"routes"`
	Priorities  []string  `json:"priorities"`
	JobTypes    []string  `json:"job_types,omitempty"`
	Concurrency int       `json:"concurrency"`
	InFlight    int       `json:"in_flight"`
	Started     time.Time `json:"started"`
	LastBeat    time.Time `json:"last_beat"`
}

func workersKey(ns string) string    { return ns + ":workers" }
func workerKey(ns, id string) string { return ns + ":worker:" + id }

func (w *Worker) inFlight() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.running)
}

// heartbeatLoop records the worker's state every heartbeatEvery (the
// `workers` command lists them), and removes it when the worker stops.
func (w *Worker) heartbeatLoop(ctx context.Context) {
	started := w.c.q.Now().UTC() // UTC: the --json convention (cli_json.go)
	host, _ := os.Hostname()
	ns := w.c.q.Namespace()
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	for {
		now := w.c.q.Now().UTC()
		st := WorkerState{
			ID: w.id, Host: host, PID: os.Getpid(), Mode: w.mode, Routes: w.opts.Routes,
			Priorities: w.priorities(), JobTypes: w.opts.JobTypes, Concurrency: w.opts.Concurrency,
			InFlight: w.inFlight(), Started: started, LastBeat: now,
		}
		if w.opts.SchedulerOnly { // runs no jobs; promotes every route there is
			st.Concurrency, st.Routes, st.Priorities, st.Mode = 0, []string{}, []string{}, ModeSchedulerOnly
		}
		b, _ := json.Marshal(st)
		pipe := w.c.rdb.Pipeline()
		pipe.Set(ctx, workerKey(ns, w.id), b, heartbeatTTL)
		pipe.ZAdd(ctx, workersKey(ns), redis.Z{Score: float64(now.UnixMilli()), Member: w.id})
		pipe.ZRemRangeByScore(ctx, workersKey(ns), "-inf", strconv.FormatInt(now.Add(-heartbeatTTL).UnixMilli(), 10))
		if _, err := pipe.Exec(ctx); err != nil && ctx.Err() == nil {
			w.opts.Logger.Warn("bananas: heartbeat", "err", err)
		}
		select {
		case <-ctx.Done():
			cleanup, cancel := context.WithTimeout(context.Background(), settleTimeout)
			w.c.rdb.ZRem(cleanup, workersKey(ns), w.id)
			w.c.rdb.Del(cleanup, workerKey(ns, w.id))
			cancel()
			return
		case <-t.C:
		}
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
	ns := c.q.Namespace()
	cutoff := c.q.Now().Add(-heartbeatTTL).UnixMilli()
	ids, err := c.rdb.ZRangeByScore(ctx, workersKey(ns), &redis.ZRangeBy{Min: strconv.FormatInt(cutoff, 10), Max: "+inf"}).Result()
	if err != nil {
		return nil, err
	}
	out := make([]WorkerState, 0, len(ids))
	for _, id := range ids {
		b, err := c.rdb.Get(ctx, workerKey(ns, id)).Bytes()
		if err != nil {
			continue // expired between the two reads
		}
		var st WorkerState
		if json.Unmarshal(b, &st) == nil {
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
