package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/internal/benchkit"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
)

var deadN = flag.Int("dead", 100000, "with -admin: dead jobs over the same routes, for the dashboard's pages")

// maxBatch is the most jobs POST /api/v1/jobs/batch takes.
const maxBatch = 1000

// adminBench measures the operator surface: API submissions against the Go API's
// single enqueue in the same run, a /metrics scrape, job-list pages and the
// dashboard's pages at `depth` pending and `dead` dead jobs spread over
// `routes` routes (flat in depth is the goal), each the median of repeated
// tries.
func adminBench(ctx context.Context, c *runtime.Client, n, producers, routes, depth int) {
	dead := *deadN
	rig := &adminRig{ctx: ctx, c: c, n: n, producers: producers}
	stopAPI := rig.serveAPI()
	defer stopAPI()

	body, _ := json.Marshal(map[string]any{"name": "noop", "args": payload})
	apiRate := rig.singleSubmissions(body)
	rig.batchSubmissions(body, apiRate)
	rig.netHTTPSubmissions(body)

	routeNames := make([]string, routes)
	for i := range routeNames {
		routeNames[i] = fmt.Sprintf("r%02d", i)
	}
	rig.fillDead(routeNames, dead)
	rig.fillPending(routeNames, depth)

	cursor := rig.listPages()
	rig.dashboardPages(cursor, dead)
}

// adminRig is what the admin scenarios share: the API under test on a local
// listener, the clients that reach it, the run's size and the one way to stop.
type adminRig struct {
	ctx       context.Context
	c         *runtime.Client
	in        *admin.Inspector
	n         int // jobs per submission scenario
	producers int // concurrent connections or goroutines submitting
	apiAddr   string
	apiBase   string       // "http://" + apiAddr
	client    *http.Client // net/http's client, keep-alive, one connection per producer
	once      sync.Once
}

// fatalf stops the bench. log.Fatal skips main's deferred cleanup: a failure
// here deletes the namespace first, so an aborted run leaves no million jobs
// behind.
func (r *adminRig) fatalf(format string, args ...any) {
	r.once.Do(func() { cleanup(context.Background(), r.c.Redis(), r.c.Namespace()) })
	log.Fatalf(format, args...)
}

// serveAPI serves the HTTP API and dashboard on a local port and returns the
// function that closes it.
func (r *adminRig) serveAPI() (stop func()) {
	r.in = runtime.NewInspector(r.c, tasks.Register)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.fatalf("%v", err)
	}
	srv := &http.Server{Handler: runtime.APIHandler(r.in, runtime.APIOptions{})}
	go func() { _ = srv.Serve(ln) }()
	r.apiAddr = ln.Addr().String()
	r.apiBase = "http://" + r.apiAddr
	r.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: r.producers, MaxConnsPerHost: r.producers}}
	return func() { srv.Close() }
}

// wantCreated reads a submission's answer to its end, so the connection is
// reused, and stops the bench unless it is 201.
func (r *adminRig) wantCreated(resp *http.Response, err error) {
	if err != nil {
		r.fatalf("%v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		r.fatalf("a submission was answered %s", resp.Status)
	}
}

// requestRate sends n jobs as requests of perReq jobs each, prebuilt in raw,
// to addr and returns jobs per second.
//
// The load generator's own cost counts on two cores shared with the server
// and Redis: one goroutine per keep-alive connection writing a prebuilt
// request and reading the response (what wrk or hey do), not net/http's
// client, which adds two goroutines and their hand-offs per connection and
// about doubles the client's CPU per request.
func (r *adminRig) requestRate(addr string, raw []byte, perReq int) float64 {
	conns := make(chan *keepAlive, r.producers)
	for range r.producers {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			r.fatalf("%v", err)
		}
		defer conn.Close()
		conns <- &keepAlive{conn: conn, r: bufio.NewReader(conn)}
	}
	start := time.Now()
	reqs := max(1, r.n/perReq)
	benchkit.Parallel(r.producers, reqs, func(int) {
		ka := <-conns
		defer func() { conns <- ka }()
		if _, err := ka.conn.Write(raw); err != nil {
			r.fatalf("%v", err)
		}
		r.wantCreated(http.ReadResponse(ka.r, nil))
	})
	return float64(reqs*perReq) / time.Since(start).Seconds()
}

