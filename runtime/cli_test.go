package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// app runs the application binary's command line in-process, with the
// quickstart's generated tasks registered, against one namespace.
type app struct {
	t   *testing.T
	env map[string]string
}

func newApp(t *testing.T) *app {
	return &app{t: t, env: map[string]string{
		"REDIS_URL": redistest.Shared(t).URL(), "BANANAS_NAMESPACE": redistest.Namespace(t), "LOG_LEVEL": "error",
	}}
}

func (a *app) with(kv ...string) *app {
	env := map[string]string{}
	for k, v := range a.env {
		env[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	return &app{t: a.t, env: env}
}

func (a *app) run(args ...string) (int, string, string) {
	a.t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := runtime.RunCommand(ctx, args, func(k string) string { return a.env[k] }, &out, &errOut, tasks.Register)
	return code, out.String(), errOut.String()
}

func (a *app) ok(args ...string) string {
	a.t.Helper()
	code, out, errOut := a.run(args...)
	if code != 0 {
		a.t.Fatalf("%v exited %d: %s%s", args, code, out, errOut)
	}
	return out
}

// background runs a long-lived command (worker, scheduler) until the test
// ends or stop is called.
func (a *app) background(args ...string) (stop func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out bytes.Buffer
	var mu sync.Mutex
	go func() {
		code := runtime.RunCommand(ctx, args, func(k string) string { return a.env[k] }, &lockedWriter{&mu, &out}, &lockedWriter{&mu, &out}, tasks.Register)
		done <- code
	}()
	var once sync.Once
	code := 0
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				a.t.Errorf("%v did not stop", args)
			}
		})
		return code
	}
	a.t.Cleanup(func() { stop() })
	return stop
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (a *app) status(id string) string {
	a.t.Helper()
	var info struct{ Status string }
	if err := json.Unmarshal([]byte(a.ok("job", id, "--json")), &info); err != nil {
		a.t.Fatal(err)
	}
	return info.Status
}

