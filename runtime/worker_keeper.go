package runtime

import (
	"context"
	"sync"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/scheduler"
)

// newKeeper returns the keeper of the worker's routes: one worker per route
// promotes its due jobs, reaps its expired leases and purges its old dead
// jobs, the others standing by (see scheduler.Keeper). A scheduler
// (SchedulerOnly) has none: it promotes every route, always.
func (w *Worker) newKeeper() *scheduler.Keeper {
	if w.opts.SchedulerOnly {
		return nil
	}
	return &scheduler.Keeper{
		Queue:  w.c.q,
		Routes: w.shards.All, // every shard of the worker's routes
		// A keeper that dies is replaced within about a lease: no later
		// than its jobs could be reaped anyway.
		TTL:    min(w.opts.Lease, scheduler.DefaultKeeperTTL),
		Outage: scheduler.NewOutageLog(w.opts.Logger, "keeper (which worker promotes and reaps each route)"),
	}
}

// keptRoutes are the routes whose time-driven work this worker does.
func (w *Worker) keptRoutes() []string {
	if w.keeper == nil {
		return w.shards.All()
	}
	return w.keeper.Held()
}

// scheduleListener subscribes the promoter to the schedule channel while
// the worker keeps a route: a job scheduled for later is announced there to
// every listener, and a worker that promotes nothing need not hear of it.
type scheduleListener struct {
	w    *Worker
	wake chan time.Time

	mu  sync.Mutex
	sub *results.Subscription
}

// set subscribes (on) or unsubscribes (off).
func (l *scheduleListener) set(on bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !on {
		if l.sub != nil {
			l.sub.Close()
			l.sub = nil
		}
		return nil
	}
	if l.sub != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := l.w.c.listener.SubscribeFunc(ctx, queue.ScheduleChannel(l.w.c.q.Namespace()), func(b []byte) {
		scheduler.OfferWake(l.wake, parseMillis(b))
	})
	if err != nil {
		l.w.opts.Logger.Warn("bananas: subscribe to the schedule channel; due jobs are promoted at the promoter's safety poll", "err", err)
		return err
	}
	l.sub = s
	// Announcements made before the subscription are lost: look now.
	scheduler.OfferWake(l.wake, l.w.c.q.Now())
	return nil
}
