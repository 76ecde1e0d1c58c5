package runtime_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// A worker on a Redis that evicts keys under memory pressure says so at
// start, naming the policy: an evicted key is a lost job. On a Redis with
// noeviction (redis-server's default) it says nothing of it.
func TestWorker_EvictingRedisIsWarnedAboutAtStart(t *testing.T) {
	t.Parallel()
	evicting := redistest.Start(t)
	if err := evicting.Client(t).ConfigSet(context.Background(), "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		url  string
		warn bool
	}{{evicting.URL(), true}, {redistest.Shared(t).URL(), false}} {
		var logs syncBuffer
		w := runtime.NewWorker(connect(t, c.url), fastOpts(runtime.WorkerOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
		startWorker(t, w)
		waitFor(t, 10*time.Second, "the worker to start", func() bool { return strings.Contains(logs.String(), "worker started") })
		warned := strings.Contains(logs.String(), "evicts keys under memory pressure")
		if warned != c.warn || (c.warn && !strings.Contains(logs.String(), "maxmemory_policy=allkeys-lru")) {
			t.Fatalf("%s: warned %v, want %v, naming the policy:\n%s", c.url, warned, c.warn, logs.String())
		}
	}
}

// A route that cannot be fetched — here its ready list is garbage, as a
// route whose Redis node is down would fail too — does not stop the
// worker's other routes: their jobs run, and the outage is logged once.
func TestWorker_ARouteThatCannotBeFetchedDoesNotStopTheOthers(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		broken := runtime.QueueOf(c).Keys("broken").List(runtime.PriorityHigh)
		if err := c.Redis().Set(ctx, broken, "not a list", 0).Err(); err != nil {
			t.Fatal(err)
		}
		var logs syncBuffer
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"broken", "default"}, Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
		testtasks.Register(w)
		startWorker(t, w)
		for n := range 3 {
			id, err := testtasks.Echo.With(c).Enqueue(ctx, testtasks.Msg{Text: "served", N: n})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := testtasks.Echo.With(c).Await(ctx, id); err != nil {
				t.Fatalf("job %d of the default route: %v", n, err)
			}
		}
		if n := strings.Count(logs.String(), "cannot fetch from route"); n != 1 || !strings.Contains(logs.String(), "route=broken") {
			t.Fatalf("%d outage lines; want one naming route broken:\n%s", n, logs.String())
		}
	})
}

// At maxmemory with noeviction, an enqueue fails with Redis's OOM error and
// writes nothing; the jobs already stored all run, on a worker that keeps
// running through it; and once memory frees, enqueues succeed and run again.
func TestWorker_RedisAtMaxmemoryRefusesEnqueuesAndLosesNothing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := ctxT(t)
	used, err := admin.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	base := infoInt(t, used, "used_memory")
	if err := admin.ConfigSet(ctx, "maxmemory", strconv.FormatInt(base+4<<20, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	// Stored as written: compressed, these args would take a few bytes each.
	c := connect(t, srv.URL(), runtime.CompressOver(0))
	task := testtasks.Echo.With(c)
	big := strings.Repeat("x", 8<<10)
	var stored []string
	var refusal error
	for len(stored) < 10000 {
		id, err := task.Enqueue(ctx, testtasks.Msg{Text: big})
		if err != nil {
			refusal = err
			break
		}
		stored = append(stored, id)
	}
	if refusal == nil || !strings.Contains(refusal.Error(), "OOM") || !strings.Contains(refusal.Error(), "maxmemory") {
		t.Fatalf("after %d enqueues: error %v; want Redis's OOM refusal naming maxmemory", len(stored), refusal)
	}
	if d, err := runtime.QueueOf(c).Ops.Depths(ctx, []string{"default"}); err != nil || d[0].Normal != int64(len(stored)) {
		t.Fatalf("pending after the refusal = %+v, %v; want exactly the %d acknowledged jobs", d, err, len(stored))
	}

	var logs syncBuffer
	// Results that expire soon: a finished job is its result record (args
	// included), so memory frees when the records expire.
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 8, ResultTTL: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
	runtime.Handle(w, testtasks.Echo, func(_ context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		return testtasks.Reply{Text: "ok"}, nil
	})
	startWorker(t, w)
	waitFor(t, 30*time.Second, "every stored job to complete", func() bool {
		for _, id := range stored {
			if info, err := c.Job(ctx, id); err != nil || info.Status != runtime.StatusCompleted {
				return false
			}
		}
		return true
	})
	waitFor(t, 20*time.Second, "an enqueue to succeed once the results expired and freed memory", func() bool {
		_, err := task.Enqueue(ctx, testtasks.Msg{Text: big})
		return err == nil
	})
	if got, err := task.Call(ctx, testtasks.Msg{Text: "after"}); err != nil || got.Text != "ok" {
		t.Fatalf("Call after memory freed = %+v, %v", got, err)
	}
	t.Logf("%d jobs of 8 KiB stored before the refusal (maxmemory %d MiB over the empty server); refusal: %v", len(stored), 4, refusal)
}

func infoInt(t *testing.T, info, field string) int64 {
	t.Helper()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO %s = %q", field, v)
			}
			return n
		}
	}
	t.Fatalf("INFO has no %s", field)
	return 0
}

