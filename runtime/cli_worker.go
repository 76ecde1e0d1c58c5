package runtime

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bananas-go/bananas/runtime/internal/cli"
)

// workerFlags registers a flag for every configuration variable, defaulting to
// the environment's value, and applies those given on the command line.
func (a *cliApp) workerFlags(e *cli.Env, usage string) (func([]string) error, *Config) {
	fs := e.Flags(usage)
	cfg := a.cfg
	vals := map[string]*string{}
	for _, v := range configVars {
		vals[v.name] = fs.String(v.flag, "", v.help+" (env "+v.name+")")
	}
	return func(args []string) error {
		pos, err := cli.Parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) > 0 {
			return cli.Usage(fmt.Errorf("unexpected argument %q", pos[0]))
		}
		for _, v := range configVars {
			if raw := *vals[v.name]; raw != "" {
				if err := v.set(&cfg, raw); err != nil {
					return cli.Usage(fmt.Errorf("--%s: %w", v.flag, err))
				}
			}
		}
		if err := cfg.check(); err != nil {
			return cli.Usage(err)
		}
		return nil
	}, &cfg
}

func (a *cliApp) cmdWorker(e *cli.Env, args []string) error {
	parseArgs, cfg := a.workerFlags(e, "[flags]: run jobs until SIGINT or SIGTERM, then shut down gracefully")
	if err := parseArgs(args); err != nil {
		return err
	}
	return a.runWorker(e, cfg)
}

func (a *cliApp) cmdScheduler(e *cli.Env, args []string) error {
	parseArgs, cfg := a.workerFlags(e, "[flags]: run cron entries and the promoter (no jobs) until SIGINT or SIGTERM")
	if err := parseArgs(args); err != nil {
		return err
	}
	cfg.Mode = ModeSchedulerOnly
	return a.runWorker(e, cfg)
}

func (a *cliApp) runWorker(e *cli.Env, cfg *Config) error {
	a.cfg = *cfg
	log := a.logger(cfg)
	logRedisTo(log)
	c, err := a.connect(e.Ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	w := NewWorker(c, cfg.workerOptions(log))
	for _, r := range a.register {
		r(w)
	}
	w.mode = cfg.Mode
	if cfg.Mode == ModeJobSpecialized {
		known := w.Tasks()
		for _, t := range cfg.JobTypes {
			if !slices.Contains(known, t) {
				return cli.Usage(fmt.Errorf("WORKER_JOB_TYPES names %q, which no registered task has (registered: %s)", t, strings.Join(known, ", ")))
			}
		}
	}
	log.Info("bananas: starting", "mode", cfg.Mode, "redis", redactURL(cfg.RedisURL), "namespace", cfg.Namespace)
	stop, _, err := startListeners(cfg, w.Inspector(), log, cfg.APIPort != 0)
	if err != nil {
		return cli.Usage(err)
	}
	defer stop()
	start := time.Now()
	err = w.Run(e.Ctx)
	log.Info("bananas: exiting", "ran", time.Since(start).Round(time.Millisecond))
	return err
}
