package worker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/internal/routeshards"
	"github.com/bananas-go/bananas/scheduler"
)

// subscribe listens, before the first fetch, on the channels of every
// route (subscribeRoute), so that no push after that fetch goes unnoticed;
// the shards a route gains later are listened to as they come (routeshards).
func (r *run) subscribe(ctx context.Context) ([]*results.Subscription, error) {
	var subs []*results.Subscription
	for _, route := range r.cfg.Routes {
		s, err := r.subscribeRoute(ctx, route)
		if err != nil {
			for _, s := range subs {
				s.Close()
			}
			return nil, err
		}
		subs = append(subs, s...)
	}
	return subs, nil
}

// subscribeRoute listens on route's wake channel (a job made ready while
// the worker waits: it fetches), its cancel channel (running jobs asked to
// cancel stop at once; the renewals find those this misses, see
// CancelRequests) and, for a worker that keeps routes, its keeper channel
// (the keeper gave the route up: try to take it over at once).
func (r *run) subscribeRoute(ctx context.Context, route string) ([]*results.Subscription, error) {
	k := r.cfg.Queue.Keys(route)
	listen := []struct {
		channel string
		f       func([]byte)
	}{
		{r.engine.WakeChannel(route), func([]byte) { r.engine.Wake(route) }},
		{k.CancelChannel(), func(id []byte) { r.engine.Cancel(string(id)) }},
	}
	if r.keeper != nil {
		listen = append(listen, struct {
			channel string
			f       func([]byte)
		}{k.KeeperChannel(), func([]byte) { r.keeper.Kick() }})
	}
	var subs []*results.Subscription
	for _, l := range listen {
		sub, err := r.cfg.Listener.SubscribeFunc(ctx, l.channel, l.f)
		if err != nil {
			for _, s := range subs {
				s.Close()
			}
			return nil, fmt.Errorf("bananas: worker: subscribe: %w", err)
		}
		subs = append(subs, sub)
	}
	return subs, nil
}

// wakeOnReconnect wakes the fetcher each time the listener reconnects
// until ctx ends: a wake-up published while it was away is lost, and the
// fetcher would otherwise wait for its safety poll.
func (r *run) wakeOnReconnect(ctx context.Context) {
	for {
		select {
		case <-r.cfg.Listener.Reconnected():
			r.engine.Wake("")
		case <-ctx.Done():
			return
		}
	}
}

// newShards is the watcher of the shards of the worker's routes
// (routeshards): it listens on each shard as subscribeRoute does, and has a
// shard it gains given its limits, fetched from and kept.
func (r *run) newShards() *routeshards.Watcher {
	cfg := r.cfg
	return routeshards.New(routeshards.Config{
		Queue: cfg.Queue, Listener: cfg.Listener, Routes: cfg.Routes, Logger: cfg.Logger,
		Subscribe: r.subscribeRoute,
		Added: func(ctx context.Context, added []string) {
			storeShardLimits(ctx, cfg, added)
			r.engine.Wake("")
			if r.keeper != nil {
				r.keeper.Kick() // the new shards want a keeper now, not at the next round
			}
		},
	})
}

// newKeeper returns the keeper of the worker's routes: one worker per route
// promotes its due jobs, reaps its expired leases and purges its old dead
// jobs, the others standing by (see scheduler.Keeper). A scheduler
// (SchedulerOnly) has none: it promotes every route, always.
func (r *run) newKeeper() *scheduler.Keeper {
	if r.cfg.SchedulerOnly {
		return nil
	}
	return &scheduler.Keeper{
		Queue:  r.cfg.Queue,
		Routes: r.shards.All, // every shard of the worker's routes
		// A keeper that dies is replaced within about a lease: no later
		// than its jobs could be reaped anyway.
		TTL:    min(r.cfg.Lease, scheduler.DefaultKeeperTTL),
		Outage: scheduler.NewOutageLog(r.cfg.Logger, "keeper (which worker promotes and reaps each route)"),
	}
}

// kept are the routes whose time-driven work this worker does.
func (r *run) kept() []string {
	if r.keeper == nil {
		return r.shards.All()
	}
	return r.keeper.Held()
}

// scheduleListener subscribes the promoter to the schedule channel while
// the worker keeps a route: a job scheduled for later is announced there to
// every listener, and a worker that promotes nothing need not hear of it.
type scheduleListener struct {
	q        *queue.Queue
	listener *results.Listener
	log      *slog.Logger
	wake     chan time.Time

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
	s, err := l.listener.SubscribeFunc(ctx, queue.ScheduleChannel(l.q.Namespace()), func(b []byte) {
		scheduler.OfferWake(l.wake, parseMillis(b))
	})
	if err != nil {
		l.log.Warn("bananas: subscribe to the schedule channel; due jobs are promoted at the promoter's safety poll", "err", err)
		return err
	}
	l.sub = s
	// Announcements made before the subscription are lost: look now.
	scheduler.OfferWake(l.wake, l.q.Now())
	return nil
}

// parseMillis reads the Unix milliseconds an announcement carries,
// up to its first byte that is not a digit.
func parseMillis(b []byte) time.Time {
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int64(c-'0')
	}
	return time.UnixMilli(n)
}
