package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/bananas-go/bananas/examples/bench/tasks"
	"github.com/bananas-go/bananas/runtime"
)

// admin measures the operator surface: API submissions against the Go API's
// single enqueue in the same run, a /metrics scrape and a job-list page at
// `depth` pending jobs spread over `routes` routes (flat in depth is the
// goal), each the median of repeated tries.
func admin(ctx context.Context, c *runtime.Client, n, producers, routes, depth int) {
	// log.Fatal skips main's deferred cleanup: a failure here deletes the
	// namespace first, so an aborted run leaves no million jobs behind.
	var once sync.Once
	fatalf := func(format string, args ...any) {
		once.Do(func() { cleanup(context.Background(), c.Redis(), c.Namespace()) })
		log.Fatalf(format, args...)
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
	req := fmt.Appendf(nil, "POST /api/v1/jobs HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// The load generator's own cost counts on two cores shared with the
	// server and Redis: one goroutine per keep-alive connection writing a
	// prebuilt request and reading the response (what wrk or hey do), not
	// net/http's client, which adds two goroutines and their hand-offs per
	// connection and about doubles the client's CPU per request.
	conns := make(chan *keepAlive, producers)
	for range producers {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			fatalf("%v", err)
		}
		defer conn.Close()
		conns <- &keepAlive{conn: conn, r: bufio.NewReader(conn)}
	}
	start = time.Now()
	parallel(producers, n, func() {
		ka := <-conns
		defer func() { conns <- ka }()
		if _, err := ka.conn.Write(req); err != nil {
			fatalf("%v", err)
		}
		resp, err := http.ReadResponse(ka.r, nil)
		if err != nil {
			fatalf("%v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			fatalf("POST /api/v1/jobs: %s", resp.Status)
		}
	})
	apiRate := float64(n) / time.Since(start).Seconds()
	report("go_enqueue_jobs_per_s", goRate)
	report("api_submit_jobs_per_s", apiRate)
	report("api_submit_vs_go_enqueue", apiRate/goRate)
	// The same through net/http's client, for the record.
	start = time.Now()
	parallel(producers, n, func() {
		resp, err := client.Post(base+"/api/v1/jobs", "application/json", bytes.NewReader(body))
		if err != nil {
			fatalf("%v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			fatalf("POST /api/v1/jobs: %s", resp.Status)
		}
	})
	report("api_submit_nethttp_client_jobs_per_s", float64(n)/time.Since(start).Seconds())

	// Depth: `depth` pending jobs over `routes` routes, in batches.
	note("admin: filling %d pending jobs over %d routes", depth, routes)
	batch := make([]tasks.Payload, 1000)
	for i := range batch {
		batch[i] = payload
	}
	for filled := 0; filled < depth; filled += len(batch) {
		r := fmt.Sprintf("r%02d", (filled/len(batch))%routes)
		if _, err := tasks.Noop.EnqueueMany(ctx, batch[:min(len(batch), depth-filled)], runtime.Route(r)); err != nil {
			fatalf("%v", err)
		}
	}
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
}

// keepAlive is one HTTP/1.1 connection of the lean load generator.
type keepAlive struct {
	conn net.Conn
	r    *bufio.Reader
}
