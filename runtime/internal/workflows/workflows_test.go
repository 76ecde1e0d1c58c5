package workflows

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
	"github.com/bananas-go/bananas/scheduler"
)

func newKeeper(r *Runner) *Keeper {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return &Keeper{R: r, Tick: time.Millisecond, Every: time.Second, Logger: log, Outage: scheduler.NewOutageLog(log, "workflow keeper")}
}

// The keeper drops from the list of workflows the entries whose records
// expired, and keeps those of workflows that live on, however old; it goes
// on from where it stopped among the old ones kept, and from the start once
// it reached the end.
func TestKeeper_PrunesTheListOfWorkflowsOfExpiredRecords(t *testing.T) {
	r, st, _ := newRunner(t)
	r.TTLs = record.TTLs{Completed: 24 * time.Hour, Failed: 7 * 24 * time.Hour}
	ctx := context.Background()
	long := st.Time.Add(-48 * time.Hour)
	for _, id := range []string{"expired-1", "live", "expired-2", "new"} {
		at := long
		if id == "new" {
			at = st.Time
		}
		if _, _, err := st.Submit(ctx, id, graph("a"), 0, time.Minute, at); err != nil {
			t.Fatal(err)
		}
		st.List[id] = at.Add(time.Duration(len(st.List)) * time.Millisecond)
	}
	st.Drop("expired-1")
	st.Drop("expired-2")
	k := newKeeper(r)
	k.prune(ctx)
	if _, ok := st.List["expired-1"]; ok || len(st.List) != 2 {
		t.Fatalf("the list after the prune: %v; want live and new", st.List)
	}
	if k.pruneFrom != 0 {
		t.Fatalf("the prune goes on from %d; want 0 after reaching the end", k.pruneFrom)
	}
}

// A pass looks at every workflow due, and makes the steps a dead process
// left creating.
func TestKeeper_APassFinishesWhatADeadProcessLeft(t *testing.T) {
	r, st, m := newRunner(t)
	ctx := context.Background()
	// A submitter that stored the workflow and died before making its steps.
	if _, _, err := st.Submit(ctx, "wf", graph("a", "b"), 1, 0, st.Time); err != nil {
		t.Fatal(err)
	}
	newKeeper(r).pass(ctx)
	if got := m.madeJobs(); len(got) != 2 || st.State("wf", "a") != record.StepCreated || st.State("wf", "b") != record.StepCreated {
		t.Fatalf("after a pass made %v, a %c, b %c; want both made and created", got, st.State("wf", "a"), st.State("wf", "b"))
	}
	if !st.Index["wf"].Equal(st.Time.Add(time.Second)) {
		t.Fatalf("the workflow is due next at %v; want a period later", st.Index["wf"])
	}
}

// JobEnd reads how a step's job ended from its snapshot.
func TestJobEnd_ReadsHowAStepsJobEnded(t *testing.T) {
	rec := func(r results.Record) []byte {
		b, err := results.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name  string
		st    *queue.JobState
		how   queue.Ending
		value string
		ended bool
	}{
		{"gone", nil, queue.EndDead, "its job j is gone: its record expired or was deleted", true},
		{"running", &queue.JobState{Status: queue.StatusProcessing}, 0, "", false},
		{"waiting", &queue.JobState{Status: queue.StatusPending}, 0, "", false},
		{"completed", &queue.JobState{Status: queue.StatusCompleted, Result: rec(results.Record{ID: "j", OK: true, Value: []byte("v")})}, queue.EndCompleted, "v", true},
		{"dead", &queue.JobState{Status: queue.StatusFailed, Error: "boom"}, queue.EndDead, "boom", true},
		{"canceled", &queue.JobState{Status: queue.StatusCanceled}, queue.EndCanceled, "canceled", true},
		{"a record of a cancel", &queue.JobState{Status: queue.StatusCompleted, Result: rec(results.Record{ID: "j", Canceled: true, Error: "stop"})}, queue.EndCanceled, "stop", true},
		{"a record of a failure", &queue.JobState{Status: queue.StatusCompleted, Result: rec(results.Record{ID: "j", Error: "bad"})}, queue.EndDead, "bad", true},
	} {
		how, value, ended := JobEnd("j", c.st)
		if how != c.how || string(value) != c.value || ended != c.ended {
			t.Errorf("%s: JobEnd = %c %q %v; want %c %q %v", c.name, how, value, ended, c.how, c.value, c.ended)
		}
	}
}

// The keeper looks every tick while its process is active, not while it
// stands by, and returns when its context ends.
func TestKeeper_RunLooksOnlyWhileActive(t *testing.T) {
	r, st, _ := newRunner(t)
	k := newKeeper(r)
	var mu sync.Mutex
	active, asked := false, 0
	k.Active = func() bool {
		mu.Lock()
		defer mu.Unlock()
		asked++
		return active
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.Run(ctx); close(done) }()
	waitFor(t, "the keeper to ask thrice whether it is active", func() bool { mu.Lock(); defer mu.Unlock(); return asked >= 3 })
	if n := st.Count("Due"); n != 0 {
		t.Fatalf("a keeper standing by looked %d times; want none", n)
	}
	mu.Lock()
	active = true
	mu.Unlock()
	waitFor(t, "the active keeper to look", func() bool { return st.Count("Due") > 0 })
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A pass looks at the due workflows many at once, across the batches it
// takes from the index: a burst of due timers is as many looks, each a few
// round trips, and looked at a few at a time they would fire seconds late.
func TestKeeper_APassLooksAtManyDueWorkflowsAtOnce(t *testing.T) {
	r, st, m := newRunner(t)
	ctx := context.Background()
	const due, want = 150, 32
	for i := range due {
		// Stored, its first step left creating by a submitter that died.
		if _, _, err := st.Submit(ctx, fmt.Sprintf("wf-%03d", i), graph("a"), 0, 0, st.Time); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	in, most := 0, 0
	enough := make(chan struct{})
	r.Make = func(ctx context.Context, wf string, steps []record.ReadyStep, own bool) []error {
		mu.Lock()
		in++
		most = max(most, in)
		if in == want {
			select {
			case <-enough:
			default:
				close(enough)
			}
		}
		mu.Unlock()
		// Each look holds its place until want looks are in at once (or
		// a second passed: then the test fails below).
		select {
		case <-enough:
		case <-time.After(time.Second):
		}
		mu.Lock()
		in--
		mu.Unlock()
		return m.make(ctx, wf, steps, own)
	}
	k := newKeeper(r)
	k.Parallel = want
	k.pass(ctx)
	if most < want {
		t.Fatalf("a pass looked at %d due workflows at once at most; want %d", most, want)
	}
	if got := len(m.madeJobs()); got != due {
		t.Fatalf("the pass made %d steps; want every due workflow's, %d", got, due)
	}
}
