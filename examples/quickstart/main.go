// Command quickstart shows Bananas end to end on the embedded Redis (mem://),
// with no other process: typed enqueues to two routes and three priorities,
// workers that take only their routes, a typed result awaited, a typed
// workflow (a gather of two steps, then a step after it), a failing
// job retried with backoff and then dead-lettered, and the HTTP API, the
// dashboard and Prometheus metrics serving it all.
//
// Once the demo's steps are done, its workers and its dashboard stay up for
// -serve (10 minutes by default), so that the URL it prints can be opened and
// jobs sent from the dashboard or the API are run; Ctrl-C ends it sooner.
//
//	go run ./examples/quickstart               # the demo, then 10 minutes of serving
//	go run ./examples/quickstart -serve 1h     # an hour of serving
//	go run ./examples/quickstart -serve 0      # exit once the demo is done
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
)

var serve = flag.Duration("serve", 10*time.Minute, "keep the dashboard, HTTP API and workers up this long after the demo (0: exit at once; Ctrl-C ends it sooner)")

func main() {
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *serve); err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}

// run runs the demo's steps, printing each to out, then keeps the dashboard,
// the HTTP API and the workers up for serve or until ctx ends.
func run(ctx context.Context, out io.Writer, serve time.Duration) (err error) {
	d := &demo{out: out, start: time.Now()}
	c, err := runtime.Connect(ctx, "mem://")
	if err != nil {
		return err
	}
	defer c.Close()
	d.ctx, d.c = ctx, c
	runtime.SetDefault(c)
	d.say("connected to the embedded Redis (mem://), namespace %q", c.Namespace())
	// The audit log's JSON lines (one per state-changing action) are shown
	// as the demo's own lines, beside the rest of what it prints.
	admin.SetAuditWriter(auditLines{d})
	closeAPI, err := d.serveAPI()
	if err != nil {
		return err
	}
	defer closeAPI()
	words, later, err := d.enqueueBeforeWorkers()
	if err != nil {
		return err
	}
	stopWorkers := d.startWorkers()
	defer func() {
		if werr := stopWorkers(); err == nil {
			err = werr
		}
	}()
	if err := d.awaitResults(words, later); err != nil {
		return err
	}
	if err := d.workflow(); err != nil {
		return err
	}
	if err := d.deadLetter(); err != nil {
		return err
	}
	if err := d.overHTTP(); err != nil {
		return err
	}
	if err := d.showQueues(); err != nil {
		return err
	}
	d.showMetrics()
	d.keepServing(serve)
	d.say("done: stopping the workers and the dashboard")
	return nil
}

// demo is what the quickstart's steps share: the client, the admin layer,
// the address the HTTP API serves on and where the steps are printed.
type demo struct {
	ctx  context.Context
	c    *runtime.Client
	in   *admin.Inspector
	base string // "http://host:port" of the HTTP API

	start time.Time
	mu    sync.Mutex // one line at a time: the workers print too
	out   io.Writer
}

// say prints one line stamped with the time since the start.
func (d *demo) say(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, "%7.3fs  %s\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
}

