package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

// Store is the Redis side of workflows: the records and their
// transitions (this file, one script of scripts/ each), the list of every
// workflow (list.go), and, through the Queue, the clock, the replay of a
// dead step's job and the reads of steps' jobs. It is the workflows.Store
// of a program. Ends of steps of one workflow that finish together go out
// in one script run (advances).
type Store struct {
	q        *queue.Queue
	rdb      redis.UniversalClient
	ns       string
	cluster  bool                                              // the list of workflows lives on another node than a record
	advances *queue.Coalescer[string, stepEnd, record.Advance] // coalesced ends of steps, by workflow
}

// New returns the Store of the workflows of q's namespace, whose scripts
// run on q's client.
func New(q *queue.Queue) *Store {
	rdb := q.Client()
	_, cluster := rdb.(*redis.ClusterClient)
	s := &Store{q: q, rdb: rdb, ns: q.Namespace(), cluster: cluster}
	s.advances = queue.NewCoalescer(s.advanceMany)
	return s
}

// Now is the time as Redis knows it (queue.Queue.Now).
func (s *Store) Now() time.Time { return s.q.Now() }

// Replay moves dead job id back to its ready list (queue.ErrNotFound: it
// is not dead).
func (s *Store) Replay(ctx context.Context, id string) error { return s.q.Ops.Replay(ctx, id) }

// LookupMany reads the jobs of ids, in order; nil for one not found.
func (s *Store) LookupMany(ctx context.Context, ids []string) ([]*queue.JobState, error) {
	return s.q.Jobs.LookupMany(ctx, ids)
}

// stepEndCodes are the words wf_advance.lua reads for how a step's job
// ended (Advance): completed, dead or canceled.
var stepEndCodes = map[queue.Ending]string{queue.EndCompleted: "d", queue.EndDead: "f", queue.EndCanceled: "x"}

// Submit stores workflow id with steps, final the step whose result
// is the workflow's, and returns the steps to make now. The workflow is in
// the index, looked at by the keeper after grace, before its record exists:
// a submitter that dies between the two leaves an entry the keeper drops.
//
// own is true when this call stored the workflow: its steps to make are
// its own, made by no one else before it. A retried call that finds the
// workflow stored returns the steps still creating, not its own.
func (s *Store) Submit(ctx context.Context, id string, steps []record.NewStep, final int, grace time.Duration, now time.Time) (ready []record.ReadyStep, own bool, err error) {
	if err := record.CheckID(id); err != nil {
		return nil, false, err
	}
	if len(steps) == 0 || len(steps) > record.MaxSteps {
		return nil, false, fmt.Errorf("a workflow has 1 to %d steps, got %d", record.MaxSteps, len(steps))
	}
	if final < 0 || final >= len(steps) {
		return nil, false, fmt.Errorf("final step %d of %d", final, len(steps))
	}
	args := []any{now.UnixMilli(), len(steps), final, id}
	next := make([][]int, len(steps))
	for k, s := range steps {
		for _, p := range s.After {
			if p < 0 || p >= k {
				return nil, false, fmt.Errorf("step %d (%s) comes after step %d: a step comes after steps listed before it", k, s.Label, p)
			}
			next[p] = append(next[p], k)
		}
		if s.Gather && len(s.After) == 0 {
			return nil, false, fmt.Errorf("step %d (%s) gathers nothing", k, s.Label)
		}
	}
	var roots []record.ReadyStep
	waits := map[string][]int{}
	for k, s := range steps {
		f := strconv.Itoa(k)
		state := "w"
		if s.Kind != record.KindTask {
			if err := checkWait(k, s); err != nil {
				return nil, false, err
			}
			args = append(args, "w:"+f, string(rune(s.Kind)), "dd:"+f, s.Wait.Milliseconds())
			if s.Kind == record.KindSignal {
				args = append(args, "sn:"+f, s.Signal, "ty:"+f, s.Type)
				waits[s.Signal] = append(waits[s.Signal], k)
			}
		}
		switch {
		case len(s.After) == 0 && s.Kind == record.KindSignal:
			// A wait without predecessors is armed now.
			state = "a"
			due := int64(0)
			if s.Wait > 0 {
				due = now.Add(s.Wait).UnixMilli()
			}
			args = append(args, "du:"+f, due)
		case len(s.After) == 0:
			state = "c"
			roots = append(roots, record.ReadyStep{Index: k, JobID: s.JobID, Template: s.Template, Args: s.Args})
		}
		args = append(args, "l:"+f, s.Label, "s:"+f, state, "p:"+f, len(s.After))
		switch {
		case s.Gather:
			args = append(args, "v:"+f, "1")
		case s.Kind == record.KindTask:
			args = append(args, "j:"+f, s.JobID, "t:"+f, s.Template)
		}
		if len(s.After) > 0 {
			args = append(args, "a:"+f, joinInts(s.After))
		} else {
			args = append(args, "x:"+f, s.Args)
		}
		if len(next[k]) > 0 {
			args = append(args, "nx:"+f, joinInts(next[k]))
		}
	}
	for name, ks := range waits {
		args = append(args, "sw:"+name, joinInts(ks))
	}
	// Both indices first, each entry harmless should the record never come:
	// the keeper and the list drop an entry without a record.
	keys := []string{queue.WorkflowKey(s.ns, id), queue.WorkflowList(s.ns)}
	pipe := s.rdb.Pipeline()
	pipe.ZAdd(ctx, queue.WorkflowIndex(s.ns), redis.Z{Score: float64(now.Add(grace).UnixMilli()), Member: id})
	if s.cluster {
		// The list lives on another node than the record: the script
		// cannot write it.
		pipe.ZAddNX(ctx, keys[1], redis.Z{Score: float64(now.UnixMilli()), Member: id})
		keys = keys[:1]
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, false, fmt.Errorf("submit workflow %s: %w", id, err)
	}
	res, err := lua().submit.Run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		return nil, false, fmt.Errorf("submit workflow %s: %w", id, err)
	}
	if len(res) == 1 && str(res[0]) == "new" {
		return roots, true, nil
	}
	ready, err = readySteps(res, 1)
	return ready, false, err
}

