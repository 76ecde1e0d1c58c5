package workflows

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
	"github.com/bananas-go/bananas/runtime/internal/workflows/storetest"
)

// maker stands for the runtime's Make and CancelJob: it records the jobs
// made and canceled, and fails those it is told to.
type maker struct {
	mu       sync.Mutex
	made     []record.ReadyStep
	canceled []string
	fails    map[string]error // job id -> the error making it returns
}

func (m *maker) make(_ context.Context, _ string, steps []record.ReadyStep, _ bool) []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	errs := make([]error, len(steps))
	for i, s := range steps {
		if errs[i] = m.fails[s.JobID]; errs[i] == nil {
			m.made = append(m.made, s)
		}
	}
	return errs
}

func (m *maker) cancel(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.canceled = append(m.canceled, id)
	return nil
}

// madeJobs lists the job ids made, in order.
func (m *maker) madeJobs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, s := range m.made {
		out = append(out, s.JobID)
	}
	return out
}

func (m *maker) argsOf(job string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.made {
		if s.JobID == job {
			return string(s.Args)
		}
	}
	return "(not made)"
}

func newRunner(t *testing.T) (*Runner, *storetest.Store, *maker) {
	t.Helper()
	st, m := storetest.New(), &maker{fails: map[string]error{}}
	r := &Runner{Store: st, Make: m.make, CancelJob: m.cancel, TTLs: record.TTLs{Completed: 1, Failed: 1},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return r, st, m
}

// graph builds the steps of a workflow from "label:after1,after2" specs
// (a label starting with "gather" is a gather), each step's job id
// "job-<label>".
func graph(specs ...string) []record.NewStep {
	index := map[string]int{}
	var steps []record.NewStep
	for k, spec := range specs {
		label, after, _ := strings.Cut(spec, ":")
		s := record.NewStep{Label: label, Template: []byte("t"), Gather: strings.HasPrefix(label, "gather")}
		if !s.Gather {
			s.JobID = "job-" + label
		}
		if after == "" {
			s.Args = []byte("args-" + label)
		}
		for _, p := range strings.Split(after, ",") {
			if p != "" {
				s.After = append(s.After, index[p])
			}
		}
		index[label] = k
		steps = append(steps, s)
	}
	return steps
}

func complete(t *testing.T, r *Runner, wf string, step int, label string) {
	t.Helper()
	if err := r.StepEnded(context.Background(), wf, step, "job-"+label, queue.EndCompleted, []byte("res-"+label), ""); err != nil {
		t.Fatal(err)
	}
}

// A submission makes the jobs of the steps without predecessors, and no
// other; each is recorded made.
func TestRunner_SubmitMakesTheFirstStepsAndRecordsThemMade(t *testing.T) {
	r, st, m := newRunner(t)
	if err := r.Submit(context.Background(), "wf", graph("a", "b", "c:a,b"), 2); err != nil {
		t.Fatal(err)
	}
	if got := m.madeJobs(); !slices.Equal(got, []string{"job-a", "job-b"}) {
		t.Fatalf("made %v; want job-a and job-b", got)
	}
	if st.State("wf", "a") != record.StepCreated || st.State("wf", "b") != record.StepCreated {
		t.Fatalf("a and b are %c, %c; want created", st.State("wf", "a"), st.State("wf", "b"))
	}
}

// A step's job is made once every predecessor completed, with their
// results, and not before.
func TestRunner_AStepStartsOnlyWhenEveryPredecessorCompleted(t *testing.T) {
	r, st, m := newRunner(t)
	ctx := context.Background()
	if err := r.Submit(ctx, "wf", graph("a", "b", "c:a,b"), 2); err != nil {
		t.Fatal(err)
	}
	complete(t, r, "wf", 0, "a")
	if slices.Contains(m.madeJobs(), "job-c") {
		t.Fatal("c was made when only a of a and b completed")
	}
	complete(t, r, "wf", 1, "b")
	if got := m.argsOf("job-c"); got != "[res-a res-b]" {
		t.Fatalf("c made with %q; want the results of a and b in the order of its after", got)
	}
	if st.State("wf", "c") != record.StepCreated {
		t.Fatalf("c is %c; want created", st.State("wf", "c"))
	}
	complete(t, r, "wf", 2, "c")
	if st.Status("wf") != record.Completed || st.Watched("wf") {
		t.Fatalf("after its last step the workflow is %s, watched %v; want completed and settled", st.Status("wf"), st.Watched("wf"))
	}
}

// A step whose job cannot be made, ever (ErrPermanent), fails with the
// error, and the steps after it, which can no longer run, are canceled.
func TestRunner_AStepThatCannotBeMadeFailsAndCancelsItsSuccessors(t *testing.T) {
	r, st, m := newRunner(t)
	m.fails["job-a"] = fmt.Errorf("%w: args over the limit", ErrPermanent)
	if err := r.Submit(context.Background(), "wf", graph("a", "b:a", "c:b"), 2); err != nil {
		t.Fatal(err)
	}
	rec, _ := st.Read(context.Background(), "wf")
	if rec.Status != record.Failed || rec.Why != 0 || rec.Steps[0].State != record.StepFailed || !strings.Contains(rec.Steps[0].Error, "args over the limit") {
		t.Fatalf("workflow %s (why %d), a %c %q; want failed by a with its error", rec.Status, rec.Why, rec.Steps[0].State, rec.Steps[0].Error)
	}
	if rec.Steps[1].State != record.StepCanceled || rec.Steps[2].State != record.StepCanceled {
		t.Fatalf("b and c are %c, %c; want canceled", rec.Steps[1].State, rec.Steps[2].State)
	}
}

// A job that could not be made for now (Redis unreachable) leaves its step
// creating and the workflow due for the keeper within the grace; the
// keeper's look makes it.
func TestRunner_AStepNotMadeForNowIsLeftToTheKeeper(t *testing.T) {
	r, st, m := newRunner(t)
	ctx := context.Background()
	r.Grace = 5 * time.Second
	if err := r.Submit(ctx, "wf", graph("a", "b:a"), 1); err != nil {
		t.Fatal(err)
	}
	st.Index["wf"] = st.Time.Add(time.Hour) // the keeper looked, and looks again later
	m.fails["job-b"] = errors.New("connection refused")
	if err := r.StepEnded(ctx, "wf", 0, "job-a", queue.EndCompleted, []byte("res-a"), ""); err == nil {
		t.Fatal("StepEnded = nil; want the error making b")
	}
	if st.State("wf", "b") != record.StepCreating || !st.Index["wf"].Equal(st.Time.Add(r.Grace)) {
		t.Fatalf("b is %c, due %v; want creating, due within the grace (%v)", st.State("wf", "b"), st.Index["wf"], st.Time.Add(r.Grace))
	}
	delete(m.fails, "job-b")
	if err := r.Check(ctx, "wf"); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(m.madeJobs(), "job-b") || st.State("wf", "b") != record.StepCreated {
		t.Fatalf("after the keeper's look made %v, b is %c; want job-b made, created", m.madeJobs(), st.State("wf", "b"))
	}
}

// A submission whose first steps could not be made for now has succeeded:
// the workflow is stored, and the keeper makes them.
func TestRunner_ASubmissionSucceedsOnceStored(t *testing.T) {
	r, st, m := newRunner(t)
	m.fails["job-a"] = errors.New("connection refused")
	if err := r.Submit(context.Background(), "wf", graph("a"), 0); err != nil {
		t.Fatalf("submit: %v; want success: the workflow is stored", err)
	}
	if st.State("wf", "a") != record.StepCreating || !st.Watched("wf") {
		t.Fatalf("a is %c, watched %v; want creating and watched", st.State("wf", "a"), st.Watched("wf"))
	}
}

// A job made for a step of a workflow canceled meanwhile is canceled.
func TestRunner_AJobMadeForAStepCanceledMeanwhileIsCanceled(t *testing.T) {
	r, st, m := newRunner(t)
	ctx := context.Background()
	if err := r.Submit(ctx, "wf", graph("a", "b:a"), 1); err != nil {
		t.Fatal(err)
	}
	// b becomes creating; the workflow is canceled before its job is recorded made.
	r.Make = func(ctx context.Context, wf string, steps []record.ReadyStep, own bool) []error {
		if _, _, err := st.Cancel(ctx, wf, 0, st.Time); err != nil {
			t.Fatal(err)
		}
		return m.make(ctx, wf, steps, own)
	}
	complete(t, r, "wf", 0, "a")
	if !slices.Contains(m.canceled, "job-b") {
		t.Fatalf("canceled %v; want job-b, made for a step of a canceled workflow", m.canceled)
	}
}

// Canceling a workflow cancels the jobs of its steps that may still run,
// and not those that ended.
func TestRunner_CancelCancelsTheJobsOfStepsThatMayStillRun(t *testing.T) {
	r, _, m := newRunner(t)
	ctx := context.Background()
	if err := r.Submit(ctx, "wf", graph("a", "b", "c:a,b"), 2); err != nil {
		t.Fatal(err)
	}
	complete(t, r, "wf", 0, "a")
	st, err := r.Cancel(ctx, "wf")
	if err != nil || st != record.Canceled {
		t.Fatalf("cancel = %q, %v; want canceled", st, err)
	}
	if !slices.Equal(m.canceled, []string{"job-b"}) {
		t.Fatalf("canceled jobs %v; want job-b alone (a completed, c never made)", m.canceled)
	}
}

// A retry runs again only the failed and canceled steps: a dead step's
// job is replayed and kept, a step canceled before its job was made runs
// under a fresh job id, and a completed step keeps its result and does not
// run again.
func TestRunner_RetryRerunsOnlyFailedAndCanceledSteps(t *testing.T) {
	r, st, m := newRunner(t)
	ctx := context.Background()
	if err := r.Submit(ctx, "wf", graph("a", "b", "c:a,b"), 2); err != nil {
		t.Fatal(err)
	}
	complete(t, r, "wf", 0, "a")
	st.Die("job-b", "boom")
	if err := r.StepEnded(ctx, "wf", 1, "job-b", queue.EndDead, []byte("boom"), ""); err != nil {
		t.Fatal(err)
	}
	m.made = nil
	n, err := r.Retry(ctx, "wf")
	if err != nil || n != 2 {
		t.Fatalf("retry = %d, %v; want 2 steps (b failed, c canceled)", n, err)
	}
	if st.Replays["job-b"] != 1 || st.Replays["job-a"] != 0 || st.Dead["job-b"] {
		t.Fatalf("replays %v, dead %v; want job-b replayed once, the completed a's job never", st.Replays, st.Dead)
	}
	if got := m.madeJobs(); !slices.Equal(got, []string{"job-b"}) {
		t.Fatalf("made %v; want b again under its replayed job, and c not before b completed", got)
	}
	rec, _ := st.Read(ctx, "wf")
	if rec.Status != record.Running || rec.Steps[0].State != record.StepCompleted || rec.Steps[2].State != record.StepWaiting {
		t.Fatalf("workflow %s, a %c, c %c; want running, a still completed, c waiting", rec.Status, rec.Steps[0].State, rec.Steps[2].State)
	}
	if rec.Steps[2].JobID == "job-c" || rec.Steps[2].JobID == "" {
		t.Fatalf("c runs under %q; want a fresh job id (its job was never made: job-c can run no more)", rec.Steps[2].JobID)
	}
}

// A retried step whose job is not dead keeps it when it may still run (a
// replay by another call) or completed; a dead job whose replay failed
// for now fails the retry, with nothing changed.
func TestRunner_RetryNeverGivesAStepASecondJobThatMayRun(t *testing.T) {
	for _, c := range []struct {
		name    string
		job     *queue.JobState // job-a's state once the replay failed
		err     error           // the replay's error
		wantErr bool
	}{
		{"replayed by another call", &queue.JobState{Status: queue.StatusPending}, queue.ErrNotFound, false},
		{"running", &queue.JobState{Status: queue.StatusProcessing}, queue.ErrNotFound, false},
		{"dead, the server unreachable", &queue.JobState{Status: queue.StatusFailed}, errors.New("connection refused"), true},
	} {
		r, st, _ := newRunner(t)
		ctx := context.Background()
		if err := r.Submit(ctx, "wf", graph("a"), 0); err != nil {
			t.Fatal(err)
		}
		if err := r.StepEnded(ctx, "wf", 0, "job-a", queue.EndDead, []byte("boom"), ""); err != nil {
			t.Fatal(err)
		}
		st.Jobs["job-a"], st.ReplayErr["job-a"] = c.job, c.err
		_, err := r.Retry(ctx, "wf")
		rec, _ := st.Read(ctx, "wf")
		switch {
		case c.wantErr && (err == nil || !strings.Contains(err.Error(), "step a") || rec.Status != record.Failed):
			t.Errorf("%s: retry = %v, workflow %s; want an error naming step a, the workflow still failed", c.name, err, rec.Status)
		case c.wantErr && st.Count("Retry") != 0:
			// The record changes only once every step's job is chosen.
			t.Errorf("%s: the store's Retry was called %d times; want none after a rerun failed", c.name, st.Count("Retry"))
		case !c.wantErr && (err != nil || rec.Steps[0].JobID != "job-a" || rec.Status != record.Running):
			t.Errorf("%s: retry = %v, a under %q, workflow %s; want a kept under job-a, running", c.name, err, rec.Steps[0].JobID, rec.Status)
		}
	}
}

// A dead job found so after a replay that did not find it dead (it died
// between the two calls) is replayed again, not left in the dead-letter
// set beside a fresh id; one whose dead-letter entry is gone (purged) runs
// under a fresh id.
func TestRunner_RetryReplaysAJobThatDiedBetweenTheTwoCalls(t *testing.T) {
	r, st, _ := newRunner(t)
	ctx := context.Background()
	if err := r.Submit(ctx, "wf", graph("a", "b"), 1); err != nil {
		t.Fatal(err)
	}
	for k, l := range []string{"a", "b"} {
		if err := r.StepEnded(ctx, "wf", k, "job-"+l, queue.EndDead, []byte("boom"), ""); err != nil {
			t.Fatal(err)
		}
		st.Jobs["job-"+l] = &queue.JobState{Status: queue.StatusFailed}
	}
	// a's first replay finds it running; it dies before the read.
	st.ReplayErr["job-a"] = queue.ErrNotFound
	r.Store = replayHook{st, func(id string) {
		if id == "job-a" && st.Replays[id] == 1 {
			delete(st.ReplayErr, id)
			st.Dead[id] = true
		}
	}}
	if _, err := r.Retry(ctx, "wf"); err != nil {
		t.Fatal(err)
	}
	rec, _ := st.Read(ctx, "wf")
	if st.Replays["job-a"] != 2 || st.Dead["job-a"] || rec.Steps[0].JobID != "job-a" {
		t.Fatalf("job-a replayed %d times, dead %v, a under %q; want replayed again and kept", st.Replays["job-a"], st.Dead["job-a"], rec.Steps[0].JobID)
	}
	if st.Replays["job-b"] != 2 || rec.Steps[1].JobID == "job-b" {
		t.Fatalf("job-b replayed %d times, b under %q; want two tries, then a fresh id", st.Replays["job-b"], rec.Steps[1].JobID)
	}
}

// replayHook is a Store whose Replay calls after once it answered.
type replayHook struct {
	*storetest.Store
	after func(id string)
}

func (h replayHook) Replay(ctx context.Context, id string) error {
	err := h.Store.Replay(ctx, id)
	h.after(id)
	return err
}

// A failed step whose dead job was replayed runs again with the steps its
// failure canceled; a step canceled by another failure stays canceled.
func TestRunner_ReplayedBringsBackTheStepsItsFailureCanceled(t *testing.T) {
	r, st, m := newRunner(t)
	ctx := context.Background()
	if err := r.Submit(ctx, "wf", graph("a", "b:a", "c:b", "x", "y:x"), 4); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		k     int
		label string
	}{{0, "a"}, {3, "x"}} {
		if err := r.StepEnded(ctx, "wf", f.k, "job-"+f.label, queue.EndDead, []byte("boom"), ""); err != nil {
			t.Fatal(err)
		}
	}
	m.made = nil
	if err := r.Replayed(ctx, "wf", 0, "job-a"); err != nil {
		t.Fatal(err)
	}
	got := []record.StepState{st.State("wf", "a"), st.State("wf", "b"), st.State("wf", "c"), st.State("wf", "y")}
	want := []record.StepState{record.StepCreated, record.StepWaiting, record.StepWaiting, record.StepCanceled}
	if !slices.Equal(got, want) {
		t.Fatalf("a, b, c, y are %q; want %q", got, want)
	}
	if !slices.Equal(m.madeJobs(), []string{"job-a"}) {
		t.Fatalf("made %v; want job-a under its own id", m.madeJobs())
	}
}

