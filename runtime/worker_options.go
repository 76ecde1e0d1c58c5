package runtime

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
)

// WorkerOptions configures a Worker. A zero field takes its default.
type WorkerOptions struct {
	// Routes the worker takes jobs from, in order of preference: a route is
	// only drained when every route before it is empty. Default ["default"].
	Routes []string
	// Priorities the worker takes, always drained high, normal, low. Default all three.
	Priorities []Priority
	// JobTypes limits the worker to these task names; jobs of other tasks stay
	// queued for other workers. Default: every job of its routes.
	JobTypes []string
	// Concurrency is how many handlers run at once. Default 10. A job's slot
	// is freed when its handler returns; recording its outcome (one coalesced
	// call to Redis) goes on beside the next jobs, for at most Concurrency
	// jobs at a time, so a worker holds at most 2×Concurrency leases.
	Concurrency int
	// HistoryBacklog is how many ended jobs a route keeps in Redis for the
	// task history (WithHistory) while the history cannot be written; past
	// it the oldest are dropped and counted
	// (bananas_history_dropped_total). Default 1,000,000.
	HistoryBacklog int64
	// HistoryRetention is how long the task history keeps a row. Default
	// 30 days.
	HistoryRetention time.Duration
	// HistoryMigrate makes the worker create or migrate the history store's
	// schema (a history.Migrator) before it first writes to it, retrying
	// while the store is down. Main sets it unless HISTORY_MIGRATE=0.
	HistoryMigrate bool
	// Lease is how long a running job is held without renewal; it is renewed
	// every Lease/3, and a job whose lease runs out is recovered. Default 30s.
	Lease time.Duration
	// ShutdownTimeout is how long Run lets running jobs finish after its
	// context ends before handing them back to their queues. Default 30s.
	ShutdownTimeout time.Duration
	// SchedulerOnly runs the promoter and maintenance but no jobs.
	SchedulerOnly bool

	// JobTimeout bounds a run of a job that sets no timeout. Default 5m.
	JobTimeout time.Duration
	// ResultTTL and FailureTTL keep results of jobs that set none. Defaults 1h and 24h.
	ResultTTL, FailureTTL time.Duration
	// Backoff is the delay before retry number attempt. Default DefaultBackoff.
	Backoff func(attempt int) time.Duration
	// Middleware wraps every handler call, Middleware[0] outermost, inside
	// the client's HookWorkBegin hooks (Client.AddHook): tracing, logging,
	// context values (see Middleware).
	Middleware []Middleware
	// Logger receives one line per job event. Default slog.Default().
	Logger *slog.Logger
	// SafetyPoll is how long an idle worker waits for a wake-up before
	// looking at its queues anyway. A job made ready wakes one waiting
	// worker on a channel of its own, and a worker whose connection to
	// Redis was cut looks at once when it is back, so the poll only
	// matters for a wake-up sent to a worker that died before it fetched.
	// An idle worker's poll is much of what it costs Redis. Default 30s;
	// 1s for a worker with JobTypes, which is not woken for a job of its
	// tasks queued behind others and looks for them at its poll.
	// (The promoter of the routes the worker keeps looks at least every
	// second, or every SafetyPoll when that is shorter.)
	SafetyPoll time.Duration
	// OnJobEnd, if set, is the worker's own HookWorkEnd (a JobEndFunc,
	// told after the client's hooks): it is called once for every end of
	// a job the worker records in Redis (see bananastype.JobEnd):
	// completed, failed and retried or dead-lettered, canceled, snoozed,
	// handed back at shutdown, or recovered after another worker's lease
	// expired. It is called on a
	// goroutine of its own, one end at a time in the order they were
	// recorded, never on the job's path: a slow hook delays only the hook.
	// Up to 1024 ends wait for it; past that, ends are dropped and the drop
	// is logged, so a hook that does slow work (a database write) should
	// batch it. Run returns after the hook has seen every end recorded
	// before the worker stopped.
	OnJobEnd func(bananastype.JobEnd)
}

// withDefaults fills zero fields and checks the rest; regErrs are the
// errors of the registrations, reported with those of the options.
func (o *WorkerOptions) withDefaults(regErrs []error) error {
	if len(o.Routes) == 0 {
		o.Routes = []string{"default"}
	}
	if len(o.Priorities) == 0 {
		o.Priorities = []Priority{PriorityHigh, PriorityNormal, PriorityLow}
	}
	if o.Concurrency == 0 {
		o.Concurrency = 10
	}
	if o.Lease == 0 {
		o.Lease = 30 * time.Second
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	if o.JobTimeout == 0 {
		o.JobTimeout = DefaultTimeout
	}
	if o.ResultTTL == 0 {
		o.ResultTTL = DefaultResultTTL
	}
	if o.FailureTTL == 0 {
		o.FailureTTL = DefaultFailureTTL
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SafetyPoll == 0 {
		o.SafetyPoll = 30 * time.Second
		if len(o.JobTypes) > 0 {
			o.SafetyPoll = time.Second
		}
	}
	errs := slices.Clone(regErrs)
	for _, r := range o.Routes {
		if err := queue.CheckRoute(r); err != nil {
			errs = append(errs, fmt.Errorf("WorkerOptions.Routes: %w", err))
		}
	}
	for _, p := range o.Priorities {
		if !queue.ValidPriority(string(p)) {
			errs = append(errs, fmt.Errorf("WorkerOptions.Priorities: invalid priority %q: use high, normal or low", p))
		}
	}
	if o.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("WorkerOptions.Concurrency must be positive, got %d", o.Concurrency))
	}
	for i, m := range o.Middleware {
		if m == nil {
			errs = append(errs, fmt.Errorf("WorkerOptions.Middleware[%d] is nil", i))
		}
	}
	if o.Lease < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("WorkerOptions.Lease must be at least 100ms, got %s", o.Lease))
	}
	for name, d := range map[string]time.Duration{"ShutdownTimeout": o.ShutdownTimeout, "JobTimeout": o.JobTimeout, "ResultTTL": o.ResultTTL, "FailureTTL": o.FailureTTL} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("WorkerOptions.%s must be positive, got %s", name, d))
		}
	}
	return errors.Join(errs...)
}
