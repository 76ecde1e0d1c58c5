package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// scraped is one scrape of a client's MetricsHandler.
type scraped struct {
	body string
	fams map[string]*dto.MetricFamily
}

// scrapeMetrics GETs c.MetricsHandler over HTTP, as Prometheus would, and
// parses the text it serves.
func scrapeMetrics(t *testing.T, c *runtime.Client) scraped {
	t.Helper()
	srv := httptest.NewServer(c.MetricsHandler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %s, %v\n%s", resp.Status, err, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return scraped{string(body), fams}
}

// value is the value of metric name with exactly these labels (name=value
// pairs), the sample count for a histogram; -1 when there is none.
func (s scraped) value(name string, labels ...string) float64 {
	for _, m := range s.fams[name].GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	if len(m.GetLabel()) != len(pairs) {
		return false
	}
	for _, p := range pairs {
		k, v, _ := strings.Cut(p, "=")
		found := false
		for _, l := range m.GetLabel() {
			found = found || (l.GetName() == k && l.GetValue() == v)
		}
		if !found {
			return false
		}
	}
	return true
}

// lint fails the test with the problems promlint finds in a scrape.
func (s scraped) lint(t *testing.T) {
	t.Helper()
	problems, err := promlint.New(strings.NewReader(s.body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// want is an expected value of a metric, by name and labels.
type want struct {
	name   string
	labels []string
	value  float64
}

// scrapeUntil scrapes c until every expectation holds (outcomes are counted
// when Redis answers, which can be just after Await returns), and fails the
// test with those that do not once the deadline passes. It returns the
// last scrape.
func scrapeUntil(t *testing.T, c *runtime.Client, within time.Duration, wants []want) scraped {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := scrapeMetrics(t, c)
		var bad []string
		for _, w := range wants {
			if got := s.value(w.name, w.labels...); got != w.value {
				bad = append(bad, fmt.Sprintf("%s%v = %v; want %v", w.name, w.labels, got, w.value))
			}
		}
		if len(bad) == 0 {
			return s
		}
		if time.Now().After(deadline) {
			sort.Strings(bad)
			t.Fatalf("after %s:\n%s", within, strings.Join(bad, "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func jobLabels(route, priority, task string) []string {
	return []string{"route=" + route, "priority=" + priority, "task=" + task}
}

// A worker's runs are counted by outcome under their route, priority and
// task — succeeded, failed then retried, failed for good, snoozed, and a
// handler that ignored its timeout — with a run time per run and a wait per
// job, all served by MetricsHandler in a form promlint accepts.
func TestMetrics_OutcomesAreCountedByRouteAndTask(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		echo, other, note := testtasks.Echo.With(c), testtasks.Other.With(c), testtasks.Note.With(c)
		overran := startOutcomeWorker(t, c)

		ids, err := echo.EnqueueMany(ctx, []testtasks.Msg{{Text: "ok"}, {Text: "ok"}, {Text: "flaky"}})
		if err != nil {
			t.Fatal(err)
		}
		doomed, err := echo.Enqueue(ctx, testtasks.Msg{Text: "doomed"}, runtime.MaxRetries(1))
		if err != nil {
			t.Fatal(err)
		}
		mail, err := echo.Enqueue(ctx, testtasks.Msg{Text: "ok"}, runtime.Route("mail"), runtime.WithPriority(runtime.PriorityHigh))
		if err != nil {
			t.Fatal(err)
		}
		late, err := other.Enqueue(ctx, testtasks.Msg{}, runtime.Timeout(50*time.Millisecond), runtime.MaxRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		snoozer, err := note.Enqueue(ctx, testtasks.Msg{})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range append(ids, mail) {
			if _, err := echo.Await(ctx, id); err != nil {
				t.Fatalf("Await(%s): %v", id, err)
			}
		}
		if _, err := echo.Await(ctx, doomed); err == nil {
			t.Fatal("the doomed job succeeded")
		}
		if _, err := other.Await(ctx, late); err == nil {
			t.Fatal("the job that overran its timeout succeeded")
		}
		if _, err := note.Await(ctx, snoozer); err != nil {
			t.Fatal(err)
		}
		recv(t, overran, 5*time.Second, "the late handler to return")

		s := scrapeUntil(t, c, 10*time.Second, outcomeWants)
		// The late handler's run lasted its whole sleep, not its timeout.
		for _, m := range s.fams["bananas_job_run_seconds"].GetMetric() {
			if hasLabels(m, outcomeDN("t_other")) && m.Histogram.GetSampleSum() < 0.3 {
				t.Errorf("the late handler's run time is %vs; want its 0.3s", m.Histogram.GetSampleSum())
			}
		}
		s.lint(t)
	})
}

// outcomeDN labels a job of task on the default route at normal priority.
func outcomeDN(task string) []string { return jobLabels("default", "normal", task) }

// outcomeMail labels the echo job on the mail route at high priority.
var outcomeMail = jobLabels("mail", "high", "t_echo")

// outcomeWants is what TestMetrics_OutcomesAreCountedByRouteAndTask scrapes
// once its jobs have ended.
var outcomeWants = []want{
	{"bananas_jobs_enqueued_total", outcomeDN("t_echo"), 4},
	{"bananas_jobs_enqueued_total", outcomeMail, 1},
	{"bananas_jobs_enqueued_total", outcomeDN("t_other"), 1},
	{"bananas_jobs_enqueued_total", outcomeDN("t_note"), 1},

	// ok, ok, flaky's second run; the mail job.
	{"bananas_jobs_processed_total", outcomeDN("t_echo"), 3},
	{"bananas_jobs_processed_total", outcomeMail, 1},
	// flaky's first run, both runs of doomed.
	{"bananas_jobs_failed_total", outcomeDN("t_echo"), 3},
	{"bananas_jobs_retried_total", outcomeDN("t_echo"), 2},
	{"bananas_jobs_dead_total", outcomeDN("t_echo"), 1},
	{"bananas_jobs_failed_total", outcomeMail, 0},

	{"bananas_jobs_failed_total", outcomeDN("t_other"), 1},
	{"bananas_jobs_dead_total", outcomeDN("t_other"), 1},
	{"bananas_jobs_processed_total", outcomeDN("t_other"), 0},
	{"bananas_handlers_overran_total", []string{"task=t_other"}, 1},

	{"bananas_jobs_snoozed_total", outcomeDN("t_note"), 1},
	{"bananas_jobs_processed_total", outcomeDN("t_note"), 1},
	{"bananas_jobs_failed_total", outcomeDN("t_note"), 0},

	// A run time per run, however it ended.
	{"bananas_job_run_seconds", outcomeDN("t_echo"), 6},
	{"bananas_job_run_seconds", outcomeMail, 1},
	{"bananas_job_run_seconds", outcomeDN("t_other"), 1},
	{"bananas_job_run_seconds", outcomeDN("t_note"), 2},
	// A wait per job: retries wait for their backoff, not counted.
	{"bananas_job_wait_seconds", outcomeDN("t_echo"), 4},
	{"bananas_job_wait_seconds", outcomeMail, 1},
	{"bananas_job_wait_seconds", outcomeDN("t_other"), 1},

	{"bananas_worker_slots", nil, 10},
}

// startOutcomeWorker starts a worker on the default and mail routes whose
// echo handler fails "flaky" once and "doomed" always, whose other handler
// overruns its timeout (closing the channel returned when it returns), and
// whose note handler snoozes once.
func startOutcomeWorker(t *testing.T, c *runtime.Client) chan struct{} {
	echo, other, note := testtasks.Echo.With(c), testtasks.Other.With(c), testtasks.Note.With(c)
	var flakyRuns, noteRuns atomic.Int32
	overran := make(chan struct{})
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"default", "mail"}}))
	runtime.Handle(w, echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		switch m.Text {
		case "flaky":
			if flakyRuns.Add(1) == 1 {
				return testtasks.Reply{}, errors.New("flaky")
			}
		case "doomed":
			return testtasks.Reply{}, errors.New("doomed")
		}
		return testtasks.Reply{Text: m.Text}, nil
	})
	runtime.Handle(w, other, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		defer close(overran)
		time.Sleep(300 * time.Millisecond) // ignores ctx: the behaviour under test
		return testtasks.Reply{}, nil
	})
	runtime.Handle(w, note, func(ctx context.Context, m testtasks.Msg) (runtime.None, error) {
		if noteRuns.Add(1) == 1 {
			return runtime.None{}, runtime.RetryAfter(time.Millisecond)
		}
		return runtime.None{}, nil
	})
	startWorker(t, w)
	return overran
}

