package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// Config is what an Engine needs from the worker it runs for; every field
// is set (the runtime fills the defaults).
type Config struct {
	Queue   Queue
	Metrics Metrics
	// Sinks are told every recorded end of a job (see JobEndSink), in order;
	// the worker's counters of ends are one.
	Sinks []JobEndSink
	// StoredError, when set, is the form a failure message of job id takes
	// in Redis (its hash, its result record): sealed when the process has
	// keys. The ends told and the logs carry the message as it was.
	StoredError func(id, msg string) string
	Logger      *slog.Logger
	// ID is the worker's id, in its logs and heartbeat.
	ID string
	// Routes in order of preference, the priorities and task names
	// (JobTypes: nil for every task) the worker fetches.
	Routes []string
	// RoutesNow, when set, returns the routes to fetch, reap and purge now,
	// in place of Routes: the shards of sharded routes, which change while
	// the worker runs. It is called on every fetch, so it must be cheap.
	RoutesNow  func() []string
	Priorities []queue.Priority
	JobTypes   []string
	// Tasks are the names of the tasks Exec can run, sorted; a job of
	// another task fails without a run.
	Tasks []string
	// FetchJobs is false for a worker that runs only the background loops
	// (a scheduler).
	FetchJobs   bool
	Concurrency int
	// Lease is how long a run holds its job without renewal; the renewer
	// renews every Lease/3.
	Lease           time.Duration
	ShutdownTimeout time.Duration
	// JobTimeout bounds a run of a job that sets no timeout.
	JobTimeout time.Duration
	// ResultTTL and FailureTTL keep the records of jobs that set none.
	ResultTTL, FailureTTL time.Duration
	// SafetyPoll is how long an idle fetcher waits for a wake-up before
	// looking at its routes anyway.
	SafetyPoll time.Duration
	// RetryDelay is the delay before retry number attempt of a job.
	RetryDelay func(e queue.Envelope, attempt int) time.Duration
	// Exec runs a job's handler with ctx, the handler's context, and says
	// what the run came to.
	Exec func(ctx context.Context, d *queue.Dispatch) Outcome
	// JobKey and JobValue put the job's value in the handler's context
	// (ctx.Value(JobKey) is JobValue(d)).
	JobKey   any
	JobValue func(d *queue.Dispatch) any
	// State is the worker's heartbeat record, given the runs in flight.
	State func(inFlight int) []byte
	// ServedRoutes returns the routes live workers serve or fire cron
	// entries to, which route pruning keeps (see retention); nil prunes none.
	ServedRoutes func(ctx context.Context) (map[string]bool, error)
	// Batches are the tasks whose handler takes many jobs at once (see
	// Batch); nil for a worker without any.
	Batches []Batch
	// Kept returns the routes whose leases this worker reaps and whose old
	// dead-lettered jobs it purges: those it keeps (one worker per route
	// does, see scheduler.Keeper). Nil: every route it works (routes).
	Kept func() []string
}

// kept is the routes the worker reaps and purges now (Config.Kept).
func (c *Config) kept() []string {
	if c.Kept == nil {
		return c.routes()
	}
	return c.Kept()
}

// Queue is what the engine asks of Redis: Redis(q) over a *queue.Queue.
type Queue interface {
	Now() time.Time
	KeepsEnded() bool
	FetchOrWait(ctx context.Context, route string, priorities []queue.Priority, n int, leaseUntil, now time.Time, w queue.Waiter) ([]*queue.Dispatch, error)
	WakeWaiters(ctx context.Context, route string, n int) (int, error)
	StopWaiting(ctx context.Context, routes []string, worker string) error
	Keys(route string) queue.Keys
	FetchTypes(ctx context.Context, route string, priorities []queue.Priority, types []string, n int, leaseUntil, now time.Time) ([]*queue.Dispatch, error)
	HandBack(ctx context.Context, l *queue.LostFetch, now time.Time, canceled func(queue.Expired) queue.Verdict) (queue.LostHandBack, error)
	Renew(ctx context.Context, route string, running []*queue.Dispatch, until time.Time) ([]*queue.Dispatch, error)
	CancelRequests(ctx context.Context, route string, ids []string) ([]string, error)
	AckAsync(d *queue.Dispatch, record []byte, ttl time.Duration, done func(ok bool, err error))
	Fail(ctx context.Context, d *queue.Dispatch, f queue.Failure, now time.Time) (queue.Ending, error)
	FinishCanceled(ctx context.Context, d *queue.Dispatch, record []byte, ttl time.Duration) (bool, error)
	Requeue(ctx context.Context, d *queue.Dispatch, canceled []byte, ttl time.Duration, now time.Time) (queue.Ending, error)
	Reap(ctx context.Context, route string, now time.Time, decide func(queue.Expired) queue.Verdict) (map[string]queue.Ending, error)
	SweepFlows(ctx context.Context, route string, now time.Time) (int, error)
	Purge(ctx context.Context, route string, cutoff time.Time) (int, error)
	PruneRoutes(ctx context.Context, keep map[string]bool, now time.Time) ([]string, error)
	Beat(ctx context.Context, id string, state []byte, now time.Time, ttl time.Duration) error
	EndBeats(ctx context.Context, id string) error
	WriteProgress(ctx context.Context, ws []queue.ProgressWrite) (failed []queue.ProgressWrite, err error)
}

