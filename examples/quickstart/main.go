// Command quickstart shows Bananas end to end on the embedded Redis (mem://),
// with no other process: typed enqueues to two routes and three priorities,
// workers that take only their routes, a typed result awaited, a failing
// job retried with backoff and then dead-lettered, and the HTTP API and
// Prometheus metrics serving it all.
//
//	go run ./examples/quickstart               # the API runs while the demo does
//	go run ./examples/quickstart -serve 10m    # and stays up 10 minutes after
package main

import (
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
)

var start = time.Now()

// say prints one line stamped with the time since start.
func say(format string, args ...any) {
	fmt.Printf("%7.3fs  %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

var serve = flag.Duration("serve", 0, "keep the HTTP API up this long after the demo (Ctrl-C ends it)")

func main() {
	flag.Parse()
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx := context.Background()
	c, err := runtime.Connect(ctx, "mem://")
	if err != nil {
		return err
	}
	defer c.Close()
	runtime.SetDefault(c)
	say("connected to the embedded Redis (mem://), namespace %q", c.Namespace())

	// The admin layer and the HTTP API over it, on a free loopback port.
	in := runtime.NewInspector(c, tasks.Register)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	api := &http.Server{Handler: runtime.APIHandler(in, runtime.APIOptions{}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = api.Serve(ln) }()
	defer api.Close()
	base := "http://" + ln.Addr().String()
	say("dashboard: %s/  HTTP API: %s/api/v1/queues  metrics: %s/metrics  OpenAPI: %s/api/v1/openapi.json", base, base, base, base)

	// Jobs queued before any worker runs, to show the order they are taken in.
	say("enqueue: 3 count_words (route default, priority low), then 1 send_email (route email, priority high)")
	words, err := tasks.CountWords.EnqueueMany(ctx, []tasks.Text{
		{Body: "bananas are berries"}, {Body: "strawberries are not"}, {Body: "one"},
	})
	if err != nil {
		return err
	}
	if _, err := tasks.SendEmail.Enqueue(ctx, tasks.EmailArgs{To: "ana@example.com", Subject: "welcome"}); err != nil {
		return err
	}
	// A delayed job: ready in 300ms.
	later, err := tasks.CountWords.Enqueue(ctx, tasks.Text{Body: "delayed by three hundred ms"}, runtime.Delay(300*time.Millisecond))
	if err != nil {
		return err
	}
	info, _ := c.Job(ctx, later)
	say("enqueue: count_words delayed 300ms -> %s, status %s", short(later), info.Status)

	// Two workers: one for email+default (email preferred), one for images only.
	logger := slog.New(&eventHandler{})
	demoBackoff := func(attempt int) time.Duration { return time.Duration(100<<attempt) * time.Millisecond }
	general := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"email", "default"}, Concurrency: 1, Logger: logger, Backoff: demoBackoff})
	images := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"images"}, Concurrency: 4, Logger: logger, Backoff: demoBackoff})
	tasks.Register(general)
	tasks.Register(images)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for _, w := range []*runtime.Worker{general, images} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(wctx); err != nil {
				log.Fatal(err)
			}
		}()
	}

	for i, id := range words {
		n, err := tasks.CountWords.Await(ctx, id)
		if err != nil {
			return err
		}
		say("result: count_words #%d = %d words", i+1, n)
	}

	// A typed round trip on the images route.
	res, err := tasks.ResizeImage.Call(ctx, tasks.ResizeArgs{URL: "https://cdn.example.com/cat.png", Width: 640})
	if err != nil {
		return err
	}
	say("result: resize_image = %+v (a typed tasks.ResizeResult)", res)

	n, err := tasks.CountWords.Await(ctx, later)
	if err != nil {
		return err
	}
	info, _ = c.Job(ctx, later)
	say("result: delayed count_words = %d, ran %s after it was enqueued", n, info.StartedAt.Sub(info.CreatedAt).Round(time.Millisecond))

	// A job that always fails: retried twice with backoff, then dead-lettered.
	bad, err := tasks.SendEmail.Enqueue(ctx, tasks.EmailArgs{To: "nobody", Subject: "lost"}, runtime.Description("an address with no @"))
	if err != nil {
		return err
	}
	say("enqueue: send_email to %q -> %s (retries=2)", "nobody", short(bad))
	_, err = tasks.SendEmail.Await(ctx, bad)
	var je *runtime.JobError
	if !errors.As(err, &je) {
		return fmt.Errorf("expected the bad email to fail, got %v", err)
	}
	say("result: send_email failed for good: %v", je)
	dead, err := in.Jobs(ctx, runtime.JobQuery{Route: "email", State: runtime.StatusFailed})
	if err != nil {
		return err
	}
	for _, d := range dead.Jobs {
		say("dead-letter queue (email): %s %s attempts=%d error=%q", short(d.ID), d.Name, d.Attempts, d.Error)
	}

	// The same, over HTTP: a submission with JSON args, its result, the queues.
	body := `{"name":"count_words","args":{"Body":"typed over HTTP too"}}`
	resp, err := http.Post(base+"/api/v1/jobs", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	var created struct{ ID string }
	err = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST /api/v1/jobs: %s, %v", resp.Status, err)
	}
	say("POST /api/v1/jobs %s -> %s %s", body, resp.Status, short(created.ID))
	var job struct {
		Status string
		Result any
	}
	if err := getJSON(base+"/api/v1/jobs/"+created.ID+"/result?wait=10s", &job); err != nil {
		return err
	}
	say("GET /api/v1/jobs/%s/result -> status %s, result %v", short(created.ID), job.Status, job.Result)

	stop()
	wg.Wait()
	var queues []struct {
		Route                            string
		Pending, Scheduled, Active, Dead int
		Workers                          int
	}
	if err := getJSON(base+"/api/v1/queues", &queues); err != nil {
		return err
	}
	for _, q := range queues {
		say("GET /api/v1/queues: %-7s pending=%d scheduled=%d active=%d dead=%d", q.Route, q.Pending, q.Scheduled, q.Active, q.Dead)
	}
	if resp, err := http.Get(base + "/metrics"); err == nil {
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(line, "bananas_jobs_processed_total{") || strings.HasPrefix(line, "bananas_jobs_dead_total{") {
				say("GET /metrics: %s", line)
			}
		}
	}
	if *serve > 0 {
		say("serving the API on %s for %s (Ctrl-C to stop)", base, *serve)
		sig, cancel := signal.NotifyContext(ctx, os.Interrupt)
		defer cancel()
		select {
		case <-sig.Done():
		case <-time.After(*serve):
		}
	}
	say("done")
	return nil
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
	attrs []slog.Attr
}

func (h *eventHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *eventHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &eventHandler{attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
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
	say("%s", b.String())
	return nil
}