func TestCLI_EnqueueJobQueuesAndWait(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	id := strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body": "a b c"}`))
	if !strings.HasSuffix(id, ".default") {
		t.Fatalf("enqueue printed %q, want a job id", id)
	}
	if out := a.ok("job", id); !strings.Contains(out, "count_words") || !strings.Contains(out, "pending") {
		t.Fatalf("job table:\n%s", out)
	}
	if out := a.ok("queues"); !strings.Contains(out, "ROUTE") || !strings.Contains(out, "default") {
		t.Fatalf("queues table:\n%s", out)
	}
	var depths []map[string]any
	// default holds the job; email and images, the other tasks' routes, are
	// known and show with zeros.
	if err := json.Unmarshal([]byte(a.ok("queues", "--json")), &depths); err != nil || len(depths) != 3 ||
		depths[0]["route"] != "default" || depths[0]["low"] != float64(1) || depths[1]["pending"] != float64(0) || depths[2]["pending"] != float64(0) {
		t.Fatalf("queues --json = %v, %v; want one low job on default, and email and images empty", depths, err)
	}

	code, _, errOut := a.run("enqueue", "count_words", `{"Bdy": "typo"}`)
	if code != 2 || !strings.Contains(errOut, `unknown field "Bdy"`) {
		t.Fatalf("enqueue with a wrong field = %d %q; want 2 naming the field", code, errOut)
	}
	if code, _, errOut := a.run("enqueue", "no_such_task", `{}`); code != 2 || !strings.Contains(errOut, `no task named "no_such_task"`) {
		t.Fatalf("enqueue of an unknown task = %d %q", code, errOut)
	}

	a.background("worker")
	if out := a.ok("enqueue", "count_words", `{"Body": "one two three four"}`, "--wait"); strings.TrimSpace(out) != "4" {
		t.Fatalf("enqueue --wait printed %q, want the typed result 4", out)
	}
	out := a.ok("enqueue", "resize_image", `{"URL": "https://x/a.png", "Width": 10}`, "--route", "default", "--wait", "--json")
	var got struct {
		ID     string
		Result struct{ URL string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Result.URL != "https://x/a-10w.png" || got.ID == "" {
		t.Fatalf("enqueue --wait --json = %q, %v", out, err)
	}
	if code, _, errOut := a.run("job", "01JZZZZZZZZZZZZZZZZZZZZZZZ.default"); code != 1 || !strings.Contains(errOut, "job not found") {
		t.Fatalf("job of an unknown id = %d %q; want 1, not found", code, errOut)
	}
}

func TestCLI_DLQListReplayPurge(t *testing.T) {
	t.Parallel()
	a := newApp(t).with("WORKER_ROUTING_KEYS", "email")
	stop := a.background("worker")
	// send_email refuses an address without @: retries=2, then dead-lettered.
	code, _, errOut := a.run("enqueue", "send_email", `{"To": "nobody"}`, "--wait")
	if code != 1 || !strings.Contains(errOut, `invalid recipient "nobody"`) {
		t.Fatalf("enqueue --wait of a failing job = %d %q; want 1 and the job's error", code, errOut)
	}
	stop()
	out := a.ok("dlq", "list")
	if !strings.Contains(out, "send_email") || !strings.Contains(out, "invalid recipient") {
		t.Fatalf("dlq list:\n%s", out)
	}
	var page struct {
		Jobs []map[string]any
		Next string
	}
	if err := json.Unmarshal([]byte(a.ok("dlq", "list", "--json")), &page); err != nil || len(page.Jobs) != 1 || page.Next != "" {
		t.Fatalf("dlq list --json = %+v, %v; want one job and no next page", page, err)
	}
	dead := page.Jobs
	id, _ := dead[0]["id"].(string)
	if id == "" || dead[0]["task"] != "send_email" || dead[0]["finished_at"] == nil || dead[0]["status"] != "failed" {
		t.Fatalf("dlq list --json entry %v; want id, task, status failed and finished_at", dead[0])
	}
	if out := a.ok("dlq", "replay", id); !strings.Contains(out, "replayed "+id) {
		t.Fatalf("dlq replay: %s", out)
	}
	if s := a.status(id); s != "pending" {
		t.Fatalf("replayed job is %s, want pending", s)
	}
	// Kill it again by hand so that replay --all and purge have work.
	a.background("worker")
	waitFor(t, 20*time.Second, "the replayed job to die again", func() bool { return a.status(id) == "failed" })
	if out := a.ok("dlq", "replay", "--all"); !strings.Contains(out, "replayed 1 job(s)") {
		t.Fatalf("dlq replay --all: %s", out)
	}
	waitFor(t, 20*time.Second, "the job to die a third time", func() bool { return a.status(id) == "failed" })
	if out := a.ok("dlq", "purge"); !strings.Contains(out, "purged 1 job(s)") {
		t.Fatalf("dlq purge: %s", out)
	}
	if code, _, _ := a.run("job", id); code != 1 {
		t.Fatal("a purged job is still there")
	}
	if code, _, _ := a.run("dlq", "replay"); code != 2 {
		t.Fatal("dlq replay without an id is not a usage error")
	}
}

func TestCLI_WorkersCronAndHelp(t *testing.T) {
	t.Parallel()
	a := newApp(t).with("WORKER_MODE", "thin", "WORKER_ROUTING_KEYS", "images,default")
	a.background("worker")
	var ws []admin.Worker
	waitFor(t, 10*time.Second, "the worker's heartbeat", func() bool {
		_ = json.Unmarshal([]byte(a.ok("workers", "--json")), &ws)
		return len(ws) == 1
	})
	if w := ws[0]; w.Mode != "thin" || w.Concurrency != 2 || strings.Join(w.Routes, ",") != "images,default" || w.PID == 0 || w.Host == "" {
		t.Fatalf("workers --json = %+v; want the thin worker with concurrency 2", w)
	}
	if out := a.ok("workers"); !strings.Contains(out, "IN FLIGHT") || !strings.Contains(out, "thin") {
		t.Fatalf("workers table:\n%s", out)
	}
	if out := a.ok("cron", "list"); !strings.Contains(out, "NAME") {
		t.Fatalf("cron list:\n%s", out)
	}
	for _, args := range [][]string{{"-h"}, {"worker", "-h"}, {"enqueue", "-h"}, {"job", "-h"}, {"queues", "-h"}, {"dlq", "-h"}, {"cron", "-h"}, {"workers", "-h"}, {"scheduler", "-h"}} {
		if code, out, _ := a.run(args...); code != 0 || !strings.Contains(out, "usage") {
			t.Fatalf("%v = %d %q; want 0 and a usage text", args, code, out)
		}
	}
	if code, _, _ := a.run("frobnicate"); code != 2 {
		t.Fatal("an unknown command is not a usage error")
	}
}

func TestConfig_BadEnvironmentExits2NamingTheVariable(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	for _, c := range []struct{ name, value, says string }{
		{"WORKER_CONCURRENCY", "lots", "WORKER_CONCURRENCY"},
		{"WORKER_MODE", "turbo", "use thin, default, specialized, job-specialized or scheduler-only"},
		{"WORKER_PRIORITIES", "high,urgent", "a comma-separated subset of high,normal,low"},
		{"WORKER_ROUTING_KEYS", "gpu pool", `route "gpu pool"`},
		{"JOB_TIMEOUT", "soon", "JOB_TIMEOUT"},
		{"MAX_RETRIES", "-1", "MAX_RETRIES"},
		{"SHUTDOWN_TIMEOUT", "0s", "SHUTDOWN_TIMEOUT"},
		{"LEASE_DURATION", "1ms", "LEASE_DURATION"},
		{"RESULT_TTL_SUCCESS", "x", "RESULT_TTL_SUCCESS"},
		{"RESULT_TTL_FAILURE", "-1h", "RESULT_TTL_FAILURE"},
		{"API_PORT", "99999", "API_PORT"},
		{"LOG_LEVEL", "loud", "LOG_LEVEL"},
		{"LOG_FORMAT", "xml", "LOG_FORMAT"},
		{"REDIS_URL", "localhost:6379", "REDIS_URL"},
		{"REDIS_URL", "redis://localhost:99999", "REDIS_URL=\"redis://localhost:99999\" is invalid: address \"localhost:99999\": the port must be a number from 1 to 65535"},
		{"REDIS_URL", "redis+cluster://", "REDIS_URL=\"redis+cluster://\" is invalid: no cluster nodes"},
		{"REDIS_URL", "redis+cluster://a:1,b", `cluster node "b" has no port`},
		{"REDIS_URL", "http://x", `unknown scheme "http"`},
		{"REDIS_URL", "redis://user:secret@localhost:0", "REDIS_URL=\"redis://user:***@localhost:0\" is invalid"},
		{"BANANAS_NAMESPACE", "a b", "BANANAS_NAMESPACE"},
	} {
		code, _, errOut := a.with(c.name, c.value).run("queues")
		if code != 2 || !strings.Contains(errOut, c.says) {
			t.Errorf("%s=%s: exit %d, stderr %q; want 2 and %q", c.name, c.value, code, errOut, c.says)
		}
	}
	if code, _, errOut := a.with("WORKER_MODE", "specialized").run("worker"); code != 2 || !strings.Contains(errOut, "needs WORKER_PRIORITIES") {
		t.Errorf("specialized without priorities = %d %q", code, errOut)
	}
	if code, _, errOut := a.with("WORKER_MODE", "job-specialized", "WORKER_JOB_TYPES", "nope").run("worker"); code != 2 || !strings.Contains(errOut, `"nope"`) {
		t.Errorf("job-specialized with an unknown type = %d %q", code, errOut)
	}
	// Flags override the environment.
	if code, _, errOut := a.with("WORKER_CONCURRENCY", "lots").run("worker", "--concurrency", "3"); code != 2 || !strings.Contains(errOut, "WORKER_CONCURRENCY") {
		t.Errorf("a bad env var is reported even when a flag would override it: %d %q", code, errOut)
	}
	if code, _, errOut := a.run("worker", "--concurrency", "0"); code != 2 || !strings.Contains(errOut, "--concurrency") {
		t.Errorf("a bad flag = %d %q; want 2 naming it", code, errOut)
	}
	if code, out, _ := a.run("dlq", "list", "-h"); code != 0 || !strings.HasPrefix(out, "usage: dlq list ") {
		t.Errorf("dlq list -h = %d %q; want its usage", code, out)
	}
}

// Each mode takes only what it allows.
func TestModes_WorkerTakesOnlyWhatItsModeAllows(t *testing.T) {
	t.Parallel()
	t.Run("specialized", func(t *testing.T) {
		t.Parallel()
		a := newApp(t).with("WORKER_MODE", "specialized", "WORKER_PRIORITIES", "low")
		low := strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body":"x"}`))                            // low by annotation
		normal := strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body":"x"}`, "--priority", "normal")) // not this worker's
		a.background("worker")
		waitFor(t, 10*time.Second, "the low job to complete", func() bool { return a.status(low) == "completed" })
		if s := a.status(normal); s != "pending" {
			t.Fatalf("normal job on a low-only worker is %s", s)
		}
	})
	t.Run("job-specialized", func(t *testing.T) {
		t.Parallel()
		a := newApp(t).with("WORKER_MODE", "job-specialized", "WORKER_JOB_TYPES", "resize_image", "WORKER_ROUTING_KEYS", "default")
		other := strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body":"x"}`))
		mine := strings.TrimSpace(a.ok("enqueue", "resize_image", `{"URL":"u.png","Width":1}`, "--route", "default"))
		a.background("worker")
		waitFor(t, 10*time.Second, "the resize job to complete", func() bool { return a.status(mine) == "completed" })
		if s := a.status(other); s != "pending" {
			t.Fatalf("a count_words job on a resize-only worker is %s", s)
		}
	})
	t.Run("scheduler-only", func(t *testing.T) {
		t.Parallel()
		a := newApp(t)
		ready := strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body":"x"}`))
		later := strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body":"x"}`, "--delay", "200ms"))
		a.background("scheduler")
		waitFor(t, 10*time.Second, "the delayed job to be promoted", func() bool { return a.status(later) == "pending" })
		if s := a.status(ready); s != "pending" {
			t.Fatalf("a scheduler ran a job: it is %s", s)
		}
	})
}

// A bad flag is reported once, in the CLI's words and with where the flags
// are listed, with exit 2: not the flag package's message, the whole usage
// and the message again.
func TestCLI_BadFlagIsReportedOnceInCLIWords(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"enqueue", "t_echo", `{}`, "--delay", "soon"}, "enqueue: --delay soon: not a duration, e.g. 30s, 5m or 1h (enqueue -h lists the flags)\n"},
		{[]string{"enqueue", "t_echo", `{}`, "--bogus"}, "enqueue: unknown flag --bogus (enqueue -h lists the flags)\n"},
		{[]string{"enqueue", "count_words", `{}`, "--priority", "urgent"}, "enqueue: --priority urgent: use high, normal or low\n"},
		{[]string{"enqueue", "count_words", `{}`, "--route", "a b"}, "enqueue: --route: invalid route \"a b\": a route is 1-64 characters of A-Z a-z 0-9 _ -\n"},
	} {
		code, out, errOut := a.run(c.args...)
		if code != 2 || out != "" || errOut != c.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, stderr %q", c.args, code, out, errOut, c.want)
		}
	}
	if code, out, _ := a.run("enqueue", "-h"); code != 0 || !strings.HasPrefix(out, "usage: enqueue") {
		t.Errorf("enqueue -h: exit %d, %q; want the usage", code, out)
	}
}

