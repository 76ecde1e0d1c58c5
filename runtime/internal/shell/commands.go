package shell

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bananas-go/bananas/runtime/internal/cli"
)

// workerFlags registers a flag for every configuration variable, defaulting to
// the environment's value, and applies those given on the command line.
func (a *app) workerFlags(e *cli.Env, usage string) (func([]string) error, *Config) {
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

func (a *app) cmdWorker(e *cli.Env, args []string) error {
	parseArgs, cfg := a.workerFlags(e, "[flags]: run jobs until SIGINT or SIGTERM, then shut down gracefully")
	if err := parseArgs(args); err != nil {
		return err
	}
	return a.runWorker(e, cfg)
}

func (a *app) cmdScheduler(e *cli.Env, args []string) error {
	parseArgs, cfg := a.workerFlags(e, "[flags]: run cron entries and the promoter (no jobs) until SIGINT or SIGTERM")
	if err := parseArgs(args); err != nil {
		return err
	}
	cfg.Mode = ModeSchedulerOnly
	return a.runWorker(e, cfg)
}

func (a *app) runWorker(e *cli.Env, cfg *Config) error {
	a.cfg = *cfg
	log := a.logger(cfg)
	a.p.LogRedisTo(log)
	s, err := a.connect(e.Ctx, cfg, log)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := checkJobTypes(cfg, s.Tasks()); err != nil {
		return cli.Usage(err)
	}
	log.Info("bananas: starting", "mode", cfg.Mode, "redis", a.p.Rules.RedactURL(cfg.RedisURL), "namespace", cfg.Namespace)
	stop, _, err := startListeners(cfg, s, log, cfg.APIPort != 0)
	if err != nil {
		return cli.Usage(err)
	}
	defer stop()
	start := time.Now()
	err = s.Run(e.Ctx)
	log.Info("bananas: exiting", "ran", time.Since(start).Round(time.Millisecond))
	return err
}

// checkJobTypes checks that a job-specialized worker's WORKER_JOB_TYPES
// name registered tasks: a typo would leave the worker idle for ever.
func checkJobTypes(cfg *Config, known []string) error {
	if cfg.Mode != ModeJobSpecialized {
		return nil
	}
	for _, t := range cfg.JobTypes {
		if !slices.Contains(known, t) {
			return fmt.Errorf("WORKER_JOB_TYPES names %q, which no registered task has (registered: %s)", t, strings.Join(known, ", "))
		}
	}
	return nil
}

// cmdAPI serves the HTTP API (and /metrics) without running jobs, until
// SIGINT or SIGTERM.
func (a *app) cmdAPI(e *cli.Env, args []string) error {
	parseArgs, cfg := a.workerFlags(e, "[flags]: serve the HTTP API on API_PORT (default 8080) until SIGINT or SIGTERM; runs no jobs")
	if err := parseArgs(args); err != nil {
		return err
	}
	if cfg.APIPort == 0 {
		cfg.APIPort = 8080
	}
	a.cfg = *cfg
	log := a.logger(cfg)
	a.p.LogRedisTo(log)
	s, err := a.connect(e.Ctx, cfg, log)
	if err != nil {
		return err
	}
	defer s.Close()
	stop, failed, err := startListeners(cfg, s, log, true)
	if err != nil {
		return cli.Usage(err)
	}
	defer stop()
	select {
	case <-e.Ctx.Done():
		return nil
	case err := <-failed:
		return err // Serve failed
	}
}
