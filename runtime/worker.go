package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/internal/engine"
	"github.com/bananas-go/bananas/runtime/internal/routeshards"
	"github.com/bananas-go/bananas/scheduler"
)

// Worker runs the handlers registered on it for jobs of its routes. It
// holds the handlers, the cron entries and the options, and wires the parts
// that run jobs (package engine), the promoter and the cron runner.
type Worker struct {
	c        *Client
	opts     WorkerOptions
	id       string
	mode     string // WORKER_MODE, when started by Main
	handlers map[string]*handler
	cron     []CronEntry
	regErrs  []error
	started  atomic.Bool

	middleware Middleware           // WorkerOptions.Middleware composed, nil when none
	engine     *engine.Engine       // set by Run
	shards     *routeshards.Watcher // set by Run
	// keeper holds the keeper locks of the routes this worker promotes,
	// reaps and purges (set by Run; nil for a scheduler, which promotes
	// every route).
	keeper *scheduler.Keeper
	// progress writes the progress its handlers report (set by Run).
	progress *engine.ProgressFlusher
}

// NewWorker returns a worker over client c. Register handlers (the generated
// Register functions, or Handle) before Run.
func NewWorker(c *Client, opts WorkerOptions) *Worker {
	host, _ := os.Hostname()
	return &Worker{
		c: c, opts: opts, handlers: map[string]*handler{},
		id: fmt.Sprintf("%s-%d-%s", host, os.Getpid(), queue.NewID("w", time.Now())[20:26]),
	}
}

// ID returns the worker's id (host-pid-random).
func (w *Worker) ID() string { return w.id }

// Client returns the client the worker runs on: the one NewWorker was
// given, or for a program run by Main, the one Main connected. A function
// registered with Main reaches it here (to add an EnqueueHook, say).
func (w *Worker) Client() *Client { return w.c }

// Use adds middleware to the worker, inside WorkerOptions.Middleware and
// any added before, so that a function registered with Main, which builds
// the worker itself, can add a tracing or logging middleware. Call it
// before Run; a call once Run has started panics, as the middleware chain
// is fixed then.
func (w *Worker) Use(ms ...Middleware) {
	if w.started.Load() {
		panic("bananas: Worker.Use called after Run: add middleware before the worker runs")
	}
	for i, m := range ms {
		if m == nil { // refused by Run with the other registration errors
			w.regErrs = append(w.regErrs, fmt.Errorf("Worker.Use: middleware %d of the call is nil", i))
			return
		}
	}
	w.opts.Middleware = append(slices.Clip(w.opts.Middleware), ms...)
}

func (w *Worker) register(h *handler) {
	if _, dup := w.handlers[h.name]; dup {
		w.regErrs = append(w.regErrs, fmt.Errorf("task %s is registered twice", h.name))
		return
	}
	w.handlers[h.name] = h
}

// Tasks returns the names of the registered tasks, sorted.
func (w *Worker) Tasks() []string {
	names := make([]string, 0, len(w.handlers))
	for n := range w.handlers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Run works jobs until ctx ends, then shuts down gracefully: it stops taking
// jobs, lets running ones finish for ShutdownTimeout, hands the rest back to
// their queues without counting an attempt, and returns.
func (w *Worker) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("bananas: Worker.Run called twice")
	}
	if err := w.withDefaults(); err != nil {
		return fmt.Errorf("bananas: worker: %w", err)
	}
	// The worker's hooks: the client's subscribers, then its own: its
	// middleware, the workflows its jobs are steps of, its OnJobEnd.
	ends := []endSubscriber{{h: workflowSink{w.c, w.opts.Logger.Warn}, inline: true}}
	if w.opts.OnJobEnd != nil {
		ends = append(ends, endSubscriber{h: JobEndFunc(w.opts.OnJobEnd)})
	}
	mw, subscribers := w.c.hooks.forWorker(w.opts.Middleware, ends...)
	w.middleware = mw
	if err := w.prepare(ctx); err != nil {
		return fmt.Errorf("bananas: worker: %w", err)
	}
	sinks, stopSinks := endSinks(subscribers, w.opts.Logger)
	defer stopSinks() // after the engine has stopped: every end told
	w.shards = w.newShards()
	w.keeper = w.newKeeper()
	w.progress = engine.NewProgressFlusher(engine.Redis(w.c.q), ProgressEvery, scheduler.NewOutageLog(w.opts.Logger, "progress (running jobs' progress to Redis)"))
	w.engine = engine.New(w.engineConfig(sinks))

	// The promoter and the cron runner outlive ctx until the engine has
	// shut down, as the engine's own loops do.
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	defer func() { stopBG(); wg.Wait() }()

	promoterWake := make(chan time.Time, 1)
	subs, err := w.subscribe(ctx)
	if err != nil {
		return err
	}
	schedule := &scheduleListener{w: w, wake: promoterWake}
	defer func() {
		for _, s := range subs {
			s.Close()
		}
		schedule.set(false)
	}()
	if w.keeper == nil { // a scheduler promotes for every route, always
		if err := schedule.set(true); err != nil {
			return fmt.Errorf("bananas: worker: subscribe: %w", err)
		}
	} else {
		w.keeper.OnChange = func(held []string) { _ = schedule.set(len(held) > 0) }
	}

	if err := w.shards.Refresh(ctx); err != nil {
		w.opts.Logger.Warn("bananas: cannot read the shards of the worker's routes; working the routes themselves until they read", "err", err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); w.shards.Run(bg) }()
	wg.Add(1)
	go func() { defer wg.Done(); w.wakeOnReconnect(bg) }()
	for _, loop := range w.schedulingLoops(promoterWake) {
		wg.Add(1)
		go func() { defer wg.Done(); loop(bg) }()
	}

	if w.keeper != nil {
		// The routes the worker keeps are known before it takes jobs.
		select {
		case <-w.keeper.Ready():
		case <-ctx.Done():
		}
	}
	w.opts.Logger.Info("bananas: worker started", "worker", w.id, "routes", strings.Join(w.opts.Routes, ","),
		"concurrency", w.opts.Concurrency, "tasks", strings.Join(w.Tasks(), ","), "clock_skew", w.c.q.Skew().Round(time.Millisecond))
	if !w.opts.SchedulerOnly {
		defer w.c.metrics.AddWorker(w.opts.Concurrency, w.engine.InFlight)()
		w.warnUntakenRoutes()
	}
	w.engine.Run(ctx)
	w.opts.Logger.Info("bananas: worker stopped", "worker", w.id)
	return nil
}

