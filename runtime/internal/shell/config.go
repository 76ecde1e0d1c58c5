package shell

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/access"
)

// Worker modes (WORKER_MODE).
const (
	ModeThin           = "thin"            // one process does everything: all priorities, low concurrency (2)
	ModeDefault        = "default"         // the routes and priorities configured, WORKER_CONCURRENCY jobs at once
	ModeSpecialized    = "specialized"     // only the priorities of WORKER_PRIORITIES (which must be set)
	ModeJobSpecialized = "job-specialized" // only the task names of WORKER_JOB_TYPES (which must be set)
	ModeSchedulerOnly  = "scheduler-only"  // cron and the promoter, no jobs
)

// thinConcurrency is the concurrency of thin mode unless WORKER_CONCURRENCY says otherwise.
const thinConcurrency = 2

// Config is the process configuration read from the environment (and
// flags override).
type Config struct {
	RedisURL         string
	Namespace        string
	Mode             string
	Concurrency      int
	concurrencySet   bool
	Priorities       []Priority
	prioritiesSet    bool
	Routes           []string
	JobTypes         []string
	JobTimeout       time.Duration
	MaxRetries       int
	ShutdownTimeout  time.Duration
	Lease            time.Duration
	ResultTTLSuccess time.Duration
	ResultTTLFailure time.Duration
	APIPort          int
	APIToken         string
	// APITokens are the tokens of API_TOKENS, each with its name and role.
	APITokens   []access.Token
	APIReadOnly bool
	LogLevel    slog.Level
	LogFormat   string
	// MetricsAddr is where METRICS_PORT serves /metrics alone, without the
	// token: ":9100" (every interface) or "10.0.0.5:9100"; "" serves it on
	// the API's port only.
	MetricsAddr string
	// HistoryURL is where the task history is kept (HISTORY_URL), "" for
	// none; HistoryRetention how long it keeps a row, HistoryBacklog how
	// many finished jobs a route keeps in Redis while it cannot be written.
	HistoryURL       string
	HistoryRetention time.Duration
	HistoryBacklog   int64
	// HistoryMigrate: the program migrates the history's schema at start
	// (HISTORY_MIGRATE, default on; off when operators migrate it).
	HistoryMigrate bool
	// OutboxURL is the PostgreSQL database of the transactional outbox
	// (OUTBOX_URL), "" for none: workers run its relay.
	OutboxURL string
	// CompressOver: payloads longer than this many bytes are stored
	// compressed (BANANAS_COMPRESS_OVER, default 4096; 0 or less: none).
	CompressOver int
	// Keys seal args, results and progress notes (BANANAS_KEYS), newest
	// first; none: nothing is sealed.
	Keys []queue.Key
	// rules check REDIS_URL when a flag sets it after LoadConfig.
	rules *Rules
}

// Priority is a queue priority, as runtime.Priority is.
type Priority = queue.Priority

// Rules are what the configuration takes from package runtime: the
// defaults of the job settings, and the check of a Redis URL, which only
// the runtime's dialer knows.
type Rules struct {
	JobTimeout       time.Duration
	MaxRetries       int
	ResultTTLSuccess time.Duration
	ResultTTLFailure time.Duration
	// CheckRedisURL reports what is wrong with a Redis URL, without connecting.
	CheckRedisURL func(url string) error
	// RedactURL hides a password in a URL shown in an error or a log line.
	RedactURL func(url string) string
}

// envError names the variable that is wrong and what it accepts.
func envError(name, value, accepts string) error {
	return fmt.Errorf("%s=%q is invalid: %s", name, value, accepts)
}

