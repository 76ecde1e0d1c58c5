package admin

import (
	"encoding/json"
	"time"

	"github.com/bananas-go/bananas/bananastype"
)

// Limits are a route's own limits — every job of the route together, on
// top of each task's own — and what its flow control holds now. A zero
// MaxRunning, an empty Rate, a zero Burst are none (Burst: the rate's N).
type Limits struct {
	Route      string
	MaxRunning int
	Rate       string // "N/s", "N/m" or "N/h"
	Burst      int
}

func (l Limits) MarshalJSON() ([]byte, error) { return json.Marshal(l.wire()) }

// WireType is the value whose JSON shape the limits write.
func (Limits) WireType() any { return limitsWire{} }

// limitsWire is {"route", "max_running": N|null, "rate": "N/s"|null,
// "burst": M|null}: null where there is no limit, the shape a PUT takes.
type limitsWire struct {
	Route      string  `json:"route"`
	MaxRunning *int    `json:"max_running"`
	Rate       *string `json:"rate"`
	Burst      *int    `json:"burst"`
}

func (l Limits) wire() limitsWire {
	w := limitsWire{Route: l.Route}
	if l.MaxRunning > 0 {
		w.MaxRunning = &l.MaxRunning
	}
	if l.Rate != "" {
		w.Rate = &l.Rate
		if l.Burst > 0 {
			w.Burst = &l.Burst
		}
	}
	return w
}

// LimitsPatch changes a route's own limits, each field as the operator
// typed it: nil leaves the limit as it is, "" removes it, anything else is
// its new value (max_running and burst a whole number, rate "N/s", "N/m" or
// "N/h"), checked by the admin layer, which names a bad field.
type LimitsPatch struct {
	MaxRunning, Rate, Burst *string
}

// Flows is what a route's flow control holds now: the jobs of keyed tasks
// (see docs/FLOW-CONTROL.md), grouped in flows by task and key.
type Flows struct {
	Route     string
	Limits    Limits
	Tasks     map[string]TaskLimits // each task's own limits on the route
	Running   int                   // keyed jobs running under a cap: the slots held
	Waiting   int                   // keyed jobs waiting in their flows
	Held      int                   // flows held back by a limit now
	Throttled int64                 // times a flow was held back
	Busiest   []Flow                // the keys with the most jobs running, then waiting
}

// TaskLimits are one task's limits on a route, per key when its jobs are keyed.
type TaskLimits struct {
	MaxRunning int
	Rate       string
	Burst      int
}

// Flow is one key of one task.
type Flow struct {
	Task, Key string
	Running   int
	Waiting   int
	Parked    bool      // at its cap: waits for one of its running jobs to end
	HeldUntil time.Time // zero unless out of rate: when its next start is allowed
	// ByRoute is why the route's own limits hold the key back although its
	// task's let it start: "cap" (the route's max running is reached) or
	// "rate" (the route's rate allows no start now); "" when they do not.
	ByRoute string
}

func (f Flows) MarshalJSON() ([]byte, error) { return json.Marshal(f.wire()) }

// WireType is the value whose JSON shape the flows write.
func (Flows) WireType() any { return flowsWire{} }

type flowsWire struct {
	Route     string                    `json:"route"`
	Limits    limitsWire                `json:"limits"`
	Tasks     map[string]taskLimitsWire `json:"tasks"`
	Running   int                       `json:"running"`
	Waiting   int                       `json:"waiting"`
	Held      int                       `json:"held"`
	Throttled int64                     `json:"throttled"`
	Busiest   []flowWire                `json:"busiest"`
}

type taskLimitsWire struct {
	MaxRunning *int    `json:"max_running"`
	Rate       *string `json:"rate"`
	Burst      *int    `json:"burst"`
}

type flowWire struct {
	Task      string           `json:"task"`
	Key       string           `json:"key"`
	Running   int              `json:"running"`
	Waiting   int              `json:"waiting"`
	Parked    bool             `json:"parked"`
	HeldUntil bananastype.Time `json:"held_until"`
	ByRoute   *string          `json:"held_by_route"` // "cap", "rate" or null
}

func (f Flows) wire() flowsWire {
	w := flowsWire{Route: f.Route, Limits: f.Limits.wire(), Tasks: map[string]taskLimitsWire{}, Running: f.Running,
		Waiting: f.Waiting, Held: f.Held, Throttled: f.Throttled, Busiest: []flowWire{}}
	for name, t := range f.Tasks {
		lw := Limits{MaxRunning: t.MaxRunning, Rate: t.Rate, Burst: t.Burst}.wire()
		w.Tasks[name] = taskLimitsWire{MaxRunning: lw.MaxRunning, Rate: lw.Rate, Burst: lw.Burst}
	}
	for _, b := range f.Busiest {
		w.Busiest = append(w.Busiest, flowWire{Task: b.Task, Key: b.Key, Running: b.Running, Waiting: b.Waiting,
			Parked: b.Parked, HeldUntil: bananastype.Time(b.HeldUntil), ByRoute: nullString(b.ByRoute)})
	}
	return w
}

// nullString writes "" as null.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
