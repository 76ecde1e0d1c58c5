package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/runtime"
)

// roundTrips records the arguments of each round trip a client makes (a
// command, or a pipeline's commands together), in order.
type roundTrips struct {
	mu    sync.Mutex
	on    bool
	trips [][]string
}

func (r *roundTrips) add(cmds ...redis.Cmder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.on {
		return
	}
	switch cmds[0].Name() {
	case "sadd", "hello", "client", "eval":
		// The note of a route in the routes set (in the background, once
		// per route and process), a new connection's greeting, and a
		// script's first run on a server (EVALSHA answered NOSCRIPT, then
		// EVAL), which a warm process does not pay.
		return
	}
	var args []string
	for _, c := range cmds {
		for _, a := range c.Args() {
			args = append(args, fmt.Sprint(a))
		}
	}
	r.trips = append(r.trips, args)
}

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.add(cmd)
		return next(ctx, cmd)
	}
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.add(cmds...)
		return next(ctx, cmds)
	}
}

// first is the index of the first round trip one of whose arguments holds
// s; -1 for none.
func (r *roundTrips) first(s string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, args := range r.trips {
		for _, a := range args {
			if strings.Contains(a, s) {
				return i
			}
		}
	}
	return -1
}

// A signal's next step waits for as few round trips as can be: the
// signal's script (with the keeper's watch riding in the same round trip),
// then the enqueue of the step's job, which pushes it ready and wakes a
// waiting worker. Nothing in between: no separate write, no poll.
func TestWorkflowSignal_TheNextStepsJobIsMadeInTheSecondRoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		last := runtime.Then(runtime.WaitSignal[Approval]("approval", time.Hour), wfShip.With(c))
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		job := stepOf(t, workflowOf(t, c, id), "wf_ship").JobID
		if job == "" {
			t.Fatal("the step after the wait has no job id fixed")
		}
		// Warm: the scripts loaded and the route noted.
		warm, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Signal(ctx, warm, "approval", Approval{By: "bo"}); err != nil {
			t.Fatal(err)
		}
		rt := &roundTrips{}
		c.Redis().AddHook(rt)
		rt.mu.Lock()
		rt.on = true
		rt.mu.Unlock()
		if err := c.Signal(ctx, id, "approval", Approval{By: "ana"}); err != nil {
			t.Fatal(err)
		}
		rt.mu.Lock()
		rt.on = false
		rt.mu.Unlock()
		if got := rt.first(job); got != 1 {
			var names [][]string
			for _, args := range rt.trips {
				var n []string
				for _, a := range args {
					if len(a) < 60 {
						n = append(n, a)
					}
				}
				names = append(names, n)
			}
			t.Fatalf("the step's job %s went out in round trip %d (0-based) of the signal's; want 1, right after the signal's script. Round trips: %q", job, got, names)
		}
		if got := jobStatus(t, c, job); got != runtime.StatusPending {
			t.Fatalf("the step's job is %s after the signal; want pending (ready)", got)
		}
	})
}

// The keeper's look at a workflow whose timer is due fires it and makes
// the next step's job in four round trips (read, fire, enqueue, note the
// job made) and stops there: the rest of a look waits for the next period.
// Timers due together are that many looks, so each round trip saved is
// lateness saved for the last of them.
func TestWorkflowSleep_AKeepersLookFiresATimerInFourRoundTrips(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"wfa"}}))
		runtime.Handle(w, wfStepA, func(_ context.Context, x int) (int, error) { return x + 1, nil })
		stop := startWorker(t, w)
		last := runtime.Then(runtime.Sleep(wfStepA.With(c).Step(1), 300*time.Millisecond), wfStepB.With(c))
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the timer to be armed", func() bool {
			return stepOf(t, workflowOf(t, c, id), "sleep").Status == runtime.StatusScheduled
		})
		stop() // its keeper would fire the timer
		if s := stepOf(t, workflowOf(t, c, id), "sleep"); s.Status != runtime.StatusScheduled {
			t.Skipf("the worker's keeper fired the timer before it stopped (%s)", s.Status)
		}
		due := stepOf(t, workflowOf(t, c, id), "sleep").Wait.Due
		waitFor(t, 10*time.Second, "the timer's due time", func() bool { return time.Now().After(due.Add(50 * time.Millisecond)) })
		job := stepOf(t, workflowOf(t, c, id), "wf_step_b").JobID
		rt := &roundTrips{}
		c.Redis().AddHook(rt)
		rt.mu.Lock()
		rt.on = true
		rt.mu.Unlock()
		if err := runtime.CheckWorkflow(ctx, c, id); err != nil {
			t.Fatal(err)
		}
		rt.mu.Lock()
		rt.on = false
		n := len(rt.trips)
		rt.mu.Unlock()
		if got := jobStatus(t, c, job); got != runtime.StatusPending {
			t.Fatalf("the step after the timer is %s after the look; want pending (its job made)", got)
		}
		if at := rt.first(job); at != 2 || n != 4 {
			t.Fatalf("the look made %d round trips, the job in round trip %d (0-based); want 4, the job in 2: %q", n, at, rt.trips)
		}
	})
}