// enqueue --wait of a task without a result prints null (with --json, a
// null result), not an empty object.
func TestCLI_WaitOnATaskWithoutAResultPrintsNull(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.background("worker", "--routes", "email")
	if out := a.ok("enqueue", "send_email", `{"To": "ana@example.com"}`, "--wait", "--timeout", "20s"); out != "null\n" {
		t.Fatalf("enqueue --wait printed %q, want null", out)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(a.ok("enqueue", "send_email", `{"To": "bo@example.com"}`, "--wait", "--timeout", "20s", "--json")), &got); err != nil || got["result"] != nil || got["id"] == "" {
		t.Fatalf("enqueue --wait --json = %v, %v; want an id and a null result", got, err)
	}
}

// A scheduler-only process is listed by workers as what it is: its mode, and
// no routes or slots of its own (it runs no jobs).
func TestCLI_WorkersShowsASchedulerAsOne(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.background("scheduler")
	var ws []admin.Worker
	waitFor(t, 10*time.Second, "the scheduler's heartbeat", func() bool {
		return json.Unmarshal([]byte(a.ok("workers", "--json")), &ws) == nil && len(ws) == 1
	})
	if ws[0].Mode != "scheduler-only" || len(ws[0].Routes) != 0 || ws[0].Concurrency != 0 {
		t.Fatalf("workers --json = %+v; want mode scheduler-only, no routes, no slots", ws[0])
	}
	if out := a.ok("workers"); !strings.Contains(out, "scheduler-only") || strings.Contains(out, " default ") {
		t.Fatalf("workers table:\n%s", out)
	}
}