// LoadConfig reads and validates the environment through getenv, over the
// defaults of r. The first bad variable is the error, naming it and the
// values it accepts.
func LoadConfig(getenv func(string) string, r Rules) (Config, error) {
	c := Config{
		RedisURL: "redis://localhost:6379", Namespace: "bananas", Mode: ModeDefault, Concurrency: 10,
		Priorities: []Priority{queue.High, queue.Normal, queue.Low}, Routes: []string{"default"},
		JobTimeout: r.JobTimeout, MaxRetries: r.MaxRetries, ShutdownTimeout: 30 * time.Second,
		Lease: 30 * time.Second, ResultTTLSuccess: r.ResultTTLSuccess, ResultTTLFailure: r.ResultTTLFailure,
		LogLevel: slog.LevelInfo, LogFormat: "text", rules: &r,
		HistoryRetention: 30 * 24 * time.Hour, HistoryBacklog: 1_000_000, HistoryMigrate: true,
		CompressOver: queue.DefaultCompressOver,
	}
	for _, v := range configVars {
		if raw := strings.TrimSpace(getenv(v.name)); raw != "" {
			if err := v.set(&c, raw); err != nil {
				return c, err
			}
		}
	}
	return c, c.check()
}

// configVar is one environment variable (and the flag that overrides it).
type configVar struct {
	name, flag, help string
	set              func(c *Config, raw string) error
}

