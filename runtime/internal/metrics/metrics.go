package metrics

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Buckets of the run and wait histograms, in seconds: from a millisecond
// (a handler that does next to nothing, a job started as it is enqueued) to
// a quarter of an hour (a long batch, a backlog), roughly ×2.5 a step.
var Buckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 150, 300, 900}

// DepthTimeout bounds the read of the queue depths in one scrape: a Redis
// that does not answer costs a scrape that long, not Prometheus's own
// scrape timeout, and the rest of the metrics are still served.
const DepthTimeout = 3 * time.Second

// Depth is what one route holds, as read at scrape time.
type Depth struct {
	Route                   string
	High, Normal, Low       int64 // ready jobs by priority
	Scheduled, Active, Dead int64
	// OldestPendingAge is how long the oldest ready job has waited; 0 when
	// none does.
	OldestPendingAge time.Duration
	Paused           bool
	// Throttled counts the times a flow of the route was held back by a
	// limit; LimitRunning is how many keyed jobs run now (flow control).
	Throttled, LimitRunning int64
	// Expired counts the jobs of the route that ended expired, never run.
	Expired int64
}

// DepthFunc reads the depths of every route. It is called once per scrape,
// with a context that ends after DepthTimeout.
type DepthFunc func(ctx context.Context) ([]Depth, error)

// Set is the metrics of one client, in a registry of its own.
type Set struct {
	reg *prometheus.Registry

	enqueued                                            *prometheus.CounterVec
	processed, failed, retried, dead, canceled, snoozed *prometheus.CounterVec
	run, wait                                           *prometheus.HistogramVec
	overran                                             *prometheus.CounterVec

	historyWritten, historyDropped *prometheus.CounterVec
	historyBacklog                 *prometheus.GaugeVec

	scheduleSkipped *prometheus.CounterVec

	enqueuedOf cache[prometheus.Counter]
	seriesOf   cache[*Series]

	mu      sync.Mutex
	workers map[*worker]struct{}

	depths depthCollector
}

type worker struct {
	slots    int
	inFlight func() int
}

// labels is the key of the cached series of a route, priority and task.
type labels struct{ route, priority, task string }

var jobLabels = []string{"route", "priority", "task"}

// New returns a Set with every metric registered, the Go runtime's and the
// process's collectors beside them (the HTTP API's /metrics is usually the
// only endpoint a Bananas process has), and no depth reader.
func New() *Set {
	s := &Set{reg: prometheus.NewRegistry(), workers: map[*worker]struct{}{}}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bananas_jobs_" + name + "_total", Help: help}, jobLabels)
	}
	s.enqueued = counter("enqueued", "Jobs enqueued by this process (duplicates refused by WithID or Unique not counted).")
	s.processed = counter("processed", "Runs that succeeded, their result recorded.")
	s.failed = counter("failed", "Runs that failed: an error, a panic, a timeout, a job that could not be decoded or had no handler; whether retried or dead.")
	s.retried = counter("retried", "Failed runs whose job was scheduled to run again.")
	s.dead = counter("dead", "Failed runs whose job was moved to the dead-letter queue.")
	s.canceled = counter("canceled", "Jobs canceled.")
	s.snoozed = counter("snoozed", "Runs that asked to run again later (RetryAfter), no failure counted.")
	hist := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: Buckets}, jobLabels)
	}
	s.run = hist("bananas_job_run_seconds", "How long handlers ran, middleware included, whatever their outcome.")
	s.wait = hist("bananas_job_wait_seconds", "How long jobs waited from their enqueue to the start of their first run (a delay included).")
	s.overran = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bananas_handlers_overran_total",
		Help: "Handlers that ignored their context and returned long after their timeout, holding a slot meanwhile.",
	}, []string{"task"})
	s.historyWritten = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bananas_history_written_total",
		Help: "Finished jobs this process's workers wrote to the task history.",
	}, []string{"route"})
	s.historyDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bananas_history_dropped_total",
		Help: "Finished jobs dropped unwritten because the task history's backlog in Redis was full (HISTORY_BACKLOG).",
	}, []string{"route"})
	s.historyBacklog = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "bananas_history_backlog",
		Help: "Finished jobs waiting in Redis to be written to the task history, as this process's history writer last saw them.",
	}, []string{"route"})
	s.scheduleSkipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bananas_schedule_skipped_total",
		Help: "Ticks of schedules this process's scheduler skipped because the last tick's job was unfinished (overlap skip or buffer_one).",
	}, []string{"task"})
	s.enqueuedOf.make = func(l labels) prometheus.Counter {
		return s.enqueued.WithLabelValues(l.route, l.priority, l.task)
	}
	s.seriesOf.make = s.newSeries
	s.depths.errors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "bananas_scrape_errors_total",
		Help: "Reads of the queue depths at scrape time that failed or timed out; their gauges are missing from that scrape.",
	})
	s.reg.MustRegister(
		s.enqueued, s.processed, s.failed, s.retried, s.dead, s.canceled, s.snoozed,
		s.run, s.wait, s.overran, s.historyWritten, s.historyDropped, s.historyBacklog,
		s.scheduleSkipped,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "bananas_jobs_in_flight",
			Help: "Jobs this process's workers hold: running, or their outcome being recorded.",
		}, func() float64 { return float64(s.sumWorkers(func(w *worker) int { return w.inFlight() })) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "bananas_worker_slots",
			Help: "Handlers this process's running workers may run at once (the sum of their Concurrency).",
		}, func() float64 { return float64(s.sumWorkers(func(w *worker) int { return w.slots })) }),
		&s.depths,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return s
}

