package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
)

// The seal tests' workflow tasks: each step's result carries what it was
// given, so a marker in the first step's args reaches every value.
var (
	wfSealEcho = runtime.NewTask[string, string]("wf_seal_echo")
	wfSealUp   = runtime.NewTask[string, string]("wf_seal_up")
	wfSealJoin = runtime.NewTask[[]string, string]("wf_seal_join")
)

// sealTasks registers the seal tests' workflow tasks, for an Inspector.
func sealTasks(w *runtime.Worker) {
	runtime.Handle(w, wfSealEcho, func(context.Context, string) (string, error) { return "", nil })
	runtime.Handle(w, wfSealUp, func(context.Context, string) (string, error) { return "", nil })
	runtime.Handle(w, wfSealJoin, func(context.Context, []string) (string, error) { return "", nil })
}

// sealWorker runs the seal tests' workflow tasks on c, telling each run's
// args on ran; the echo of "gate" waits for gate to close. stop stops it.
func sealWorker(t *testing.T, c *runtime.Client, gate <-chan struct{}) (ran <-chan string, stop func()) {
	t.Helper()
	runs := make(chan string, 64)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(w, wfSealEcho, func(ctx context.Context, s string) (string, error) {
		runs <- "echo " + s
		if s == "gate" {
			select {
			case <-gate:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		return "echo:" + s, nil
	})
	runtime.Handle(w, wfSealUp, func(_ context.Context, s string) (string, error) {
		runs <- "up " + s
		return "up:" + s, nil
	})
	runtime.Handle(w, wfSealJoin, func(_ context.Context, s []string) (string, error) {
		runs <- "join " + strings.Join(s, "|")
		return "join:" + strings.Join(s, "|"), nil
	})
	return runs, startWorker(t, w)
}

// With keys set, what a workflow's record keeps of its user's values — a
// first step's args, each step's result, a gather's array of them, a
// signal's payload completing a wait and one kept for a wait not reached
// yet — and what its steps' jobs keep (args, results) never appear in
// Redis: not in any key (read by type and by DUMP), not in an uncompressed
// RDB dump. Each step still runs with the values opened, and the
// workflow's result opens for Await, the API and the CLI of a process with
// the keys. The same reads find a marker of a workflow stored without
// keys, so they would see a leak.
func TestSeal_WorkflowValuesHoldNoPlaintext(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := ctxT(t)
	const marker = "WFMARK-51de-77aa"
	keys := []runtime.SealKey{sealKey("k2", 2), sealKey("k1", 1)}
	ns := redistest.Namespace(t)
	c := connect(t, srv.URL(), runtime.WithNamespace(ns), runtime.WithKeys(keys...))
	gate := make(chan struct{})
	ran, _ := sealWorker(t, c, gate)

	// echo(M) -> up, up (a gather) -> join; join and a signal wait (a
	// gather) -> join-2, the final step.
	a := wfSealEcho.With(c).Step(marker)
	join := runtime.Then(runtime.Gather(runtime.Then(a, wfSealUp), runtime.Then(a, wfSealUp)), wfSealJoin)
	last := runtime.Then(runtime.Gather(join, runtime.WaitSignal[string]("seal-ok", time.Hour)), wfSealJoin)
	id, err := last.Enqueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Signal(ctx, id, "seal-ok", "sig "+marker); err != nil {
		t.Fatal(err)
	}
	up := "up:echo:" + marker
	want := "join:join:" + up + "|" + up + "|sig " + marker
	if got, err := last.Await(ctx, id); err != nil || got != want {
		t.Fatalf("Await = %q, %v; want %q", got, err, want)
	}
	var runs []string
	for range 5 {
		runs = append(runs, recv(t, ran, 5*time.Second, "a step's run"))
	}
	slices.Sort(runs)
	wantRuns := []string{"echo " + marker, "join join:" + up + "|" + up + "|sig " + marker, "join " + up + "|" + up, "up echo:" + marker, "up echo:" + marker}
	slices.Sort(wantRuns)
	if !slices.Equal(runs, wantRuns) {
		t.Fatalf("the steps ran with %q; want %q", runs, wantRuns)
	}

	// A signal kept for a wait not reached yet (its step before it runs).
	api := serveAPI(t, runtime.NewInspector(c, sealTasks), runtime.APIOptions{})
	sub := api.want(http.StatusCreated, "POST", "/api/v1/workflows", `{"steps": [
		{"id": "prep", "name": "wf_seal_echo", "args": "gate"},
		{"id": "ok", "signal": "later", "timeout": "1h", "after": ["prep"]},
		{"id": "up", "name": "wf_seal_up", "after": ["ok"]}]}`)
	kept, _ := sub["id"].(string)
	if got := recv(t, ran, 10*time.Second, "the gated step to start"); got != "echo gate" {
		t.Fatalf("ran %q; want the gated echo", got)
	}
	api.want(http.StatusAccepted, "POST", "/api/v1/workflows/"+kept+"/signals/later", `"later `+marker+`"`)
	rec := queue.WorkflowKey(ns, kept)
	if fields := rdb.HKeys(ctx, rec).Val(); !slices.ContainsFunc(fields, func(f string) bool { return strings.HasPrefix(f, "sp:") }) {
		t.Fatalf("the record %s holds %v; want the kept signal's payload (sp:<id>)", rec, fields)
	}
	if found := scanHolds(t, rdb, ns, marker); len(found) > 0 {
		t.Fatalf("with keys, the marker is in the clear in %v (a signal kept)", found)
	}
	close(gate)
	waitFor(t, 10*time.Second, "the workflow with the kept signal to complete", func() bool {
		return workflowOf(t, c, kept).Status == "completed"
	})
	if got := recv(t, ran, 5*time.Second, "the step after the kept signal"); got != "up later "+marker {
		t.Fatalf("the step after the wait ran with %q; want the kept signal's payload", got)
	}

	if found := scanHolds(t, rdb, ns, marker); len(found) > 0 {
		t.Fatalf("with keys, the marker is in the clear in %v", found)
	}
	if dump := rdbDump(t, rdb); bytes.Contains(dump, []byte(marker)) || !bytes.Contains(dump, []byte(ns)) {
		t.Fatalf("with keys, the uncompressed RDB dump (%d bytes) holds the marker, or not the namespace's keys", len(dump))
	}

	// A process with the keys sees the values opened: the API (the
	// workflow's result, a step's job's args and result) and the CLI.
	if got := api.want(http.StatusOK, "GET", "/api/v1/workflows/"+id, ""); got["result"] != want {
		t.Fatalf("GET the workflow: result %v; want %q", got["result"], want)
	}
	if got := api.want(http.StatusOK, "GET", "/api/v1/workflows/"+kept, ""); got["result"] != "up:later "+marker {
		t.Fatalf("GET the workflow of the kept signal: result %v", got["result"])
	}
	first := stepOf(t, workflowOf(t, c, id), "wf_seal_echo")
	job := api.want(http.StatusOK, "GET", "/api/v1/jobs/"+first.JobID, "")
	if job["args"] != marker || job["result"] != "echo:"+marker {
		t.Fatalf("GET the first step's job: args %v, result %v; want them opened", job["args"], job["result"])
	}
	cli := &app{t: t, env: map[string]string{"REDIS_URL": srv.URL(), "BANANAS_NAMESPACE": ns, "LOG_LEVEL": "error", "BANANAS_KEYS": sealKeysEnv(keys...)}}
	if out := cli.ok("workflow", id, "--json"); !strings.Contains(out, want) {
		t.Fatalf("workflow --json with the keys:\n%s\nwant the result opened", out)
	}
	if got := dashboardResult(t, api, id); !strings.Contains(got, want) {
		t.Fatalf("the dashboard's workflow page shows the result %q; want it opened", got)
	}

	// The control: the same reads see a workflow's marker stored without keys.
	plain := connect(t, srv.URL(), runtime.WithKeys())
	const control = "WFCONTROL-0b0e-3333"
	if _, err := wfSealEcho.With(plain).Step(control, runtime.Route("nobody")).Enqueue(ctx); err != nil {
		t.Fatal(err)
	}
	if found := scanHolds(t, rdb, plain.Namespace(), control); !slices.ContainsFunc(found, func(k string) bool { return strings.Contains(k, ":workflow:") }) {
		t.Fatalf("the reads find a workflow's marker stored without keys in %v; want its record among them", found)
	}
}

// A value sealed for one workflow does not open in another: a step's
// result copied into another workflow's record fails the step made of it
// with an error naming the seal, and the workflow fails; nothing panics.
// A process without the keys reads the workflows and the steps' jobs over
// the API and the CLI: 200, the values "encrypted".
func TestSeal_AWorkflowValueMovedToAnotherWorkflowDoesNotOpen(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := ctxT(t)
	const marker = "WFMOVED-9e9e-1212"
	ns := redistest.Namespace(t)
	c := connect(t, srv.URL(), runtime.WithNamespace(ns), runtime.WithKeys(sealKey("k1", 1)))
	ran, _ := sealWorker(t, c, nil)

	done := wfSealEcho.With(c).Step("from " + marker)
	src, err := done.Enqueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := done.Await(ctx, src); err != nil || got != "echo:from "+marker {
		t.Fatalf("Await = %q, %v", got, err)
	}
	// echo and a wait, gathered, then join: echo's result is in the record
	// while the wait holds join back.
	last := runtime.Then(runtime.Gather(wfSealEcho.With(c).Step("to "+marker), runtime.WaitSignal[string]("go", 0)), wfSealJoin)
	dst, err := last.Enqueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the echo step to complete", func() bool {
		return stepOf(t, workflowOf(t, c, dst), "wf_seal_echo").Status == runtime.StatusCompleted
	})
	moved := rdb.HGet(ctx, queue.WorkflowKey(ns, src), "o:0").Val()
	if moved == "" || strings.Contains(moved, marker) {
		t.Fatalf("the source's o:0 = %q; want a sealed result", moved)
	}
	if err := rdb.HSet(ctx, queue.WorkflowKey(ns, dst), "o:0", moved).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Signal(ctx, dst, "go", "now"); err != nil {
		t.Fatal(err)
	}
	_, err = last.Await(ctx, dst)
	var we *runtime.WorkflowError
	if !errors.As(err, &we) || we.Step != "wf_seal_join" || !strings.Contains(err.Error(), "sealed for workflow "+dst+" does not open") {
		t.Fatalf("Await = %v; want a WorkflowError of the join step naming the seal that does not open", err)
	}
	for len(ran) > 0 {
		if got := <-ran; strings.HasPrefix(got, "join") {
			t.Fatalf("the join step ran with %q", got)
		}
	}

	// Without the keys: 200, "encrypted", over the API and the CLI.
	blind := connect(t, srv.URL(), runtime.WithNamespace(ns), runtime.WithKeys())
	api := serveAPI(t, runtime.NewInspector(blind, sealTasks), runtime.APIOptions{})
	if got := api.want(http.StatusOK, "GET", "/api/v1/workflows/"+src, ""); got["result"] != "encrypted" || got["status"] != "completed" {
		t.Fatalf("GET the workflow without the keys = %v; want completed, its result encrypted", got)
	}
	job := api.want(http.StatusOK, "GET", "/api/v1/jobs/"+stepOf(t, workflowOf(t, blind, src), "wf_seal_echo").JobID, "")
	if job["args"] != "encrypted" || job["result"] != "encrypted" {
		t.Fatalf("GET the step's job without the keys: args %v, result %v; want encrypted", job["args"], job["result"])
	}
	api.want(http.StatusOK, "GET", "/api/v1/workflows/"+dst, "")
	cli := &app{t: t, env: map[string]string{"REDIS_URL": srv.URL(), "BANANAS_NAMESPACE": ns, "LOG_LEVEL": "error"}}
	if out := cli.ok("workflow", src, "--json"); !strings.Contains(out, `"encrypted"`) || strings.Contains(out, marker) {
		t.Fatalf("workflow --json without the keys:\n%s\nwant the result encrypted", out)
	}
	if out := cli.ok("workflow", dst); strings.Contains(out, marker) {
		t.Fatalf("workflow without the keys:\n%s", out)
	}
	if got := dashboardResult(t, api, src); !strings.Contains(got, "encrypted") || strings.Contains(got, marker) {
		t.Fatalf("the dashboard's workflow page without the keys shows the result %q; want encrypted", got)
	}
	if _, err := wfSealEcho.With(blind).Step("x").Await(ctx, src); err == nil || !errors.Is(err, queue.ErrNoKey) {
		t.Fatalf("Await without the keys = %v; want an error matching queue.ErrNoKey", err)
	}
}