// Enqueues are counted by route, priority and task as they are written; a
// duplicate refused (same WithID, same Unique args) is not counted.
func TestMetrics_EnqueuesAreCountedDuplicatesAreNot(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		echo := testtasks.Echo.With(c)
		for range 2 {
			if _, err := echo.Enqueue(ctx, testtasks.Msg{}, runtime.WithID("one"), runtime.Route("r1")); err != nil && !errors.Is(err, runtime.ErrDuplicate) {
				t.Fatal(err)
			}
		}
		args := []testtasks.Msg{{N: 1}, {N: 2}, {N: 1}}
		if _, err := echo.EnqueueMany(ctx, args, runtime.Unique(time.Hour), runtime.WithPriority(runtime.PriorityLow)); !errors.Is(err, runtime.ErrDuplicate) {
			t.Fatalf("EnqueueMany = %v; want a duplicate", err)
		}
		scrapeUntil(t, c, 0, []want{
			{"bananas_jobs_enqueued_total", jobLabels("r1", "normal", "t_echo"), 1},
			{"bananas_jobs_enqueued_total", jobLabels("default", "low", "t_echo"), 2},
		})
	})
}

// While handlers run, bananas_jobs_in_flight counts their jobs and
// bananas_worker_slots the worker's Concurrency; once the worker stops, both
// are back to none.
func TestMetrics_InFlightAndSlotsFollowTheWorker(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		echo := testtasks.Echo.With(c)
		started, release := make(chan struct{}, 2), make(chan struct{})
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 4}))
		runtime.Handle(w, echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			started <- struct{}{}
			<-release
			return testtasks.Reply{}, nil
		})
		stop := startWorker(t, w)
		if _, err := echo.EnqueueMany(ctx, make([]testtasks.Msg, 2)); err != nil {
			t.Fatal(err)
		}
		recv(t, started, 5*time.Second, "the first handler")
		recv(t, started, 5*time.Second, "the second handler")
		scrapeUntil(t, c, 0, []want{{"bananas_jobs_in_flight", nil, 2}, {"bananas_worker_slots", nil, 4}})
		close(release)
		scrapeUntil(t, c, 5*time.Second, []want{{"bananas_jobs_in_flight", nil, 0}, {"bananas_worker_slots", nil, 4}})
		stop()
		scrapeUntil(t, c, 0, []want{{"bananas_worker_slots", nil, 0}})
	})
}

