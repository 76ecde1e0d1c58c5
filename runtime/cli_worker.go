package runtime

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// workerFlags registers a flag for every configuration variable, defaulting to
// the environment's value, and applies those given on the command line.
func workerFlags(e *env, usage string) (func([]string) error, *Config) {
	fs := e.flags(usage)
	cfg := e.cfg
	vals := map[string]*string{}
	for _, v := range configVars {
		vals[v.name] = fs.String(v.flag, "", v.help+" (env "+v.name+")")
	}
	return func(args []string) error {
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) > 0 {
			return usageError{fmt.Errorf("unexpected argument %q", pos[0])}
		}
		for _, v := range configVars {
			if raw := *vals[v.name]; raw != "" {
				if err := v.set(&cfg, raw); err != nil {
					return usageError{fmt.Errorf("--%s: %w", v.flag, err)}
				}
			}
		}
		if err := cfg.check(); err != nil {
			return usageError{err}
		}
		return nil
	}, &cfg
}

func cmdWorker(e *env, args []string) error {
	parseArgs, cfg := workerFlags(e, "[flags]: run jobs until SIGINT or SIGTERM, then shut down gracefully")
	if err := parseArgs(args); err != nil {
		return err
	}
	return runWorker(e, cfg)
}

func cmdScheduler(e *env, args []string) error {
	parseArgs, cfg := workerFlags(e, "[flags]: run cron entries and the promoter (no jobs) until SIGINT or SIGTERM")
	if err := parseArgs(args); err != nil {
		return err
	}
	cfg.Mode = ModeSchedulerOnly
	return runWorker(e, cfg)
}

func runWorker(e *env, cfg *Config) error {
	e.cfg = *cfg
	log := e.logger()
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer e.close()
	w := e.registry(c, cfg.workerOptions(log))
	w.mode = cfg.Mode
	if cfg.Mode == ModeJobSpecialized {
		known := w.Tasks()
		for _, t := range cfg.JobTypes {
			if !slices.Contains(known, t) {
				return usageError{fmt.Errorf("WORKER_JOB_TYPES names %q, which no registered task has (registered: %s)", t, strings.Join(known, ", "))}
			}
		}
	}
	log.Info("bananas: starting", "mode", cfg.Mode, "redis", redactURL(cfg.RedisURL), "namespace", cfg.Namespace)
	if cfg.APIPort != 0 {
		s, err := startAPI(cfg, w.Inspector(), log)
		if err != nil {
			return usageError{err}
		}
		defer func() {
			if err := s.Shutdown(); err != nil {
				log.Warn("bananas: HTTP API shutdown", "err", err)
			}
		}()
	}
	start := time.Now()
	err = w.Run(e.ctx)
	log.Info("bananas: exiting", "ran", time.Since(start).Round(time.Millisecond))
	return err
}