// No silent black holes: queues says per route how many live workers take
// it ("none" stands out), enqueue warns when no live worker takes the job's
// route, and enqueue --wait on this process's own mem:// server, where no
// worker can ever run the job, says so instead of hanging.
func TestCLI_RoutesNoWorkerTakesAreSaidSo(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	code, _, errOut := a.run("enqueue", "count_words", `{"Body": "a b"}`)
	if code != 0 || !strings.Contains(errOut, "warning: no live worker takes route default") {
		t.Fatalf("enqueue with no worker: exit %d, stderr %q; want a warning naming the route", code, errOut)
	}
	a.background("worker", "--routes", "email")
	a.ok("enqueue", "send_email", `{"To": "ana@example.com"}`, "--wait", "--timeout", "20s")
	var qs []map[string]any
	if err := json.Unmarshal([]byte(a.ok("queues", "--json")), &qs); err != nil {
		t.Fatal(err)
	}
	workers := map[string]any{}
	for _, q := range qs {
		workers[q["route"].(string)] = q["workers"]
	}
	if workers["email"] != float64(1) || workers["default"] != float64(0) {
		t.Fatalf("queues --json workers = %v; want email 1, default 0", workers)
	}
	if out := a.ok("queues"); !strings.Contains(out, "WORKERS") || !strings.Contains(out, "none") {
		t.Fatalf("queues table:\n%s", out)
	}

	code, _, errOut = a.with("REDIS_URL", "mem://").run("enqueue", "count_words", `{"Body": "a"}`, "--wait")
	if code != 1 || !strings.Contains(errOut, "cannot finish: REDIS_URL=mem:// is this process's own in-memory server") {
		t.Fatalf("enqueue --wait on mem:// with no worker: exit %d, stderr %q; want it explained", code, errOut)
	}
}