// With keys, a workflow of a gather and a signal wait runs to its result
// on the embedded server (whose Lua is gopher-lua), a redis-server and a
// cluster: the sealed values pass through each one's scripts intact.
func TestSeal_ASealedWorkflowRunsOnEveryBackend(t *testing.T) {
	run := func(t *testing.T, url string) {
		c := connect(t, url, runtime.WithKeys(sealKey("k1", 1)))
		ctx := ctxT(t)
		sealWorker(t, c, nil)
		a := wfSealEcho.With(c).Step("m")
		last := runtime.Then(runtime.Gather(runtime.Then(a, wfSealUp), runtime.WaitSignal[string]("ok", time.Hour)), wfSealJoin)
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Signal(ctx, id, "ok", "sig"); err != nil {
			t.Fatal(err)
		}
		if got, err := last.Await(ctx, id); err != nil || got != "join:up:echo:m|sig" {
			t.Fatalf("Await = %q, %v", got, err)
		}
	}
	t.Run("backends", func(t *testing.T) { redistest.EachURL(t, run) })
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		run(t, redistest.SharedCluster(t).URL())
	})
}

// A workflow submitted without keys (before they were set) runs on a
// worker with keys: its first step's args and a signal sent without keys
// are plain in its record, beside the results the worker seals, and the
// step made of both reads them all.
func TestSeal_AWorkflowRecordedInTheClearRunsOnceKeysAreSet(t *testing.T) {
	t.Parallel()
	url := redistest.Shared(t).URL()
	ns := redistest.Namespace(t)
	plain := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys())
	keyed := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(sealKey("k1", 1)))
	ctx := ctxT(t)
	last := runtime.Then(runtime.Gather(runtime.Then(wfSealEcho.With(plain).Step("clear"), wfSealUp), runtime.WaitSignal[string]("ok", time.Hour)), wfSealJoin)
	id, err := last.Enqueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Signal(ctx, id, "ok", "plain sig"); err != nil {
		t.Fatal(err)
	}
	sealWorker(t, keyed, nil)
	want := "join:up:echo:clear|plain sig"
	// Awaited through a client with the keys: the final result is sealed.
	if got, err := wfSealJoin.With(keyed).Step(nil).Await(ctx, id); err != nil || got != want {
		t.Fatalf("Await = %q, %v; want %q", got, err, want)
	}
}

