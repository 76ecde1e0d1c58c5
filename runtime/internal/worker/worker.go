package worker

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/internal/engine"
	"github.com/bananas-go/bananas/runtime/internal/historian"
	"github.com/bananas-go/bananas/runtime/internal/metrics"
	"github.com/bananas-go/bananas/runtime/internal/routeshards"
	"github.com/bananas-go/bananas/runtime/internal/workflows"
	"github.com/bananas-go/bananas/scheduler"
)

// Config is one worker: its options, defaulted and checked by the caller,
// its tasks and cron entries, and the functions through which it runs
// jobs and tells of their ends.
type Config struct {
	Queue    *queue.Queue
	Listener *results.Listener
	Logger   *slog.Logger
	Metrics  *metrics.Set

	ID string
	// Mode is the heartbeat's mode (WORKER_MODE); SchedulerMode is the
	// one a SchedulerOnly worker's heartbeat shows.
	Mode, SchedulerMode string

	Routes                                                                []string
	Priorities                                                            []queue.Priority
	JobTypes                                                              []string
	Concurrency                                                           int
	SchedulerOnly                                                         bool
	Lease, ShutdownTimeout, JobTimeout, ResultTTL, FailureTTL, SafetyPoll time.Duration

	// Tasks are the registered tasks, by name.
	Tasks []Task
	// Cron are the registered cron entries.
	Cron []scheduler.CronEntry

	// Exec, RetryDelay, JobKey and Sinks are the engine's (engine.Config).
	Exec       func(ctx context.Context, d *queue.Dispatch) engine.Outcome
	RetryDelay func(env queue.Envelope, attempt int) time.Duration
	JobKey     any
	Sinks      []engine.JobEndSink
	// StoredError is engine.Config.StoredError.
	StoredError func(id, msg string) string
	// JobValue is what the context of d's handler holds under JobKey,
	// given the flusher its Progress calls go to.
	JobValue func(d *queue.Dispatch, progress *engine.ProgressFlusher) any
	// ProgressEvery is how often the runs' progress is written to Redis.
	ProgressEvery time.Duration
	// Batches are the tasks run in batches (engine.Config.Batches).
	Batches []engine.Batch

	// History, when set, is where the ended jobs of the routes the worker
	// keeps are written.
	History *History
	// Workflows is the runner whose half-advanced workflows the worker
	// looks after while it keeps a route.
	Workflows *workflows.Runner
	// Schedules, when set, fires the schedules kept as data; a worker that
	// keeps routes runs it only while it keeps one (a standby worker stays
	// off Redis), a scheduler always.
	Schedules *scheduler.ScheduleRunner
}

// Task is a registered task as the worker sees it: its name, the route its
// jobs go to by default, and its limits, which the worker stores.
type Task struct {
	Name   string
	Route  string
	Limits queue.Limits
}

// History is the task history the worker writes the ended jobs of the
// routes it keeps to (historian.Writer).
type History struct {
	Store history.Store
	// Row is the row of an ended job's record, its args and result as JSON.
	Row       func(route string, rec results.Record) bananastype.Job
	Backlog   int64
	Retention time.Duration
	// Migrate: the worker migrates the store's schema (a history.Migrator)
	// before it first writes to it.
	Migrate bool
}

// run is one Run of a worker: the parts it started.
type run struct {
	cfg      *Config
	engine   *engine.Engine
	shards   *routeshards.Watcher
	keeper   *scheduler.Keeper // nil for a scheduler, which promotes every route
	progress *engine.ProgressFlusher
}

