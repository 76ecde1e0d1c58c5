package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// Pausing a route that nothing knows — a typo — is refused, naming the
// routes that are known, in the CLI and the API; a known route pauses.
func TestPause_ARouteNothingKnowsIsRefusedNamingTheKnownOnes(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	for _, cmd := range []string{"pause", "resume"} {
		code, out, errOut := a.run(cmd, "defualt")
		if code != 2 || out != "" || !strings.Contains(errOut, `unknown route "defualt"`) || !strings.Contains(errOut, "known routes: default") {
			t.Fatalf("%s defualt = %d %q %q; want 2 naming the known routes", cmd, code, out, errOut)
		}
	}
	if out := a.ok("pause", "default"); !strings.Contains(out, "paused default") {
		t.Fatalf("pause default: %s", out)
	}
	a.ok("resume", "default")
}

func TestAPI_PauseOfARouteNothingKnowsIs404(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		testtasks.Register(w)
		a := serveAPI(t, w.Inspector(), runtime.APIOptions{})
		for _, action := range []string{"pause", "resume"} {
			got := a.want(http.StatusNotFound, "POST", "/api/v1/routes/biling/"+action, "")
			if msg, _ := got["error"].(string); !strings.Contains(msg, `"biling"`) || !strings.Contains(msg, "known routes: ") || !strings.Contains(msg, "default") {
				t.Fatalf("%s of an unknown route: %v; want the known routes named", action, got)
			}
		}
		a.want(http.StatusOK, "POST", "/api/v1/routes/default/pause", "")
		// A paused route resumes whatever else knows it.
		if err := w.Inspector().Resume(ctxT(t), "default"); err != nil {
			t.Fatal(err)
		}
		if err := w.Inspector().Pause(ctxT(t), "nobody"); !errors.Is(err, runtime.ErrUnknownRoute) {
			t.Fatalf("Pause of an unknown route = %v; want ErrUnknownRoute", err)
		}
	})
}

// `jobs` says which jobs it lists and how to list the others, even when
// there is none; asking for completed jobs says where they are.
func TestCLI_JobsSaysWhatItListsAndWhereCompletedJobsAre(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	out := a.ok("jobs")
	if !strings.Contains(out, "no pending jobs on any route") || !strings.Contains(out, "--state") || !strings.Contains(out, "job ID") {
		t.Fatalf("jobs with none pending:\n%s", out)
	}
	code, _, errOut := a.run("jobs", "--state", "completed")
	for _, want := range []string{"result record", "job ID", "app history, GET /api/v1/history", "pending, scheduled, processing or failed"} {
		if code != 2 || !strings.Contains(errOut, want) {
			t.Fatalf("jobs --state completed = %d %q; want 2 saying %q", code, errOut, want)
		}
	}
}

// Attempts count the runs a job started: 1 for a job that ran once,
// whatever its end, and retries are the runs after the first, out of
// max_retries — in the API's JSON and the CLI's table alike.
func TestJobInfo_AttemptsCountRunsAndRetriesTheRunsAfterTheFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, testtasks.Echo, func(_ context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			if m.Text == "fail" {
				return testtasks.Reply{}, errors.New("no")
			}
			return testtasks.Reply{Text: m.Text}, nil
		})
		startWorker(t, w)
		echo := testtasks.Echo.With(c)
		ok, err := echo.Enqueue(ctx, testtasks.Msg{Text: "once"})
		if err != nil {
			t.Fatal(err)
		}
		dead, err := echo.Enqueue(ctx, testtasks.Msg{Text: "fail"}, runtime.MaxRetries(1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := echo.Await(ctx, ok); err != nil {
			t.Fatal(err)
		}
		var je *runtime.JobError
		if _, err := echo.Await(ctx, dead); !errors.As(err, &je) || je.Attempts != 2 {
			t.Fatalf("Await of a job that failed twice = %v; want a JobError of 2 attempts", err)
		}
		a := serveAPI(t, w.Inspector(), runtime.APIOptions{})
		for _, tc := range []struct {
			id                string
			attempts, retries int
		}{{ok, 1, 0}, {dead, 2, 1}} {
			got := a.want(http.StatusOK, "GET", "/api/v1/jobs/"+tc.id, "")
			if got["attempts"] != float64(tc.attempts) || got["retries"] != float64(tc.retries) {
				t.Fatalf("job %s: attempts %v, retries %v; want %d and %d", got["status"], got["attempts"], got["retries"], tc.attempts, tc.retries)
			}
		}
		if info, _ := c.Job(ctx, dead); info.Retries() > info.MaxRetries {
			t.Fatalf("a dead job shows %d of %d retries", info.Retries(), info.MaxRetries)
		}
		if _, page := a.do("GET", "/jobs/"+dead, ""); !strings.Contains(page.(string), "2 (1 of 1 retries)") {
			t.Fatalf("the dashboard's page of a job dead after 2 attempts, max retries 1, lacks \"2 (1 of 1 retries)\":\n%s", page)
		}
		b, _ := json.Marshal(a.want(http.StatusOK, "GET", "/api/v1/dlq", ""))
		if !strings.Contains(string(b), `"attempts":2`) || !strings.Contains(string(b), `"retries":1`) {
			t.Fatalf("dlq listing: %s", b)
		}
	})
}