// Metrics is what the engine measures of its runs besides their ends, which
// its sinks count (Config.Sinks).
type Metrics interface {
	// For returns the measures of the runs of task on route at priority,
	// resolved once per run.
	For(route, priority, task string) RunMetrics
	// Overran counts a handler of task that returned long after its timeout.
	Overran(task string)
}

// RunMetrics measures one run.
type RunMetrics interface {
	Ran(time.Duration)    // how long its handler ran
	Waited(time.Duration) // how long its job waited for its first run
}

// Outcome is what a run of a job came to, as Exec judged it.
type Outcome struct {
	Result []byte // success: the encoded result
	// Failed: the run failed with Message, recorded as the job's error.
	Failed  bool
	Message string
	// Final: dead-letter the job at once, whatever retries it has left.
	Final bool
	// Snooze > 0: run the job again that much later, without counting a
	// failed attempt (runtime.RetryAfter).
	Snooze time.Duration
	// Trail is what a completed run leaves for the workflow steps after its
	// job's (bananastype.JobEnd.Trail): a trace context, say.
	Trail string
	// Together: the run is one of a batch's (runtime.HandleBatch), whose
	// outcomes are recorded together, in one call, once each of its runs
	// has returned.
	Together *Together
}

// callTimeout bounds each Redis call of the engine: a fetch, the record of
// an outcome, a renewal, a hand-back. It is not the caller's context: a
// call canceled after its script ran would leave the job in a state nobody
// follows up (leased to nobody, an outcome unknown).
const callTimeout = 10 * time.Second

// Engine is the running part of a worker (see the package doc).
type Engine struct {
	cfg       Config
	slots     *slots
	runs      *runs
	exec      *executor
	fetch     *fetcher
	handBacks *handBacks
}

// New returns an engine for cfg.
func New(cfg Config) *Engine {
	e := &Engine{cfg: cfg, slots: newSlots(cfg.Concurrency), runs: newRuns()}
	e.handBacks = &handBacks{q: cfg.Queue, cfg: &e.cfg, log: cfg.Logger, kick: make(chan struct{}, 1)}
	e.exec = &executor{cfg: &e.cfg, slots: e.slots, runs: e.runs, handoff: make(chan *run), stopped: make(chan struct{})}
	e.fetch = &fetcher{cfg: &e.cfg, slots: e.slots, exec: e.exec, handBacks: e.handBacks, outages: newOutages(cfg.Logger), wake: make(chan struct{}, 1)}
	return e
}

// Wake tells the fetcher that a job of route was made ready while it
// waited ("" for any of its routes: a wake-up may have been lost). A worker
// woken with no free slot — it waited on several routes, and jobs of
// another filled it — hands the wake-up on to another waiting worker of
// route, which can run the job now.
func (e *Engine) Wake(route string) {
	notify(e.fetch.wake)
	// A worker that takes only some tasks hears the route's channel, not a
	// wake-up meant for it alone: it has none to hand on.
	if route != "" && len(e.cfg.JobTypes) == 0 && e.slots.free() == 0 {
		go e.passOn(route)
	}
}

func (e *Engine) passOn(route string) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if _, err := e.cfg.Queue.WakeWaiters(ctx, route, 1); err != nil {
		e.cfg.Logger.Debug("bananas: hand a wake-up on", "route", route, "err", err)
	}
}

// WakeChannel returns the channel the worker listens on for route: its
// own (the route's idle set names it), or, for a worker that takes only
// some tasks, the route's, published whenever a ready list goes from empty
// to non-empty.
func (e *Engine) WakeChannel(route string) string {
	if len(e.cfg.JobTypes) > 0 {
		return e.cfg.Queue.Keys(route).WakeChannel()
	}
	return e.cfg.Queue.Keys(route).WakeChannelOf(e.cfg.ID)
}

// Cancel cancels the runs of job id on this worker, if any (see
// executor.cancelJob).
func (e *Engine) Cancel(id string) { e.exec.cancelJob(id) }

// InFlight is the number of runs in flight.
func (e *Engine) InFlight() int { return e.runs.count() }