// Advance records that job, the job of step of workflow id, ended
// as how said with value (a completed job's result, else its error), and
// returns the workflow's status and the steps to make now. The ends of one
// workflow's steps that come together go in one call (wf_advance.lua takes
// several); the steps to make are returned to one of their callers.
// record.ErrNotFound when the record is gone.
//
// trail is what a completed run left for the steps after it (at most
// record.MaxTrail bytes without commas, else it is dropped): each step made later
// is given those of its predecessors in record.ReadyStep.After.
func (s *Store) Advance(ctx context.Context, id string, step int, job string, how queue.Ending, value []byte, trail string, keep record.TTLs) (record.Advance, error) {
	if _, ok := stepEndCodes[how]; !ok {
		return record.Advance{}, fmt.Errorf("advance workflow %s: step %d's job ended %s: a step ends completed, dead or canceled", id, step, how)
	}
	if record.CheckTrail(trail) != nil {
		trail = ""
	}
	return s.advances.Do(ctx, id, stepEnd{step, job, how, value, trail, keep})
}

// stepEnd is one end given to Advance.
type stepEnd struct {
	step  int
	job   string
	how   queue.Ending
	value []byte
	trail string
	keep  record.TTLs
}

// advanceMany runs wf_advance.lua for ends of workflow id; the first end's
// answer carries the steps to make, the others' only the status.
func (s *Store) advanceMany(ctx context.Context, id string, ends []stepEnd) ([]record.Advance, error) {
	keep := ends[0].keep
	args := make([]any, 0, 4+5*len(ends))
	args = append(args, s.q.Now().UnixMilli(), keep.Completed.Milliseconds(), keep.Failed.Milliseconds(), queue.WorkflowChannel(s.ns, id))
	for _, e := range ends {
		args = append(args, e.step, e.job, stepEndCodes[e.how], e.value, e.trail)
	}
	res, err := lua().advance.Run(ctx, s.rdb, []string{queue.WorkflowKey(s.ns, id)}, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("advance workflow %s: %w", id, err)
	}
	if len(res) == 1 {
		return nil, fmt.Errorf("workflow %s: %w", id, record.ErrNotFound)
	}
	a := record.Advance{Status: str(res[0]), Why: -1}
	if w, err := strconv.Atoi(str(res[1])); err == nil {
		a.Why = w
	}
	own, _ := res[2].(int64)
	a.Due = dueOf(res[3])
	if a.Ready, err = readySteps(res, 4); err != nil {
		return nil, err
	}
	if int(own) < len(a.Ready) {
		a.Ready, a.Again = a.Ready[:own:own], a.Ready[own:]
	}
	outs := make([]record.Advance, len(ends))
	outs[0] = a
	for i := 1; i < len(outs); i++ {
		outs[i] = record.Advance{Status: a.Status, Why: a.Why}
	}
	return outs, nil
}

// StepsCreated records that the jobs of steps of workflow id were made
// (each under its JobID), and returns the ids of those whose steps no
// longer want them: the workflow was canceled meanwhile, or a retry gave
// the step a fresh job id. The caller cancels them.
func (s *Store) StepsCreated(ctx context.Context, id string, steps []record.ReadyStep) ([]string, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	args := make([]any, 0, 2*len(steps))
	for _, s := range steps {
		args = append(args, s.Index, s.JobID)
	}
	out, err := lua().created.Run(ctx, s.rdb, []string{queue.WorkflowKey(s.ns, id)}, args...).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("workflow %s: record created steps: %w", id, err)
	}
	return out, nil
}