// `app -h` shows what the program can do: every command, the environment,
// and then the flags of the default command (worker).
func TestCLI_HelpListsEveryCommandTheEnvironmentAndTheWorkerFlags(t *testing.T) {
	t.Parallel()
	code, out, _ := newApp(t).run("-h")
	for _, want := range []string{"commands:", "  scheduler ", "  api ", "  enqueue ", "  job ID", "  jobs ", "  queues ",
		"  pause ROUTE", "  resume ROUTE", "  dlq ", "  cron list", "  workers ", "REDIS_URL", "LOG_FORMAT", "usage: worker", "-redis-url"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("-h = %d, lacking %q:\n%s", code, want, out)
		}
	}
	if strings.Index(out, "commands:") > strings.Index(out, "usage: worker") {
		t.Fatalf("-h shows the worker's flags before the commands:\n%s", out)
	}
}

// A worker told to stop says at once what it waits for and how long, not
// only when it has stopped.
func TestShutdown_SaysAtOnceWhatItWaitsForAndHowLong(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	var logs syncBuffer
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{ShutdownTimeout: 20 * time.Second,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))}))
	started, release := make(chan struct{}), make(chan struct{})
	runtime.Handle(w, testtasks.Echo, func(context.Context, testtasks.Msg) (testtasks.Reply, error) {
		close(started)
		<-release
		return testtasks.Reply{}, nil
	})
	stop := startWorker(t, w)
	if _, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "long"}); err != nil {
		t.Fatal(err)
	}
	recv(t, started, 10*time.Second, "the job to start")
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	waitFor(t, 10*time.Second, "the stop to be announced", func() bool {
		return strings.Contains(logs.String(), "stopping: waiting up to 20s for 1 running job")
	})
	close(release)
	recv(t, stopped, 20*time.Second, "the worker to stop")
}

// An API submission to a route that no live worker takes is accepted with
// a warning saying so, as the CLI's enqueue warns; none once a worker
// takes it.
func TestAPI_SubmissionToARouteNoWorkerTakesCarriesAWarning(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		testtasks.Register(w)
		a := serveAPI(t, w.Inspector(), runtime.APIOptions{})
		got := a.want(http.StatusCreated, "POST", "/api/v1/jobs", `{"name":"t_echo","args":{"Text":"hi"}}`)
		if msg, _ := got["warning"].(string); !strings.Contains(msg, "no live worker takes route default") {
			t.Fatalf("submission with no worker: %v; want a warning naming the route", got)
		}
		startWorker(t, w)
		waitFor(t, 10*time.Second, "the worker's heartbeat", func() bool {
			ws, _ := c.Workers(ctxT(t))
			return len(ws) > 0
		})
		// The heartbeats are read at most once a second for the warning.
		waitFor(t, 5*time.Second, "a submission without a warning once a worker takes the route", func() bool {
			got := a.want(http.StatusCreated, "POST", "/api/v1/jobs", `{"name":"t_echo","args":{"Text":"hi"}}`)
			return got["warning"] == nil
		})
	})
}

// Client.Job gives a job's args as the JSON of the task's args type when
// the program declares the task, and as stored (msgpack) under ArgsMsgpack.
func TestJobInfo_ArgsAreJSONForADeclaredTask(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		id, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "hi", N: 2})
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Job(ctxT(t), id)
		if err != nil {
			t.Fatal(err)
		}
		var args testtasks.Msg
		if err := json.Unmarshal(info.Args, &args); err != nil || args != (testtasks.Msg{Text: "hi", N: 2}) {
			t.Fatalf("Job(...).Args = %s (%v); want the args as JSON", info.Args, err)
		}
		if len(info.ArgsMsgpack) == 0 || json.Valid(info.ArgsMsgpack) {
			t.Fatalf("Job(...).ArgsMsgpack = %q; want the stored msgpack", info.ArgsMsgpack)
		}
	})
}