// While Redis is down, the dashboard answers a 503 page that names the
// Redis it cannot reach (its address, never its password) and loads itself
// again every few seconds, with a link to do it at once; an overview left
// open turns into that page, and once Redis is back the page turns into the
// dashboard by itself. The API answers 503 with a
// JSON error naming the same Redis and a Retry-After, not a 500.
func TestDashboard_RedisDownShowsWhichRedisAndRetriesUntilItIsBack(t *testing.T) {
	t.Parallel()
	const password = "s3cret-pw"
	srv := redistest.Start(t)
	if err := srv.Client(t).ConfigSet(context.Background(), "requirepass", password).Err(); err != nil {
		t.Fatal(err)
	}
	c := connect(t, "redis://:"+password+"@"+srv.Addr()+"/0")
	if _, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "kept"}); err != nil {
		t.Fatal(err)
	}
	api := serveAPI(t, runtime.NewInspector(c, testtasks.Register), runtime.APIOptions{})
	ctx := tab(t)
	run(t, ctx, "open the overview", chromedp.Navigate(api.url+"/"), chromedp.WaitVisible(chromedp.CSS("#route-default")))
	srv.Stop()
	// Restarted without requirepass: the client's AUTH then fails, so give
	// the server its password back before the client reconnects.
	resume := func() {
		if err := srv.Resume(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Client(t).ConfigSet(context.Background(), "requirepass", password).Err(); err != nil {
			t.Fatal(err)
		}
	}
	want := "Redis at " + srv.Addr() + " is unreachable"

	for _, path := range []string{"/api/v1/queues", "/api/v1/jobs?route=default"} {
		resp, err := http.Get(api.url + path)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error string }
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || !strings.HasPrefix(body.Error, want) ||
			strings.Contains(body.Error, password) || resp.Header.Get("Retry-After") != "5" {
			t.Fatalf("GET %s with Redis down: %s, Retry-After %q, %+v (%v); want 503 %q..., Retry-After 5, no password",
				path, resp.Status, resp.Header.Get("Retry-After"), body, err, want)
		}
	}

	resp, err := http.Get(api.url + "/jobs?route=default")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" ||
		!strings.Contains(string(page), `<meta http-equiv="refresh" content="5; url=/jobs?route=default">`) {
		t.Fatalf("GET /jobs with Redis down: %s, Retry-After %q; want 503, Retry-After 5 and a refresh of the page itself:\n%s",
			resp.Status, resp.Header.Get("Retry-After"), page)
	}

	// The open overview, polling for fresh counts, turns into the page that
	// says Redis is down.
	waitAcrossLoads(t, ctx, 20*time.Second, "the open overview to say Redis is unreachable", `!!document.querySelector('#problem')`)
	if got := text(t, ctx, "#problem"); !strings.HasPrefix(got, want+":") || !strings.Contains(got, "connection refused") {
		t.Fatalf("the page says %q; want %q and why", got, want)
	}
	if got := text(t, ctx, "main"); strings.Contains(got, password) {
		t.Fatalf("the page shows Redis's password: %q", got)
	}
	if got := text(t, ctx, "#retry"); !strings.Contains(got, "tries again every 5 seconds") {
		t.Fatalf("the page says %q; want that it tries again by itself", got)
	}
	waitJS(t, ctx, "a link that tries the page again", `document.querySelector('#retry a').getAttribute('href') === '/'`)
	shoot(t, ctx, "redis-down")

	resume()
	waitAcrossLoads(t, ctx, 20*time.Second, "the page to load the overview by itself once Redis is back",
		`!document.querySelector('#problem') && document.title.startsWith('Overview')`)
}

// waitAcrossLoads waits until the JavaScript expression holds on the page,
// through the page loading itself again (which ends a single poll).
func waitAcrossLoads(t *testing.T, ctx context.Context, within time.Duration, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		ok, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(time.Second)))
		if err == nil && ok {
			return
		}
		last = err
	}
	t.Fatalf("browser: waiting for %s (%s) for %s: %v; the page shows: %s", what, expr, within, last, text(t, ctx, "main"))
}
