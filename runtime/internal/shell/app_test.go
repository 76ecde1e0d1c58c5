package shell

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime/internal/cli"
)

// stopped is a context already ended: a worker command starts, then exits.
func stopped() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// bounded is a context that ends with the test or after 10 s: a command
// that should have failed at start does not hang the test.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestWorker_FlagsOverrideTheEnvironment(t *testing.T) {
	f := &fakeProgram{}
	code, _, errOut := run(stopped(), f, env("WORKER_CONCURRENCY", "3", "WORKER_ROUTING_KEYS", "a", "LOG_FORMAT", "json"),
		"worker", "--concurrency", "5", "--mode", "thin")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	c := f.connected(t)
	if c.Concurrency != 5 || c.Mode != ModeThin || len(c.Routes) != 1 || c.Routes[0] != "a" {
		t.Errorf("concurrency %d, mode %q, routes %v: want the flags' 5 and thin, the environment's [a]", c.Concurrency, c.Mode, c.Routes)
	}
	for _, line := range []string{`"msg":"bananas: starting","mode":"thin"`, `"msg":"bananas: exiting"`} {
		if !strings.Contains(errOut, line) {
			t.Errorf("log lacks %s:\n%s", line, errOut)
		}
	}
}

func TestWorker_StartLineHidesThePassword(t *testing.T) {
	code, _, errOut := run(stopped(), &fakeProgram{}, env("REDIS_URL", "redis://u:secret@h:6379"), "worker")
	if code != cli.ExitOK || strings.Contains(errOut, "secret") || !strings.Contains(errOut, "redis://***@h:6379") {
		t.Errorf("exit %d, log:\n%s", code, errOut)
	}
}

func TestWorker_BadFlagIsAUsageErrorNamingFlagAndVariable(t *testing.T) {
	code, _, errOut := run(stopped(), &fakeProgram{}, env(), "worker", "--concurrency", "0")
	want := `worker: --concurrency: WORKER_CONCURRENCY="0" is invalid`
	if code != cli.ExitUsage || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q: want 2 and %q", code, errOut, want)
	}
}

func TestRun_BadEnvironmentIsAConfigurationError(t *testing.T) {
	f := &fakeProgram{}
	code, _, errOut := run(stopped(), f, env("LOG_FORMAT", "xml"), "worker")
	if code != cli.ExitUsage || !strings.HasPrefix(errOut, `configuration: LOG_FORMAT="xml" is invalid`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if len(f.cfgs) != 0 {
		t.Error("connected with a bad configuration")
	}
}

func TestScheduler_RunsInSchedulerOnlyMode(t *testing.T) {
	f := &fakeProgram{}
	if code, _, errOut := run(stopped(), f, env("WORKER_MODE", "thin"), "scheduler"); code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if m := f.connected(t).Mode; m != ModeSchedulerOnly {
		t.Errorf("mode %q, want %q", m, ModeSchedulerOnly)
	}
}

func TestWorker_JobTypesMustBeRegisteredTasks(t *testing.T) {
	f := &fakeProgram{tasks: []string{"email.send", "report.build"}}
	e := env("WORKER_MODE", "job-specialized", "WORKER_JOB_TYPES", "email.send,email.sned")
	code, _, errOut := run(stopped(), f, e, "worker")
	want := `worker: WORKER_JOB_TYPES names "email.sned", which no registered task has (registered: email.send, report.build)`
	if code != cli.ExitUsage || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q: want 2 and %q", code, errOut, want)
	}
	if strings.Contains(errOut, "bananas: starting") {
		t.Error("the worker started with an unknown job type")
	}
	e = env("WORKER_MODE", "job-specialized", "WORKER_JOB_TYPES", "email.send")
	if code, _, errOut := run(stopped(), f, e, "worker"); code != cli.ExitOK {
		t.Errorf("registered job type: exit %d: %s", code, errOut)
	}
}

