package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/cli"
	"github.com/bananas-go/bananas/runtime/internal/dial"
	"github.com/bananas-go/bananas/runtime/internal/shell"
)

// Main is the whole application binary: it reads the configuration from the
// environment (flags override), registers the packages' tasks, and runs the
// subcommand of os.Args, worker when none is named. `app help` (or `app -h`)
// lists every command and the environment; the list is printed from the
// command tables (package cli), so it is not repeated here. It exits 0 on
// success, 1 on failure and 2 on a usage or configuration error; SIGINT and
// SIGTERM shut a worker down gracefully.
//
//	func main() { runtime.Main(tasks.Register, billing.Register) }
func Main(register ...func(*Worker)) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := RunCommand(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, register...)
	stop()
	os.Exit(code)
}

// Exit statuses of RunCommand.
const (
	ExitOK      = cli.ExitOK
	ExitFailure = cli.ExitFailure
	ExitUsage   = cli.ExitUsage
)

// RunCommand is Main without the process around it: arguments, environment
// and output are passed in, and the exit status is returned. The process
// shell (configuration, logger, listeners, the worker, scheduler and api
// commands) is package shell's; the runtime it runs is this package's
// (shellProgram).
func RunCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, register ...func(*Worker)) int {
	return shell.Run(ctx, args, getenv, stdout, stderr, shellProgram(register))
}

// Config is the process configuration Main reads from the environment (and
// flags override): one field per variable of docs/OPERATIONS.md
// ("Configuration"), RedisURL for REDIS_URL, Mode for WORKER_MODE and so on.
type Config = shell.Config

// Worker modes (WORKER_MODE).
const (
	ModeThin           = shell.ModeThin           // one process does everything: all priorities, low concurrency (2)
	ModeDefault        = shell.ModeDefault        // the routes and priorities configured, WORKER_CONCURRENCY jobs at once
	ModeSpecialized    = shell.ModeSpecialized    // only the priorities of WORKER_PRIORITIES (which must be set)
	ModeJobSpecialized = shell.ModeJobSpecialized // only the task names of WORKER_JOB_TYPES (which must be set)
	ModeSchedulerOnly  = shell.ModeSchedulerOnly  // cron and the promoter, no jobs
)

// LoadConfig reads and validates the environment through getenv. The first
// bad variable is the error, naming it and the values it accepts.
func LoadConfig(getenv func(string) string) (Config, error) {
	return shell.LoadConfig(getenv, configRules)
}

// configRules are the runtime's defaults and its check of a Redis URL.
var configRules = shell.Rules{
	JobTimeout: DefaultTimeout, MaxRetries: DefaultMaxRetries,
	ResultTTLSuccess: DefaultResultTTL, ResultTTLFailure: DefaultFailureTTL,
	CheckRedisURL: dial.Check, RedactURL: dial.Redact,
}

// shellProgram is the runtime behind the shell: a Client, and a Worker of the
// configuration with the packages' tasks registered.
func shellProgram(register []func(*Worker)) shell.Program {
	return shell.Program{
		Rules:      configRules,
		LogRedisTo: dial.LogTo, // go-redis's lines as the program's (see dial.GoRedisLogger)
		Connect: func(ctx context.Context, cfg *Config, log *slog.Logger) (shell.Session, error) {
			opts := []ConnectOption{WithNamespace(cfg.Namespace), DefaultRetries(cfg.MaxRetries), CompressOver(cfg.CompressOver), WithKeys(cfg.Keys...)}
			store, err := openHistory(ctx, cfg.HistoryURL)
			if err != nil {
				return nil, err
			}
			if store != nil {
				opts = append(opts, WithHistory(store))
			}
			c, err := Connect(ctx, cfg.RedisURL, opts...)
			if err != nil {
				if store != nil {
					store.Close()
				}
				return nil, err
			}
			w := NewWorker(c, workerOptions(cfg, log))
			for _, r := range register {
				r(w)
			}
			w.mode = cfg.Mode
			relay, err := openOutbox(ctx, OutboxConfig{URL: cfg.OutboxURL, Client: c, Tasks: w.Tasks(), Logger: log})
			if err != nil {
				_ = session{c: c, w: w}.Close()
				return nil, err
			}
			return session{c: c, w: w, relay: relay, log: log}, nil
		},
	}
}

// session is shell.Session over a Client and a Worker of it.
type session struct {
	c     *Client
	w     *Worker
	relay OutboxRelay // OUTBOX_URL's, or nil
	log   *slog.Logger
}

func (s session) Admin() admin.Admin            { return s.w.Inspector() }
func (s session) Tasks() []string               { return s.w.Tasks() }
func (s session) MetricsHandler() http.Handler  { return s.c.MetricsHandler() }
func (s session) Run(ctx context.Context) error { return runWithRelay(ctx, s.w, s.relay, s.log) }
func (s session) Close() error {
	if s.relay != nil {
		s.relay.Close()
	}
	err := s.c.Close()
	if h := s.c.History(); h != nil {
		h.Close()
	}
	return err
}
func (s session) APIHandler(o shell.HandlerOptions) http.Handler {
	tokens := make([]APIToken, len(o.Tokens))
	for i, t := range o.Tokens {
		tokens[i] = APIToken{Name: t.Name, Role: string(t.Role), Token: t.Token}
	}
	return APIHandler(s.w.Inspector(), APIOptions{Token: o.Token, Tokens: tokens, ReadOnly: o.ReadOnly, MetricsNeedToken: o.MetricsNeedToken, Logger: o.Logger})
}

// workerOptions turns the configuration into the options of a worker in its mode.
func workerOptions(c *Config, log *slog.Logger) WorkerOptions {
	o := WorkerOptions{
		Routes: c.Routes, Priorities: c.Priorities, Concurrency: shell.WorkerConcurrency(c), Lease: c.Lease,
		ShutdownTimeout: c.ShutdownTimeout, JobTimeout: c.JobTimeout,
		ResultTTL: c.ResultTTLSuccess, FailureTTL: c.ResultTTLFailure, Logger: log,
		HistoryRetention: c.HistoryRetention, HistoryBacklog: c.HistoryBacklog, HistoryMigrate: c.HistoryMigrate,
	}
	switch c.Mode {
	case ModeThin:
		o.Priorities = []Priority{PriorityHigh, PriorityNormal, PriorityLow}
	case ModeJobSpecialized:
		o.JobTypes = c.JobTypes
	case ModeSchedulerOnly:
		o.SchedulerOnly = true
	}
	return o
}

// openHistory opens the task history of HISTORY_URL, or returns nil when
// url is "". A URL whose store the program does not import is a usage error
// naming the import. The store is not reached here: a worker starts, and
// runs its jobs, while it is down (its writer migrates the schema, with
// HISTORY_MIGRATE, and writes when it answers).
func openHistory(ctx context.Context, url string) (history.Store, error) {
	if url == "" {
		return nil, nil
	}
	store, err := history.Open(ctx, url)
	if errors.Is(err, history.ErrNoStore) {
		return nil, cli.Usage(fmt.Errorf("HISTORY_URL: %w", err))
	}
	if err != nil {
		return nil, fmt.Errorf("HISTORY_URL: %w", err)
	}
	return store, nil
}