// HistoryWritten counts n finished jobs of route written to the history.
func (s *Set) HistoryWritten(route string, n int) {
	s.historyWritten.WithLabelValues(route).Add(float64(n))
}

// ScheduleSkipped counts a tick of a schedule of task skipped because its
// last tick's job was unfinished. By task, not by schedule: a program may
// hold a schedule per customer.
func (s *Set) ScheduleSkipped(task string) {
	s.scheduleSkipped.WithLabelValues(task).Inc()
}

// HistoryDropped counts n finished jobs of route dropped unwritten.
func (s *Set) HistoryDropped(route string, n int64) {
	s.historyDropped.WithLabelValues(route).Add(float64(n))
}

// HistoryBacklog sets how many finished jobs of route wait to be written.
func (s *Set) HistoryBacklog(route string, n int64) {
	s.historyBacklog.WithLabelValues(route).Set(float64(n))
}

// Handler serves the Set's metrics in the Prometheus exposition formats. A
// metric that cannot be collected is left out, the rest still served.
func (s *Set) Handler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Gatherer is the Set's registry, to merge with another or to test.
func (s *Set) Gatherer() prometheus.Gatherer { return s.reg }

// Enqueued counts n jobs enqueued to route at priority.
func (s *Set) Enqueued(route, priority, task string, n int) {
	s.enqueuedOf.get(labels{route, priority, task}).Add(float64(n))
}

// Canceled counts a job canceled.
func (s *Set) Canceled(route, priority, task string) { s.For(route, priority, task).canceled.Inc() }

// Overran counts a handler of task that returned long after its timeout.
func (s *Set) Overran(task string) { s.overran.WithLabelValues(task).Inc() }

// For returns the series of the jobs of task on route at priority, created
// on first use and cached: a worker resolves it once per run and records
// through it without a label lookup.
func (s *Set) For(route, priority, task string) *Series {
	return s.seriesOf.get(labels{route, priority, task})
}

// Series is what is recorded of the runs of one route, priority and task.
type Series struct {
	processed, failed, retried, dead, canceled, snoozed prometheus.Counter
	run, wait                                           prometheus.Observer
}

func (s *Set) newSeries(l labels) *Series {
	v := []string{l.route, l.priority, l.task}
	return &Series{
		processed: s.processed.WithLabelValues(v...), failed: s.failed.WithLabelValues(v...),
		retried: s.retried.WithLabelValues(v...), dead: s.dead.WithLabelValues(v...),
		canceled: s.canceled.WithLabelValues(v...), snoozed: s.snoozed.WithLabelValues(v...),
		run: s.run.WithLabelValues(v...), wait: s.wait.WithLabelValues(v...),
	}
}

