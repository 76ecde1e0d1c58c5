package storetest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

// Store is a workflows.Store in memory, for tests that run without Redis:
// the step machine of redisstore's wf_*.lua scripts as far as the Runner's
// and the keeper's tests need it (states waiting, creating, created,
// completed, failed, canceled; a gather completes at once with its
// predecessors' results; a failed step cancels the steps that waited for
// it). The scripts themselves are tested against Redis by package
// redisstore, and runtime's TestWorkflowStore_ runs one story against
// both; the machine's tests check what it does with what the store
// answers.
type Store struct {
	mu sync.Mutex
	// Time is what Now returns.
	Time  time.Time
	wfs   map[string]*workflow
	Index map[string]time.Time // the keeper's index
	List  map[string]time.Time // the list of workflows: id -> submitted
	// Jobs are the jobs LookupMany finds.
	Jobs map[string]*queue.JobState
	// Dead are the jobs in the dead-letter set; Replay takes them out.
	Dead map[string]bool
	// Replays counts Replay's calls by job; ReplayErr answers them.
	Replays   map[string]int
	ReplayErr map[string]error
	// Fail, when set, answers a call of that method with an error instead.
	Fail  map[string]error
	Calls []string
}

type workflow struct {
	status  string
	why     int
	final   int
	steps   []record.Step
	pending []int
	next    [][]int
}

// New is an empty store at a fixed time.
func New() *Store {
	return &Store{Time: time.UnixMilli(1_700_000_000_000), wfs: map[string]*workflow{}, Index: map[string]time.Time{},
		List: map[string]time.Time{}, Jobs: map[string]*queue.JobState{}, Fail: map[string]error{},
		Dead: map[string]bool{}, Replays: map[string]int{}, ReplayErr: map[string]error{}}
}

func (f *Store) call(name string) error {
	f.Calls = append(f.Calls, name)
	return f.Fail[name]
}

func (f *Store) Now() time.Time { return f.Time }

func (f *Store) Submit(_ context.Context, id string, steps []record.NewStep, final int, grace time.Duration, now time.Time) ([]record.ReadyStep, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("Submit"); err != nil {
		return nil, false, err
	}
	f.Index[id] = now.Add(grace)
	f.List[id] = now
	if w := f.wfs[id]; w != nil {
		return w.creating(), false, nil
	}
	w := &workflow{status: record.Running, why: -1, final: final, pending: make([]int, len(steps)), next: make([][]int, len(steps))}
	var ready []record.ReadyStep
	for k, s := range steps {
		st := record.Step{Label: s.Label, JobID: s.JobID, Template: s.Template, After: s.After, Gather: s.Gather, Args: s.Args, State: record.StepWaiting}
		for _, p := range s.After {
			w.next[p] = append(w.next[p], k)
		}
		w.pending[k] = len(s.After)
		if len(s.After) == 0 {
			st.State = record.StepCreating
			ready = append(ready, record.ReadyStep{Index: k, JobID: s.JobID, Template: s.Template, Args: s.Args})
		}
		w.steps = append(w.steps, st)
	}
	f.wfs[id] = w
	return ready, true, nil
}

// args is a step's args: its one predecessor's result, or its
// predecessors' results in the order of After, as "[r1 r2]".
func (w *workflow) args(m int) []byte {
	s := w.steps[m]
	if len(s.After) == 0 {
		return s.Args
	}
	if len(s.After) == 1 && !s.Gather {
		return w.steps[s.After[0]].Result
	}
	var parts []string
	for _, p := range s.After {
		parts = append(parts, string(w.steps[p].Result))
	}
	return []byte("[" + strings.Join(parts, " ") + "]")
}

func (w *workflow) ready(m int) record.ReadyStep {
	s := w.steps[m]
	return record.ReadyStep{Index: m, JobID: s.JobID, Template: s.Template, Args: w.args(m)}
}

func (w *workflow) creating() []record.ReadyStep {
	var out []record.ReadyStep
	for k, s := range w.steps {
		if s.State == record.StepCreating {
			out = append(out, w.ready(k))
		}
	}
	return out
}

func (w *workflow) start(m int, out *[]int) {
	if w.steps[m].Gather {
		w.complete(m, w.args(m), out)
		return
	}
	w.steps[m].State = record.StepCreating
	*out = append(*out, m)
}

func (w *workflow) complete(k int, value []byte, out *[]int) {
	w.steps[k].State, w.steps[k].Result, w.steps[k].Error = record.StepCompleted, value, ""
	for _, m := range w.next[k] {
		w.pending[m]--
		if w.pending[m] <= 0 && w.steps[m].State == record.StepWaiting {
			w.start(m, out)
		}
	}
	if !slices.ContainsFunc(w.steps, func(s record.Step) bool { return s.State != record.StepCompleted }) {
		w.status, w.why = record.Completed, -1
	}
}