// prepare is what Run does before its loops start: the queue's warnings
// to the logger, the clock measured again (now that there is a logger to
// warn of a large skew), eviction warned of, and the tasks' limits stored
// (an error of the last fails Run: a worker that cannot store them would
// run jobs under the limits of an older version of the code).
func (w *Worker) prepare(ctx context.Context) error {
	w.c.q.OnWarning(w.opts.Logger.Warn)
	if err := w.c.q.SyncClock(ctx); err != nil {
		w.opts.Logger.Warn("bananas: read the Redis server's clock; using the last reading", "err", err)
	}
	w.warnEviction(ctx)
	return w.storeTaskLimits(ctx)
}

// schedulingLoops are the promoter (due delayed jobs and retries to their
// ready lists, woken on promoterWake) and, with cron entries, the cron
// runner.
func (w *Worker) schedulingLoops(promoterWake chan time.Time) []func(context.Context) {
	routes := w.c.q.Routes // a scheduler promotes for every route there is
	if w.keeper != nil {
		routes = func(context.Context) ([]string, error) { return w.keeper.Held(), nil }
	}
	p := &scheduler.Promoter{
		Queue:  w.c.q,
		Routes: routes,
		Wake:   promoterWake,
		Safety: min(w.opts.SafetyPoll, scheduler.DefaultPromoterSafety),
		Outage: scheduler.NewOutageLog(w.opts.Logger, "promoter (due delayed jobs and retries to their queues)"),
	}
	loops := []func(context.Context){func(ctx context.Context) { p.Run(ctx) }, w.workflowKeeper().Run, w.progress.Run}
	if w.keeper != nil {
		loops = append(loops, w.keeper.Run)
	}
	loops = append(loops, w.scheduleLoop()) // schedule.go
	if len(w.cron) > 0 {
		cr := w.cronRunner()
		loops = append(loops, func(ctx context.Context) { _ = cr.Run(ctx) })
	}
	if hw := w.historyWriter(); hw != nil {
		loops = append(loops, hw.Run)
	}
	return loops
}

// engineConfig is what the engine needs of w, its options defaulted, its
// ends told to sinks.
func (w *Worker) engineConfig(sinks []engine.JobEndSink) engine.Config {
	return engine.Config{
		Queue: engine.Redis(w.c.q), Metrics: engineMetrics{w.c.metrics}, Sinks: sinks, Logger: w.opts.Logger, ID: w.id,
		Routes: w.opts.Routes, RoutesNow: w.shards.Now, Priorities: w.opts.Priorities, JobTypes: w.opts.JobTypes, Tasks: w.Tasks(),
		FetchJobs: !w.opts.SchedulerOnly, Concurrency: w.opts.Concurrency,
		Lease: w.opts.Lease, ShutdownTimeout: w.opts.ShutdownTimeout, JobTimeout: w.opts.JobTimeout,
		ResultTTL: w.opts.ResultTTL, FailureTTL: w.opts.FailureTTL, SafetyPoll: w.opts.SafetyPoll,
		RetryDelay:   w.retryDelay,
		Exec:         w.exec,
		JobKey:       jobKey{},
		JobValue:     w.handlerValue,
		State:        w.heartbeatState(),
		ServedRoutes: w.servedRoutes,
		Kept:         w.keptRoutes,
	}
}

