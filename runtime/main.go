package runtime

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/bananas-go/bananas/runtime/internal/cli"
)

// Main is the whole application binary: it reads the configuration from the
// environment (flags override), registers the packages' tasks, and runs the
// subcommand of os.Args — worker (the default), scheduler, api, enqueue,
// job (job cancel, job delete), jobs, queues, pause, resume, cancel, dlq (list,
// replay, purge), cron (list, run), workers; -h or help lists them with
// the environment. It exits 0 on success, 1 on failure and
// 2 on a usage or configuration error; SIGINT and SIGTERM shut a worker down
// gracefully.
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
// and output are passed in, and the exit status is returned. The command
// line itself is package cli's; the program is this package's (cliApp).
func RunCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, register ...func(*Worker)) int {
	rw := cli.IO{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, Terminal: term.IsTerminal(int(os.Stdin.Fd()))}
	return cli.Run(ctx, args, rw, &cliApp{getenv: getenv, register: register, stderr: stderr})
}

// cliApp is the program behind the command line: its configuration, its
// registered tasks, and the commands that run the runtime.
type cliApp struct {
	getenv   func(string) string
	register []func(*Worker)
	stderr   io.Writer
	cfg      Config
}

func (a *cliApp) Configure() error {
	cfg, err := LoadConfig(a.getenv)
	a.cfg = cfg
	if err == nil {
		logRedisTo(a.logger(&cfg)) // go-redis's lines as the program's (see redisLogger)
	}
	return err
}

func (a *cliApp) Commands() map[string]cli.Command {
	return map[string]cli.Command{"worker": a.cmdWorker, "scheduler": a.cmdScheduler, "api": a.cmdAPI}
}

func (a *cliApp) Environment() []cli.EnvVar {
	out := make([]cli.EnvVar, len(configVars))
	for i, v := range configVars {
		out[i] = cli.EnvVar{Name: v.name, Help: v.help}
	}
	return out
}

// Open connects with the configured URL and namespace: the admin layer of
// the admin commands, the Inspector with the registered tasks.
func (a *cliApp) Open(ctx context.Context) (cli.Conn, error) {
	c, err := a.connect(ctx)
	if err != nil {
		return cli.Conn{}, err
	}
	return cli.Conn{Admin: NewInspector(c, a.register...), Embedded: strings.HasPrefix(a.cfg.RedisURL, "mem://"), Close: c.Close}, nil
}

func (a *cliApp) connect(ctx context.Context) (*Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return Connect(ctx, a.cfg.RedisURL, WithNamespace(a.cfg.Namespace), DefaultRetries(a.cfg.MaxRetries))
}

func (a *cliApp) logger(cfg *Config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(a.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(a.stderr, opts))
}