// Succeeded counts a run that succeeded.
func (s *Series) Succeeded() { s.processed.Inc() }

// Failed counts a failed run; Retried or Dead says, when it is known, what
// became of its job.
func (s *Series) Failed() { s.failed.Inc() }

// Retried counts a failed run whose job was scheduled to run again.
func (s *Series) Retried() { s.retried.Inc() }

// Dead counts a failed run whose job was dead-lettered.
func (s *Series) Dead() { s.dead.Inc() }

// Snoozed counts a run that asked to run again later.
func (s *Series) Snoozed() { s.snoozed.Inc() }

// Canceled counts a job canceled.
func (s *Series) Canceled() { s.canceled.Inc() }

// Ran records how long a handler ran.
func (s *Series) Ran(d time.Duration) { s.run.Observe(d.Seconds()) }

// Waited records how long a job waited for its first run; a negative wait
// (clocks of two hosts apart) is recorded as none.
func (s *Series) Waited(d time.Duration) { s.wait.Observe(max(d, 0).Seconds()) }

// AddWorker adds a running worker's slots and running jobs to the gauges
// until remove is called. inFlight is called at scrape time.
func (s *Set) AddWorker(slots int, inFlight func() int) (remove func()) {
	w := &worker{slots, inFlight}
	s.mu.Lock()
	s.workers[w] = struct{}{}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.workers, w)
		s.mu.Unlock()
	}
}

func (s *Set) sumWorkers(f func(*worker) int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for w := range s.workers {
		n += f(w)
	}
	return n
}

// ReadDepths sets the function that reads the queue depths at scrape time;
// nil (the default) leaves the depth gauges out.
func (s *Set) ReadDepths(f DepthFunc) { s.depths.read.Store(&f) }

// cache holds the series of each label set seen, copied on write: the
// per-job reads take no lock and allocate nothing, and the label sets are
// few (routes × priorities × tasks), each written once.
type cache[V any] struct {
	m    atomic.Pointer[map[labels]V]
	mu   sync.Mutex
	make func(labels) V
}

func (c *cache[V]) get(l labels) V {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[l]; ok {
			return v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if v, ok := (*old)[l]; ok {
			return v
		}
	}
	m := make(map[labels]V, 1+len(mapOrNil(old)))
	for k, v := range mapOrNil(old) {
		m[k] = v
	}
	v := c.make(l)
	m[l] = v
	c.m.Store(&m)
	return v
}

func mapOrNil[V any](p *map[labels]V) map[labels]V {
	if p == nil {
		return nil
	}
	return *p
}

// depthCollector reads the queue depths when scraped. A read that fails,
// times out or panics is counted in errors and its gauges are left out of
// that scrape: a stale number would look like a healthy queue.
type depthCollector struct {
	read   atomic.Pointer[DepthFunc]
	errors prometheus.Counter
}

var (
	descPending   = prometheus.NewDesc("bananas_queue_pending", "Jobs ready to run, by route and priority (read from Redis at scrape time).", []string{"route", "priority"}, nil)
	descScheduled = prometheus.NewDesc("bananas_queue_scheduled", "Jobs delayed or waiting for a retry (read from Redis at scrape time).", []string{"route"}, nil)
	descActive    = prometheus.NewDesc("bananas_queue_active", "Jobs leased to a worker, of every process (read from Redis at scrape time).", []string{"route"}, nil)
	descDead      = prometheus.NewDesc("bananas_queue_dead", "Jobs in the dead-letter queue (read from Redis at scrape time).", []string{"route"}, nil)
	descOldest    = prometheus.NewDesc("bananas_queue_oldest_pending_seconds", "How long the oldest ready job of the route has waited; 0 when none waits.", []string{"route"}, nil)
	descPaused    = prometheus.NewDesc("bananas_route_paused", "1 when the route is paused (its jobs are not fetched), else 0.", []string{"route"}, nil)
	descThrottled = prometheus.NewDesc("bananas_jobs_throttled_total", "Times a key (or a limited task) of the route was held back by its cap or its rate (read from Redis at scrape time).", []string{"route"}, nil)
	descExpired   = prometheus.NewDesc("bananas_jobs_expired_total", "Jobs that did not start before their expiry and ended expired, never run (read from Redis at scrape time).", []string{"route"}, nil)
	descLimitRun  = prometheus.NewDesc("bananas_limit_running", "Keyed jobs of the route running now, the jobs flow control counts against its caps (read from Redis at scrape time).", []string{"route"}, nil)
)