// Cancel cancels workflow id: its steps that have not run are
// canceled, and the ids of the jobs of its steps that were made and may
// still run are returned, for the caller to cancel. The status after the
// call is "canceled", or "completed" for a workflow already completed.
func (s *Store) Cancel(ctx context.Context, id string, keep time.Duration, now time.Time) (status string, jobs []string, err error) {
	out, err := lua().cancel.Run(ctx, s.rdb, []string{queue.WorkflowKey(s.ns, id)}, now.UnixMilli(), keep.Milliseconds(), queue.WorkflowChannel(s.ns, id)).StringSlice()
	if err != nil {
		return "", nil, fmt.Errorf("cancel workflow %s: %w", id, err)
	}
	if out[0] == "missing" {
		return "", nil, fmt.Errorf("workflow %s: %w", id, record.ErrNotFound)
	}
	return out[0], out[1:], nil
}

// Retry runs again the failed and canceled steps of workflow id
// listed in ids (step index -> the fresh job id it runs under; "" keeps
// its job id: a gather's, or a job that may still run), and returns the
// steps to make now.
func (s *Store) Retry(ctx context.Context, id string, ids map[int]string, now time.Time) (record.Advance, error) {
	args := []any{now.UnixMilli()}
	for k, j := range ids {
		args = append(args, k, j)
	}
	res, err := lua().retry.Run(ctx, s.rdb, []string{queue.WorkflowKey(s.ns, id)}, args...).Slice()
	if err != nil {
		return record.Advance{}, fmt.Errorf("retry workflow %s: %w", id, err)
	}
	if str(res[0]) == "missing" {
		return record.Advance{}, fmt.Errorf("workflow %s: %w", id, record.ErrNotFound)
	}
	a := record.Advance{Status: str(res[0]), Why: -1, Due: dueOf(res[1])}
	a.Ready, err = readySteps(res, 2)
	return a, err
}

// Due takes up to n workflows whose time in the index has come,
// putting each back at next.
func (s *Store) Due(ctx context.Context, now, next time.Time, n int) ([]string, error) {
	return lua().due.Run(ctx, s.rdb, []string{queue.WorkflowIndex(s.ns)}, now.UnixMilli(), next.UnixMilli(), n).StringSlice()
}

// Settle takes workflow id out of the index: it has ended and no
// step of it is left to make or to watch.
func (s *Store) Settle(ctx context.Context, id string) error {
	return s.rdb.ZRem(ctx, queue.WorkflowIndex(s.ns), id).Err()
}

// Watch has the keeper look at workflow id again at the latest at.
func (s *Store) Watch(ctx context.Context, id string, at time.Time) error {
	return s.rdb.ZAddLT(ctx, queue.WorkflowIndex(s.ns), redis.Z{Score: float64(at.UnixMilli()), Member: id}).Err()
}

// Read reads the record of workflow id (one HGETALL, so one
// instant), or record.ErrNotFound. A field that does not read (garbage)
// reads as empty, never as an error: the record is shown as it is.
func (s *Store) Read(ctx context.Context, id string) (*record.Workflow, error) {
	if err := record.CheckID(id); err != nil {
		return nil, fmt.Errorf("%w: %v", record.ErrNotFound, err)
	}
	key := queue.WorkflowKey(s.ns, id)
	pipe := s.rdb.Pipeline()
	all := pipe.HGetAll(ctx, key)
	ttl := pipe.PTTL(ctx, key)
	_, err := pipe.Exec(ctx)
	if err != nil && !isWrongType(err) {
		return nil, fmt.Errorf("read workflow %s: %w", id, err)
	}
	f := all.Val()
	w, err := workflowHead(id, f)
	if err != nil {
		return nil, err
	}
	if d := ttl.Val(); d > 0 {
		w.TTL = d
	}
	for k := range w.Steps {
		w.Steps[k] = stepRecord(f, strconv.Itoa(k))
	}
	return w, nil
}