// The queue gauges are read from Redis at scrape time: ready jobs by route
// and priority, the delayed ones, the oldest ready job's age and whether the
// route is paused; QueueDepthMetrics(false) leaves them out.
func TestMetrics_QueueDepthsAreReadFromRedisWhenScraped(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		echo := testtasks.Echo.With(c)
		if _, err := echo.EnqueueMany(ctx, make([]testtasks.Msg, 2), runtime.Route("r1"), runtime.WithPriority(runtime.PriorityHigh)); err != nil {
			t.Fatal(err)
		}
		for _, o := range []runtime.Option{runtime.WithPriority(runtime.PriorityLow), runtime.Delay(time.Hour)} {
			if _, err := echo.Enqueue(ctx, testtasks.Msg{}, runtime.Route("r1"), o); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Redis().Set(ctx, runtime.QueueOf(c).Keys("r1").Paused(), "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		r1 := []string{"route=r1"}
		scrapeUntil(t, c, 0, []want{
			{"bananas_queue_pending", []string{"route=r1", "priority=high"}, 2},
			{"bananas_queue_pending", []string{"route=r1", "priority=normal"}, 0},
			{"bananas_queue_pending", []string{"route=r1", "priority=low"}, 1},
			{"bananas_queue_scheduled", r1, 1},
			{"bananas_queue_active", r1, 0},
			{"bananas_queue_dead", r1, 0},
			{"bananas_route_paused", r1, 1},
			{"bananas_scrape_errors_total", nil, 0},
		})
		waitFor(t, 5*time.Second, "the oldest pending job's age to grow", func() bool {
			return scrapeMetrics(t, c).value("bananas_queue_oldest_pending_seconds", r1...) >= 0.05
		})
		c.QueueDepthMetrics(false)
		if s := scrapeMetrics(t, c); s.fams["bananas_queue_pending"] != nil || s.fams["bananas_route_paused"] != nil {
			t.Fatal("queue gauges still served after QueueDepthMetrics(false)")
		}
	})
}