func (w *workflow) cancelBelow(k int, why string) {
	stack := slices.Clone(w.next[k])
	for len(stack) > 0 {
		m := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if w.steps[m].State == record.StepWaiting {
			w.steps[m].State, w.steps[m].Error = record.StepCanceled, why
			stack = append(stack, w.next[m]...)
		}
	}
}

func (f *Store) Advance(_ context.Context, id string, k int, job string, how queue.Ending, value []byte, _ string, _ record.TTLs) (record.Advance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("Advance"); err != nil {
		return record.Advance{}, err
	}
	if how != queue.EndCompleted && how != queue.EndDead && how != queue.EndCanceled {
		return record.Advance{}, fmt.Errorf("advance workflow %s: step %d's job ended %s: a step ends completed, dead or canceled", id, k, how)
	}
	w := f.wfs[id]
	if w == nil {
		return record.Advance{}, fmt.Errorf("workflow %s: %w", id, record.ErrNotFound)
	}
	s := &w.steps[k]
	var out, again []int
	switch {
	case s.JobID != job || s.Gather: // stale
	case how == queue.EndCompleted && s.State != record.StepCompleted:
		w.complete(k, value, &out)
	case how != queue.EndCompleted && (s.State == record.StepCreated || s.State == record.StepCreating):
		s.State, s.Error = record.StepFailed, string(value)
		if how == queue.EndCanceled {
			s.State = record.StepCanceled
		}
		w.cancelBelow(k, "canceled: step "+s.Label+" failed")
		if w.status == record.Running {
			w.status, w.why = record.Failed, k
			if how == queue.EndCanceled {
				w.status = record.Canceled
			}
		}
	case how == queue.EndCompleted:
		for _, m := range w.next[k] {
			if w.steps[m].State == record.StepCreating {
				again = append(again, m)
			}
		}
	}
	a := record.Advance{Status: w.status, Why: w.why}
	for _, m := range out {
		if w.steps[m].State == record.StepCreating {
			a.Ready = append(a.Ready, w.ready(m))
		}
	}
	for _, m := range again {
		a.Again = append(a.Again, w.ready(m))
	}
	return a, nil
}

func (f *Store) StepsCreated(_ context.Context, id string, steps []record.ReadyStep) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("StepsCreated"); err != nil {
		return nil, err
	}
	w := f.wfs[id]
	if w == nil {
		return nil, nil
	}
	var out []string
	for _, r := range steps {
		s := &w.steps[r.Index]
		switch {
		case s.JobID != r.JobID:
			out = append(out, r.JobID)
		case s.State == record.StepCreating:
			s.State = record.StepCreated
		case s.State == record.StepCanceled:
			out = append(out, r.JobID)
		}
	}
	return out, nil
}

func (f *Store) Cancel(_ context.Context, id string, _ time.Duration, _ time.Time) (string, []string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("Cancel"); err != nil {
		return "", nil, err
	}
	w := f.wfs[id]
	if w == nil {
		return "", nil, fmt.Errorf("workflow %s: %w", id, record.ErrNotFound)
	}
	if w.status == record.Completed {
		return w.status, nil, nil
	}
	var jobs []string
	for k := range w.steps {
		s := &w.steps[k]
		was := s.State
		if was == record.StepWaiting || was == record.StepCreating {
			s.State, s.Error = record.StepCanceled, "canceled with its workflow"
		}
		if (was == record.StepCreated || was == record.StepCreating) && !s.Gather {
			jobs = append(jobs, s.JobID)
		}
	}
	w.status, w.why = record.Canceled, -1
	return w.status, jobs, nil
}

func (f *Store) Retry(_ context.Context, id string, ids map[int]string, _ time.Time) (record.Advance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("Retry"); err != nil {
		return record.Advance{}, err
	}
	w := f.wfs[id]
	if w == nil {
		return record.Advance{}, fmt.Errorf("workflow %s: %w", id, record.ErrNotFound)
	}
	var reset []int
	for k, job := range ids {
		s := &w.steps[k]
		if s.State == record.StepFailed || s.State == record.StepCanceled {
			if job != "" {
				s.JobID = job
			}
			s.State, s.Error = record.StepWaiting, ""
			reset = append(reset, k)
		}
	}
	if len(reset) > 0 && w.status != record.Completed {
		w.status, w.why = record.Running, -1
	}
	sort.Ints(reset)
	var out []int
	for _, k := range reset {
		w.pending[k] = 0
		for _, p := range w.steps[k].After {
			if w.steps[p].State != record.StepCompleted {
				w.pending[k]++
			}
		}
		if w.pending[k] == 0 && w.steps[k].State == record.StepWaiting {
			w.start(k, &out)
		}
	}
	a := record.Advance{Status: w.status, Why: -1}
	if len(reset) == 0 {
		a.Ready = w.creating()
		return a, nil
	}
	for _, m := range out {
		a.Ready = append(a.Ready, w.ready(m))
	}
	return a, nil
}