var configVars = []configVar{
	{"REDIS_URL", "redis-url", "Redis URL: redis://, rediss://, redis+cluster://h1,h2, rediss+cluster://h1,h2 or mem://", func(c *Config, v string) error {
		if err := c.rules.CheckRedisURL(v); err != nil {
			return envError("REDIS_URL", c.rules.RedactURL(v), err.Error())
		}
		c.RedisURL = v
		return nil
	}},
	{"BANANAS_NAMESPACE", "namespace", "key namespace", func(c *Config, v string) error {
		if !queue.ValidNamespace(v) {
			return envError("BANANAS_NAMESPACE", v, "1-64 characters without spaces or braces")
		}
		c.Namespace = v
		return nil
	}},
	{"WORKER_MODE", "mode", "thin|default|specialized|job-specialized|scheduler-only", func(c *Config, v string) error {
		switch v {
		case ModeThin, ModeDefault, ModeSpecialized, ModeJobSpecialized, ModeSchedulerOnly:
			c.Mode = v
			return nil
		}
		return envError("WORKER_MODE", v, "use thin, default, specialized, job-specialized or scheduler-only")
	}},
	{"WORKER_CONCURRENCY", "concurrency", "jobs run at once", func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100000 {
			return envError("WORKER_CONCURRENCY", v, "a whole number from 1 to 100000")
		}
		c.Concurrency, c.concurrencySet = n, true
		return nil
	}},
	{"WORKER_PRIORITIES", "priorities", "comma-separated subset of high,normal,low", func(c *Config, v string) error {
		var ps []Priority
		for _, p := range splitList(v) {
			if !queue.ValidPriority(p) {
				return envError("WORKER_PRIORITIES", v, "a comma-separated subset of high,normal,low")
			}
			ps = append(ps, Priority(p))
		}
		if len(ps) == 0 {
			return envError("WORKER_PRIORITIES", v, "a comma-separated subset of high,normal,low")
		}
		c.Priorities, c.prioritiesSet = ps, true
		return nil
	}},
	{"WORKER_ROUTING_KEYS", "routes", "comma-separated routes, in order of preference", func(c *Config, v string) error {
		rs := splitList(v)
		for _, r := range rs {
			if !queue.ValidRoute(r) {
				return envError("WORKER_ROUTING_KEYS", v, fmt.Sprintf("route %q is not 1-64 of A-Z a-z 0-9 _ -", r))
			}
		}
		if len(rs) == 0 {
			return envError("WORKER_ROUTING_KEYS", v, "at least one route")
		}
		c.Routes = rs
		return nil
	}},
	{"WORKER_JOB_TYPES", "job-types", "comma-separated task names", func(c *Config, v string) error {
		c.JobTypes = splitList(v)
		return nil
	}},
	{"JOB_TIMEOUT", "job-timeout", "default run timeout", durationVar("JOB_TIMEOUT", func(c *Config, d time.Duration) { c.JobTimeout = d })},
	{"MAX_RETRIES", "max-retries", "default retries", func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return envError("MAX_RETRIES", v, "a whole number >= 0")
		}
		c.MaxRetries = n
		return nil
	}},
	{"SHUTDOWN_TIMEOUT", "shutdown-timeout", "grace period for running jobs at shutdown", durationVar("SHUTDOWN_TIMEOUT", func(c *Config, d time.Duration) { c.ShutdownTimeout = d })},
	{"LEASE_DURATION", "lease", "lease of a running job", durationVar("LEASE_DURATION", func(c *Config, d time.Duration) { c.Lease = d })},
	{"RESULT_TTL_SUCCESS", "result-ttl-success", "how long results are kept", durationVar("RESULT_TTL_SUCCESS", func(c *Config, d time.Duration) { c.ResultTTLSuccess = d })},
	{"RESULT_TTL_FAILURE", "result-ttl-failure", "how long failures are kept", durationVar("RESULT_TTL_FAILURE", func(c *Config, d time.Duration) { c.ResultTTLFailure = d })},
	{"API_PORT", "api-port", "port of the HTTP API", func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			return envError("API_PORT", v, "a port number from 1 to 65535")
		}
		c.APIPort = n
		return nil
	}},
	{"API_TOKEN", "api-token", "bearer token of the HTTP API (and, when set, it listens on every interface)", func(c *Config, v string) error { c.APIToken = v; return nil }},
	{"API_TOKENS", "api-tokens", "name:role:token,… tokens of the HTTP API, each with its role: read (GETs), operate (also cancel, pause, replay, schedules…) or admin (everything); API_TOKEN is one more, an admin", func(c *Config, v string) error {
		ts, err := access.Parse(v)
		if err != nil {
			// The value holds secrets: the error names the entry, not the value.
			return fmt.Errorf("API_TOKENS is invalid: %w", err)
		}
		c.APITokens = ts
		return nil
	}},
	{"API_READ_ONLY", "api-read-only", "1: the HTTP API serves reads and refuses actions", func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return envError("API_READ_ONLY", v, "use 1 or 0 (true or false)")
		}
		c.APIReadOnly = b
		return nil
	}},
	{"METRICS_PORT", "metrics-port", "port (or IP:port) of a listener serving /metrics alone, without the token (default: /metrics on API_PORT, behind API_TOKEN when set)", func(c *Config, v string) error {
		addr, err := metricsAddr(v)
		if err != nil {
			return envError("METRICS_PORT", v, err.Error())
		}
		c.MetricsAddr = addr
		return nil
	}},
	{"HISTORY_URL", "history-url", "task history store: postgres://user:pass@host/db (the program imports github.com/bananas-go/bananas/history/postgres)", func(c *Config, v string) error {
		u, err := url.Parse(v)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return envError("HISTORY_URL", c.rules.RedactURL(v), "a URL such as postgres://user:pass@host:5432/db")
		}
		c.HistoryURL = v
		return nil
	}},
	{"HISTORY_RETENTION", "history-retention", "how long the task history keeps a row (default 720h: 30 days)", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Hour {
			return envError("HISTORY_RETENTION", v, "a Go duration of at least 1h, such as 720h")
		}
		c.HistoryRetention = d
		return nil
	}},
	{"HISTORY_MIGRATE", "history-migrate", "1: workers create and migrate the task history's schema when they start (default); 0: leave it to `app history migrate` or the operators", func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return envError("HISTORY_MIGRATE", v, "use 1 or 0 (true or false)")
		}
		c.HistoryMigrate = b
		return nil
	}},
	{"HISTORY_BACKLOG", "history-backlog", "finished jobs a route keeps in Redis while the task history cannot be written; the oldest past it are dropped and counted (default 1000000)", func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return envError("HISTORY_BACKLOG", v, "a whole number >= 1")
		}
		c.HistoryBacklog = n
		return nil
	}},
	{"OUTBOX_URL", "outbox-url", "transactional outbox: postgres://user:pass@host/db; workers move its committed jobs into Redis (the program imports github.com/bananas-go/bananas/outbox)", func(c *Config, v string) error {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			return envError("OUTBOX_URL", c.rules.RedactURL(v), "a URL such as postgres://user:pass@host:5432/db")
		}
		c.OutboxURL = v
		return nil
	}},
	{"BANANAS_COMPRESS_OVER", "compress-over", "args and results longer than this many bytes are stored compressed, zstd (default 4096; 0 or less: never)", func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return envError("BANANAS_COMPRESS_OVER", v, "a whole number of bytes (0 or less: compress nothing)")
		}
		c.CompressOver = n
		return nil
	}},
	{"BANANAS_KEYS", "keys", "keys sealing args, results and progress notes (AES-256-GCM): id2:base64key,id1:base64key, newest first, 32-byte keys", func(c *Config, v string) error {
		keys, err := queue.ParseKeys(v)
		if err != nil {
			return fmt.Errorf("BANANAS_KEYS is invalid: %w", err)
		}
		c.Keys = keys
		return nil
	}},
	{"LOG_LEVEL", "log-level", "debug|info|warn|error", func(c *Config, v string) error {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return envError("LOG_LEVEL", v, "use debug, info, warn or error")
		}
		return nil
	}},
	{"LOG_FORMAT", "log-format", "text|json", func(c *Config, v string) error {
		if v != "text" && v != "json" {
			return envError("LOG_FORMAT", v, "use text or json")
		}
		c.LogFormat = v
		return nil
	}},
}

