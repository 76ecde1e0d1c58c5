package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// Every route and action of the HTTP API works on a real three-master Redis
// Cluster, with two routes whose keys live on different masters: submissions
// (priority, delay), jobs and results, listings per route and across routes
// page by page, queues, pause and resume, cancel of a waiting and of a running
// job, delete, the dead-letter queue (filters, replay of one and by task,
// purge by task and age), cron, workers, stats, the OpenAPI document, the
// probe and the metrics.
func TestAPI_EveryRouteWorksOnARedisCluster(t *testing.T) {
	t.Parallel()
	r := newClusterAPIRig(t)
	p0, p1, p2, laterA := r.aPausedRouteKeepsItsJobsWhileTheOtherRuns()
	b2, laterB := r.bothRoutesPausedHoldPendingAndScheduledJobs()
	r.listingsGoPerRouteAndAcrossRoutesAPageAtATime(p0, p1, p2, b2, laterA, laterB)
	r.waitingJobsAreCanceledAndDeletedOnEitherRoute(p0, laterA, laterB)
	r.resumeRunsTheWaitingJobs(p1, p2, b2)
	r.cancelOfARunningJobCancelsItsContext()
	deadA, deadB, other := r.deadJobsOnBothRoutesAreListedByFilter()
	r.replayedDeadJobsComplete(deadA, deadB, other)
	r.deadJobsArePurgedByTaskAndAge(other)
	r.cronWorkersStatsTasksAndTheDocumentAreListed()
	r.theProbesAndTheMetricsAnswer()
}

// clusterAPIRig is one worker of two routes on different masters of a Redis
// Cluster, and the API server over it. t_echo answers its text, or for
// "block" runs until canceled (saying so on started); t_note and
// t_other_note die at once (no retry) unless their text was healed.
type clusterAPIRig struct {
	t       *testing.T
	a       *apiClient
	rA, rB  string
	started chan string
	healed  *sync.Map
}

func newClusterAPIRig(t *testing.T) *clusterAPIRig {
	t.Helper()
	cl := redistest.SharedCluster(t)
	c := connect(t, cl.URL())
	rA, rB := clusterRoutesOnTwoMasters(ctxT(t), t, c)
	r := &clusterAPIRig{t: t, rA: rA, rB: rB, started: make(chan string, 4), healed: &sync.Map{}}
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{rA, rB}, Concurrency: 4}))
	runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		if m.Text == "block" {
			r.started <- m.Text
			<-ctx.Done()
			return testtasks.Reply{}, ctx.Err()
		}
		return testtasks.Reply{Text: m.Text}, nil
	})
	runtime.Handle(w, testtasks.Note, func(_ context.Context, m testtasks.Msg) (runtime.None, error) {
		if _, ok := r.healed.Load(m.Text); ok {
			return runtime.None{}, nil
		}
		return runtime.None{}, fmt.Errorf("refused %s: %w", m.Text, runtime.SkipRetry)
	})
	runtime.Handle(w, testtasks.OtherNote, func(_ context.Context, m testtasks.Msg) (runtime.None, error) {
		return runtime.None{}, fmt.Errorf("broken %s: %w", m.Text, runtime.SkipRetry)
	})
	runtime.Handle(w, testtasks.Tick, func(context.Context, runtime.None) (runtime.None, error) { return runtime.None{}, nil })
	runtime.Schedule(w, testtasks.Tick, "0 0 1 1 *", "") // listed, never fired during the test
	startWorker(t, w)
	r.a = serveAPI(t, w.Inspector(), runtime.APIOptions{})
	waitFor(t, 10*time.Second, "the worker's first heartbeat", func() bool {
		_, v := r.a.do("GET", "/api/v1/workers", "")
		ws, _ := v.([]any)
		return len(ws) == 1
	})
	return r
}

func (r *clusterAPIRig) submit(route, task, text, extra string) string {
	r.t.Helper()
	body := fmt.Sprintf(`{"name":%q,"args":{"Text":%q},"route":%q%s}`, task, text, route, extra)
	id, _ := r.a.want(http.StatusCreated, "POST", "/api/v1/jobs", body)["id"].(string)
	if id == "" {
		r.t.Fatalf("POST %s: no id", body)
	}
	return id
}

func (r *clusterAPIRig) result(id, status string) map[string]any {
	r.t.Helper()
	res := r.a.want(http.StatusOK, "GET", "/api/v1/jobs/"+id+"/result?wait=10s", "")
	if res["status"] != status {
		r.t.Fatalf("result of %s = %v; want %s", id, res, status)
	}
	return res
}