// A signal declared with NewSignal takes a payload of its type or does not
// compile; the same program with the right type compiles.
func TestSignal_AWrongPayloadTypeDoesNotCompile(t *testing.T) {
	t.Parallel()
	build := func(dir string) (string, error) {
		out, err := exec.Command("go", "vet", "./testdata/signaltypes/"+dir).CombinedOutput()
		return string(out), err
	}
	if out, err := build("good"); err != nil {
		t.Fatalf("the program sending the declared type does not compile: %v\n%s", err, out)
	}
	out, err := build("bad")
	if err == nil {
		t.Fatal("a signal of Approval sent with a string compiled")
	}
	if !strings.Contains(out, "main.go:16") || !strings.Contains(out, "string") {
		t.Fatalf("the compile error does not point at the payload:\n%s", out)
	}
}

// A declared signal's Wait is WaitSignal of its name and type, and its
// Send delivers a payload the next step takes; a resend of a signal with
// Client.Signal of another type is refused naming the type.
func TestSignal_ADeclaredSignalsSendCompletesItsWait(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: wfCrashRoutes}))
		runtime.Handle(w, wfShip, func(_ context.Context, a Approval) (string, error) { return "shipped by " + a.By, nil })
		startWorker(t, w)
		approved := runtime.NewSignal[Approval]("approval").With(c)
		if approved.Name() != "approval" {
			t.Fatalf("Name = %q", approved.Name())
		}
		last := runtime.Then(approved.Wait(time.Hour), wfShip)
		id, err := last.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Signal(ctx, id, "approval", "not an approval"); err == nil || !strings.Contains(err.Error(), "Approval") {
			t.Fatalf("Client.Signal with a string = %v; want a refusal naming the wait's type", err)
		}
		if err := approved.Send(ctx, id, Approval{By: "ana"}); err != nil {
			t.Fatal(err)
		}
		got, err := last.Await(ctx, id)
		if err != nil || got != "shipped by ana" {
			t.Fatalf("Await = %q, %v; want shipped by ana", got, err)
		}
	})
}

var wfPrep = runtime.NewTask[string, int]("wf_prep", runtime.Route("wfa"))