// job --json follows the --json convention: snake_case keys, RFC 3339 times
// or null (never Go's zero time), durations in _ms keys, and args and result
// as the JSON of their Go types, decoded by the generated code.
func TestCLI_JobJSONFollowsTheConvention(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	id := strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body": "a b c"}`))
	out := a.ok("job", id, "--json")
	if strings.Contains(out, "0001-01-01") {
		t.Fatalf("job --json shows Go's zero time:\n%s", out)
	}
	var job map[string]any
	if err := json.Unmarshal([]byte(out), &job); err != nil {
		t.Fatal(err)
	}
	args, _ := job["args"].(map[string]any)
	if job["task"] != "count_words" || job["status"] != "pending" || args["Body"] != "a b c" ||
		job["started_at"] != nil || job["result"] != nil || job["timeout_ms"] == nil || job["max_retries"] == nil {
		t.Fatalf("job --json of a pending job = %s", out)
	}
	if _, err := time.Parse(time.RFC3339, job["created_at"].(string)); err != nil {
		t.Fatalf("created_at %v: %v", job["created_at"], err)
	}
	if text := a.ok("job", id); !strings.Contains(text, `{"Body":"a b c"}`) {
		t.Fatalf("job table lacks the args as JSON:\n%s", text)
	}
	a.background("worker")
	waitFor(t, 20*time.Second, "the job to complete", func() bool { return a.status(id) == "completed" })
	pending := job
	job = nil
	if err := json.Unmarshal([]byte(a.ok("job", id, "--json")), &job); err != nil || job["result"] != float64(3) || job["finished_at"] == nil {
		t.Fatalf("job --json of the completed job = %v, %v; want result 3 and finished_at", job, err)
	}
	args, _ = job["args"].(map[string]any)
	if args["Body"] != "a b c" || job["max_retries"] != pending["max_retries"] || job["timeout_ms"] != pending["timeout_ms"] ||
		job["created_at"] != pending["created_at"] {
		t.Fatalf("job --json of the completed job = %v; want the args, max retries, timeout and creation it was enqueued with (%v)", job, pending)
	}
	if text := a.ok("job", id); !strings.Contains(text, `{"Body":"a b c"}`) || !strings.Contains(text, "timeout") {
		t.Fatalf("job table of the completed job lacks its args or timeout:\n%s", text)
	}
}