// handlerRate serves h on a local port only while requestRate sends it n
// single submissions, and returns requests per second.
func (r *adminRig) handlerRate(h http.Handler, raw []byte) float64 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.fatalf("%v", err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	rate := r.requestRate(ln.Addr().String(), raw, 1)
	srv.Close()
	return rate
}

// goEnqueueRate is the Go API's single enqueue from the producers, in jobs
// per second: the yardstick of the HTTP submissions.
func (r *adminRig) goEnqueueRate() float64 {
	start := time.Now()
	benchkit.Parallel(r.producers, r.n, func(int) {
		if _, err := tasks.Noop.Enqueue(r.ctx, payload); err != nil {
			r.fatalf("%v", err)
		}
	})
	return float64(r.n) / time.Since(start).Seconds()
}

// singleSubmissions measures the Go API's single enqueue, then the same jobs
// submitted over HTTP with keep-alive connections, one per producer, to the
// API and to two bare handlers that bound it, and returns the API's rate.
func (r *adminRig) singleSubmissions(body []byte) (apiRate float64) {
	note("admin: %d single enqueues from %d goroutines, Go API then HTTP", r.n, r.producers)
	goRate := r.goEnqueueRate()
	req := fmt.Appendf(nil, "POST /api/v1/jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	apiRate = r.requestRate(r.apiAddr, req, 1)
	floorRate := r.handlerRate(noopHandler(), req)
	enqRate := r.handlerRate(enqueueHandler(r.fatalf), req)
	report("go_enqueue_jobs_per_s", goRate)
	report("api_submit_jobs_per_s", apiRate)
	report("api_submit_vs_go_enqueue", apiRate/goRate)
	report("noop_handler_requests_per_s", floorRate)
	report("noop_handler_vs_go_enqueue", floorRate/goRate)
	report("api_submit_vs_noop_handler", apiRate/floorRate)
	report("enqueue_handler_requests_per_s", enqRate)
	report("enqueue_handler_vs_noop_handler", enqRate/floorRate)
	report("api_submit_vs_enqueue_handler", apiRate/enqRate)
	return apiRate
}

// noopHandler is the ceiling of this machine for one job per request: a
// net/http handler that reads the body and answers 201 without decoding or
// enqueuing anything.
func noopHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"01KAB5E7Q3R0000000000000000"}`+"\n")
	})
}

// enqueueHandler is the ceiling for one job per request on this stack: a
// net/http handler that reads the body and makes the Go API's Enqueue of a
// prebuilt job, without decoding, checking or answering anything else. What
// the API adds above it is its own cost; what it adds above the no-op handler
// is the enqueue's.
func enqueueHandler(fatalf func(format string, args ...any)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		id, err := tasks.Noop.Enqueue(r.Context(), payload)
		if err != nil {
			fatalf("%v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"`+id+`"}`+"\n")
	})
}