// Rotation reseals what workflows' records keep under the newest key: a
// workflow whose first steps ran under k1 alone, rotated with k2,k1, goes
// on under k2 alone — the step made of its k1 results (and of a signal
// sent under k2) runs, and its result opens. A second rotation finds it
// resealed already.
func TestRotateKeys_AWorkflowsRecordIsResealed(t *testing.T) {
	t.Parallel()
	url := redistest.Shared(t).URL()
	ns := redistest.Namespace(t)
	k1, k2 := sealKey("k1", 1), sealKey("k2", 2)
	old := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(k1))
	ctx := ctxT(t)
	_, stop := sealWorker(t, old, nil)
	last := runtime.Then(runtime.Gather(runtime.Then(wfSealEcho.With(old).Step("r"), wfSealUp), runtime.WaitSignal[string]("ok", time.Hour)), wfSealJoin)
	id, err := last.Enqueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the steps before the wait to complete", func() bool {
		return stepOf(t, workflowOf(t, old, id), "wf_seal_up").Status == runtime.StatusCompleted
	})
	stop()

	rotating := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(k2, k1))
	n, err := rotating.RotateKeys(ctx)
	if err != nil || n.Resealed != 1 || n.Unopened != 0 {
		t.Fatalf("RotateKeys = %+v, %v; want the workflow resealed", n, err)
	}
	if n, err := rotating.RotateKeys(ctx); err != nil || n.Resealed != 0 || n.Already != 1 {
		t.Fatalf("a second RotateKeys = %+v, %v; want the workflow already under k2", n, err)
	}

	fresh := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(k2))
	sealWorker(t, fresh, nil)
	if err := fresh.Signal(ctx, id, "ok", "s"); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if got, err := wfSealJoin.With(fresh).Step(nil).Await(actx, id); err != nil || got != "join:up:echo:r|s" {
		t.Fatalf("Await under k2 alone = %q, %v", got, err)
	}
}

// dashboardResult is the result the dashboard served by api shows on
// workflow id's page, in a real browser.
func dashboardResult(t *testing.T, api *apiClient, id string) string {
	t.Helper()
	b := tab(t)
	run(t, b, "open the workflow's page", chromedp.Navigate(api.url+"/workflows/"+id), chromedp.WaitVisible(chromedp.CSS("#result")))
	got, err := chromedp.Run(b, chromedp.Evaluate[string](`document.querySelector("#result").innerText`))
	if err != nil {
		t.Fatal(err)
	}
	return got
}