// BenchmarkWorkerDrain measures a worker draining b.N queued jobs with a
// handler that does nothing, on a redis-server of its own: the worker's own
// cost per job (fetch, run, ack, and what the runtime records around it).
func BenchmarkWorkerDrain(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	c, err := runtime.Connect(ctx, srv.URL(), runtime.WithNamespace("bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	task := testtasks.Echo.With(c)
	args := make([]testtasks.Msg, 1000)
	for n := b.N; n > 0; n -= len(args) {
		if _, err := task.EnqueueMany(ctx, args[:min(n, len(args))], runtime.MaxRetries(0)); err != nil {
			b.Fatal(err)
		}
	}
	var ran atomic.Int64
	all := make(chan struct{})
	w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: 16, Logger: quiet()})
	runtime.Handle(w, task, func(context.Context, testtasks.Msg) (testtasks.Reply, error) {
		if ran.Add(1) == int64(b.N) {
			close(all)
		}
		return testtasks.Reply{}, nil
	})
	b.ReportAllocs()
	b.ResetTimer()
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	<-all
	b.StopTimer()
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// The middleware seam (WorkerOptions.Middleware) is tested here beside the
// metrics it sits next to on the worker's path.

type ctxKey struct{}

// A middleware sees the job the handler runs for, and the context it passes
// to next is the handler's: a value it adds (a span, say) reaches the
// handler, which still finds its job with CurrentJob. Middlewares nest in
// their order, the first outermost.
func TestMiddleware_SeesTheJobAndWrapsTheHandlersContext(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		echo := testtasks.Echo.With(c)
		var mu sync.Mutex // the worker's goroutines write, the test reads
		var order []string
		var seen runtime.Job
		note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
		trace := func(ctx context.Context, job runtime.Job, next func(context.Context) error) error {
			mu.Lock()
			seen = job
			mu.Unlock()
			note("trace in")
			err := next(context.WithValue(ctx, ctxKey{}, "span-"+job.ID))
			note("trace out")
			return err
		}
		inner := func(ctx context.Context, job runtime.Job, next func(context.Context) error) error {
			note("inner in")
			defer note("inner out")
			return next(ctx)
		}
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"mw"}, Middleware: []runtime.Middleware{trace, inner}}))
		runtime.Handle(w, echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			note("handler")
			span, _ := ctx.Value(ctxKey{}).(string)
			job, ok := runtime.CurrentJob(ctx)
			if !ok {
				return testtasks.Reply{}, errors.New("CurrentJob: no job in the handler's context")
			}
			return testtasks.Reply{Text: span + " " + job.ID}, nil
		})
		startWorker(t, w)
		id, err := echo.Enqueue(ctx, testtasks.Msg{}, runtime.Route("mw"), runtime.WithPriority(runtime.PriorityHigh))
		if err != nil {
			t.Fatal(err)
		}
		got, err := echo.Await(ctx, id)
		if err != nil || got.Text != "span-"+id+" "+id {
			t.Fatalf("Await = %q, %v; want the middleware's value and the job's id seen by the handler", got.Text, err)
		}
		mu.Lock()
		defer mu.Unlock()
		want := runtime.Job{ID: id, Name: "t_echo", Route: "mw", Priority: runtime.PriorityHigh, Attempt: 1}
		if seen != want {
			t.Errorf("middleware saw %+v; want %+v", seen, want)
		}
		if g := strings.Join(order, ", "); g != "trace in, inner in, handler, inner out, trace out" {
			t.Errorf("calls: %s; want the first middleware outermost", g)
		}
	})
}