// The keeper's look reads back the end of a step whose job ended unheard
// of (its worker died before it advanced the workflow), and takes an ended
// workflow with nothing left to watch out of its index.
func TestRunner_CheckReadsBackAnEndUnheardOfAndSettles(t *testing.T) {
	r, st, m := newRunner(t)
	ctx := context.Background()
	if err := r.Submit(ctx, "wf", graph("a", "b:a"), 1); err != nil {
		t.Fatal(err)
	}
	st.Jobs["job-a"] = &queue.JobState{ID: "job-a", Status: queue.StatusProcessing}
	if err := r.Check(ctx, "wf"); err != nil {
		t.Fatal(err)
	}
	if st.State("wf", "a") != record.StepCreated || !st.Watched("wf") {
		t.Fatalf("a is %c, watched %v; want created and still watched while its job runs", st.State("wf", "a"), st.Watched("wf"))
	}
	st.Jobs["job-a"] = &queue.JobState{ID: "job-a", Status: queue.StatusFailed, Error: "boom"}
	if err := r.Check(ctx, "wf"); err != nil {
		t.Fatal(err)
	}
	if st.Status("wf") != record.Failed || st.State("wf", "b") != record.StepCanceled {
		t.Fatalf("workflow %s, b %c; want failed, b canceled", st.Status("wf"), st.State("wf", "b"))
	}
	if err := r.Check(ctx, "wf"); err != nil {
		t.Fatal(err)
	}
	if st.Watched("wf") {
		t.Fatal("a failed workflow with nothing left to watch is still in the keeper's index")
	}
	_ = m
	// A workflow whose record is gone leaves the index too.
	st.Index["gone"] = st.Time
	if err := r.Check(ctx, "gone"); err != nil || st.Watched("gone") {
		t.Fatalf("check of a workflow without a record = %v, watched %v; want nil, settled", err, st.Watched("gone"))
	}
}

