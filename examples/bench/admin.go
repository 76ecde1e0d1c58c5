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
	"github.com/bananas-go/bananas/runtime"
)

var deadN = flag.Int("dead", 100000, "with -admin: dead jobs over the same routes, for the dashboard's pages")

// maxBatch is the most jobs POST /api/v1/jobs/batch takes.
const maxBatch = 1000

// admin measures the operator surface: API submissions against the Go API's
// single enqueue in the same run, a /metrics scrape, job-list pages and the
// dashboard's pages at `depth` pending and `dead` dead jobs spread over
// `routes` routes (flat in depth is the goal), each the median of repeated
// tries.
func admin(ctx context.Context, c *runtime.Client, n, producers, routes, depth int) {
	dead := *deadN
	// log.Fatal skips main's deferred cleanup: a failure here deletes the
	// namespace first, so an aborted run leaves no million jobs behind.
	var once sync.Once
	fatalf := func(format string, args ...any) {
		once.Do(func() { cleanup(context.Background(), c.Redis(), c.Namespace()) })
		log.Fatalf(format, args...)
	}
	// wantCreated reads a submission's answer to its end, so the connection
	// is reused, and stops the bench unless it is 201.
	wantCreated := func(resp *http.Response, err error) {
		if err != nil {
			fatalf("%v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			fatalf("a submission was answered %s", resp.Status)
		}
	}
	in := runtime.NewInspector(c, tasks.Register)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatalf("%v", err)
	}
	srv := &http.Server{Handler: runtime.APIHandler(in, runtime.APIOptions{})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: producers, MaxConnsPerHost: producers}}

	// The Go API's single enqueue, then the same jobs submitted over HTTP
	// with keep-alive connections, one per producer.
	note("admin: %d single enqueues from %d goroutines, Go API then HTTP", n, producers)
	start := time.Now()
	parallel(producers, n, func() {
		if _, err := tasks.Noop.Enqueue(ctx, payload); err != nil {
			fatalf("%v", err)
		}
	})
	goRate := float64(n) / time.Since(start).Seconds()
	body, _ := json.Marshal(map[string]any{"name": "noop", "args": payload})
	req := fmt.Appendf(nil, "POST /api/v1/jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// The load generator's own cost counts on two cores shared with the
	// server and Redis: one goroutine per keep-alive connection writing a
	// prebuilt request and reading the response (what wrk or hey do), not
	// net/http's client, which adds two goroutines and their hand-offs per
	// connection and about doubles the client's CPU per request.
	// requestRate sends n jobs as requests of perReq jobs each, prebuilt in
	// raw, and returns jobs per second.
	requestRate := func(addr string, raw []byte, perReq int) float64 {
		conns := make(chan *keepAlive, producers)
		for range producers {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				fatalf("%v", err)
			}
			defer conn.Close()
			conns <- &keepAlive{conn: conn, r: bufio.NewReader(conn)}
		}
		start := time.Now()
		reqs := max(1, n/perReq)
		parallel(producers, reqs, func() {
			ka := <-conns
			defer func() { conns <- ka }()
			if _, err := ka.conn.Write(raw); err != nil {
				fatalf("%v", err)
			}
			wantCreated(http.ReadResponse(ka.r, nil))
		})
		return float64(reqs*perReq) / time.Since(start).Seconds()
	}
	submitRate := func(addr string) float64 { return requestRate(addr, req, 1) }
	apiRate := submitRate(ln.Addr().String())
	// The ceiling of this machine for one job per request: the same client
	// against a net/http handler that reads the body and answers 201 without
	// decoding or enqueuing anything.
	floorLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatalf("%v", err)
	}
	floor := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"01KAB5E7Q3R0000000000000000"}`+"\n")
	})}
	go func() { _ = floor.Serve(floorLn) }()
	floorRate := submitRate(floorLn.Addr().String())
	floor.Close()
	// The ceiling for one job per request on this stack: a net/http handler
	// that reads the body and makes the Go API's Enqueue of a prebuilt job,
	// without decoding, checking or answering anything else. What the API
	// adds above it is its own cost; what it adds above the no-op handler is
	// the enqueue's.
	enqLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatalf("%v", err)
	}
	enq := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		id, err := tasks.Noop.Enqueue(r.Context(), payload)
		if err != nil {
			fatalf("%v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"`+id+`"}`+"\n")
	})}
	go func() { _ = enq.Serve(enqLn) }()
	enqRate := submitRate(enqLn.Addr().String())
	enq.Close()
	report("go_enqueue_jobs_per_s", goRate)
	report("api_submit_jobs_per_s", apiRate)
	report("api_submit_vs_go_enqueue", apiRate/goRate)
	report("noop_handler_requests_per_s", floorRate)
	report("noop_handler_vs_go_enqueue", floorRate/goRate)
	report("api_submit_vs_noop_handler", apiRate/floorRate)
	report("enqueue_handler_requests_per_s", enqRate)
	report("enqueue_handler_vs_noop_handler", enqRate/floorRate)
	report("api_submit_vs_enqueue_handler", apiRate/enqRate)
	// Batches of 1,000 jobs: POST /api/v1/jobs/batch against single
	// submissions and against the Go API's EnqueueMany of as many jobs.
	subs := make([]json.RawMessage, maxBatch)
	for i := range subs {
		subs[i] = body
	}
	batchBody, _ := json.Marshal(map[string]any{"jobs": subs})
	batchReq := fmt.Appendf(nil, "POST /api/v1/jobs/batch HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(batchBody), batchBody)
	note("admin: %d jobs in batches of %d, HTTP then Go API", n, maxBatch)
	batchRate := requestRate(ln.Addr().String(), batchReq, maxBatch)
	many := make([]tasks.Payload, maxBatch)
	for i := range many {
		many[i] = payload
	}
	start = time.Now()
	manyCalls := max(1, n/maxBatch)
	parallel(producers, manyCalls, func() {
		if _, err := tasks.Noop.EnqueueMany(ctx, many); err != nil {
			fatalf("%v", err)
		}
	})
	manyRate := float64(manyCalls*maxBatch) / time.Since(start).Seconds()
	report("api_batch_jobs_per_s", batchRate)
	report("api_batch_vs_api_submit", batchRate/apiRate)
	report("go_enqueue_many_jobs_per_s", manyRate)
	report("api_batch_vs_go_enqueue_many", batchRate/manyRate)

	// The same through net/http's client, for the record.
	start = time.Now()
	parallel(producers, n, func() {
		wantCreated(client.Post(base+"/api/v1/jobs", "application/json", bytes.NewReader(body)))
	})
	report("api_submit_nethttp_client_jobs_per_s", float64(n)/time.Since(start).Seconds())

	batch := make([]tasks.Payload, 1000)
	for i := range batch {
		batch[i] = payload
	}
	// Batches of up to 1000 jobs, round-robin over the routes, small enough
	// that every route gets some: the overview then lists all of them at
	// any depth.
	spread := func(total int) int { return max(1, min(len(batch), total/routes)) }
	routeNames := make([]string, routes)
	for i := range routeNames {
		routeNames[i] = fmt.Sprintf("r%02d", i)
	}
	// Dead: `dead` bounce jobs over the same routes, run by a worker whose
	// handler fails them without a retry (the real fetch, run and
	// dead-letter path), before the pending jobs, which it would otherwise
	// have to walk past.
	note("admin: killing %d jobs over %d routes", dead, routes)
	start = time.Now()
	for filled, b := 0, spread(dead); filled < dead; filled += b {
		r := routeNames[(filled/b)%routes]
		if _, err := tasks.Bounce.EnqueueMany(ctx, batch[:min(b, dead-filled)], runtime.Route(r)); err != nil {
			fatalf("%v", err)
		}
	}
	if dead > 0 {
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: routeNames, JobTypes: []string{"bounce"}, Concurrency: 256, Logger: quiet})
		tasks.Register(w)
		wctx, stop := context.WithCancel(ctx)
		ran := make(chan error, 1)
		go func() { ran <- w.Run(wctx) }()
		for deadline := time.Now().Add(5 * time.Minute); ; {
			if time.Now().After(deadline) {
				fatalf("admin: %d jobs not dead after 5 minutes", dead)
			}
			time.Sleep(100 * time.Millisecond)
			infos, err := in.Routes(ctx)
			if err != nil {
				fatalf("%v", err)
			}
			var got int64
			for _, ri := range infos {
				got += ri.Dead
			}
			if got >= int64(dead) {
				break
			}
		}
		stop()
		if err := <-ran; err != nil {
			fatalf("worker: %v", err)
		}
	}
	note("admin: %d dead jobs in %.1fs", dead, time.Since(start).Seconds())

	// Depth: `depth` pending jobs over `routes` routes, in batches.
	note("admin: filling %d pending jobs over %d routes", depth, routes)
	start = time.Now()
	for filled, b := 0, spread(depth); filled < depth; filled += b {
		r := routeNames[(filled/b)%routes]
		if _, err := tasks.Noop.EnqueueMany(ctx, batch[:min(b, depth-filled)], runtime.Route(r)); err != nil {
			fatalf("%v", err)
		}
	}
	note("admin: %d pending jobs in %.1fs", depth, time.Since(start).Seconds())
	get := func(path string) time.Duration {
		t0 := time.Now()
		resp, err := client.Get(base + path)
		if err != nil {
			fatalf("%v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			fatalf("GET %s: %s", path, resp.Status)
		}
		return time.Since(t0)
	}
	median := func(path string) float64 {
		var ds []time.Duration
		for range 15 {
			ds = append(ds, get(path))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ms(ds[len(ds)/2])
	}
	report("metrics_scrape_ms", median("/metrics"))
	report("queues_ms", median("/api/v1/queues"))
	report("list_first_page_ms", median("/api/v1/jobs?route=r00&state=pending&limit=50"))
	// A deep page: the cursor of the page 100 pages in.
	cursor := ""
	for range 100 {
		resp, err := client.Get(base + "/api/v1/jobs?route=r00&state=pending&limit=50&cursor=" + cursor)
		if err != nil {
			fatalf("%v", err)
		}
		var page struct{ Next string }
		_ = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		cursor = page.Next
	}
	report("list_deep_page_ms", median("/api/v1/jobs?route=r00&state=pending&limit=50&cursor="+cursor))
	report("list_filtered_page_ms", median("/api/v1/jobs?route=r00&state=pending&limit=50&task=ping"))

	// The dashboard, served by the same handler at /: the overview (every
	// route's counts, oldest pending age and workers), job lists of one
	// route (pending, 100 pages in, dead, dead searched by error text that
	// every job holds and that none holds) and a dead job's page.
	report("dashboard_overview_ms", median("/"))
	report("dashboard_jobs_pending_ms", median("/jobs?route=r00&state=pending"))
	report("dashboard_jobs_pending_deep_ms", median("/jobs?route=r00&state=pending&cursor="+url.QueryEscape(cursor)))
	report("dashboard_jobs_dead_ms", median("/jobs?route=r00&state=failed"))
	report("dashboard_jobs_dead_search_ms", median("/jobs?route=r00&state=failed&q="+url.QueryEscape(tasks.BounceText)))
	report("dashboard_jobs_dead_search_miss_ms", median("/jobs?route=r00&state=failed&q=no+such+error"))
	if dead > 0 {
		pg, err := in.Jobs(ctx, runtime.JobQuery{Route: "r00", State: runtime.StatusFailed, Limit: 1, Newest: true})
		if err != nil || len(pg.Jobs) == 0 {
			fatalf("a dead job of r00: %v", err)
		}
		report("dashboard_job_ms", median("/jobs/"+pg.Jobs[0].ID))
	}
}

// keepAlive is one HTTP/1.1 connection of the lean load generator.
type keepAlive struct {
	conn net.Conn
	r    *bufio.Reader
}
