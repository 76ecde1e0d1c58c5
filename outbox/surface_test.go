package outbox_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/bananas-go/bananas/internal/pgtest"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/outbox"
	"github.com/bananas-go/bananas/runtime"
)

// The outbox's backlog is what operators see: `app outbox` (pending rows
// by task, the oldest's age, a task no worker registers flagged),
// `app queues` headed by it, /metrics (bananas_outbox_pending,
// bananas_outbox_lag_seconds, bananas_outbox_relayed_total) and the
// dashboard's overview in a browser.
func TestOperatorSurface_ShowsTheOutboxBacklog(t *testing.T) {
	t.Parallel()
	pool, url := database(t)
	srv := redistest.Start(t)
	ns := redistest.Namespace(t)
	c, err := runtime.Connect(ctxT(t), srv.URL(), runtime.WithNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := ctxT(t)
	commitMany(t, pool, c, names("shown", 3))
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := orphan.With(c).EnqueueManyTx(ctx, outbox.Tx(tx), []mail{{To: "o1"}, {To: "o2"}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// The CLI of a program with OUTBOX_URL, whose worker registers sendMail.
	env := map[string]string{"REDIS_URL": srv.URL(), "BANANAS_NAMESPACE": ns, "OUTBOX_URL": url}
	app := func(args ...string) string {
		t.Helper()
		var out, errOut strings.Builder
		code := runtime.RunCommand(ctx, args, func(k string) string { return env[k] }, &out, &errOut,
			func(w *runtime.Worker) { runtime.Handle(w, sendMail, newRuns().handler) })
		if code != runtime.ExitOK {
			t.Fatalf("app %v: exit %d, stderr %q", args, code, errOut.String())
		}
		return out.String()
	}
	var got struct {
		Pending   int64  `json:"pending"`
		OldestAt  string `json:"oldest_at"`
		OldestAge int64  `json:"oldest_age_ms"`
		Tasks     []struct {
			Task       string `json:"task"`
			Pending    int64  `json:"pending"`
			Registered bool   `json:"registered"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(app("outbox", "--json")), &got); err != nil {
		t.Fatal(err)
	}
	if got.Pending != 5 || got.OldestAt == "" || len(got.Tasks) != 2 ||
		got.Tasks[0].Task != orphan.Name() || got.Tasks[0].Pending != 2 || got.Tasks[0].Registered ||
		got.Tasks[1].Task != sendMail.Name() || got.Tasks[1].Pending != 3 || !got.Tasks[1].Registered {
		t.Fatalf("outbox --json: %+v; want 5 pending: 2 of %s (not registered), 3 of %s (registered)", got, orphan.Name(), sendMail.Name())
	}
	if out := app("outbox"); !strings.Contains(out, "outbox: 5 committed jobs waiting for a relay") || !strings.Contains(out, "2 of a task no worker of this program registers") {
		t.Fatalf("outbox printed\n%s", out)
	}
	if out := app("queues"); !strings.HasPrefix(out, "outbox: 5 committed jobs waiting for a relay") {
		t.Fatalf("queues printed\n%s\nwant the outbox's backlog first", out)
	}

	// A relay into c: its metrics, then it moves the registered task's rows.
	relay := outbox.NewRelay(pool, c, outbox.RelayOptions{Tasks: []string{sendMail.Name()}, Logger: quiet()})
	metrics := func() string {
		rec := httptest.NewRecorder()
		c.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.String()
	}
	if m := metrics(); !strings.Contains(m, "bananas_outbox_pending 5\n") || !strings.Contains(m, "bananas_outbox_relayed_total 0\n") || !strings.Contains(m, "bananas_outbox_lag_seconds ") {
		t.Fatalf("/metrics before the relay ran lacks the outbox's 5 pending, 0 relayed and its lag:\n%s", grepLines(m, "bananas_outbox"))
	}
	run(t, relay.Run)
	waitFor(t, 20*time.Second, "the registered rows moved", func() bool { return pending(t, pool) == 2 })
	if m := metrics(); !strings.Contains(m, "bananas_outbox_pending 2\n") || !strings.Contains(m, "bananas_outbox_relayed_total 3\n") {
		t.Fatalf("/metrics after the relay moved 3 rows:\n%s", grepLines(m, "bananas_outbox"))
	}

	// The dashboard's overview, in a browser.
	w := runtime.NewWorker(c, runtime.WorkerOptions{Logger: quiet()})
	hs := httptest.NewServer(runtime.APIHandler(w.Inspector(), runtime.APIOptions{}))
	t.Cleanup(hs.Close)
	bctx := tab(t)
	if err := chromedp.Do(bctx, chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#outbox"))); err != nil {
		t.Fatalf("browser: open the overview: %v", err)
	}
	texts, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[document.querySelector('#outbox [data-col="outbox-pending"]').textContent, document.querySelector('#outbox [data-col="outbox-unregistered"]').textContent]`))
	if err != nil {
		t.Fatalf("browser: read the outbox line: %v", err)
	}
	pendingText, unregistered := texts[0], texts[1]
	if pendingText != "2" || !strings.Contains(unregistered, "2 of an unregistered task") {
		t.Fatalf("overview shows the outbox as %q pending, %q; want 2 pending, 2 of an unregistered task", pendingText, unregistered)
	}
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// tab is a tab of a headless Chromium (Debian's chromium), closed when the
// test ends.
func tab(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("the dashboard's browser test needs Chromium on PATH: apt-get install -y chromium")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 800), chromedp.Flag("disable-dev-shm-usage", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, stop := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(stop)
	return ctx
}

// Before any relay made the schema, the backlog is empty, not an error.
func TestOperatorSurface_AnOutboxWithoutItsSchemaYetIsEmpty(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).Database(t)
	env := map[string]string{"REDIS_URL": "mem://", "OUTBOX_URL": url}
	var out, errOut strings.Builder
	code := runtime.RunCommand(ctxT(t), []string{"outbox"}, func(k string) string { return env[k] }, &out, &errOut)
	if code != runtime.ExitOK || !strings.HasPrefix(out.String(), "outbox: empty") {
		t.Fatalf("app outbox on a database without the schema: exit %d, stdout %q, stderr %q; want an empty outbox", code, out.String(), errOut.String())
	}
}