func (r *clusterAPIRig) status(id string) any {
	r.t.Helper()
	return r.a.want(http.StatusOK, "GET", "/api/v1/jobs/"+id, "")["status"]
}

func (r *clusterAPIRig) queues() map[string]map[string]any {
	r.t.Helper()
	st, v := r.a.do("GET", "/api/v1/queues", "")
	list, _ := v.([]any)
	if st != http.StatusOK || list == nil {
		r.t.Fatalf("GET /api/v1/queues = %d %v", st, v)
	}
	out := map[string]map[string]any{}
	for _, q := range list {
		m := q.(map[string]any)
		out[m["route"].(string)] = m
	}
	return out
}

// Route A paused while the worker runs: its jobs stay pending while route
// B's, submitted after them, run (a delayed one too).
func (r *clusterAPIRig) aPausedRouteKeepsItsJobsWhileTheOtherRuns() (p0, p1, p2, laterA string) {
	t, a, rA, rB := r.t, r.a, r.rA, r.rB
	a.want(http.StatusOK, "POST", "/api/v1/routes/"+rA+"/pause", "")
	p0 = r.submit(rA, "t_echo", "p0", `,"priority":"high"`)
	p1 = r.submit(rA, "t_echo", "p1", `,"priority":"normal"`)
	p2 = r.submit(rA, "t_echo", "p2", `,"priority":"low"`)
	laterA = r.submit(rA, "t_echo", "laterA", `,"priority":"high","delay":"1h"`)
	b0 := r.submit(rB, "t_echo", "b0", `,"priority":"high"`)
	b1 := r.submit(rB, "t_echo", "b1", `,"delay":"200ms"`)
	if res, _ := r.result(b0, "completed")["result"].(map[string]any); res["Text"] != "b0" {
		t.Fatalf("result of b0 = %v", res)
	}
	r.result(b1, "completed")
	for _, id := range []string{p0, p1, p2} {
		if st := r.status(id); st != "pending" {
			t.Fatalf("job %s of paused route %s is %v once route %s's later jobs ran; want pending", id, rA, st, rB)
		}
	}
	if res := a.want(http.StatusAccepted, "GET", "/api/v1/jobs/"+p1+"/result?wait=50ms", ""); res["status"] != "pending" || res["result"] != nil {
		t.Fatalf("result of a job still waiting = %v; want 202 and the pending job", res)
	}
	if job := a.want(http.StatusOK, "GET", "/api/v1/jobs/"+laterA, ""); job["status"] != "scheduled" || job["priority"] != "high" || job["route"] != rA || job["scheduled_at"] == nil {
		t.Fatalf("delayed job = %v; want scheduled, high, on %s", job, rA)
	}
	return p0, p1, p2, laterA
}

// Route B paused too, with a pending and a scheduled job: both routes hold
// some of each.
func (r *clusterAPIRig) bothRoutesPausedHoldPendingAndScheduledJobs() (b2, laterB string) {
	t, rA, rB := r.t, r.rA, r.rB
	r.a.want(http.StatusOK, "POST", "/api/v1/routes/"+rB+"/pause", "")
	b2 = r.submit(rB, "t_echo", "b2", `,"priority":"low"`)
	laterB = r.submit(rB, "t_echo", "laterB", `,"delay":"1h"`)
	qs := r.queues()
	if q := qs[rA]; q["paused"] != true || q["high"] != float64(1) || q["normal"] != float64(1) || q["low"] != float64(1) ||
		q["pending"] != float64(3) || q["scheduled"] != float64(1) || q["oldest_pending_at"] == nil || q["workers"] != float64(1) {
		t.Fatalf("queue %s = %v; want paused, 1 pending of each priority, 1 scheduled, an oldest pending, 1 worker", rA, q)
	}
	if q := qs[rB]; q["paused"] != true || q["low"] != float64(1) || q["pending"] != float64(1) || q["scheduled"] != float64(1) || q["oldest_pending_at"] == nil {
		t.Fatalf("queue %s = %v; want paused, 1 low pending, 1 scheduled, an oldest pending", rB, q)
	}
	return b2, laterB
}