func (f *Store) CreatingSteps(ctx context.Context, id string) (record.Advance, error) {
	return f.Retry(ctx, id, nil, f.Time)
}

func (f *Store) Read(_ context.Context, id string) (*record.Workflow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("Read"); err != nil {
		return nil, err
	}
	w := f.wfs[id]
	if w == nil {
		return nil, fmt.Errorf("workflow %s: %w", id, record.ErrNotFound)
	}
	return &record.Workflow{ID: id, Status: w.status, Final: w.final, Why: w.why, Steps: slices.Clone(w.steps)}, nil
}

func (f *Store) Due(_ context.Context, now, next time.Time, n int) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("Due"); err != nil {
		return nil, err
	}
	var ids []string
	for id, at := range f.Index {
		if !at.After(now) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	if len(ids) > n {
		ids = ids[:n]
	}
	for _, id := range ids {
		f.Index[id] = next
	}
	return ids, nil
}

func (f *Store) Settle(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("Settle"); err != nil {
		return err
	}
	delete(f.Index, id)
	return nil
}

func (f *Store) Watch(_ context.Context, id string, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("Watch"); err != nil {
		return err
	}
	if old, ok := f.Index[id]; !ok || at.Before(old) {
		f.Index[id] = at
	}
	return nil
}

func (f *Store) PruneList(_ context.Context, before time.Time, offset, n int) (int, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("PruneList"); err != nil {
		return 0, false, err
	}
	var ids []string
	for id, at := range f.List {
		if at.Before(before) {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		return f.List[ids[i]].Before(f.List[ids[j]]) || f.List[ids[i]].Equal(f.List[ids[j]]) && ids[i] < ids[j]
	})
	if offset >= len(ids) {
		return 0, true, nil
	}
	ids = ids[offset:min(len(ids), offset+n)]
	kept := 0
	for _, id := range ids {
		if f.wfs[id] == nil {
			delete(f.List, id)
		} else {
			kept++
		}
	}
	return kept, len(ids) < n, nil
}

func (f *Store) LookupMany(_ context.Context, ids []string) ([]*queue.JobState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("LookupMany"); err != nil {
		return nil, err
	}
	out := make([]*queue.JobState, len(ids))
	for i, id := range ids {
		out[i] = f.Jobs[id]
	}
	return out, nil
}

func (f *Store) Replay(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Replays[id]++
	if err := f.ReplayErr[id]; err != nil {
		return err
	}
	if !f.Dead[id] {
		return fmt.Errorf("replay %s: %w", id, queue.ErrNotFound)
	}
	delete(f.Dead, id)
	f.Jobs[id] = &queue.JobState{ID: id, Status: queue.StatusPending}
	return nil
}

// Die makes job id dead, as a worker that dead-letters it leaves it.
func (f *Store) Die(id, err string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Dead[id] = true
	f.Jobs[id] = &queue.JobState{ID: id, Status: queue.StatusFailed, Error: err}
}

// Count is how many times method name was called.
func (f *Store) Count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.Calls {
		if c == name {
			n++
		}
	}
	return n
}

// State is step label's state in workflow id.
func (f *Store) State(id, label string) record.StepState {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.wfs[id].steps {
		if s.Label == label {
			return s.State
		}
	}
	return 0
}

// Status is workflow id's status.
func (f *Store) Status(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.wfs[id].status
}

// Watched says whether workflow id is in the keeper's index.
func (f *Store) Watched(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.Index[id]
	return ok
}

// Drop deletes workflow id's record, as its expiry does.
func (f *Store) Drop(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.wfs, id)
}

// Fire answers that nothing was due: the in-memory store does not model
// waits (redisstore's tests and runtime's hold the scripts to them).
func (f *Store) Fire(_ context.Context, id string, _ record.TTLs) (record.Advance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("Fire"); err != nil {
		return record.Advance{}, err
	}
	w := f.wfs[id]
	if w == nil {
		return record.Advance{}, record.ErrNotFound
	}
	return record.Advance{Status: w.status, Why: w.why}, nil
}

// Signal refuses every signal: the in-memory store holds no waits.
func (f *Store) Signal(_ context.Context, id, name, _ string, _ []byte, _ string, _ record.TTLs, _ time.Time) (record.Signaled, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("Signal"); err != nil {
		return record.Signaled{}, err
	}
	return record.Signaled{}, fmt.Errorf("workflow %s: signal %s: %w", id, name, record.ErrNoSuchWait)
}

// Park moves a workflow in the index to at, when later.
func (f *Store) Park(_ context.Context, id string, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.Index[id]; ok && at.After(t) {
		f.Index[id] = at
	}
	return nil
}
