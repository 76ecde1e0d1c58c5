package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/bananas-go/bananas/runtime/internal/metrics"
)

// lint fails the test with every problem promlint finds in what s exports.
func lint(t *testing.T, s *metrics.Set) {
	t.Helper()
	problems, err := testutil.GatherAndLint(s.Gatherer())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// compare checks the named metrics of s against the exposition text want.
func compare(t *testing.T, s *metrics.Set, want string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(s.Gatherer(), strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

// Every outcome recorded through a Series lands in its own counter, under
// the route, priority and task it was resolved for: a failure that is
// retried counts as failed and retried, one that dies as failed and dead.
func TestSet_OutcomesAreCountedUnderTheirLabels(t *testing.T) {
	s := metrics.New()
	a := s.For("email", "high", "send")
	b := s.For("images", "low", "resize")
	a.Succeeded()
	a.Succeeded()
	a.Failed()
	a.Retried()
	b.Failed()
	b.Dead()
	b.Snoozed()
	s.Canceled("images", "low", "resize")
	s.Enqueued("email", "high", "send", 3)
	s.Enqueued("email", "high", "send", 1)
	s.Overran("resize")

	compare(t, s, `
# HELP bananas_jobs_processed_total Runs that succeeded, their result recorded.
# TYPE bananas_jobs_processed_total counter
bananas_jobs_processed_total{priority="high",route="email",task="send"} 2
bananas_jobs_processed_total{priority="low",route="images",task="resize"} 0
# HELP bananas_jobs_dead_total Failed runs whose job was moved to the dead-letter queue.
# TYPE bananas_jobs_dead_total counter
bananas_jobs_dead_total{priority="high",route="email",task="send"} 0
bananas_jobs_dead_total{priority="low",route="images",task="resize"} 1
# HELP bananas_jobs_enqueued_total Jobs enqueued by this process (duplicates refused by WithID or Unique not counted).
# TYPE bananas_jobs_enqueued_total counter
bananas_jobs_enqueued_total{priority="high",route="email",task="send"} 4
# HELP bananas_handlers_overran_total Handlers that ignored their context and returned long after their timeout, holding a slot meanwhile.
# TYPE bananas_handlers_overran_total counter
bananas_handlers_overran_total{task="resize"} 1
`, "bananas_jobs_processed_total", "bananas_jobs_dead_total", "bananas_jobs_enqueued_total", "bananas_handlers_overran_total")

	for _, c := range []struct {
		name string
		got  prometheus.Collector
		want float64
	}{
		{"failed", s.Must("bananas_jobs_failed_total", "email", "high", "send"), 1},
		{"failed", s.Must("bananas_jobs_failed_total", "images", "low", "resize"), 1},
		{"retried", s.Must("bananas_jobs_retried_total", "email", "high", "send"), 1},
		{"snoozed", s.Must("bananas_jobs_snoozed_total", "images", "low", "resize"), 1},
		{"canceled", s.Must("bananas_jobs_canceled_total", "images", "low", "resize"), 1},
	} {
		if got := testutil.ToFloat64(c.got); got != c.want {
			t.Errorf("%s = %v; want %v", c.name, got, c.want)
		}
	}
	lint(t, s)
}

// For returns the same series for the same labels, so a worker resolves it
// once per run and records without a lookup; resolving a known series
// allocates nothing.
func TestSet_ForCachesSeriesWithoutAllocating(t *testing.T) {
	s := metrics.New()
	route, prio, task := "email", "high", "send"
	//lint:ignore SA4000 For looks up or creates: two calls must return one series
	if s.For(route, prio, task) != s.For(route, prio, task) {
		t.Fatal("For returned two series for the same labels")
	}
	if s.For(route, prio, task) == s.For(route, "low", task) {
		t.Fatal("For returned one series for two priorities")
	}
	if n := testing.AllocsPerRun(100, func() { s.For(route, prio, task).Succeeded() }); n != 0 {
		t.Errorf("For + Succeeded allocates %v times per call; want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { s.Enqueued(route, prio, task, 1) }); n != 0 {
		t.Errorf("Enqueued allocates %v times per call; want 0", n)
	}
}

// Run and wait times land in buckets from milliseconds to minutes, under
// their labels; a negative wait (two hosts' clocks apart) counts as none.
func TestSet_RunAndWaitHistogramsBucketMillisecondsToMinutes(t *testing.T) {
	s := metrics.New()
	a := s.For("email", "normal", "send")
	a.Ran(3 * time.Millisecond)
	a.Ran(2 * time.Minute)
	a.Waited(-time.Second)
	a.Waited(40 * time.Millisecond)
	h := gatherOne(t, s, "bananas_job_run_seconds").GetHistogram()
	if h.GetSampleCount() != 2 || h.GetSampleSum() != 120.003 {
		t.Errorf("run: %d samples, sum %v; want 2, 120.003", h.GetSampleCount(), h.GetSampleSum())
	}
	var le5ms, le150s uint64
	for _, b := range h.GetBucket() {
		switch b.GetUpperBound() {
		case .005:
			le5ms = b.GetCumulativeCount()
		case 150:
			le150s = b.GetCumulativeCount()
		}
	}
	if le5ms != 1 || le150s != 2 {
		t.Errorf("run buckets: le=0.005 %d, le=150 %d; want 1 and 2", le5ms, le150s)
	}
	w := gatherOne(t, s, "bananas_job_wait_seconds").GetHistogram()
	if w.GetSampleCount() != 2 || w.GetSampleSum() != .04 {
		t.Errorf("wait: %d samples, sum %v; want 2, 0.04 (the negative wait as 0)", w.GetSampleCount(), w.GetSampleSum())
	}
	lint(t, s)
}

// The worker gauges sum the workers added, reading their running jobs at
// scrape time, and forget a worker once removed.
func TestSet_WorkerGaugesSumRunningWorkersAtScrapeTime(t *testing.T) {
	s := metrics.New()
	running := 2
	removeA := s.AddWorker(8, func() int { return running })
	removeB := s.AddWorker(4, func() int { return 1 })
	compare(t, s, `
# HELP bananas_jobs_in_flight Jobs this process's workers hold: running, or their outcome being recorded.
# TYPE bananas_jobs_in_flight gauge
bananas_jobs_in_flight 3
# HELP bananas_worker_slots Handlers this process's running workers may run at once (the sum of their Concurrency).
# TYPE bananas_worker_slots gauge
bananas_worker_slots 12
`, "bananas_jobs_in_flight", "bananas_worker_slots")
	running = 5
	removeB()
	compare(t, s, `
# HELP bananas_jobs_in_flight Jobs this process's workers hold: running, or their outcome being recorded.
# TYPE bananas_jobs_in_flight gauge
bananas_jobs_in_flight 5
# HELP bananas_worker_slots Handlers this process's running workers may run at once (the sum of their Concurrency).
# TYPE bananas_worker_slots gauge
bananas_worker_slots 8
`, "bananas_jobs_in_flight", "bananas_worker_slots")
	removeA()
	lint(t, s)
}

// The queue gauges are read when scraped, from the function the runtime
// gives, and say what it returned: pending by priority, the other places,
// the oldest pending job's age and whether the route is paused.
func TestSet_QueueDepthsAreReadAtScrapeTime(t *testing.T) {
	s := metrics.New()
	reads := 0
	s.ReadDepths(func(ctx context.Context) ([]metrics.Depth, error) {
		reads++
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the depth read has no deadline")
		}
		return []metrics.Depth{
			{Route: "email", High: 1, Normal: 2, Low: 3, Scheduled: 4, Active: 5, Dead: 6, OldestPendingAge: 1500 * time.Millisecond, Paused: true},
			{Route: "images"},
		}, nil
	})
	if reads != 0 {
		t.Fatalf("read %d times before any scrape", reads)
	}
	compare(t, s, `
# HELP bananas_queue_pending Jobs ready to run, by route and priority (read from Redis at scrape time).
# TYPE bananas_queue_pending gauge
bananas_queue_pending{priority="high",route="email"} 1
bananas_queue_pending{priority="normal",route="email"} 2
bananas_queue_pending{priority="low",route="email"} 3
bananas_queue_pending{priority="high",route="images"} 0
bananas_queue_pending{priority="normal",route="images"} 0
bananas_queue_pending{priority="low",route="images"} 0
# HELP bananas_queue_scheduled Jobs delayed or waiting for a retry (read from Redis at scrape time).
# TYPE bananas_queue_scheduled gauge
bananas_queue_scheduled{route="email"} 4
bananas_queue_scheduled{route="images"} 0
# HELP bananas_queue_active Jobs leased to a worker, of every process (read from Redis at scrape time).
# TYPE bananas_queue_active gauge
bananas_queue_active{route="email"} 5
bananas_queue_active{route="images"} 0
# HELP bananas_queue_dead Jobs in the dead-letter queue (read from Redis at scrape time).
# TYPE bananas_queue_dead gauge
bananas_queue_dead{route="email"} 6
bananas_queue_dead{route="images"} 0
# HELP bananas_queue_oldest_pending_seconds How long the oldest ready job of the route has waited; 0 when none waits.
# TYPE bananas_queue_oldest_pending_seconds gauge
bananas_queue_oldest_pending_seconds{route="email"} 1.5
bananas_queue_oldest_pending_seconds{route="images"} 0
# HELP bananas_route_paused 1 when the route is paused (its jobs are not fetched), else 0.
# TYPE bananas_route_paused gauge
bananas_route_paused{route="email"} 1
bananas_route_paused{route="images"} 0
# HELP bananas_scrape_errors_total Reads of the queue depths at scrape time that failed or timed out; their gauges are missing from that scrape.
# TYPE bananas_scrape_errors_total counter
bananas_scrape_errors_total 0
`, "bananas_queue_pending", "bananas_queue_scheduled", "bananas_queue_active", "bananas_queue_dead",
		"bananas_queue_oldest_pending_seconds", "bananas_route_paused", "bananas_scrape_errors_total")
	if reads != 1 {
		t.Errorf("read %d times in one scrape; want 1", reads)
	}
	lint(t, s)
}

// A depth read that fails, or panics, costs its gauges in that scrape and
// counts a scrape error in it; the rest of the metrics are still served
// with a 200, and the process lives on.
func TestSet_AFailedDepthReadIsCountedNotFatal(t *testing.T) {
	s := metrics.New()
	s.For("email", "high", "send").Succeeded()
	fail := errors.New("connection refused")
	s.ReadDepths(func(ctx context.Context) ([]metrics.Depth, error) {
		if fail == nil {
			panic("boom")
		}
		return nil, fail
	})
	body := scrape(t, s)
	if !strings.Contains(body, "bananas_scrape_errors_total 1\n") || strings.Contains(body, "bananas_queue_pending") {
		t.Errorf("after a failed read: want bananas_scrape_errors_total 1 and no depth gauges, got\n%s", grep(body, "bananas_"))
	}
	if !strings.Contains(body, `bananas_jobs_processed_total{priority="high",route="email",task="send"} 1`) {
		t.Errorf("the other metrics are missing:\n%s", grep(body, "bananas_"))
	}
	fail = nil
	if body := scrape(t, s); !strings.Contains(body, "bananas_scrape_errors_total 2\n") {
		t.Errorf("after a panicking read: want bananas_scrape_errors_total 2, got\n%s", grep(body, "bananas_scrape"))
	}
}

// A depth read that does not return in time has its context ended after
// DepthTimeout: the scrape ends, counting an error, instead of hanging.
func TestSet_ADepthReadThatHangsEndsAtTheTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for DepthTimeout")
	}
	s := metrics.New()
	s.ReadDepths(func(ctx context.Context) ([]metrics.Depth, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	start := time.Now()
	body := scrape(t, s)
	if took := time.Since(start); took > metrics.DepthTimeout+5*time.Second {
		t.Errorf("scrape took %s; want about DepthTimeout (%s)", took, metrics.DepthTimeout)
	}
	if !strings.Contains(body, "bananas_scrape_errors_total 1\n") {
		t.Errorf("want a scrape error counted, got\n%s", grep(body, "bananas_scrape"))
	}
}

// Two sets in one process are independent: each has its own registry.
func TestSet_TwoSetsDoNotShareCounts(t *testing.T) {
	a, b := metrics.New(), metrics.New()
	a.Enqueued("default", "normal", "x", 2)
	if got := testutil.ToFloat64(b.Must("bananas_jobs_enqueued_total", "default", "normal", "x")); got != 0 {
		t.Fatalf("the second set counted %v enqueues of the first", got)
	}
}

func scrape(t *testing.T, s *metrics.Set) string {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("scrape: %s\n%s", resp.Status, b)
	}
	return string(b)
}

func grep(body, prefix string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// gatherOne returns the only metric of family name.
func gatherOne(t *testing.T, s *metrics.Set, name string) *dto.Metric {
	t.Helper()
	mfs, err := s.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			if len(mf.GetMetric()) != 1 {
				t.Fatalf("%s has %d metrics; want 1", name, len(mf.GetMetric()))
			}
			return mf.GetMetric()[0]
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

// BenchmarkSeries_PerJob is what a worker records per successful job:
// the series resolved once, a wait, a run time and the outcome. From every
// P at once, as a worker's runners do.
func BenchmarkSeries_PerJob(b *testing.B) {
	s := metrics.New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m := s.For("email", "normal", "send_email")
			m.Waited(3 * time.Millisecond)
			m.Ran(12 * time.Millisecond)
			m.Succeeded()
		}
	})
}
