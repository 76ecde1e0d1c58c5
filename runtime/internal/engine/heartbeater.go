package engine

import (
	"context"
	"time"

	"github.com/bananas-go/bananas/queue"

	"github.com/bananas-go/bananas/scheduler"
)

// HeartbeatEvery is how often a worker announces itself; a worker silent
// for HeartbeatTTL is no longer listed.
const (
	HeartbeatEvery = 5 * time.Second
	HeartbeatTTL   = 30 * time.Second
)

// heartbeater records the worker's state (Config.State) every
// HeartbeatEvery (every third while the worker is idle), for the
// `workers` command, the API and the dashboard, and removes it when the
// worker stops.
type heartbeater struct {
	cfg  *Config
	runs *runs
}

// Run beats until ctx ends.
func (h *heartbeater) Run(ctx context.Context) {
	q := h.cfg.Queue
	outage := scheduler.NewOutageLog(h.cfg.Logger, "heartbeat")
	// Beats fall on the process's beat (queue.UntilBeat), with its other
	// periodic calls: one wake-up of Redis for all of them.
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var last time.Time
	lastInFlight := -1
	for first := true; ; first = false {
		if !first {
			t.Reset(queue.UntilBeat(HeartbeatEvery))
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			if ctx.Err() != nil {
				break
			}
		}
		inFlight := h.runs.count()
		// An idle worker's state does not change: it beats every third
		// tick, still twice within HeartbeatTTL. Idle workers are what a
		// deployment has most of, and each beat is a round trip to Redis.
		if inFlight == 0 && lastInFlight == 0 && time.Since(last) < 3*HeartbeatEvery-HeartbeatEvery/2 {
			continue
		}
		last, lastInFlight = time.Now(), inFlight
		err := q.Beat(ctx, h.cfg.ID, h.cfg.State(inFlight), q.Now(), HeartbeatTTL)
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