// Listings: per route and across routes, a page at a time.
func (r *clusterAPIRig) listingsGoPerRouteAndAcrossRoutesAPageAtATime(p0, p1, p2, b2, laterA, laterB string) {
	t, a, rA, rB := r.t, r.a, r.rA, r.rB
	if ids, pages := listAll(t, a, "/api/v1/jobs?route="+rA+"&state=pending&limit=2"); !sameIDs(ids, p0, p1, p2) || pages != 2 {
		t.Fatalf("pending jobs of %s = %v in %d pages; want %v in 2", rA, ids, pages, []string{p0, p1, p2})
	}
	if ids, _ := listAll(t, a, "/api/v1/jobs?route="+rB+"&state=pending"); !sameIDs(ids, b2) {
		t.Fatalf("pending jobs of %s = %v; want [%s]", rB, ids, b2)
	}
	if ids, pages := listAll(t, a, "/api/v1/jobs?state=pending&limit=2"); !sameIDs(ids, p0, p1, p2, b2) || pages != 2 {
		t.Fatalf("pending jobs of every route = %v in %d pages; want %v in 2", ids, pages, []string{p0, p1, p2, b2})
	}
	if ids, pages := listAll(t, a, "/api/v1/jobs?state=scheduled&limit=1"); !sameIDs(ids, laterA, laterB) || pages < 2 {
		t.Fatalf("scheduled jobs of every route = %v in %d pages; want %v a page each", ids, pages, []string{laterA, laterB})
	}
	if ids, _ := listAll(t, a, "/api/v1/jobs?state=pending&order=newest&limit=3"); !sameIDs(ids, p0, p1, p2, b2) {
		t.Fatalf("pending jobs of every route, newest first = %v", ids)
	}
}

// Cancel and delete waiting jobs on either route.
func (r *clusterAPIRig) waitingJobsAreCanceledAndDeletedOnEitherRoute(p0, laterA, laterB string) {
	t, a := r.t, r.a
	if got := a.want(http.StatusOK, "POST", "/api/v1/jobs/"+p0+"/cancel", ""); got["status"] != "canceled" {
		t.Fatalf("cancel of pending %s = %v", p0, got)
	}
	if st := r.status(p0); st != "canceled" {
		t.Fatalf("canceled job is %v", st)
	}
	a.want(http.StatusOK, "DELETE", "/api/v1/jobs/"+laterA, "")
	a.want(http.StatusOK, "DELETE", "/api/v1/jobs/"+laterB, "")
	a.want(http.StatusNotFound, "GET", "/api/v1/jobs/"+laterA, "")
	a.want(http.StatusNotFound, "DELETE", "/api/v1/jobs/"+laterB, "")
	a.want(http.StatusNotFound, "GET", "/api/v1/jobs/nope", "") // an id of no route: looked for in every route
	a.want(http.StatusNotFound, "POST", "/api/v1/jobs/nope/cancel", "")
}

// Resume: the waiting jobs run.
func (r *clusterAPIRig) resumeRunsTheWaitingJobs(p1, p2, b2 string) {
	r.a.want(http.StatusOK, "POST", "/api/v1/routes/"+r.rA+"/resume", "")
	r.a.want(http.StatusOK, "POST", "/api/v1/routes/"+r.rB+"/resume", "")
	for _, id := range []string{p1, p2, b2} {
		r.result(id, "completed")
	}
	qs := r.queues()
	for _, route := range []string{r.rA, r.rB} {
		if q := qs[route]; q["paused"] != false || q["pending"] != float64(0) || q["scheduled"] != float64(0) {
			r.t.Fatalf("queue %s after resume = %v; want not paused, nothing waiting", route, q)
		}
	}
}

// Cancel of a running job: its worker cancels its context.
func (r *clusterAPIRig) cancelOfARunningJobCancelsItsContext() {
	t, a := r.t, r.a
	block := r.submit(r.rB, "t_echo", "block", "")
	recv(t, r.started, 10*time.Second, "the blocking job to start")
	if ids, _ := listAll(t, a, "/api/v1/jobs?state=processing"); !sameIDs(ids, block) {
		t.Fatalf("running jobs of every route = %v; want [%s]", ids, block)
	}
	if got := a.want(http.StatusOK, "POST", "/api/v1/jobs/"+block+"/cancel", ""); got["status"] != "processing" && got["status"] != "canceled" {
		t.Fatalf("cancel of running %s = %v", block, got)
	}
	r.result(block, "canceled")
}