// Run works jobs until ctx ends, then shuts down: it stops fetching, lets
// the runs in flight finish for ShutdownTimeout, hands the rest back to
// their queues without counting an attempt, and returns once its loops have
// stopped. The background loops outlive ctx until then: leases must be
// renewed while runs finish.
func (e *Engine) Run(ctx context.Context) {
	defer close(e.exec.stopped) // idle runners exit
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	defer func() { stopBG(); wg.Wait() }()
	for _, loop := range []func(context.Context){
		(&renewer{cfg: &e.cfg, runs: e.runs, exec: e.exec, outage: scheduler.NewOutageLog(e.cfg.Logger, "lease renewal")}).Run,
		e.handBacks.Run,
		(&reaper{cfg: &e.cfg, outage: scheduler.NewOutageLog(e.cfg.Logger, "reaper (recovery of expired leases)")}).Run,
		(&retention{cfg: &e.cfg}).Run,
		(&heartbeater{cfg: &e.cfg, runs: e.runs}).Run,
	} {
		wg.Add(1)
		go func() { defer wg.Done(); loop(bg) }()
	}
	if e.cfg.FetchJobs {
		e.fetch.Run(ctx)
		e.stopWaiting()
	}
	<-ctx.Done()
	e.shutdown()
}

// stopWaiting takes the worker out of its routes' idle sets: a wake-up
// sent to a worker that no longer fetches would be lost.
func (e *Engine) stopWaiting() {
	if len(e.cfg.JobTypes) > 0 {
		return // it never stood in them
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := e.cfg.Queue.StopWaiting(ctx, e.cfg.routes(), e.cfg.ID); err != nil {
		e.cfg.Logger.Warn("bananas: leave the routes' idle sets; until its entries lapse a wake-up may go to this stopped worker",
			"err", err)
	}
}

// shutdown waits up to ShutdownTimeout for the runs in flight, then hands
// the rest back to the front of their queues without counting an attempt.
// A run whose outcome is being recorded (its ack or failure in flight) is
// not handed back: it is waited for, as the write is bounded by its own
// timeout. Handing it back could land before its ack, and a job that
// succeeded would run again.
func (e *Engine) shutdown() {
	log := e.cfg.Logger
	defer e.handBacks.drain()
	byRoute, idle := e.runs.byRoute()
	running := 0
	for _, rs := range byRoute {
		running += len(rs)
	}
	// Said at once: a worker told to stop may wait the whole grace period,
	// and an operator who sent the signal must know what for.
	if running == 0 {
		log.Info("bananas: stopping: no job running")
		return
	}
	log.Info(fmt.Sprintf("bananas: stopping: waiting up to %s for %d running job(s); those still running then are handed back to their queues, no attempt counted",
		e.cfg.ShutdownTimeout, running), "running", running, "shutdown_timeout", e.cfg.ShutdownTimeout)
	t := time.NewTimer(e.cfg.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-idle:
		return
	case <-t.C:
	}
	byRoute, idle = e.runs.byRoute()
	if len(byRoute) == 0 {
		return // the last runs ended as the grace period did
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	for _, rs := range byRoute {
		for _, r := range rs {
			if !r.recording.CompareAndSwap(false, true) {
				continue // its outcome is on its way
			}
			r.cancel(errHandedBack)
			e.handBack(ctx, r)
		}
	}
	select {
	case <-idle:
	case <-ctx.Done():
		log.Warn("bananas: outcomes of finished jobs still unwritten at shutdown; they run again when their lease expires")
	}
}

// handBack hands r's job back to the front of its queue at shutdown, no
// attempt counted. A cancel asked while it ran, which this worker has not
// acted on, ends the job canceled instead (requeue.lua decides).
func (e *Engine) handBack(ctx context.Context, r *run) {
	log, now := e.cfg.Logger, e.cfg.Queue.Now()
	canceled := canceledAtShutdown(r.d, now)
	out, err := e.cfg.Queue.Requeue(ctx, r.d, canceled, ttlOr(r.d.Envelope.FailureTTL, e.cfg.FailureTTL), now)
	e.runs.untrack(r)
	switch {
	case err != nil:
		log.Warn("bananas: hand back failed; the job will be recovered when its lease expires", "job", r.d.ID, "err", err)
	case out == queue.EndHandedBack:
		log.Info("bananas: job handed back at shutdown", "job", r.d.ID, "task", r.d.Name)
		e.cfg.tell(e.cfg.runEnd(r.d, queue.EndHandedBack, now))
	case out == queue.EndCanceled:
		log.Info("bananas: job asked to cancel ended canceled at shutdown", "job", r.d.ID, "task", r.d.Name)
		e.cfg.tell(e.cfg.canceledEnd(r.d, canceledShutdown, canceled, now))
	}
}

// next waits for t's next tick and reports whether it came before ctx
// ended: the pace of the background loops.
func next(ctx context.Context, t *time.Ticker) bool {
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// routes returns the routes to work now (RoutesNow, else Routes).
func (c *Config) routes() []string {
	if c.RoutesNow != nil {
		return c.RoutesNow()
	}
	return c.Routes
}

// handles reports whether Exec can run jobs of task name.
func (c *Config) handles(name string) bool {
	_, found := slices.BinarySearch(c.Tasks, name)
	return found
}