// ReadEnd reads what an Await needs of workflow id: its status and,
// once it ended, the one step that tells how (the final step's result, or
// the failed or canceled step's error); the record's other steps are left
// zero. Two short reads instead of the whole record, which a workflow of
// many steps makes long: one while it runs.
func (s *Store) ReadEnd(ctx context.Context, id string) (*record.Workflow, error) {
	if err := record.CheckID(id); err != nil {
		return nil, fmt.Errorf("%w: %v", record.ErrNotFound, err)
	}
	key := queue.WorkflowKey(s.ns, id)
	head, err := s.rdb.HMGet(ctx, key, "st", "n", "fin", "why").Result()
	if err != nil && !isWrongType(err) {
		return nil, fmt.Errorf("read workflow %s: %w", id, err)
	}
	f := map[string]string{}
	for i, name := range []string{"st", "n", "fin", "why"} {
		if i < len(head) {
			f[name], _ = head[i].(string)
		}
	}
	w, err := workflowHead(id, f)
	if err != nil || w.Status == record.Running {
		return w, err
	}
	k := w.Why
	if w.Status == record.Completed || k < 0 {
		k = w.Final
	}
	if k < 0 || k >= len(w.Steps) {
		return w, nil
	}
	ks := strconv.Itoa(k)
	names := []string{"l:" + ks, "j:" + ks, "t:" + ks, "a:" + ks, "s:" + ks, "v:" + ks, "e:" + ks, "x:" + ks, "o:" + ks, "w:" + ks, "dd:" + ks, "sn:" + ks}
	vals, err := s.rdb.HMGet(ctx, key, names...).Result()
	if err != nil && !isWrongType(err) {
		return nil, fmt.Errorf("read workflow %s: %w", id, err)
	}
	for i, name := range names {
		if i < len(vals) {
			if v, ok := vals[i].(string); ok {
				f[name] = v
			}
		}
	}
	w.Steps[k] = stepRecord(f, ks)
	return w, nil
}

// workflowHead reads a record's own fields of f, with room for its steps;
// record.ErrNotFound for none, or for a status or count that does not
// read (garbage: not a workflow these scripts can move).
func workflowHead(id string, f map[string]string) (*record.Workflow, error) {
	switch f["st"] {
	case record.Running, record.Completed, record.Failed, record.Canceled:
	default:
		return nil, fmt.Errorf("workflow %s: %w", id, record.ErrNotFound)
	}
	n, _ := strconv.Atoi(f["n"])
	if n < 1 || n > record.MaxSteps {
		return nil, fmt.Errorf("workflow %s: %w", id, record.ErrNotFound)
	}
	w := &record.Workflow{ID: id, Status: f["st"], Why: -1, CreatedAt: parseMS(f["c"]), EndedAt: parseMS(f["f"]), Steps: make([]record.Step, n)}
	w.Final, _ = strconv.Atoi(f["fin"])
	if why, err := strconv.Atoi(f["why"]); err == nil && why >= 0 && why < n {
		w.Why = why
	}
	return w, nil
}

// stepRecord reads step s's fields of f.
func stepRecord(f map[string]string, s string) record.Step {
	st := record.StepState(0)
	if v := f["s:"+s]; len(v) == 1 {
		st = record.StepState(v[0])
	}
	r := record.Step{
		Label: f["l:"+s], JobID: f["j:"+s], Template: []byte(f["t:"+s]), After: splitInts(f["a:"+s]), State: st,
		Gather: f["v:"+s] == "1", Error: f["e:"+s], Args: []byte(f["x:"+s]),
	}
	if k := f["w:"+s]; k == "t" || k == "g" {
		r.Kind = record.StepKind(k[0])
		ms, _ := strconv.ParseInt(f["dd:"+s], 10, 64)
		r.Wait = time.Duration(ms) * time.Millisecond
		r.Signal, r.Type = f["sn:"+s], f["ty:"+s]
		r.Due, r.Received = parseMS(f["du:"+s]), parseMS(f["rv:"+s])
	}
	if v, ok := f["o:"+s]; ok {
		r.Result = []byte(v)
	}
	return r
}

// readySteps reads the (index, job id, template, args) entries of a
// workflow script's reply from res[from].
func readySteps(res []any, from int) ([]record.ReadyStep, error) {
	if (len(res)-from)%5 != 0 {
		return nil, fmt.Errorf("workflow script replied %d entries", len(res))
	}
	var out []record.ReadyStep
	for i := from; i+4 < len(res); i += 5 {
		k, err := strconv.Atoi(str(res[i]))
		if err != nil {
			return nil, fmt.Errorf("workflow script replied step %v", res[i])
		}
		out = append(out, record.ReadyStep{Index: k, JobID: str(res[i+1]), Template: []byte(str(res[i+2])), Args: []byte(str(res[i+3])), After: str(res[i+4])})
	}
	return out, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func joinInts(xs []int) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String()
}

func splitInts(s string) []int {
	if s == "" {
		return nil
	}
	var out []int
	for _, p := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(p); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// CreatingSteps returns the steps of workflow id left creating, with what
// their jobs are made of.
func (s *Store) CreatingSteps(ctx context.Context, id string) (record.Advance, error) {
	return s.Retry(ctx, id, nil, s.q.Now())
}
