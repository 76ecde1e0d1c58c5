package shell

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/cli"
)

// connectTimeout bounds connecting to Redis at the start of a command.
const connectTimeout = 10 * time.Second

// Run runs the command of args with the environment of getenv and the
// program p, writing to stdout and stderr (stdin is the process's), and
// returns the exit status (cli.ExitOK, cli.ExitFailure, cli.ExitUsage).
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, p Program) int {
	rw := cli.IO{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, Terminal: term.IsTerminal(int(os.Stdin.Fd()))}
	return cli.Run(ctx, args, rw, &app{getenv: getenv, p: p, stderr: stderr})
}

// app is the program behind the command line: its configuration, the
// runtime's side of the seam, and the commands that run the runtime.
type app struct {
	getenv func(string) string
	p      Program
	stderr io.Writer
	cfg    Config
}

func (a *app) Configure() error {
	cfg, err := LoadConfig(a.getenv, a.p.Rules)
	a.cfg = cfg
	if err == nil {
		// A command prints only its own words: the Redis client's lines go
		// to the program's logger at debug level (LOG_LEVEL=debug shows
		// them). The worker, scheduler and api commands, which log, send
		// them to their logger at their own levels instead (runWorker,
		// cmdAPI).
		a.p.LogRedisTo(slog.New(atDebug{a.logger(&cfg).Handler()}))
	}
	return err
}

// atDebug logs every record at debug level, whatever level it was logged at.
type atDebug struct{ h slog.Handler }

func (d atDebug) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d atDebug) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}

func (d atDebug) WithAttrs(as []slog.Attr) slog.Handler { return atDebug{d.h.WithAttrs(as)} }
func (d atDebug) WithGroup(name string) slog.Handler    { return atDebug{d.h.WithGroup(name)} }

// Commands are the commands that run the runtime, with their lines in the
// program's help.
func (a *app) Commands() []cli.Spec {
	return []cli.Spec{
		{Name: "worker", Run: a.cmdWorker, Help: [][2]string{{"worker", "run jobs (the default command)"}}},
		{Name: "scheduler", Run: a.cmdScheduler, Help: [][2]string{{"scheduler", "run cron entries and the promoter of delayed jobs and retries, no jobs"}}},
		{Name: "api", Run: a.cmdAPI, Help: [][2]string{{"api", "serve the HTTP API and /metrics (API_PORT, default 8080), no jobs"}}},
	}
}

func (a *app) Environment() []cli.EnvVar {
	out := make([]cli.EnvVar, len(configVars))
	for i, v := range configVars {
		out[i] = cli.EnvVar{Name: v.name, Help: v.help}
	}
	return out
}

// Open connects with the configured URL and namespace: the admin layer of
// the admin commands, with the registered tasks.
func (a *app) Open(ctx context.Context) (cli.Conn, error) {
	s, err := a.connect(ctx, &a.cfg, a.logger(&a.cfg))
	if err != nil {
		return cli.Conn{}, err
	}
	conn := cli.Conn{Admin: s.Admin(), Embedded: strings.HasPrefix(a.cfg.RedisURL, "mem://"), Close: s.Close}
	if r, ok := s.(interface {
		RotateKeys(context.Context) (queue.ResealCount, error)
	}); ok {
		conn.RotateKeys = r.RotateKeys
	}
	return conn, nil
}

func (a *app) connect(ctx context.Context, cfg *Config, log *slog.Logger) (Session, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	return a.p.Connect(ctx, cfg, log)
}

// logger is the program's logger: LOG_LEVEL and LOG_FORMAT, to stderr.
func (a *app) logger(cfg *Config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(a.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(a.stderr, opts))
}
