package engine

import (
	"log/slog"
	"sync"
	"time"
)

// outages keeps the routes whose last fetch failed out of the fetches until
// their retry time, doubling it while they keep failing: a route whose
// Redis node is down, or whose keys are garbage, must not stop the worker's
// other routes. Each outage is logged once when it starts and once when it
// ends. The fetch goroutines share it.
type outages struct {
	log  *slog.Logger
	mu   sync.Mutex
	down map[string]*outage
}

type outage struct {
	until time.Time     // no fetch from the route before
	delay time.Duration // the next wait, if the retry fails too
}

func newOutages(log *slog.Logger) *outages { return &outages{log: log, down: map[string]*outage{}} }

// routeState is what a fetch may do with a route at a given time.
type routeState int

const (
	routeUp  routeState = iota // fetch it
	routeDue                   // out, and its retry time came: fetch it after the routes that are up (claim)
	routeOut                   // out until its retry time, or being retried by another fetch
)

// state says what a fetch at now may do with route.
func (o *outages) state(route string, now time.Time) routeState {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch d := o.down[route]; {
	case d == nil:
		return routeUp
	case now.Before(d.until):
		return routeOut
	default:
		return routeDue
	}
}

// claim takes the retry of a route that is due for one, so that only one
// fetch spends its time on a node that may still be down (a dial to a
// silent host lasts until the call's timeout); the others go on with the
// routes that are up.
func (o *outages) claim(route string, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	d := o.down[route]
	if d == nil || now.Before(d.until) {
		return d == nil
	}
	d.until = now.Add(callTimeout)
	return true
}

// failed records that a fetch from route failed with err at now.
func (o *outages) failed(route string, err error, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d := o.down[route]
	if d == nil {
		d = &outage{delay: minErrDelay}
		o.down[route] = d
		o.log.Warn("bananas: cannot fetch from route; its jobs wait, the worker's other routes go on, and it is retried with a growing delay",
			"route", route, "err", err)
	}
	d.until = now.Add(d.delay)
	d.delay = min(2*d.delay, maxErrDelay)
}

// ok records that a fetch from route succeeded.
func (o *outages) ok(route string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, was := o.down[route]; was {
		delete(o.down, route)
		o.log.Info("bananas: fetching from route again", "route", route)
	}
}

// next is the earliest time a route out of the fetches may be tried again
// (zero when none is out).
func (o *outages) next() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	var first time.Time
	for _, d := range o.down {
		if first.IsZero() || d.until.Before(first) {
			first = d.until
		}
	}
	return first
}