// batchSubmissions measures batches of 1,000 jobs: POST /api/v1/jobs/batch
// against single submissions and against the Go API's EnqueueMany of as many
// jobs.
func (r *adminRig) batchSubmissions(body []byte, apiRate float64) {
	subs := make([]json.RawMessage, maxBatch)
	for i := range subs {
		subs[i] = body
	}
	batchBody, _ := json.Marshal(map[string]any{"jobs": subs})
	batchReq := fmt.Appendf(nil, "POST /api/v1/jobs/batch HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(batchBody), batchBody)
	note("admin: %d jobs in batches of %d, HTTP then Go API", r.n, maxBatch)
	batchRate := r.requestRate(r.apiAddr, batchReq, maxBatch)
	many := payloads(maxBatch)
	start := time.Now()
	manyCalls := max(1, r.n/maxBatch)
	benchkit.Parallel(r.producers, manyCalls, func(int) {
		if _, err := tasks.Noop.EnqueueMany(r.ctx, many); err != nil {
			r.fatalf("%v", err)
		}
	})
	manyRate := float64(manyCalls*maxBatch) / time.Since(start).Seconds()
	report("api_batch_jobs_per_s", batchRate)
	report("api_batch_vs_api_submit", batchRate/apiRate)
	report("go_enqueue_many_jobs_per_s", manyRate)
	report("api_batch_vs_go_enqueue_many", batchRate/manyRate)
}

// netHTTPSubmissions measures single submissions through net/http's client,
// for the record.
func (r *adminRig) netHTTPSubmissions(body []byte) {
	start := time.Now()
	benchkit.Parallel(r.producers, r.n, func(int) {
		r.wantCreated(r.client.Post(r.apiBase+"/api/v1/jobs", "application/json", bytes.NewReader(body)))
	})
	report("api_submit_nethttp_client_jobs_per_s", float64(r.n)/time.Since(start).Seconds())
}

// fillBatch is the most jobs one EnqueueMany call of the fills carries.
const fillBatch = 1000

// payloads is k copies of the bench's payload, for one EnqueueMany call.
func payloads(k int) []tasks.Payload {
	p := make([]tasks.Payload, k)
	for i := range p {
		p[i] = payload
	}
	return p
}

// enqueueMany is a task's EnqueueMany: what fill enqueues with.
type enqueueMany func(context.Context, []tasks.Payload, ...runtime.Option) ([]string, error)

// fill enqueues total jobs of task in batches of up to fillBatch,
// round-robin over the routes, small enough that every route gets some: the
// overview then lists all of them at any depth.
func (r *adminRig) fill(task enqueueMany, routeNames []string, total int) {
	batch := payloads(fillBatch)
	b := max(1, min(len(batch), total/len(routeNames)))
	for filled := 0; filled < total; filled += b {
		route := routeNames[(filled/b)%len(routeNames)]
		if _, err := task(r.ctx, batch[:min(b, total-filled)], runtime.Route(route)); err != nil {
			r.fatalf("%v", err)
		}
	}
}

// fillDead makes `dead` bounce jobs over the routes dead, run by a worker
// whose handler fails them without a retry (the real fetch, run and
// dead-letter path). It runs before the pending jobs are filled, which the
// worker would otherwise have to walk past.
func (r *adminRig) fillDead(routeNames []string, dead int) {
	note("admin: killing %d jobs over %d routes", dead, len(routeNames))
	start := time.Now()
	r.fill(tasks.Bounce.EnqueueMany, routeNames, dead)
	if dead > 0 {
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		w := runtime.NewWorker(r.c, runtime.WorkerOptions{Routes: routeNames, JobTypes: []string{"bounce"}, Concurrency: 256, Logger: quiet})
		tasks.Register(w)
		wctx, stop := context.WithCancel(r.ctx)
		ran := make(chan error, 1)
		go func() { ran <- w.Run(wctx) }()
		r.waitDead(dead)
		stop()
		if err := <-ran; err != nil {
			r.fatalf("worker: %v", err)
		}
	}
	note("admin: %d dead jobs in %.1fs", dead, time.Since(start).Seconds())
}

// waitDead waits until the routes hold at least dead dead jobs, for at most
// five minutes.
func (r *adminRig) waitDead(dead int) {
	for deadline := time.Now().Add(5 * time.Minute); ; {
		if time.Now().After(deadline) {
			r.fatalf("admin: %d jobs not dead after 5 minutes", dead)
		}
		time.Sleep(100 * time.Millisecond)
		infos, err := r.in.Routes(r.ctx)
		if err != nil {
			r.fatalf("%v", err)
		}
		var got int64
		for _, ri := range infos {
			got += ri.Dead
		}
		if got >= int64(dead) {
			return
		}
	}
}

// fillPending enqueues `depth` pending no-op jobs over the routes.
func (r *adminRig) fillPending(routeNames []string, depth int) {
	note("admin: filling %d pending jobs over %d routes", depth, len(routeNames))
	start := time.Now()
	r.fill(tasks.Noop.EnqueueMany, routeNames, depth)
	note("admin: %d pending jobs in %.1fs", depth, time.Since(start).Seconds())
}

// get fetches path from the API to its end, stops the bench unless it is 200,
// and returns how long it took.
func (r *adminRig) get(path string) time.Duration {
	t0 := time.Now()
	resp, err := r.client.Get(r.apiBase + path)
	if err != nil {
		r.fatalf("%v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		r.fatalf("GET %s: %s", path, resp.Status)
	}
	return time.Since(t0)
}

// median is the median milliseconds of 15 GETs of path.
func (r *adminRig) median(path string) float64 {
	var ds []time.Duration
	for range 15 {
		ds = append(ds, r.get(path))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return benchkit.Ms(ds[len(ds)/2])
}

// listPages measures a /metrics scrape, the queues and pages of a route's
// pending jobs, and returns the cursor of the deep page it measured.
func (r *adminRig) listPages() (deepCursor string) {
	report("metrics_scrape_ms", r.median("/metrics"))
	report("queues_ms", r.median("/api/v1/queues"))
	report("list_first_page_ms", r.median("/api/v1/jobs?route=r00&state=pending&limit=50"))
	deepCursor = r.cursorAfter(100)
	report("list_deep_page_ms", r.median("/api/v1/jobs?route=r00&state=pending&limit=50&cursor="+deepCursor))
	report("list_filtered_page_ms", r.median("/api/v1/jobs?route=r00&state=pending&limit=50&task=ping"))
	return deepCursor
}

// cursorAfter walks pages of 50 of r00's pending jobs and returns the cursor
// of the page that many pages in.
func (r *adminRig) cursorAfter(pages int) string {
	cursor := ""
	for range pages {
		resp, err := r.client.Get(r.apiBase + "/api/v1/jobs?route=r00&state=pending&limit=50&cursor=" + cursor)
		if err != nil {
			r.fatalf("%v", err)
		}
		var page struct{ Next string }
		_ = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		cursor = page.Next
	}
	return cursor
}

// dashboardPages measures the dashboard, served by the same handler at /: the
// overview (every route's counts, oldest pending age and workers), job lists
// of one route (pending, deepCursor's page, dead, dead searched by error text
// that every job holds and that none holds) and a dead job's page.
func (r *adminRig) dashboardPages(deepCursor string, dead int) {
	report("dashboard_overview_ms", r.median("/"))
	report("dashboard_jobs_pending_ms", r.median("/jobs?route=r00&state=pending"))
	report("dashboard_jobs_pending_deep_ms", r.median("/jobs?route=r00&state=pending&cursor="+url.QueryEscape(deepCursor)))
	report("dashboard_jobs_dead_ms", r.median("/jobs?route=r00&state=failed"))
	report("dashboard_jobs_dead_search_ms", r.median("/jobs?route=r00&state=failed&q="+url.QueryEscape(tasks.BounceText)))
	report("dashboard_jobs_dead_search_miss_ms", r.median("/jobs?route=r00&state=failed&q=no+such+error"))
	if dead > 0 {
		pg, err := r.in.Jobs(r.ctx, admin.JobQuery{Route: "r00", State: runtime.StatusFailed, Limit: 1, Newest: true})
		if err != nil || len(pg.Jobs) == 0 {
			r.fatalf("a dead job of r00: %v", err)
		}
		report("dashboard_job_ms", r.median("/jobs/"+pg.Jobs[0].ID))
	}
}

// keepAlive is one HTTP/1.1 connection of the lean load generator.
type keepAlive struct {
	conn net.Conn
	r    *bufio.Reader
}