func TestHelp_ListsEveryVariableOfTheTable(t *testing.T) {
	code, out, _ := run(stopped(), &fakeProgram{}, env(), "help")
	if code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, v := range configVars {
		if !strings.Contains(out, "  "+v.name) {
			t.Errorf("help lacks %s", v.name)
		}
	}
}

// The commands that run the runtime are in the help, from their table.
func TestHelp_ListsTheCommandsThatRunTheRuntime(t *testing.T) {
	code, out, _ := run(stopped(), &fakeProgram{}, env(), "help")
	if code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	cmds := (&app{}).Commands()
	if len(cmds) != 3 {
		t.Fatalf("commands %v: want worker, scheduler and api", cmds)
	}
	for _, c := range cmds {
		if l := c.Help[0]; !strings.Contains(out, fmt.Sprintf("\n  %-27s %s\n", l[0], l[1])) {
			t.Errorf("help lacks %s:\n%s", c.Name, out)
		}
	}
}

// serve runs args in the background until the test ends, and returns its
// stderr.
func serve(t *testing.T, f *fakeProgram, getenv func(string) string, args ...string) *syncBuffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errOut := &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- Run(ctx, args, getenv, &syncBuffer{}, errOut, f.program()) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the command did not exit after its context ended")
		}
	})
	return errOut
}

func TestAPI_ServesOnLoopbackWithoutAToken(t *testing.T) {
	port := freePort(t)
	errOut := serve(t, &fakeProgram{}, env("API_PORT", fmt.Sprint(port)), "api")
	st, body := get(t, fmt.Sprintf("http://127.0.0.1:%d/", port))
	if st != 200 || body != "api token= metricsNeedToken=false" {
		t.Errorf("GET /: %d %q", st, body)
	}
	if !strings.Contains(errOut.String(), "HTTP API listening on loopback only; set API_TOKEN to serve other hosts") {
		t.Errorf("log:\n%s", errOut)
	}
}

func TestAPI_MetricsPortServesMetricsAloneAndPutsTheAPIsBehindTheToken(t *testing.T) {
	api, metrics := freePort(t), freePort(t)
	e := env("API_PORT", fmt.Sprint(api), "API_TOKEN", "s3cret", "METRICS_PORT", fmt.Sprintf("127.0.0.1:%d", metrics))
	errOut := serve(t, &fakeProgram{}, e, "api")
	if st, body := get(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics)); st != 200 || body != "metrics" {
		t.Errorf("metrics port: %d %q", st, body)
	}
	if st, _ := get(t, fmt.Sprintf("http://127.0.0.1:%d/api/v1/queues", metrics)); st != 404 {
		t.Errorf("metrics port serves the API: %d", st)
	}
	if st, body := get(t, fmt.Sprintf("http://127.0.0.1:%d/", api)); st != 200 || body != "api token=s3cret metricsNeedToken=true" {
		t.Errorf("API port: %d %q", st, body)
	}
	log := errOut.String()
	if !strings.Contains(log, "metrics listening without a token (METRICS_PORT)") || strings.Contains(log, "/metrics is served without the token") {
		t.Errorf("log:\n%s", log)
	}
}

func TestAPI_PortTakenIsAUsageErrorNamingIt(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	code, _, errOut := run(bounded(t), &fakeProgram{}, env(), "api", "--api-port", fmt.Sprint(port))
	if want := fmt.Sprintf("api: API_PORT=%d:", port); code != cli.ExitUsage || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q: want 2 and %q", code, errOut, want)
	}
}

func TestWorker_MetricsPortTakenStopsTheWorkerBeforeItRuns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	code, _, errOut := run(bounded(t), &fakeProgram{}, env("METRICS_PORT", addr), "worker")
	if want := "worker: METRICS_PORT=" + addr + ":"; code != cli.ExitUsage || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q: want 2 and %q", code, errOut, want)
	}
}