// serveAPI serves the admin layer's HTTP API and the dashboard on a free
// loopback port and returns the function that closes it.
func (d *demo) serveAPI() (closeAPI func(), err error) {
	d.in = runtime.NewInspector(d.c, tasks.Register)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	api := &http.Server{Handler: runtime.APIHandler(d.in, runtime.APIOptions{}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = api.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	d.base = base
	d.say("dashboard: %s/  HTTP API: %s/api/v1/queues  metrics: %s/metrics  OpenAPI: %s/api/v1/openapi.json", base, base, base, base)
	return func() { api.Close() }, nil
}

// enqueueBeforeWorkers queues jobs before any worker runs, to show the order
// they are taken in, and a delayed job; it returns the ids of the
// count_words jobs and of the delayed one.
func (d *demo) enqueueBeforeWorkers() (words []string, later string, err error) {
	d.say("enqueue: 3 count_words (route default, priority low), then 1 send_email (route email, priority high)")
	words, err = tasks.CountWords.EnqueueMany(d.ctx, []tasks.Text{
		{Body: "bananas are berries"}, {Body: "strawberries are not"}, {Body: "one"},
	})
	if err != nil {
		return nil, "", err
	}
	if _, err := tasks.SendEmail.Enqueue(d.ctx, tasks.EmailArgs{To: "ana@example.com", Subject: "welcome"}); err != nil {
		return nil, "", err
	}
	// A delayed job: ready in 300ms.
	later, err = tasks.CountWords.Enqueue(d.ctx, tasks.Text{Body: "delayed by three hundred ms"}, runtime.Delay(300*time.Millisecond))
	if err != nil {
		return nil, "", err
	}
	info, _ := d.c.Job(d.ctx, later)
	d.say("enqueue: count_words delayed 300ms -> %s, status %s", short(later), info.Status)
	return words, later, nil
}

// startWorkers runs two workers: one for email+default (email preferred),
// one for images only; stop stops them and returns the first error a worker
// returned.
func (d *demo) startWorkers() (stop func() error) {
	logger := slog.New(&eventHandler{d: d})
	demoBackoff := func(attempt int) time.Duration { return time.Duration(100<<attempt) * time.Millisecond }
	general := runtime.NewWorker(d.c, runtime.WorkerOptions{Routes: []string{"email", "default"}, Concurrency: 1, Logger: logger, Backoff: demoBackoff})
	images := runtime.NewWorker(d.c, runtime.WorkerOptions{Routes: []string{"images"}, Concurrency: 4, Logger: logger, Backoff: demoBackoff})
	tasks.Register(general)
	tasks.Register(images)
	wctx, cancel := context.WithCancel(context.WithoutCancel(d.ctx)) // Ctrl-C ends the serving; the workers stop after it
	errs := make(chan error, 2)
	for _, w := range []*runtime.Worker{general, images} {
		go func() { errs <- w.Run(wctx) }()
	}
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			cancel()
			err = errors.Join(<-errs, <-errs)
		})
		return err
	}
}

// workflow runs two count_words steps and sums their results: a Gather,
// then a step of sum_counts, whose args ([]int) the compiler checks against
// what count_words returns (int).
func (d *demo) workflow() error {
	last := runtime.Then(runtime.Gather(
		tasks.CountWords.Step(tasks.Text{Body: "one two three"}),
		tasks.CountWords.Step(tasks.Text{Body: "four five"}),
	), tasks.SumCounts)
	id, err := last.Enqueue(d.ctx)
	if err != nil {
		return err
	}
	total, err := last.Await(d.ctx, id)
	if err != nil {
		return err
	}
	info, err := d.c.Workflow(d.ctx, id)
	if err != nil {
		return err
	}
	d.say("workflow: count_words x2 -> gather -> sum_counts = %d (%s, %d steps: %s/workflows/%s)", total, info.Status, len(info.Steps), d.base, id)
	return nil
}

// awaitResults awaits the count_words results, a typed round trip on the
// images route and the delayed job.
func (d *demo) awaitResults(words []string, later string) error {
	for i, id := range words {
		n, err := tasks.CountWords.Await(d.ctx, id)
		if err != nil {
			return err
		}
		d.say("result: count_words #%d = %d words", i+1, n)
	}
	res, err := tasks.ResizeImage.Call(d.ctx, tasks.ResizeArgs{URL: "https://cdn.example.com/cat.png", Width: 640})
	if err != nil {
		return err
	}
	d.say("result: resize_image = %+v (a typed tasks.ResizeResult)", res)
	n, err := tasks.CountWords.Await(d.ctx, later)
	if err != nil {
		return err
	}
	info, _ := d.c.Job(d.ctx, later)
	d.say("result: delayed count_words = %d, ran %s after it was enqueued", n, info.StartedAt.Sub(info.CreatedAt).Round(time.Millisecond))
	return nil
}

// deadLetter enqueues a job that always fails: retried twice with backoff,
// then dead-lettered, where the admin layer lists it.
func (d *demo) deadLetter() error {
	bad, err := tasks.SendEmail.Enqueue(d.ctx, tasks.EmailArgs{To: "nobody", Subject: "lost"}, runtime.Description("an address with no @"))
	if err != nil {
		return err
	}
	d.say("enqueue: send_email to %q -> %s (retries=2)", "nobody", short(bad))
	_, err = tasks.SendEmail.Await(d.ctx, bad)
	var je *runtime.JobError
	if !errors.As(err, &je) {
		return fmt.Errorf("expected the bad email to fail, got %v", err)
	}
	d.say("result: send_email failed for good: %v", je)
	dead, err := d.in.Jobs(d.ctx, admin.JobQuery{Route: "email", State: runtime.StatusFailed})
	if err != nil {
		return err
	}
	for _, j := range dead.Jobs {
		d.say("dead-letter queue (email): %s %s attempts=%d error=%q", short(j.ID), j.Name, j.Attempts, j.Error)
	}
	return nil
}

