package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// scanHolds SCANs every key of namespace ns and reports those whose value
// — read by type (GET, HGETALL, LRANGE, SMEMBERS, ZRANGE, XRANGE) and by
// DUMP — holds secret.
func scanHolds(t *testing.T, rdb *redis.Client, ns, secret string) []string {
	t.Helper()
	ctx := context.Background()
	var keys []string
	iter := rdb.Scan(ctx, 0, ns+":*", 500).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil || len(keys) == 0 {
		t.Fatalf("SCAN %s:* = %d keys, %v", ns, len(keys), err)
	}
	var found []string
	for _, k := range keys {
		values := []string{rdb.Dump(ctx, k).Val()}
		switch rdb.Type(ctx, k).Val() {
		case "string":
			values = append(values, rdb.Get(ctx, k).Val())
		case "hash":
			for f, v := range rdb.HGetAll(ctx, k).Val() {
				values = append(values, f, v)
			}
		case "list":
			values = append(values, rdb.LRange(ctx, k, 0, -1).Val()...)
		case "set":
			values = append(values, rdb.SMembers(ctx, k).Val()...)
		case "zset":
			values = append(values, rdb.ZRange(ctx, k, 0, -1).Val()...)
		case "stream":
			for _, m := range rdb.XRange(ctx, k, "-", "+").Val() {
				values = append(values, fmt.Sprint(m.Values))
			}
		}
		for _, v := range values {
			if strings.Contains(v, secret) {
				found = append(found, k)
				break
			}
		}
	}
	return found
}

// With keys set, a secret in a schedule's args (made in Go and through the
// API), in the failure message of a dead-lettered job, of a job waiting for
// its retry and of a failed workflow step never appears in Redis (every key
// of the namespace SCANned and read, an uncompressed RDB dump); the tick of
// each schedule runs with its args; and the API, the CLI and the dashboard
// show an authorized user the values opened.
func TestSeal_SchedulesAndFailuresHoldNoPlaintext(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := ctxT(t)
	const secret = "SECRET-7a1e-cafe-0042"
	keys := []runtime.SealKey{sealKey("k2", 2), sealKey("k1", 1)}
	ns := redistest.Namespace(t)
	c := connect(t, srv.URL(), runtime.WithNamespace(ns), runtime.WithKeys(keys...))
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Backoff: func(int) time.Duration { return time.Hour }}))
	ran := make(chan string, 16)
	runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		ran <- m.Text
		switch m.N {
		case 1:
			return testtasks.Reply{}, fmt.Errorf("dead: card %s refused: %w", secret, runtime.SkipRetry)
		case 2:
			return testtasks.Reply{}, fmt.Errorf("retrying: card %s timed out", secret)
		case 3:
			return testtasks.Reply{}, fmt.Errorf("step: card %s refused: %w", secret, runtime.SkipRetry)
		}
		return testtasks.Reply{Text: "ok"}, nil
	})
	startWorker(t, w)
	in := runtime.NewInspector(c, testtasks.Register)
	api := serveAPI(t, in, runtime.APIOptions{Tokens: roleTokens(t)})
	api.token = "tok-viewer-1"
	admin := *api
	admin.token = "tok-root-1"

	// Schedules: one from Go, one through the API; each run now once.
	if err := testtasks.Echo.With(c).Schedule(ctx, "go-sched", testtasks.Msg{Text: "tick " + secret}, runtime.Every("0 0 1 1 *")); err != nil {
		t.Fatal(err)
	}
	if st, body := admin.do("PUT", "/api/v1/schedules/api-sched", `{"name":"t_echo","args":{"Text":"api tick `+secret+`"},"cron":"0 0 1 1 *"}`); st != http.StatusOK || !strings.Contains(fmt.Sprint(body), secret) {
		t.Fatalf("PUT schedule = %d %v; want 200 showing its args", st, body)
	}
	for _, id := range []string{"go-sched", "api-sched"} {
		if _, err := in.RunSchedule(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for len(got) < 2 {
		got[recv(t, ran, 10*time.Second, "the schedules' ticks run")] = true
	}
	if !got["tick "+secret] || !got["api tick "+secret] {
		t.Fatalf("the ticks ran with %v; want each schedule's args", got)
	}

	echo := testtasks.Echo.With(c)
	dead, err := echo.Enqueue(ctx, testtasks.Msg{Text: "plain", N: 1})
	if err != nil {
		t.Fatal(err)
	}
	retrying, err := echo.Enqueue(ctx, testtasks.Msg{Text: "plain", N: 2}, runtime.MaxRetries(5))
	if err != nil {
		t.Fatal(err)
	}
	wf, err := testtasks.Echo.With(c).Step(testtasks.Msg{Text: "plain", N: 3}).Enqueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the jobs fail", func() bool {
		wfv, err := c.Workflow(ctx, wf)
		return jobStatus(t, c, dead) == runtime.StatusFailed && jobStatus(t, c, retrying) == runtime.StatusScheduled &&
			err == nil && wfv.Status == "failed"
	})

	if found := scanHolds(t, rdb, ns, secret); len(found) > 0 {
		t.Fatalf("with keys, the secret is in the clear in %v", found)
	}
	if dump := rdbDump(t, rdb); bytes.Contains(dump, []byte(secret)) || !bytes.Contains(dump, []byte(ns)) {
		t.Fatalf("with keys, the uncompressed RDB dump (%d bytes) holds the secret, or not the namespace's keys", len(dump))
	}

	// An authorized user sees the values opened: the API (a read token)...
	for _, path := range []string{"/api/v1/jobs/" + dead, "/api/v1/jobs/" + retrying, "/api/v1/dlq", "/api/v1/schedules", "/api/v1/schedules/go-sched", "/api/v1/workflows/" + wf} {
		if st, body := api.do("GET", path, ""); st != http.StatusOK || !strings.Contains(fmt.Sprint(body), secret) {
			t.Errorf("GET %s = %d %v; want the secret opened", path, st, body)
		}
	}
	// ... Await and Workflow in Go ...
	if _, err := echo.Await(ctx, dead); err == nil || !strings.Contains(err.Error(), secret) {
		t.Errorf("Await of the dead job: %v; want its error opened", err)
	}
	// ... the CLI ...
	cli := newApp(t).with("REDIS_URL", srv.URL(), "BANANAS_NAMESPACE", ns, "BANANAS_KEYS", sealKeysEnv(keys...))
	for _, args := range [][]string{{"job", dead}, {"dlq", "list"}, {"schedules", "list", "--json"}, {"workflow", wf}} {
		if out := cli.ok(args...); !strings.Contains(out, secret) {
			t.Errorf("app %s:\n%s\nwant the secret opened", strings.Join(args, " "), out)
		}
	}
	// ... and the dashboard.
	b := tab(t)
	run(t, b, "log in", chromedp.Navigate(api.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), "tok-viewer-1"), chromedp.Click(chromedp.CSS("#login")), chromedp.WaitVisible(chromedp.CSS("#who")))
	for _, page := range []string{"/jobs/" + dead, "/jobs/" + retrying, "/workflows/" + wf} {
		run(t, b, "open "+page, chromedp.Navigate(api.url+page), chromedp.WaitVisible(chromedp.CSS("main")))
		if body, err := chromedp.Run(b, chromedp.Evaluate[string](`document.querySelector("main").innerText`)); err != nil || !strings.Contains(body, secret) {
			t.Errorf("the dashboard's %s does not show the secret opened (%v):\n%s", page, err, body)
		}
	}

	// Without the keys, a process shows "encrypted" in their place.
	keyless := runtime.NewInspector(connect(t, srv.URL(), runtime.WithNamespace(ns), runtime.WithKeys()), testtasks.Register)
	if j, err := keyless.Job(ctx, dead); err != nil || j.Error != "encrypted" {
		t.Errorf("a process without keys shows the dead job's error as %q (%v); want encrypted", j.Error, err)
	}
	if s, err := keyless.Schedule(ctx, "go-sched"); err != nil || string(s.Args) != `"encrypted"` {
		t.Errorf("a process without keys shows the schedule's args as %s (%v); want \"encrypted\"", s.Args, err)
	}
}

