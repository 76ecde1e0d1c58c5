package bananastype

import (
	"encoding/json"
	"time"
)

// Route is one route's depths and state: `queues`, GET /api/v1/queues, the
// dashboard's overview and what bananastest drains.
type Route struct {
	Route             string
	High, Normal, Low int64 // pending, by priority
	Scheduled         int64
	Active            int64
	Dead              int64
	Paused            bool
	OldestPending     time.Time // created time of the oldest pending job; zero when none
	OldestPendingAge  time.Duration
	Workers           int // live workers (from heartbeats) that take the route
	// HistoryBacklog is how many ended jobs wait in Redis to be written to
	// the task history: 0 when none is kept, or when it keeps up.
	HistoryBacklog int64
	// Flow control (docs/FLOW-CONTROL.md): keys held back by their rate
	// now, times a key was held back by its cap or rate, keyed jobs running.
	HeldKeys, Throttled, LimitRunning int64
}

// Pending is the route's ready jobs of every priority.
func (r Route) Pending() int64 { return r.High + r.Normal + r.Low }

func (r Route) MarshalJSON() ([]byte, error) { return json.Marshal(r.wire()) }

// WireType is the value whose JSON shape the route writes.
func (Route) WireType() any { return routeWire{} }

type routeWire struct {
	Route            string `json:"route"`
	High             int64  `json:"high"`
	Normal           int64  `json:"normal"`
	Low              int64  `json:"low"`
	Pending          int64  `json:"pending"`
	Scheduled        int64  `json:"scheduled"`
	Active           int64  `json:"active"`
	Dead             int64  `json:"dead"`
	Paused           bool   `json:"paused"`
	OldestPendingAt  Time   `json:"oldest_pending_at"`
	OldestPendingAge int64  `json:"oldest_pending_age_ms"`
	Workers          int    `json:"workers"`
	HistoryBacklog   int64  `json:"history_backlog,omitempty"` // ended jobs waiting for the task history
	HeldKeys         int64  `json:"held_keys,omitempty"`       // keys held back by their rate now
	Throttled        int64  `json:"throttled,omitempty"`       // times a key was held back by its cap or rate
	LimitRunning     int64  `json:"limit_running,omitempty"`   // keyed jobs running
}

func (r Route) wire() routeWire {
	w := routeWire{Route: r.Route, High: r.High, Normal: r.Normal, Low: r.Low, Pending: r.Pending(), Scheduled: r.Scheduled,
		Active: r.Active, Dead: r.Dead, Paused: r.Paused, OldestPendingAt: Time(r.OldestPending), Workers: r.Workers, HistoryBacklog: r.HistoryBacklog,
		HeldKeys: r.HeldKeys, Throttled: r.Throttled, LimitRunning: r.LimitRunning}
	if !r.OldestPending.IsZero() {
		w.OldestPendingAge = r.OldestPendingAge.Milliseconds()
	}
	return w
}

// UnmarshalJSON reads the route as MarshalJSON writes it.
func (r *Route) UnmarshalJSON(data []byte) error {
	var w routeWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = Route{Route: w.Route, High: w.High, Normal: w.Normal, Low: w.Low, Scheduled: w.Scheduled, Active: w.Active, Dead: w.Dead,
		Paused: w.Paused, OldestPending: time.Time(w.OldestPendingAt), OldestPendingAge: time.Duration(w.OldestPendingAge) * time.Millisecond,
		Workers: w.Workers, HistoryBacklog: w.HistoryBacklog, HeldKeys: w.HeldKeys, Throttled: w.Throttled, LimitRunning: w.LimitRunning}
	return nil
}