// What a middleware returns is the run's outcome: an error fails a run
// whose handler succeeded (retried, then dead-lettered with the
// middleware's message, and counted as failed), and an error wrapping
// SkipRetry keeps its meaning.
func TestMiddleware_AnErrorItReturnsIsTheRunsFailure(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		echo := testtasks.Echo.With(c)
		var handlerRuns atomic.Int32
		veto := func(ctx context.Context, job runtime.Job, next func(context.Context) error) error {
			if err := next(ctx); err != nil {
				return err
			}
			if job.Route == "skip" {
				return fmt.Errorf("quota gone: %w", runtime.SkipRetry)
			}
			return fmt.Errorf("vetoed attempt %d", job.Attempt)
		}
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"veto", "skip"}, Middleware: []runtime.Middleware{veto}}))
		runtime.Handle(w, echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			handlerRuns.Add(1)
			return testtasks.Reply{Text: "fine"}, nil
		})
		startWorker(t, w)
		id, err := echo.Enqueue(ctx, testtasks.Msg{}, runtime.Route("veto"), runtime.MaxRetries(1))
		if err != nil {
			t.Fatal(err)
		}
		var je *runtime.JobError
		if _, err := echo.Await(ctx, id); !errors.As(err, &je) || je.Message != "vetoed attempt 2" || je.Attempts != 2 {
			t.Fatalf("Await = %v; want the middleware's error after 2 attempts", err)
		}
		skip, err := echo.Enqueue(ctx, testtasks.Msg{}, runtime.Route("skip"), runtime.MaxRetries(5))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := echo.Await(ctx, skip); !errors.As(err, &je) || je.Attempts != 1 {
			t.Fatalf("Await = %v; want dead-lettered at once by SkipRetry through the middleware", err)
		}
		if n := handlerRuns.Load(); n != 3 {
			t.Errorf("handler ran %d times; want 3", n)
		}
		scrapeUntil(t, c, 5*time.Second, []want{
			{"bananas_jobs_failed_total", jobLabels("veto", "normal", "t_echo"), 2},
			{"bananas_jobs_dead_total", jobLabels("veto", "normal", "t_echo"), 1},
			{"bananas_jobs_processed_total", jobLabels("veto", "normal", "t_echo"), 0},
			{"bananas_jobs_dead_total", jobLabels("skip", "normal", "t_echo"), 1},
		})
	})
}

// A nil middleware is refused by Run, naming its index, rather than failing
// every job with a nil call.
func TestMiddleware_NilIsRefusedByRun(t *testing.T) {
	c := connect(t, "mem://")
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Middleware: []runtime.Middleware{nil}}))
	err := w.Run(ctxT(t))
	if err == nil || !strings.Contains(err.Error(), "WorkerOptions.Middleware[0] is nil") {
		t.Fatalf("Run = %v; want the nil middleware named", err)
	}
}

