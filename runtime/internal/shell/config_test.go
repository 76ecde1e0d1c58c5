package shell

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

func TestLoadConfig_DefaultsWithoutEnvironment(t *testing.T) {
	c, err := LoadConfig(env(), testRules)
	if err != nil {
		t.Fatal(err)
	}
	if c.RedisURL != "redis://localhost:6379" || c.Namespace != "bananas" || c.Mode != ModeDefault || c.Concurrency != 10 {
		t.Errorf("url, namespace, mode, concurrency = %q %q %q %d", c.RedisURL, c.Namespace, c.Mode, c.Concurrency)
	}
	if !slices.Equal(c.Priorities, []queue.Priority{queue.High, queue.Normal, queue.Low}) || !slices.Equal(c.Routes, []string{"default"}) {
		t.Errorf("priorities %v, routes %v", c.Priorities, c.Routes)
	}
	if c.JobTimeout != testRules.JobTimeout || c.MaxRetries != testRules.MaxRetries ||
		c.ResultTTLSuccess != testRules.ResultTTLSuccess || c.ResultTTLFailure != testRules.ResultTTLFailure {
		t.Errorf("job settings not the runtime's defaults: %+v", c)
	}
	if c.LogLevel != slog.LevelInfo || c.LogFormat != "text" || c.APIPort != 0 || c.MetricsAddr != "" {
		t.Errorf("log %v %q, api %d, metrics %q", c.LogLevel, c.LogFormat, c.APIPort, c.MetricsAddr)
	}
}

func TestLoadConfig_ReadsEveryKindOfVariable(t *testing.T) {
	c, err := LoadConfig(env(
		"REDIS_URL", "mem://", "WORKER_MODE", "specialized", "WORKER_PRIORITIES", " high , low ",
		"WORKER_ROUTING_KEYS", "emails,default", "JOB_TIMEOUT", "90s", "API_PORT", "8081",
		"API_READ_ONLY", "1", "METRICS_PORT", "9100", "LOG_LEVEL", "debug", "LOG_FORMAT", "json",
	), testRules)
	if err != nil {
		t.Fatal(err)
	}
	if c.RedisURL != "mem://" || c.Mode != ModeSpecialized || !slices.Equal(c.Priorities, []queue.Priority{queue.High, queue.Low}) {
		t.Errorf("url %q, mode %q, priorities %v", c.RedisURL, c.Mode, c.Priorities)
	}
	if !slices.Equal(c.Routes, []string{"emails", "default"}) || c.JobTimeout != 90*time.Second || c.APIPort != 8081 || !c.APIReadOnly {
		t.Errorf("routes %v, timeout %v, api %d read-only %v", c.Routes, c.JobTimeout, c.APIPort, c.APIReadOnly)
	}
	if c.MetricsAddr != ":9100" || c.LogLevel != slog.LevelDebug || c.LogFormat != "json" {
		t.Errorf("metrics %q, log %v %q", c.MetricsAddr, c.LogLevel, c.LogFormat)
	}
}

// Every bad value is an error naming the variable, so that an operator
// knows what to fix.
func TestLoadConfig_ErrorNamesTheVariable(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"REDIS_URL", "http://x", `REDIS_URL="http://x" is invalid: want redis:// or mem://`},
		{"REDIS_URL", "http://user:secret@x", `REDIS_URL="redis://***@x" is invalid`},
		{"BANANAS_NAMESPACE", "a b", `BANANAS_NAMESPACE="a b" is invalid`},
		{"WORKER_MODE", "fast", `WORKER_MODE="fast" is invalid: use thin, default`},
		{"WORKER_CONCURRENCY", "0", `WORKER_CONCURRENCY="0" is invalid: a whole number from 1 to 100000`},
		{"WORKER_PRIORITIES", "urgent", `WORKER_PRIORITIES="urgent" is invalid`},
		{"WORKER_ROUTING_KEYS", "a b", `WORKER_ROUTING_KEYS="a b" is invalid: route "a b"`},
		{"JOB_TIMEOUT", "-1s", `JOB_TIMEOUT="-1s" is invalid: a positive Go duration`},
		{"MAX_RETRIES", "-1", `MAX_RETRIES="-1" is invalid`},
		{"API_PORT", "70000", `API_PORT="70000" is invalid: a port number from 1 to 65535`},
		{"API_READ_ONLY", "maybe", `API_READ_ONLY="maybe" is invalid`},
		{"METRICS_PORT", "host:9100", `METRICS_PORT="host:9100" is invalid: a port from 1 to 65535, or IP:port`},
		{"LOG_LEVEL", "loud", `LOG_LEVEL="loud" is invalid`},
		{"LOG_FORMAT", "xml", `LOG_FORMAT="xml" is invalid: use text or json`},
		{"LEASE_DURATION", "10ms", `LEASE_DURATION="10ms" is invalid: at least 100ms`},
		{"API_TOKENS", "ci:read:secret-1,ops:root:secret-2", `API_TOKENS is invalid: entry 2 (ops): role "root" is not read, operate or admin`},
		{"API_TOKENS", "ci:read:secret-1,ops-secret-2", `API_TOKENS is invalid: entry 2: want name:role:token`},
	} {
		_, err := LoadConfig(env(tc.name, tc.value), testRules)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: error %v, want it to contain %q", tc.name, tc.value, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error shows the password: %v", tc.name, err)
		}
	}
}

func TestLoadConfig_ChecksWhatGoesTogether(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"WORKER_MODE", "specialized"}, "WORKER_MODE=specialized needs WORKER_PRIORITIES"},
		{[]string{"WORKER_MODE", "job-specialized"}, "WORKER_MODE=job-specialized needs WORKER_JOB_TYPES"},
		{[]string{"API_PORT", "9100", "METRICS_PORT", "127.0.0.1:9100"}, "a port other than API_PORT (9100)"},
	} {
		_, err := LoadConfig(env(tc.env...), testRules)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.env, err, tc.want)
		}
	}
}

func TestWorkerConcurrency_ThinRunsTwoUnlessSet(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want int
	}{
		{[]string{"WORKER_MODE", "thin"}, thinConcurrency},
		{[]string{"WORKER_MODE", "thin", "WORKER_CONCURRENCY", "7"}, 7},
		{[]string{"WORKER_MODE", "default"}, 10},
	} {
		c, err := LoadConfig(env(tc.env...), testRules)
		if err != nil {
			t.Fatal(err)
		}
		if got := WorkerConcurrency(&c); got != tc.want {
			t.Errorf("%v: concurrency %d, want %d", tc.env, got, tc.want)
		}
	}
}