// Dead jobs on both routes, of two tasks.
func (r *clusterAPIRig) deadJobsOnBothRoutesAreListedByFilter() (deadA, deadB, other string) {
	t, a, rA, rB := r.t, r.a, r.rA, r.rB
	deadA = r.submit(rA, "t_note", "doomed-a", "")
	deadB = r.submit(rB, "t_note", "doomed-b", "")
	other = r.submit(rB, "t_other_note", "other", "")
	for _, id := range []string{deadA, deadB, other} {
		r.result(id, "failed")
	}
	if st, v := a.do("DELETE", "/api/v1/jobs/"+deadA, ""); st != http.StatusConflict {
		t.Fatalf("DELETE of a dead job = %d %v; want 409", st, v)
	}
	if q := r.queues(); q[rA]["dead"] != float64(1) || q[rB]["dead"] != float64(2) {
		t.Fatalf("dead counts = %v, %v; want 1 on %s and 2 on %s", q[rA]["dead"], q[rB]["dead"], rA, rB)
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{deadA, deadB, other}},
		{"?limit=1", []string{deadA, deadB, other}},
		{"?task=t_note", []string{deadA, deadB}},
		{"?task=t_note&q=DOOMED-B", []string{deadB}},
		{"?q=broken", []string{other}},
		{"?route=" + rB + "&task=t_other_note", []string{other}},
	} {
		if ids, _ := listAll(t, a, "/api/v1/dlq"+tc.query); !sameIDs(ids, tc.want...) {
			t.Fatalf("GET /api/v1/dlq%s = %v; want %v", tc.query, ids, tc.want)
		}
	}
	return deadA, deadB, other
}

// Replay one, then by task: healed, they complete.
func (r *clusterAPIRig) replayedDeadJobsComplete(deadA, deadB, other string) {
	t, a := r.t, r.a
	r.healed.Store("doomed-a", true)
	a.want(http.StatusOK, "POST", "/api/v1/dlq/"+deadA+"/replay", "")
	waitFor(t, 10*time.Second, "the replayed job to complete", func() bool { return r.status(deadA) == "completed" })
	r.healed.Store("doomed-b", true)
	if n := a.want(http.StatusOK, "POST", "/api/v1/dlq/replay?task=t_note", "")["replayed"]; n != float64(1) {
		t.Fatalf("replay of t_note's dead jobs replayed %v; want 1", n)
	}
	waitFor(t, 10*time.Second, "the job replayed by task to complete", func() bool { return r.status(deadB) == "completed" })
	if ids, _ := listAll(t, a, "/api/v1/dlq"); !sameIDs(ids, other) {
		t.Fatalf("dead jobs after the replays = %v; want [%s]", ids, other)
	}
}

// Purge by task and age.
func (r *clusterAPIRig) deadJobsArePurgedByTaskAndAge(other string) {
	t, a := r.t, r.a
	deadC := r.submit(r.rA, "t_note", "doomed-c", "")
	r.result(deadC, "failed")
	if n := a.want(http.StatusOK, "DELETE", "/api/v1/dlq?task=t_note&older_than=1h", "")["purged"]; n != float64(0) {
		t.Fatalf("purge of t_note's dead jobs older than 1h purged %v; want 0", n)
	}
	if n := a.want(http.StatusOK, "DELETE", "/api/v1/dlq?task=t_note", "")["purged"]; n != float64(1) {
		t.Fatalf("purge of t_note's dead jobs purged %v; want 1", n)
	}
	a.want(http.StatusNotFound, "GET", "/api/v1/jobs/"+deadC, "")
	if n := a.want(http.StatusOK, "DELETE", "/api/v1/dlq?older_than=1ms", "")["purged"]; n != float64(1) {
		t.Fatalf("purge of every dead job older than 1ms purged %v; want 1 (%s)", n, other)
	}
	if ids, _ := listAll(t, a, "/api/v1/dlq"); len(ids) != 0 {
		t.Fatalf("dead jobs after the purges = %v; want none", ids)
	}
}