// dlq purge on a terminal asks before it deletes dead jobs for good: "n" (or
// anything but yes) keeps them, "y" purges, and --yes does not ask. The
// binary runs under script(1), which gives it a pseudo-terminal.
func TestCLI_DLQPurgeOnATerminalAsksFirst(t *testing.T) {
	t.Parallel()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) from util-linux is not installed; it gives the CLI a terminal")
	}
	bin := filepath.Join(t.TempDir(), "cronapp")
	if out, err := exec.Command("go", "build", "-o", bin, "../examples/cron").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	a := newApp(t)
	c := connect(t, a.env["REDIS_URL"], runtime.WithNamespace(a.env["BANANAS_NAMESPACE"]))
	kill := func() string {
		t.Helper()
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Logger: quiet()}))
		runtime.Handle(w, testtasks.Note, func(context.Context, testtasks.Msg) (runtime.None, error) {
			return runtime.None{}, fmt.Errorf("no: %w", runtime.SkipRetry)
		})
		stop := startWorker(t, w)
		defer stop()
		id, err := testtasks.Note.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "doomed"})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "the job to be dead-lettered", func() bool { return a.status(id) == "failed" })
		return id
	}
	onTerminal := func(answer string, args ...string) string {
		t.Helper()
		cmd := exec.Command(scriptBin, "-q", "-e", "-c", strings.Join(append([]string{bin}, args...), " "), "/dev/null")
		cmd.Env = append(os.Environ(), "REDIS_URL="+a.env["REDIS_URL"], "BANANAS_NAMESPACE="+a.env["BANANAS_NAMESPACE"])
		cmd.Stdin = strings.NewReader(answer)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v on a terminal: %v\n%s", args, err, out)
		}
		return string(out)
	}
	id := kill()
	if out := onTerminal("n\n", "dlq", "purge"); !strings.Contains(out, "purge 1 failed job(s) in the dead-letter queue") || !strings.Contains(out, "nothing purged") {
		t.Fatalf("dlq purge answered n:\n%s", out)
	}
	if s := a.status(id); s != "failed" {
		t.Fatalf("after answering n the dead job is %q, want it still dead", s)
	}
	if out := onTerminal("y\n", "dlq", "purge"); !strings.Contains(out, "purged 1 job(s)") {
		t.Fatalf("dlq purge answered y:\n%s", out)
	}
	if code, _, _ := a.run("job", id); code != 1 {
		t.Fatalf("job %s is still there after a confirmed purge", id)
	}
	kill()
	if out := onTerminal("", "dlq", "purge", "--yes"); strings.Contains(out, "[y/N]") || !strings.Contains(out, "purged 1 job(s)") {
		t.Fatalf("dlq purge --yes on a terminal:\n%s", out)
	}
	if code, _, _ := a.run("job", id); code != 1 {
		t.Fatalf("job %s is still there after dlq purge --yes", id)
	}
}