// overHTTP does the same over HTTP: a submission with JSON args and its
// result.
func (d *demo) overHTTP() error {
	body := `{"name":"count_words","args":{"Body":"typed over HTTP too"}}`
	resp, err := http.Post(d.base+"/api/v1/jobs", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	var created struct{ ID string }
	err = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST /api/v1/jobs: %s, %v", resp.Status, err)
	}
	d.say("POST /api/v1/jobs %s -> %s %s", body, resp.Status, short(created.ID))
	var job struct {
		Status string
		Result any
	}
	if err := getJSON(d.base+"/api/v1/jobs/"+created.ID+"/result?wait=10s", &job); err != nil {
		return err
	}
	d.say("GET /api/v1/jobs/%s/result -> status %s, result %v", short(created.ID), job.Status, job.Result)
	return nil
}

// showQueues prints every route's counts as the HTTP API reports them.
func (d *demo) showQueues() error {
	var queues []struct {
		Route                            string
		Pending, Scheduled, Active, Dead int
		Workers                          int
	}
	if err := getJSON(d.base+"/api/v1/queues", &queues); err != nil {
		return err
	}
	for _, q := range queues {
		d.say("GET /api/v1/queues: %-7s pending=%d scheduled=%d active=%d dead=%d", q.Route, q.Pending, q.Scheduled, q.Active, q.Dead)
	}
	return nil
}

// showMetrics prints the processed and dead counters of the Prometheus
// metrics; the demo goes on without them if they cannot be read.
func (d *demo) showMetrics() {
	resp, err := http.Get(d.base + "/metrics")
	if err != nil {
		return
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "bananas_jobs_processed_total{") || strings.HasPrefix(line, "bananas_jobs_dead_total{") {
			d.say("GET /metrics: %s", line)
		}
	}
}

// keepServing keeps the dashboard, the HTTP API and the workers up for
// serve, or until ctx ends (Ctrl-C), saying where and until when.
func (d *demo) keepServing(serve time.Duration) {
	if serve <= 0 {
		return
	}
	until := time.Now().Add(serve)
	d.say("serving: dashboard %s/ with its workers (routes email, default, images) for %s, until %s; Ctrl-C stops it sooner",
		d.base, serve, until.Format("15:04:05 MST"))
	t := time.NewTimer(serve)
	defer t.Stop()
	select {
	case <-d.ctx.Done():
	case <-t.C:
	}
}

// getJSON decodes the JSON that GET url answers into v.
func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// short trims a job id for display: its ULID tail and route.
func short(id string) string {
	if i := strings.IndexByte(id, '.'); i > 8 {
		return "…" + id[i-6:]
	}
	return id
}

// eventHandler prints the workers' job events as they happen, one line each.
type eventHandler struct {
	d     *demo
	attrs []slog.Attr
}

func (h *eventHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *eventHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &eventHandler{d: h.d, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}
func (h *eventHandler) WithGroup(string) slog.Handler { return h }
func (h *eventHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("worker: ")
	b.WriteString(strings.TrimPrefix(r.Message, "bananas: "))
	add := func(a slog.Attr) bool {
		v := a.Value.String()
		switch a.Key {
		case "job":
			v = short(v)
		case "worker":
			return true
		}
		fmt.Fprintf(&b, " %s=%s", a.Key, v)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	h.d.say("%s", b.String())
	return nil
}

// auditLines prints each of the audit log's JSON lines as one of the demo's:
// who did what to which target through which surface, and the outcome.
type auditLines struct{ d *demo }

func (a auditLines) Write(p []byte) (int, error) {
	var e struct{ Who, Via, What, Target, Outcome, Error string }
	if err := json.Unmarshal(p, &e); err != nil {
		a.d.say("audit: %s", bytes.TrimSpace(p))
		return len(p), nil
	}
	line := fmt.Sprintf("audit: %s by %s via %s on %s -> %s", e.What, e.Who, e.Via, short(e.Target), e.Outcome)
	if e.Error != "" {
		line += ": " + e.Error
	}
	a.d.say("%s", line)
	return len(p), nil
}