// What there is: cron, workers, stats, tasks and the OpenAPI document.
func (r *clusterAPIRig) cronWorkersStatsTasksAndTheDocumentAreListed() {
	t, a := r.t, r.a
	_, v := a.do("GET", "/api/v1/cron", "")
	if cron, _ := v.([]any); len(cron) != 1 || cron[0].(map[string]any)["name"] != "t_tick" || cron[0].(map[string]any)["next_run"] == nil {
		t.Fatalf("GET /api/v1/cron = %v; want t_tick with a next run", v)
	}
	_, v = a.do("GET", "/api/v1/workers", "")
	if ws, _ := v.([]any); len(ws) != 1 || fmt.Sprint(ws[0].(map[string]any)["routes"]) != fmt.Sprint([]any{r.rA, r.rB}) {
		t.Fatalf("GET /api/v1/workers = %v; want one worker of %s and %s", v, r.rA, r.rB)
	}
	sum := map[string]float64{}
	for _, p := range a.want(http.StatusOK, "GET", "/api/v1/stats?window=1h", "")["points"].([]any) {
		for k, v := range p.(map[string]any) {
			if n, ok := v.(float64); ok {
				sum[k] += n
			}
		}
	}
	// 13 submitted; 5 ran, 2 more after their replay; p0 and block canceled;
	// doomed-a, -b, -c and other died.
	if sum["enqueued"] != 13 || sum["processed"] != 7 || sum["canceled"] != 2 || sum["dead"] != 4 || sum["run_p50_ms"] == 0 {
		t.Fatalf("stats over the hour = %v; want 13 enqueued, 7 processed, 2 canceled, 4 dead and run times", sum)
	}
	_, v = a.do("GET", "/api/v1/tasks", "")
	if tasks, _ := v.([]any); len(tasks) != 4 {
		t.Fatalf("GET /api/v1/tasks = %v; want the 4 registered tasks", v)
	}
	doc := a.want(http.StatusOK, "GET", "/api/v1/openapi.json", "")
	if paths, _ := doc["paths"].(map[string]any); doc["openapi"] == nil || paths["/api/v1/jobs"] == nil || !strings.Contains(fmt.Sprint(doc), "t_echo") {
		t.Fatalf("GET /api/v1/openapi.json = %.300v", doc)
	}
}

// The probes answer, and the metrics hold every route's queues.
func (r *clusterAPIRig) theProbesAndTheMetricsAnswer() {
	a := r.a
	a.want(http.StatusOK, "GET", "/healthz", "")
	a.want(http.StatusOK, "GET", "/livez", "")
	st, body := a.do("GET", "/metrics", "")
	for _, route := range []string{r.rA, r.rB} {
		for _, line := range []string{
			fmt.Sprintf(`bananas_queue_pending{priority="high",route=%q} 0`, route),
			fmt.Sprintf(`bananas_queue_dead{route=%q} 0`, route),
		} {
			if st != http.StatusOK || !strings.Contains(fmt.Sprint(body), line) {
				r.t.Fatalf("GET /metrics = %d without %q", st, line)
			}
		}
	}
}

// clusterRoutesOnTwoMasters returns two route names whose keys live on
// different masters of the cluster c is connected to.
func clusterRoutesOnTwoMasters(ctx context.Context, t *testing.T, c *runtime.Client) (string, string) {
	t.Helper()
	master := func(route string) int64 {
		slot, err := c.Redis().ClusterKeySlot(ctx, runtime.QueueOf(c).Keys(route).Active()).Result()
		if err != nil {
			t.Fatal(err)
		}
		return slot / 5461 // the three ranges of redistest's cluster
	}
	first := master("api-a")
	for _, r := range []string{"api-b", "api-c", "api-d", "api-e", "api-f", "api-g"} {
		if master(r) != first {
			return "api-a", r
		}
	}
	t.Fatal("no two candidate routes hash to different masters")
	return "", ""
}

// listAll reads every page of a listing (path holds its query), following
// the cursors, and returns the ids listed and the number of pages.
func listAll(t *testing.T, a *apiClient, path string) (ids []string, pages int) {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	cursor := ""
	for pages < 100 {
		p := path
		if cursor != "" {
			p += sep + "cursor=" + url.QueryEscape(cursor)
		}
		page := a.want(http.StatusOK, "GET", p, "")
		jobs, ok := page["jobs"].([]any)
		if !ok {
			t.Fatalf("GET %s = %v; want a page of jobs", p, page)
		}
		pages++
		for _, j := range jobs {
			ids = append(ids, j.(map[string]any)["id"].(string))
		}
		cursor, _ = page["next"].(string)
		if cursor == "" {
			return ids, pages
		}
	}
	t.Fatal(errors.New("listAll: over 100 pages"))
	return nil, 0
}

// sameIDs tells whether got holds exactly want, each once, in any order.
func sameIDs(got []string, want ...string) bool {
	return len(got) == len(want) && !slices.ContainsFunc(want, func(id string) bool { return !slices.Contains(got, id) })
}