// Run works jobs until ctx ends, then shuts down gracefully (engine.Run)
// and returns once every loop it started has ended.
func Run(ctx context.Context, cfg Config) error {
	r := &run{cfg: &cfg}
	if err := r.prepare(ctx); err != nil {
		return err
	}
	r.shards = r.newShards()
	r.keeper = r.newKeeper()
	r.progress = engine.NewProgressFlusher(engine.Redis(cfg.Queue), cfg.ProgressEvery, scheduler.NewOutageLog(cfg.Logger, "progress (running jobs' progress to Redis)"))
	r.engine = engine.New(r.engineConfig())

	// The promoter and the cron runner outlive ctx until the engine has
	// shut down, as the engine's own loops do.
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	defer func() { stopBG(); wg.Wait() }()

	promoterWake := make(chan time.Time, 1)
	subs, err := r.subscribe(ctx)
	if err != nil {
		return err
	}
	schedule := &scheduleListener{q: cfg.Queue, listener: cfg.Listener, log: cfg.Logger, wake: promoterWake}
	defer func() {
		for _, s := range subs {
			s.Close()
		}
		schedule.set(false)
	}()
	if r.keeper == nil { // a scheduler promotes for every route, always
		if err := schedule.set(true); err != nil {
			return fmt.Errorf("bananas: worker: subscribe: %w", err)
		}
	} else {
		r.keeper.OnChange = func(held []string) { _ = schedule.set(len(held) > 0) }
	}

	if err := r.shards.Refresh(ctx); err != nil {
		cfg.Logger.Warn("bananas: cannot read the shards of the worker's routes; working the routes themselves until they read", "err", err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); r.shards.Run(bg) }()
	wg.Add(1)
	go func() { defer wg.Done(); r.wakeOnReconnect(bg) }()
	for _, loop := range r.loops(promoterWake) {
		wg.Add(1)
		go func() { defer wg.Done(); loop(bg) }()
	}

	if r.keeper != nil {
		// The routes the worker keeps are known before it takes jobs.
		select {
		case <-r.keeper.Ready():
		case <-ctx.Done():
		}
	}
	cfg.Logger.Info("bananas: worker started", "worker", cfg.ID, "routes", strings.Join(cfg.Routes, ","),
		"concurrency", cfg.Concurrency, "tasks", strings.Join(r.taskNames(), ","), "clock_skew", cfg.Queue.Skew().Round(time.Millisecond))
	if !cfg.SchedulerOnly {
		defer cfg.Metrics.AddWorker(cfg.Concurrency, r.engine.InFlight)()
		r.warnUntakenRoutes()
	}
	r.engine.Run(ctx)
	cfg.Logger.Info("bananas: worker stopped", "worker", cfg.ID)
	return nil
}

// prepare is what Run does before its loops start: the queue's warnings
// to the logger, the clock measured again (now that there is a logger to
// warn of a large skew), eviction warned of, and the tasks' limits stored
// (an error of the last fails Run: a worker that cannot store them would
// run jobs under the limits of an older version of the code).
func (r *run) prepare(ctx context.Context) error {
	q, log := r.cfg.Queue, r.cfg.Logger
	q.OnWarning(log.Warn)
	if err := q.SyncClock(ctx); err != nil {
		log.Warn("bananas: read the Redis server's clock; using the last reading", "err", err)
	}
	if p, err := q.EvictionPolicy(ctx); err == nil && p != "" && p != "noeviction" {
		// A deleted key is a lost job or result; with noeviction, enqueues
		// fail with an error when memory is full, and nothing stored is
		// lost. A policy that cannot be read (CONFIG refused, the embedded
		// server) is not warned about.
		log.Warn("bananas: Redis evicts keys under memory pressure, and an evicted key is a lost job or result; set maxmemory-policy noeviction",
			"maxmemory_policy", p)
	}
	if err := storeLimits(ctx, r.cfg); err != nil {
		return fmt.Errorf("bananas: worker: %w", err)
	}
	return nil
}

// loops are the promoter (due delayed jobs and retries to their ready
// lists, woken on promoterWake), the workflow keeper, the progress flusher,
// the route keeper, the schedules' runner, and, with cron entries, the cron
// runner and, with a history, its writer.
func (r *run) loops(promoterWake chan time.Time) []func(context.Context) {
	cfg := r.cfg
	routes := cfg.Queue.Routes // a scheduler promotes for every route there is
	if r.keeper != nil {
		routes = func(context.Context) ([]string, error) { return r.keeper.Held(), nil }
	}
	p := &scheduler.Promoter{
		Queue:  cfg.Queue,
		Routes: routes,
		Wake:   promoterWake,
		Safety: min(cfg.SafetyPoll, scheduler.DefaultPromoterSafety),
		Outage: scheduler.NewOutageLog(cfg.Logger, "promoter (due delayed jobs and retries to their queues)"),
	}
	var active func() bool // the workflow keeper looks while the worker keeps a route
	if r.keeper != nil {
		active = func() bool { return len(r.keeper.Held()) > 0 }
	}
	loops := []func(context.Context){
		func(ctx context.Context) { p.Run(ctx) },
		workflows.NewKeeper(cfg.Workflows, cfg.Lease, cfg.Logger, active).Run,
		r.progress.Run,
	}
	if r.keeper != nil {
		loops = append(loops, r.keeper.Run)
	}
	if cfg.Schedules != nil {
		if r.keeper != nil {
			cfg.Schedules.Active = func() bool { return len(r.keeper.Held()) > 0 }
		}
		loops = append(loops, cfg.Schedules.Run)
	}
	if len(cfg.Cron) > 0 {
		cr := r.cron()
		loops = append(loops, func(ctx context.Context) { _ = cr.Run(ctx) })
	}
	if hw := r.historyWriter(); hw != nil {
		loops = append(loops, hw.Run)
	}
	return loops
}