// The admin commands: jobs lists a route's jobs a page at a time, pause
// stops workers taking a route and resume restarts them, job cancel and job
// delete act on waiting jobs and refuse others naming their state.
func TestCLI_JobsPauseResumeCancelDelete(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	if out := a.ok("pause", "default"); !strings.Contains(out, "paused default") {
		t.Fatalf("pause: %s", out)
	}
	a.background("worker")
	var ids []string
	for _, body := range []string{"a", "b c", "d e f"} {
		ids = append(ids, strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body": "`+body+`"}`)))
	}
	later := strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body": "x"}`, "--delay", "1h"))
	if out := a.ok("queues"); !strings.Contains(out, "PAUSED") {
		t.Fatalf("queues of a paused route:\n%s", out)
	}
	out := a.ok("jobs", "--route", "default", "--limit", "2")
	if !strings.Contains(out, ids[0]) || !strings.Contains(out, ids[1]) || strings.Contains(out, ids[2]) || !strings.Contains(out, "more: --cursor ") {
		t.Fatalf("jobs --limit 2 on a paused route with 3 pending:\n%s", out)
	}
	cursor := strings.TrimSpace(out[strings.Index(out, "more: --cursor ")+len("more: --cursor "):])
	if out := a.ok("jobs", "--route", "default", "--limit", "2", "--cursor", cursor); !strings.Contains(out, ids[2]) || strings.Contains(out, ids[0]) {
		t.Fatalf("second page:\n%s", out)
	}
	if out := a.ok("jobs", "--state", "scheduled", "--json"); !strings.Contains(out, later) {
		t.Fatalf("jobs --state scheduled --json:\n%s", out)
	}
	if code, _, errOut := a.run("jobs", "--state", "lost"); code != 2 || !strings.Contains(errOut, `state "lost"`) {
		t.Fatalf("jobs --state lost = %d %q; want 2 naming the state", code, errOut)
	}
	if out := a.ok("job", "cancel", ids[0]); !strings.Contains(out, "canceled "+ids[0]) {
		t.Fatalf("job cancel: %s", out)
	}
	if out := a.ok("job", "delete", later); !strings.Contains(out, "deleted "+later) {
		t.Fatalf("job delete: %s", out)
	}
	if s := a.status(ids[0]); s != "canceled" {
		t.Fatalf("canceled job is %s", s)
	}
	a.ok("resume", "default")
	waitFor(t, 20*time.Second, "the resumed route's jobs to complete", func() bool {
		return a.status(ids[1]) == "completed" && a.status(ids[2]) == "completed"
	})
	if code, _, errOut := a.run("job", "delete", ids[1]); code != 1 || !strings.Contains(errOut, "completed") {
		t.Fatalf("job delete of a completed job = %d %q; want 1 naming its state", code, errOut)
	}
}
