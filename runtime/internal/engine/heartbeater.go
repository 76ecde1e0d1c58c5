package engine

import (
	"context"
	"time"

	"github.com/bananas-go/bananas/scheduler"
)

// HeartbeatEvery is how often a worker announces itself; a worker silent
// for HeartbeatTTL is no longer listed.
const (
	HeartbeatEvery = 5 * time.Second
	HeartbeatTTL   = 30 * time.Second
)

// heartbeater records the worker's state (Config.State) every
// HeartbeatEvery, for the `workers` command, the API and the dashboard, and
// removes it when the worker stops.
type heartbeater struct {
	cfg  *Config
	runs *runs
}

// Run beats until ctx ends.
func (h *heartbeater) Run(ctx context.Context) {
	q := h.cfg.Queue
	outage := scheduler.NewOutageLog(h.cfg.Logger, "heartbeat")
	t := time.NewTicker(HeartbeatEvery)
	defer t.Stop()
	for ok := true; ok; ok = next(ctx, t) {
		err := q.Beat(ctx, h.cfg.ID, h.cfg.State(h.runs.count()), q.Now(), HeartbeatTTL)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			outage.Failed("", err)
		default:
			outage.OK("")
		}
	}
	end, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	_ = q.EndBeats(end, h.cfg.ID)
}