// cron is the runner of the worker's cron entries.
func (r *run) cron() *scheduler.Cron {
	log := r.cfg.Logger
	return &scheduler.Cron{
		Queue: r.cfg.Queue, Entries: r.cfg.Cron, Outage: scheduler.NewOutageLog(log, "cron"),
		OnFire: func(e scheduler.CronEntry, tick time.Time, id string) {
			log.Info("bananas: cron fired", "entry", e.Name, "tick", tick.Format(time.RFC3339), "job", id)
		},
		OnError: func(e scheduler.CronEntry, err error) {
			log.Warn("bananas: cron fire failed", "entry", e.Name, "err", err)
		},
	}
}

// historyWriter is the writer that moves the ended jobs of the routes the
// worker keeps into its history, or nil when it keeps none.
func (r *run) historyWriter() *historian.Writer {
	h, cfg := r.cfg.History, r.cfg
	if h == nil || h.Store == nil {
		return nil
	}
	var migrate func(context.Context) error
	if m, ok := h.Store.(history.Migrator); ok && h.Migrate {
		migrate = m.Migrate
	}
	return &historian.Writer{
		Queue: cfg.Queue, Store: h.Store, Routes: r.kept,
		Row:       h.Row,
		Cap:       h.Backlog,
		Retention: h.Retention,
		Migrate:   migrate,
		Logger:    cfg.Logger,
		Dropped:   cfg.Metrics.HistoryDropped,
		Written:   cfg.Metrics.HistoryWritten,
		Backlog:   cfg.Metrics.HistoryBacklog,
	}
}

// engineConfig is what the engine needs of the worker.
func (r *run) engineConfig() engine.Config {
	cfg := r.cfg
	self := record(cfg, cfg.Queue.Now())
	return engine.Config{
		Queue: engine.Redis(cfg.Queue), Metrics: engineMetrics{cfg.Metrics}, Sinks: cfg.Sinks, Logger: cfg.Logger, ID: cfg.ID,
		Routes: cfg.Routes, RoutesNow: r.shards.Now, Priorities: cfg.Priorities, JobTypes: cfg.JobTypes, Tasks: r.taskNames(),
		FetchJobs: !cfg.SchedulerOnly, Concurrency: cfg.Concurrency,
		Lease: cfg.Lease, ShutdownTimeout: cfg.ShutdownTimeout, JobTimeout: cfg.JobTimeout,
		ResultTTL: cfg.ResultTTL, FailureTTL: cfg.FailureTTL, SafetyPoll: cfg.SafetyPoll,
		RetryDelay:   cfg.RetryDelay,
		Exec:         cfg.Exec,
		JobKey:       cfg.JobKey,
		JobValue:     func(d *queue.Dispatch) any { return cfg.JobValue(d, r.progress) },
		State:        heartbeat(cfg.Queue, self),
		ServedRoutes: func(ctx context.Context) (map[string]bool, error) { return served(ctx, cfg.Queue, self) },
		Kept:         r.kept,
		Batches:      cfg.Batches,
		StoredError:  cfg.StoredError,
	}
}

// taskNames are the names of the worker's tasks.
func (r *run) taskNames() []string {
	names := make([]string, len(r.cfg.Tasks))
	for i, t := range r.cfg.Tasks {
		names[i] = t.Name
	}
	return names
}

// engineMetrics is what the engine measures of its runs, in the worker's
// metrics, a sharded route's under the route's name.
type engineMetrics struct{ *metrics.Set }

func (m engineMetrics) For(route, priority, task string) engine.RunMetrics {
	return m.Set.For(queue.ShardBase(route), priority, task)
}

// warnUntakenRoutes says, one line per route, which tasks enqueue by
// default to a route this worker does not take: their jobs wait for
// another worker, and with none they wait for ever.
func (r *run) warnUntakenRoutes() {
	byRoute := map[string][]string{}
	for _, t := range r.cfg.Tasks {
		if !slices.Contains(r.cfg.Routes, t.Route) {
			byRoute[t.Route] = append(byRoute[t.Route], t.Name)
		}
	}
	routes := make([]string, 0, len(byRoute))
	for rt := range byRoute {
		routes = append(routes, rt)
	}
	slices.Sort(routes)
	for _, rt := range routes {
		slices.Sort(byRoute[rt])
		r.cfg.Logger.Warn("bananas: tasks registered for a route this worker does not take; their jobs wait for a worker that does",
			"route", rt, "tasks", strings.Join(byRoute[rt], ","), "worker_routes", strings.Join(r.cfg.Routes, ","))
	}
}