// metricsAddr is the listen address of METRICS_PORT: a port (every
// interface) or an IP and a port (that interface only).
func metricsAddr(v string) (string, error) {
	const accepts = "a port from 1 to 65535, or IP:port (such as 10.0.0.5:9100) to listen on one interface"
	host, port := "", v
	if strings.Contains(v, ":") {
		h, p, err := net.SplitHostPort(v)
		if err != nil || (h != "" && net.ParseIP(h) == nil) {
			return "", fmt.Errorf("%s", accepts)
		}
		host, port = h, p
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("%s", accepts)
	}
	return net.JoinHostPort(host, strconv.Itoa(n)), nil
}

// metricsPort is the port of MetricsAddr, 0 when it is not set.
func (c *Config) metricsPort() int {
	_, p, err := net.SplitHostPort(c.MetricsAddr)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

func durationVar(name string, set func(*Config, time.Duration)) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return envError(name, v, "a positive Go duration such as 30s, 5m or 1h")
		}
		set(c, d)
		return nil
	}
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// check validates what only makes sense together.
func (c *Config) check() error {
	switch c.Mode {
	case ModeSpecialized:
		if !c.prioritiesSet {
			return fmt.Errorf("WORKER_MODE=specialized needs WORKER_PRIORITIES (a subset of high,normal,low)")
		}
	case ModeJobSpecialized:
		if len(c.JobTypes) == 0 {
			return fmt.Errorf("WORKER_MODE=job-specialized needs WORKER_JOB_TYPES (comma-separated task names)")
		}
	}
	if c.APIPort != 0 && c.metricsPort() == c.APIPort {
		return envError("METRICS_PORT", c.MetricsAddr, fmt.Sprintf("a port other than API_PORT (%d), which serves /metrics already", c.APIPort))
	}
	if c.Lease < 100*time.Millisecond {
		return envError("LEASE_DURATION", c.Lease.String(), "at least 100ms")
	}
	return nil
}

// WorkerConcurrency is how many jobs a worker of c's mode runs at once:
// thin mode runs thinConcurrency unless WORKER_CONCURRENCY says otherwise.
// It is a function, not a method, so that runtime.Config (an alias of
// Config) shows no method of the shell's.
func WorkerConcurrency(c *Config) int {
	if c.Mode == ModeThin && !c.concurrencySet {
		return thinConcurrency
	}
	return c.Concurrency
}