// warnEviction warns when Redis deletes keys under memory pressure: a
// deleted key is a lost job or result, so a queue's Redis wants
// maxmemory-policy noeviction (enqueues then fail with an error when memory
// is full, and nothing stored is lost). A policy that cannot be read
// (CONFIG refused, the embedded server) is not warned about.
func (w *Worker) warnEviction(ctx context.Context) {
	if p, err := w.c.q.EvictionPolicy(ctx); err == nil && p != "" && p != "noeviction" {
		w.opts.Logger.Warn("bananas: Redis evicts keys under memory pressure, and an evicted key is a lost job or result; set maxmemory-policy noeviction",
			"maxmemory_policy", p)
	}
}

// warnUntakenRoutes says, one line per route, which registered tasks enqueue
// by default to a route this worker does not take: their jobs wait for
// another worker, and with none they wait for ever.
func (w *Worker) warnUntakenRoutes() {
	byRoute := map[string][]string{}
	for name, h := range w.handlers {
		if h.info == nil {
			continue
		}
		if r := h.info().Route; !slices.Contains(w.opts.Routes, r) {
			byRoute[r] = append(byRoute[r], name)
		}
	}
	routes := make([]string, 0, len(byRoute))
	for r := range byRoute {
		routes = append(routes, r)
	}
	slices.Sort(routes)
	for _, r := range routes {
		slices.Sort(byRoute[r])
		w.opts.Logger.Warn("bananas: tasks registered for a route this worker does not take; their jobs wait for a worker that does",
			"route", r, "tasks", strings.Join(byRoute[r], ","), "worker_routes", strings.Join(w.opts.Routes, ","))
	}
}

// subscribe listens, before the first fetch, on the channels of every
// route (subscribeRoute), so that no push after that fetch goes unnoticed;
// the shards a route gains later are listened to as they come (routeshards).
func (w *Worker) subscribe(ctx context.Context) ([]*results.Subscription, error) {
	var subs []*results.Subscription
	for _, r := range w.opts.Routes {
		s, err := w.subscribeRoute(ctx, r)
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

// wakeOnReconnect wakes the fetcher each time the listener reconnects
// until ctx ends: a wake-up published while it was away is lost, and the
// fetcher would otherwise wait for its safety poll.
func (w *Worker) wakeOnReconnect(ctx context.Context) {
	for {
		select {
		case <-w.c.listener.Reconnected():
			w.engine.Wake("")
		case <-ctx.Done():
			return
		}
	}
}

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

// newShards is the watcher of the shards of w's routes (routeshards): it
// listens on each shard as subscribeRoute does, and has a shard it gains
// given its limits, fetched from and kept.
func (w *Worker) newShards() *routeshards.Watcher {
	return routeshards.New(routeshards.Config{
		Queue: w.c.q, Listener: w.c.listener, Routes: w.opts.Routes, Logger: w.opts.Logger,
		Subscribe: w.subscribeRoute,
		Added: func(ctx context.Context, added []string) {
			w.storeShardLimits(ctx, added)
			w.engine.Wake("")
			if w.keeper != nil {
				w.keeper.Kick() // the new shards want a keeper now, not at the next round
			}
		},
	})
}

// subscribeRoute listens on route's wake channel (a job made ready while
// the worker waits: it fetches), its cancel channel (running jobs asked to
// cancel stop at once; the renewals find those this misses, see
// CancelRequests) and, for a worker that keeps routes, its keeper channel
// (the keeper gave the route up: try to take it over at once).
func (w *Worker) subscribeRoute(ctx context.Context, route string) ([]*results.Subscription, error) {
	k := w.c.q.Keys(route)
	listen := []struct {
		channel string
		f       func([]byte)
	}{
		{w.engine.WakeChannel(route), func([]byte) { w.engine.Wake(route) }},
		{k.CancelChannel(), func(id []byte) { w.engine.Cancel(string(id)) }},
	}
	if w.keeper != nil {
		listen = append(listen, struct {
			channel string
			f       func([]byte)
		}{k.KeeperChannel(), func([]byte) { w.keeper.Kick() }})
	}
	var subs []*results.Subscription
	for _, l := range listen {
		sub, err := w.c.listener.SubscribeFunc(ctx, l.channel, l.f)
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