// A workflow submitted over the API may wait for a signal after a step: a
// signal sent before that step completed (the wait not reached) is kept —
// 202, and the wait still waiting — and completes the wait when it is
// reached, its payload the next step's args. The payload is read by the
// type of the step after the wait (a 400 naming the field), a second
// signal to the ended workflow is a 409, and a wait step that names a
// task or a timeout that is no duration is a 400 naming the field. On the
// embedded server, a redis-server and a cluster.
func TestWorkflowSignalAPI_ASignalSentBeforeItsWaitIsReachedIsKeptForIt(t *testing.T) {
	t.Parallel()
	eachBackendAndCluster(t, func(t *testing.T, c *runtime.Client) {
		gate := make(chan struct{})
		entered := make(chan struct{}, 1)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: wfCrashRoutes}))
		runtime.Handle(w, wfPrep, func(ctx context.Context, s string) (int, error) {
			entered <- struct{}{}
			select {
			case <-gate:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
			return len(s), nil
		})
		runtime.Handle(w, wfShip, func(_ context.Context, a Approval) (string, error) { return "shipped by " + a.By, nil })
		startWorker(t, w)
		api := serveAPI(t, w.Inspector(), runtime.APIOptions{})

		for body, field := range map[string]string{
			`{"steps": [{"id": "prep", "name": "wf_prep", "args": "x"}, {"id": "ok", "name": "wf_ship", "signal": "approval", "after": ["prep"]}]}`:    "steps[1].name",
			`{"steps": [{"id": "prep", "name": "wf_prep", "args": "x"}, {"id": "ok", "signal": "approval", "timeout": "forever", "after": ["prep"]}]}`: "steps[1].timeout",
			`{"steps": [{"id": "prep", "name": "wf_prep", "args": "x"}, {"id": "ok", "signal": "bad name", "after": ["prep"]}]}`:                       "steps[1].signal",
			`{"steps": [{"id": "nap", "sleep": "1s"}]}`: "steps[0].after",
		} {
			if got := api.want(http.StatusBadRequest, "POST", "/api/v1/workflows", body); got["field"] != field {
				t.Fatalf("400 for %s = %v; want field %s", body, got, field)
			}
		}

		sub := api.want(http.StatusCreated, "POST", "/api/v1/workflows", `{"steps": [
			{"id": "prep", "name": "wf_prep", "args": "x"},
			{"id": "ok", "signal": "approval", "timeout": "1h", "after": ["prep"]},
			{"id": "ship", "name": "wf_ship", "after": ["ok"]}]}`)
		id, _ := sub["id"].(string)
		recv(t, entered, 10*time.Second, "the first step to start")
		path := "/api/v1/workflows/" + id + "/signals/approval"
		if got := api.want(http.StatusBadRequest, "POST", path, `{"by": 3}`); !strings.Contains(fmt.Sprint(got), "by") {
			t.Fatalf("400 = %v; want it to name the field by", got)
		}
		api.want(http.StatusAccepted, "POST", path, `{"by": "ana"}`)
		wf := api.want(http.StatusOK, "GET", "/api/v1/workflows/"+id, "")
		steps, _ := wf["steps"].([]any)
		wait, _ := steps[1].(map[string]any)
		if w, _ := wait["wait"].(map[string]any); wait["status"] == "completed" || w["received"] != nil || w["due"] != nil {
			t.Fatalf("the wait before its step completed = %v; want it not reached: not completed, no due time, nothing received", wait)
		}
		close(gate)
		waitFor(t, 10*time.Second, "the workflow to complete", func() bool {
			return api.want(http.StatusOK, "GET", "/api/v1/workflows/"+id, "")["status"] == "completed"
		})
		wf = api.want(http.StatusOK, "GET", "/api/v1/workflows/"+id, "")
		if wf["result"] != "shipped by ana" {
			t.Fatalf("the workflow's result = %v; want the kept signal's payload shipped", wf["result"])
		}
		steps, _ = wf["steps"].([]any)
		wait, _ = steps[1].(map[string]any)
		if w, _ := wait["wait"].(map[string]any); wait["status"] != "completed" || w["received"] == nil {
			t.Fatalf("the wait after it was reached = %v; want completed, received", wait)
		}
		api.want(http.StatusConflict, "POST", path, `{"by": "bob"}`)
	})
}

// A wait's due time holds however the keeper came to look at its workflow
// before it: a look for another reason (here the grace after the
// submission, while a step runs) puts the workflow back a keeper's period
// later (10 s with this lease), and the look must bring it back to the
// wait's due time, or the timeout would fire up to a period late.
func TestWorkflowSignal_ATimeoutFiresOnTimeAfterAnEarlierLook(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		release := make(chan struct{})
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"wfa"}, Lease: 10 * time.Second}))
		runtime.Handle(w, wfPrep, func(ctx context.Context, s string) (int, error) {
			select { // runs past the wait's timeout: the workflow is watched for it
			case <-release:
			case <-ctx.Done():
			}
			return 0, ctx.Err()
		})
		startWorker(t, w)
		// Released before the worker stops: cleanups run last first.
		t.Cleanup(func() { close(release) })
		// Past the keeper's first look, the grace (5 s).
		const timeout = 6 * time.Second
		wf := runtime.Gather(wfPrep.With(c).Step("x"), runtime.WaitSignal[int]("x", timeout))
		id, err := wf.Enqueue(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		due := stepOf(t, workflowOf(t, c, id), "x").Wait.Due
		// Within a second of the due time, and a margin for a loaded
		// machine; a look a period late would come 10 s after the grace.
		ctx, cancel := context.WithDeadline(context.Background(), due.Add(3*time.Second))
		defer cancel()
		if _, err := wf.Await(ctx, id); !errors.Is(err, runtime.ErrTimeout) {
			t.Fatalf("Await by the wait's due time + 3s = %v; want ErrTimeout (%s)", err, describeWorkflow(context.Background(), c, id))
		}
	})
}