// With keys set, a job's checkpoint is sealed for the job in Redis (no
// plaintext of it in the checkpoint's key), and the retry after a failed
// run reads it opened with LastCheckpoint; a worker without the key reads
// none.
func TestSeal_CheckpointsAreSealedAndReadBackOpened(t *testing.T) {
	eachServer(t, func(t *testing.T, url, ns string) {
		ctx := ctxT(t)
		const secret = "CKPT-SECRET-3141"
		c := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(sealKey("k1", 1)))
		task := ckTask.With(c)
		raw := make(chan string, 1)
		seen := make(chan string, 4)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"ck"}}))
		runtime.Handle(w, task, func(ctx context.Context, n int) (int, error) {
			last, ok := runtime.LastCheckpoint[ckState](ctx)
			seen <- fmt.Sprintf("%v:%s", ok, last.Note)
			if ok {
				return last.Done, nil
			}
			if err := runtime.Checkpoint(ctx, ckState{Done: 7, Note: secret}); err != nil {
				return 0, err
			}
			job, _ := runtime.CurrentJob(ctx)
			key := checkpointKey(c, "ck", job.ID)
			for c.Redis().Exists(ctx, key).Val() == 0 { // written at once: the first value of the run
				if ctx.Err() != nil {
					return 0, ctx.Err()
				}
				time.Sleep(time.Millisecond)
			}
			v, _ := c.Redis().Dump(ctx, key).Result()
			raw <- v
			return 0, errors.New("half way")
		})
		startWorker(t, w)
		id, err := task.Enqueue(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := task.Await(ctx, id); err != nil || got != 7 {
			t.Fatalf("Await = %d, %v; want 7, read back from the checkpoint", got, err)
		}
		if v := recv(t, raw, time.Second, "the checkpoint's stored bytes"); strings.Contains(v, secret) || !strings.Contains(v, "k1") {
			t.Fatalf("the checkpoint in Redis holds the secret, or names no key: %q", v)
		}
		if a, b := recv(t, seen, time.Second, "first run"), recv(t, seen, time.Second, "retry"); a != "false:" || b != "true:"+secret {
			t.Fatalf("the runs saw %q then %q; want none, then the checkpoint opened", a, b)
		}
	})
}
