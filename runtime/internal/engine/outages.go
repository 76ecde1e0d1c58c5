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

// skip reports whether route waits out an outage at now.
func (o *outages) skip(route string, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	d := o.down[route]
	return d != nil && now.Before(d.until)
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