func (c *depthCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPending, descScheduled, descActive, descDead, descOldest, descPaused, descThrottled, descLimitRun, descExpired} {
		ch <- d
	}
	c.errors.Describe(ch)
}

func (c *depthCollector) Collect(ch chan<- prometheus.Metric) {
	defer c.errors.Collect(ch) // after the read, so this scrape's failure is in it
	p := c.read.Load()
	if p == nil || *p == nil {
		return
	}
	ds, err := readDepths(*p)
	if err != nil {
		c.errors.Inc()
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, d := range ds {
		gauge(descPending, float64(d.High), d.Route, "high")
		gauge(descPending, float64(d.Normal), d.Route, "normal")
		gauge(descPending, float64(d.Low), d.Route, "low")
		gauge(descScheduled, float64(d.Scheduled), d.Route)
		gauge(descActive, float64(d.Active), d.Route)
		gauge(descDead, float64(d.Dead), d.Route)
		gauge(descOldest, max(d.OldestPendingAge, 0).Seconds(), d.Route)
		paused := 0.0
		if d.Paused {
			paused = 1
		}
		gauge(descPaused, paused, d.Route)
		ch <- prometheus.MustNewConstMetric(descThrottled, prometheus.CounterValue, float64(d.Throttled), d.Route)
		gauge(descLimitRun, float64(d.LimitRunning), d.Route)
		ch <- prometheus.MustNewConstMetric(descExpired, prometheus.CounterValue, float64(d.Expired), d.Route)
	}
}

// readDepths calls read under DepthTimeout, a panic turned into an error:
// a scrape must not take the process down.
func readDepths(read DepthFunc) (ds []Depth, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), DepthTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("read queue depths: panic: %v", p)
		}
	}()
	return read(ctx)
}

// Outbox is the transactional outbox as read at scrape time: the rows
// waiting, how long the oldest has waited, and the rows this process's
// relays moved.
type Outbox struct {
	Pending int64
	Lag     time.Duration
	Relayed int64
}

// OutboxFunc reads the outbox, once per scrape, under DepthTimeout.
type OutboxFunc func(ctx context.Context) (Outbox, error)

var (
	descOutboxPending = prometheus.NewDesc("bananas_outbox_pending", "Jobs committed to the transactional outbox and not yet moved into Redis (read from PostgreSQL at scrape time).", nil, nil)
	descOutboxLag     = prometheus.NewDesc("bananas_outbox_lag_seconds", "How long the oldest row of the outbox has waited for a relay; 0 when none waits (read at scrape time).", nil, nil)
	descOutboxRelayed = prometheus.NewDesc("bananas_outbox_relayed_total", "Outbox rows this process's relays moved into Redis and deleted.", nil, nil)
)

// outboxCollector reads the outbox when scraped; a read that fails leaves
// the gauges out of that scrape (counted in bananas_scrape_errors_total),
// the relayed counter still served.
type outboxCollector struct {
	read OutboxFunc
	s    *Set
}

func (c outboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descOutboxPending
	ch <- descOutboxLag
	ch <- descOutboxRelayed
}

func (c outboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), DepthTimeout)
	defer cancel()
	o, err := c.read(ctx)
	ch <- prometheus.MustNewConstMetric(descOutboxRelayed, prometheus.CounterValue, float64(o.Relayed))
	if err != nil {
		c.s.depths.errors.Inc()
		return
	}
	ch <- prometheus.MustNewConstMetric(descOutboxPending, prometheus.GaugeValue, float64(o.Pending))
	ch <- prometheus.MustNewConstMetric(descOutboxLag, prometheus.GaugeValue, max(o.Lag, 0).Seconds())
}

// ReadOutbox adds the outbox's metrics, read by f at scrape time. Call it
// once per Set.
func (s *Set) ReadOutbox(f OutboxFunc) {
	s.reg.MustRegister(outboxCollector{read: f, s: s})
}