// A retry reads back first the end of a step whose job died unheard of
// (its worker died before it advanced the workflow), and runs it again.
func TestRunner_RetryRunsAgainAStepWhoseJobDiedUnheardOf(t *testing.T) {
	r, st, _ := newRunner(t)
	ctx := context.Background()
	if err := r.Submit(ctx, "wf", graph("a"), 0); err != nil {
		t.Fatal(err)
	}
	st.Die("job-a", "boom")
	n, err := r.Retry(ctx, "wf")
	if err != nil || n != 1 || st.Replays["job-a"] != 1 || st.State("wf", "a") != record.StepCreated {
		t.Fatalf("retry = %d, %v, job-a replayed %d times, a %c; want a run again under its replayed job", n, err, st.Replays["job-a"], st.State("wf", "a"))
	}
}

// Canceling a workflow whose step's job was waiting shows that step
// canceled at once, not only once a keeper looked.
func TestRunner_CancelShowsTheStepsItEndedAtOnce(t *testing.T) {
	r, st, m := newRunner(t)
	ctx := context.Background()
	if err := r.Submit(ctx, "wf", graph("a"), 0); err != nil {
		t.Fatal(err)
	}
	r.CancelJob = func(ctx context.Context, id string) error {
		st.Jobs[id] = &queue.JobState{ID: id, Status: queue.StatusCanceled}
		return m.cancel(ctx, id)
	}
	if _, err := r.Cancel(ctx, "wf"); err != nil {
		t.Fatal(err)
	}
	if st.State("wf", "a") != record.StepCanceled {
		t.Fatalf("a is %c after the cancel; want canceled", st.State("wf", "a"))
	}
}