// A job whose stored form cannot be read is dead-lettered and counted, but
// adds no wait: its creation time is unknown, and a wait from the zero time
// would be decades in the histogram's sum.
func TestMetrics_AnUnreadableJobAddsNoWait(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		k := runtime.QueueOf(c).Keys("default")
		if err := c.Redis().HSet(ctx, k.Payloads(), "junk-id", "not a payload").Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Redis().RPush(ctx, k.List(queue.Normal), "junk-id").Err(); err != nil {
			t.Fatal(err)
		}
		startWorker(t, runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{})))
		var s scraped
		waitFor(t, 10*time.Second, "the unreadable job to be counted dead", func() bool {
			s = scrapeMetrics(t, c)
			for _, m := range s.fams["bananas_jobs_dead_total"].GetMetric() {
				if m.GetCounter().GetValue() == 1 {
					return true
				}
			}
			return false
		})
		for _, m := range s.fams["bananas_job_wait_seconds"].GetMetric() {
			if h := m.GetHistogram(); h.GetSampleCount() != 0 {
				t.Errorf("wait observed for the unreadable job: %d samples, sum %vs", h.GetSampleCount(), h.GetSampleSum())
			}
		}
	})
}

// A run lost with its worker (killed mid-job) is counted by the process
// whose worker recovers the job when its lease expires: a failed run,
// retried, then the rerun that succeeds.
func TestMetrics_ARunLostWithItsWorkerIsCountedByTheWorkerThatRecoversIt(t *testing.T) {
	t.Parallel()
	c, id := aJobOfAKilledWorker(t)
	ctx, task := ctxT(t), crashy.With(c)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) { return Reply{Text: m.Text}, nil })
	startWorker(t, w)
	if _, err := task.Await(ctx, id); err != nil {
		t.Fatal(err)
	}
	labels := outcomeDN(crashy.Name())
	scrapeUntil(t, c, 10*time.Second, []want{
		{"bananas_jobs_failed_total", labels, 1},
		{"bananas_jobs_retried_total", labels, 1},
		{"bananas_jobs_processed_total", labels, 1},
	})
}

// Worker.Use, which a function registered with Main calls on the worker
// Main builds, adds middleware inside WorkerOptions.Middleware, in the
// order of the calls; a nil one is refused by Run, and a call once the
// worker runs panics rather than being silently ignored.
func TestMiddleware_UseAddsInsideTheOptionsOnesBeforeRun(t *testing.T) {
	c := connect(t, "mem://")
	ctx := ctxT(t)
	echo := testtasks.Echo.With(c)
	var mu sync.Mutex
	var order []string
	named := func(name string) runtime.Middleware {
		return func(ctx context.Context, job runtime.Job, next func(context.Context) error) error {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return next(ctx)
		}
	}
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"mw"}, Middleware: []runtime.Middleware{named("options")}}))
	w.Use(named("first use"))
	w.Use(named("second use"))
	if w.Client() != c {
		t.Fatal("Worker.Client is not the client the worker was made with")
	}
	runtime.Handle(w, echo, func(context.Context, testtasks.Msg) (testtasks.Reply, error) { return testtasks.Reply{}, nil })
	startWorker(t, w)
	id, err := echo.Enqueue(ctx, testtasks.Msg{}, runtime.Route("mw"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := echo.Await(ctx, id); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if g := strings.Join(order, ", "); g != "options, first use, second use" {
		t.Errorf("middleware ran in the order %s; want the options' outermost, then Use's in call order", g)
	}
	mu.Unlock()
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "Worker.Use called after Run") {
				t.Errorf("Use on a running worker: recovered %v, want a panic saying so", p)
			}
		}()
		w.Use(named("late"))
	}()

	nilUse := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	nilUse.Use(named("fine"), nil)
	if err := nilUse.Run(ctx); err == nil || !strings.Contains(err.Error(), "Worker.Use: middleware 1 of the call is nil") {
		t.Fatalf("Run after Use(nil) = %v; want the nil middleware named", err)
	}
}
