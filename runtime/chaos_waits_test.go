package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
)

// The chaos run with waiting workflows, short enough for make test (about
// 25 s): the chaos run's Redis (persisting every write), proxy and three
// worker processes (one with its clock a minute ahead), running the
// workflow chaos run's steps, while workflows sleep and wait for signals.
// Worker processes are SIGKILLed and started again, every connection is
// cut, and Redis is killed and restarted twice, while timers come due and
// signals are sent through the proxy (a signal whose call failed is sent
// again until one is taken). At the end every workflow has ended as it was
// built to — a signalled one completed with its own signal's payload, a
// sleeping one completed after its timer, one whose wait nobody signals
// failed with ErrTimeout naming the wait — none is left running, a signal
// sent again to an ended workflow is refused, and no step's handler ran to
// completion twice in one attempt.
func TestChaos_WaitingWorkflowsEndAsBuiltThroughKillsCutsAndRedisRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("the waits' chaos run takes about 25 s")
	}
	t.Setenv("BANANAS_CHAOS_WORKFLOW", "1") // the worker processes run the workflow chaos run's steps
	r, _, px, srv, direct := startChaos(t)
	ctx := context.Background()
	signals := connect(t, r.url, runtime.WithNamespace(r.ns)) // through the proxy, as the workers

	const nSignal, nSleep, nTimeout = 24, 24, 8
	link := chaosLink.With(direct)
	type waiting struct {
		final runtime.Step[Msg]
		kind  string // signal, sleep or timeout
		want  int    // the final step's N when it completes
	}
	wfs := map[string]waiting{}
	submit := func(wf waiting) string {
		id, err := wf.final.Enqueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wfs[id] = wf
		return id
	}
	var signalled []string
	for i := range nSignal {
		// Half with a timeout far past the run, half waiting for ever.
		timeout := time.Duration(i%2) * time.Minute
		signalled = append(signalled, submit(waiting{final: runtime.Then(runtime.WaitSignal[Msg]("go", timeout), link), kind: "signal", want: 100 + i + 1}))
	}
	for i := range nSleep {
		sleep := time.Second + time.Duration(i%8)*time.Second // due over the faults
		submit(waiting{final: runtime.Then(runtime.Sleep(link.Step(Msg{N: i}), sleep), link), kind: "sleep", want: i + 2})
	}
	for range nTimeout {
		submit(waiting{final: runtime.Then(runtime.WaitSignal[Msg]("never", 3*time.Second), link), kind: "timeout"})
	}

	// The signals, one every 300 ms through the faults, each sent until a
	// call of it is taken: a call that failed may have been taken all the
	// same (its reply lost), and then its resend is refused as the wait's
	// second signal, which says the first was taken.
	var mu sync.Mutex
	sent := map[string]int{} // workflow -> the payload's N taken
	var unsent []string
	sending := make(chan struct{})
	go func() {
		defer close(sending)
		for i, id := range signalled {
			time.Sleep(300 * time.Millisecond) // spread over the faults
			failed := false
			for try := 0; ; try++ {
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				err := signals.Signal(cctx, id, "go", Msg{N: 100 + i})
				cancel()
				if err == nil || (failed && errors.Is(err, runtime.ErrWrongState)) {
					mu.Lock()
					sent[id] = 100 + i
					mu.Unlock()
					break
				}
				if errors.Is(err, runtime.ErrWrongState) || try == 100 {
					mu.Lock()
					unsent = append(unsent, fmt.Sprintf("%s: %v", id, err))
					mu.Unlock()
					break
				}
				failed = true
				time.Sleep(100 * time.Millisecond) // Redis restarting, or the connections cut: try again
			}
		}
	}()

	began := time.Now()
	fault := func(what string, f func()) {
		t.Logf("%5.1fs %s", time.Since(began).Seconds(), what)
		f()
		time.Sleep(1500 * time.Millisecond) // between two faults: timers come due, signals go out
	}
	fault("SIGKILL worker 1", func() { r.kill(1); r.killed[1] = true; time.Sleep(500 * time.Millisecond); r.start(1) })
	fault("SIGKILL Redis and start it again", func() {
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
	})
	fault("cut every connection for 2s", func() { px.CutFor(2 * time.Second) })
	fault("SIGKILL worker 2", func() { r.kill(2); r.killed[2] = true; time.Sleep(500 * time.Millisecond); r.start(2) })
	fault("SIGKILL Redis and start it again", func() {
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
	})
	fault("SIGKILL worker 0 (its clock a minute ahead)", func() { r.kill(0); r.killed[0] = true; time.Sleep(500 * time.Millisecond); r.start(0) })
	<-sending

	// Every workflow ends, as built.
	ids := make(map[string]chaosWF, len(wfs))
	for id := range wfs {
		ids[id] = chaosWF{}
	}
	left := waitWorkflowsEnded(ctx, direct, ids)
	for _, id := range left[:min(5, len(left))] {
		t.Errorf("workflow %s (%s) still running: %s", id, wfs[id].kind, describeWorkflow(ctx, direct, id))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, u := range unsent {
		t.Errorf("a signal no call of which was taken: %s", u)
	}
	ends := map[string]int{}
	for id, wf := range wfs {
		if slices.Contains(left, id) {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		got, err := wf.final.Await(actx, id)
		cancel()
		want := wf.want
		if wf.kind == "signal" {
			want = sent[id] + 1
		}
		switch {
		case wf.kind == "timeout" && errors.Is(err, runtime.ErrTimeout):
			var we *runtime.WorkflowError
			if !errors.As(err, &we) || we.Step != "never" {
				t.Errorf("workflow %s timed out as %v; want a *WorkflowError naming the wait never", id, err)
			}
		case wf.kind != "timeout" && err == nil && got.N == want:
			if wf.kind == "signal" {
				if err := signals.Signal(ctx, id, "go", Msg{N: -1}); !errors.Is(err, runtime.ErrWrongState) {
					t.Errorf("a signal sent again to ended workflow %s: %v; want ErrWrongState", id, err)
				}
			}
		default:
			t.Errorf("workflow %s (%s, want N %d): Await = %+v, %v; %s", id, wf.kind, want, got, err, describeWorkflow(ctx, direct, id))
			continue
		}
		ends[wf.kind]++
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	again, same := r.completedTwice()
	t.Logf("%d of %d workflows ended as built (%v), %d signals taken; %d step jobs ran to completion, %d more than once after a lost lease, %d twice in one attempt",
		ends["signal"]+ends["sleep"]+ends["timeout"], len(wfs), ends, len(sent), len(r.done), len(again), len(same))
	for _, id := range same[:min(5, len(same))] {
		t.Errorf("step job %s ran to completion in attempts %v: twice in one attempt", id, r.done[id])
	}
}
