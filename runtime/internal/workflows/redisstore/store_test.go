package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
	"github.com/bananas-go/bananas/runtime/internal/workflows/redisstore"
)

// chain3 is a workflow of a first step, then b, then a gather of one and
// its successor: "a" -> "b" -> gather -> "d".
func wfSteps(t *testing.T) []record.NewStep {
	args, err := msgpack.Marshal(1)
	if err != nil {
		t.Fatal(err)
	}
	return []record.NewStep{
		{Label: "a", JobID: "job-a", Template: []byte("tpl-a"), Args: args},
		{Label: "b", JobID: "job-b", Template: []byte("tpl-b"), Args: args},
		{Label: "g", Gather: true, After: []int{1, 0}},
		{Label: "d", JobID: "job-d", Template: []byte("tpl-d"), After: []int{2}},
	}
}

var keepWF = record.TTLs{Completed: time.Hour, Failed: time.Hour}

// made is the steps whose jobs were made, for StepsCreated: index, job id
// pairs.
func made(pairs ...any) []record.ReadyStep {
	var out []record.ReadyStep
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, record.ReadyStep{Index: pairs[i].(int), JobID: pairs[i+1].(string)})
	}
	return out
}

func mp(t *testing.T, v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWorkflow_AGatherGivesItsPredecessorsResultsInTheOrderListed(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), time.Now()
		ready, own, err := st.Submit(ctx, "wf1", wfSteps(t), 3, time.Minute, now)
		if err != nil || !own || len(ready) != 2 || ready[0].JobID != "job-a" || ready[1].JobID != "job-b" {
			t.Fatalf("submit = %+v, %v; want a and b ready", ready, err)
		}
		if _, err := st.StepsCreated(ctx, "wf1", made(0, "job-a", 1, "job-b")); err != nil {
			t.Fatal(err)
		}
		a, err := st.Advance(ctx, "wf1", 0, "job-a", queue.EndCompleted, mp(t, "A"), "", keepWF)
		if err != nil || len(a.Ready) != 0 || a.Status != "running" {
			t.Fatalf("a completed: %+v, %v; want nothing ready yet", a, err)
		}
		a, err = st.Advance(ctx, "wf1", 1, "job-b", queue.EndCompleted, mp(t, "B"), "", keepWF)
		if err != nil || len(a.Ready) != 1 || a.Ready[0].JobID != "job-d" {
			t.Fatalf("b completed: %+v, %v; want d ready", a, err)
		}
		var got []string
		if err := msgpack.Unmarshal(a.Ready[0].Args, &got); err != nil || strings.Join(got, ",") != "B,A" {
			t.Fatalf("d's args = %q (%v); want [B A], the gather's order", got, err)
		}
		if _, err := st.StepsCreated(ctx, "wf1", made(3, "job-d")); err != nil {
			t.Fatal(err)
		}
		a, err = st.Advance(ctx, "wf1", 3, "job-d", queue.EndCompleted, mp(t, 7), "", keepWF)
		if err != nil || a.Status != "completed" {
			t.Fatalf("d completed: %+v, %v", a, err)
		}
		rec, err := st.Read(ctx, "wf1")
		if err != nil || rec.Status != "completed" || rec.TTL <= 0 {
			t.Fatalf("record = %+v, %v; want completed with a TTL", rec, err)
		}
	})
}

func TestWorkflow_AStaleEndChangesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), time.Now()
		if _, _, err := st.Submit(ctx, "wf1", wfSteps(t), 3, time.Minute, now); err != nil {
			t.Fatal(err)
		}
		a, err := st.Advance(ctx, "wf1", 0, "another-job", queue.EndDead, []byte("boom"), "", keepWF)
		if err != nil || a.Status != "running" {
			t.Fatalf("advance with another job id = %+v, %v; want the workflow running", a, err)
		}
		rec, err := st.Read(ctx, "wf1")
		if err != nil || rec.Steps[0].State != record.StepCreating {
			t.Fatalf("after a stale end: %+v, %v; want step a still creating", rec, err)
		}
		if _, err := st.Advance(ctx, "nope", 0, "job-a", queue.EndDead, nil, "", keepWF); err == nil {
			t.Fatal("advance of a workflow that does not exist succeeded")
		}
	})
}

func TestWorkflow_GarbageIsRefusedBeforeAnyWrite(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), time.Now()
		key := queue.WorkflowKey(q.Namespace(), "wf1")
		q.Client().Set(ctx, key, "garbage", 0)
		if _, _, err := st.Submit(ctx, "wf1", wfSteps(t), 3, time.Minute, now); err == nil || !strings.Contains(err.Error(), "not a hash") {
			t.Fatalf("submit over a string = %v; want refused", err)
		}
		if v, _ := q.Client().Get(ctx, key).Result(); v != "garbage" {
			t.Fatalf("the key was written: %q", v)
		}
		q.Client().Del(ctx, key)
		q.Client().HSet(ctx, key, "st", "dancing", "n", 4)
		if _, err := st.Advance(ctx, "wf1", 0, "job-a", queue.EndDead, nil, "", keepWF); err == nil {
			t.Fatal("advance of a record with a garbage status succeeded")
		}
		if _, err := st.Read(ctx, "wf{1}"); err == nil {
			t.Fatal("an id with braces was read")
		}
	})
}

func TestWorkflow_AGarbageCounterIsRecounted(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), time.Now()
		if _, _, err := st.Submit(ctx, "wf1", wfSteps(t), 3, time.Minute, now); err != nil {
			t.Fatal(err)
		}
		key := queue.WorkflowKey(q.Namespace(), "wf1")
		q.Client().HSet(ctx, key, "p:2", "x", "left", "y")
		if _, err := st.Advance(ctx, "wf1", 0, "job-a", queue.EndCompleted, mp(t, 1), "", keepWF); err != nil {
			t.Fatal(err)
		}
		a, err := st.Advance(ctx, "wf1", 1, "job-b", queue.EndCompleted, mp(t, 2), "", keepWF)
		if err != nil || len(a.Ready) != 1 {
			t.Fatalf("b completed: %+v, %v; want d ready despite the garbage counter", a, err)
		}
	})
}

// The workflow scripts run twice with the same arguments change nothing the
// first did not.
func TestWorkflowScripts_SecondRunWithSameArgumentsChangesNothing(t *testing.T) {
	runTwiceCases(t, []twiceCase{
		{"submit, created, advance, fail, cancel, retry, due", func(t *testing.T, st *redisstore.Store, h *redistest.SecondRun) {
			ctx, now := context.Background(), time.Now()
			h.During(func() {
				if _, _, err := st.Submit(ctx, "wf1", wfSteps(t), 3, time.Minute, now); err != nil {
					t.Fatal(err)
				}
				if _, _, err := st.Submit(ctx, "wf2", wfSteps(t), 3, time.Minute, now); err != nil {
					t.Fatal(err)
				}
				if _, err := st.StepsCreated(ctx, "wf1", made(0, "job-a", 1, "job-b")); err != nil {
					t.Fatal(err)
				}
				if _, err := st.Advance(ctx, "wf1", 0, "job-a", queue.EndCompleted, mp(t, 1), "", keepWF); err != nil {
					t.Fatal(err)
				}
				if _, err := st.Advance(ctx, "wf1", 1, "job-b", queue.EndDead, []byte("boom"), "", keepWF); err != nil {
					t.Fatal(err)
				}
				if _, err := st.Retry(ctx, "wf1", map[int]string{1: "job-b2", 2: "", 3: "job-d2"}, now); err != nil {
					t.Fatal(err)
				}
				if _, _, err := st.Cancel(ctx, "wf2", time.Hour, now); err != nil {
					t.Fatal(err)
				}
				if _, err := st.Due(ctx, now.Add(time.Hour), now.Add(2*time.Hour), 10); err != nil {
					t.Fatal(err)
				}
			})
		}},
	})
}

// The steps an advance marks creating are its caller's own; a second end
// of the same step (a resent call, or the keeper reading the end back)
// finds them creating and returns them apart, and a second submission is
// not the workflow's first.
func TestWorkflow_OnlyTheCallThatMarksStepsCreatingOwnsThem(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), time.Now()
		steps := []record.NewStep{
			{Label: "a", JobID: "job-a", Template: []byte("t"), Args: mp(t, 1)},
			{Label: "b", JobID: "job-b", Template: []byte("t"), After: []int{0}},
		}
		if _, own, err := st.Submit(ctx, "wf1", steps, 1, time.Minute, now); err != nil || !own {
			t.Fatalf("first submission: own %v, %v", own, err)
		}
		if ready, own, err := st.Submit(ctx, "wf1", steps, 1, time.Minute, now); err != nil || own || len(ready) != 1 {
			t.Fatalf("second submission: %d ready, own %v, %v; want a's step, not its own", len(ready), own, err)
		}
		first, err := st.Advance(ctx, "wf1", 0, "job-a", queue.EndCompleted, mp(t, 2), "", keepWF)
		if err != nil || len(first.Ready) != 1 || len(first.Again) != 0 {
			t.Fatalf("first end: %+v, %v; want b its own", first, err)
		}
		again, err := st.Advance(ctx, "wf1", 0, "job-a", queue.EndCompleted, mp(t, 2), "", keepWF)
		if err != nil || len(again.Ready) != 0 || len(again.Again) != 1 || again.Again[0].JobID != "job-b" {
			t.Fatalf("second end: %+v, %v; want b found creating, not its own", again, err)
		}
	})
}

// The trails completed runs leave reach the steps after them, a gather's
// predecessors' standing for it, in the gather's order.
func TestWorkflow_AStepIsGivenItsPredecessorsTrails(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), time.Now()
		if _, _, err := st.Submit(ctx, "wf1", wfSteps(t), 3, time.Minute, now); err != nil {
			t.Fatal(err)
		}
		if _, err := st.StepsCreated(ctx, "wf1", made(0, "job-a", 1, "job-b")); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Advance(ctx, "wf1", 0, "job-a", queue.EndCompleted, mp(t, "A"), "trail-a", keepWF); err != nil {
			t.Fatal(err)
		}
		a, err := st.Advance(ctx, "wf1", 1, "job-b", queue.EndCompleted, mp(t, "B"), "trail-b", keepWF)
		if err != nil || len(a.Ready) != 1 || a.Ready[0].After != "trail-b,trail-a" {
			t.Fatalf("d ready: %+v, %v; want it given trail-b,trail-a, the gather's predecessors in order", a.Ready, err)
		}
	})
}

// A trail that would break the list of a step's predecessors' trails (a
// comma, over MaxTrail bytes) is dropped: the end is applied without it.
func TestWorkflow_AnUnfitTrailIsDropped(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), time.Now()
		if _, _, err := st.Submit(ctx, "wf1", wfSteps(t), 3, time.Minute, now); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Advance(ctx, "wf1", 0, "job-a", queue.EndCompleted, mp(t, "A"), "x,y", keepWF); err != nil {
			t.Fatal(err)
		}
		a, err := st.Advance(ctx, "wf1", 1, "job-b", queue.EndCompleted, mp(t, "B"), strings.Repeat("t", record.MaxTrail+1), keepWF)
		if err != nil || len(a.Ready) != 1 || a.Ready[0].After != "" {
			t.Fatalf("d ready: %+v, %v; want no trails, both predecessors' being unfit", a.Ready, err)
		}
	})
}

// A job made for a step that has another job id by now (a retry gave it a
// fresh one while a slow caller made the old) is returned to cancel, and
// the step is not marked created by it: the step never has two jobs.
func TestWorkflow_AJobMadeUnderAStepsOldIDIsReturnedToCancel(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), time.Now()
		if _, _, err := st.Submit(ctx, "wf1", wfSteps(t), 3, time.Minute, now); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Cancel(ctx, "wf1", time.Hour, now); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Retry(ctx, "wf1", map[int]string{0: "job-a2", 1: "", 2: "", 3: ""}, now); err != nil {
			t.Fatal(err)
		}
		got, err := st.StepsCreated(ctx, "wf1", made(0, "job-a"))
		if err != nil || len(got) != 1 || got[0] != "job-a" {
			t.Fatalf("StepsCreated of the old job = %v, %v; want it returned to cancel", got, err)
		}
		rec, err := st.Read(ctx, "wf1")
		if err != nil || rec.Steps[0].State != record.StepCreating || rec.Steps[0].JobID != "job-a2" {
			t.Fatalf("step a = %+v, %v; want still creating under job-a2", rec.Steps[0], err)
		}
		if got, err := st.StepsCreated(ctx, "wf1", made(0, "job-a2")); err != nil || len(got) != 0 {
			t.Fatalf("StepsCreated of the new job = %v, %v", got, err)
		}
	})
}

// Every submitted workflow is in the list, newest first, written by the
// submission itself; a second run of the submission adds nothing.
func TestWorkflowList_ASubmissionAddsItOnceAndPagesGoNewestFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), time.Now()
		for i, id := range []string{"wf-a", "wf-b", "wf-c", "wf-d", "wf-e"} {
			at := now.Add(time.Duration(i) * time.Millisecond)
			if i == 4 {
				at = now.Add(3 * time.Millisecond) // shares its time with wf-d
			}
			for try := range 2 { // then a resent submission
				if _, _, err := st.Submit(ctx, id, wfSteps(t), 3, time.Minute, at); err != nil {
					t.Fatal(err)
				}
				ms, err := q.Client().ZScore(ctx, queue.WorkflowList(q.Namespace()), id).Result()
				if err != nil || int64(ms) != at.UnixMilli() {
					t.Fatalf("submission %d of %s: listed at %v, %v; want at its submission", try+1, id, ms, err)
				}
			}
		}
		if n, err := q.Client().ZCard(ctx, queue.WorkflowList(q.Namespace())).Result(); err != nil || n != 5 {
			t.Fatalf("the list holds %d, %v; want the 5 workflows once each", n, err)
		}
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			page, next, err := st.List(ctx, cursor, 2, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range page {
				got = append(got, s.ID)
				if s.Status != "running" || s.Steps != 4 || s.Left != 4 || string(s.Template) != "tpl-d" || s.CreatedAt.IsZero() {
					t.Fatalf("summary %+v", s)
				}
			}
			if next == "" {
				break
			}
			if pages > 5 {
				t.Fatal("the pages do not end")
			}
			cursor = next
		}
		if strings.Join(got, ",") != "wf-e,wf-d,wf-c,wf-b,wf-a" {
			t.Fatalf("pages gave %v; want every workflow once, newest first", got)
		}
		if _, _, err := st.List(ctx, "garbage", 2, nil); err == nil {
			t.Fatal("a garbage cursor was taken")
		}
	})
}

// A filter keeps the workflows it accepts, and a page carries the failed
// step of a failed workflow.
func TestWorkflowList_AFilterKeepsWhatItAcceptsAndAFailedOneNamesItsStep(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), time.Now()
		for _, id := range []string{"ok", "bad"} {
			if _, _, err := st.Submit(ctx, id, wfSteps(t), 3, time.Minute, now); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.Advance(ctx, "bad", 1, "job-b", queue.EndDead, []byte("boom"), "", keepWF); err != nil {
			t.Fatal(err)
		}
		page, next, err := st.List(ctx, "", 10, func(s *record.Summary) (bool, error) { return s.Status == "failed", nil })
		if err != nil || next != "" || len(page) != 1 || page[0].ID != "bad" || page[0].FailedStep != "b" || page[0].EndedAt.IsZero() {
			t.Fatalf("failed ones = %+v, %q, %v; want bad, failed at step b", page, next, err)
		}
	})
}

// An entry whose record is gone (expired) is dropped: by the keeper's
// prune, and by a list that meets it; a live workflow's entry stays.
func TestWorkflowList_AnEntryWhoseRecordExpiredIsPruned(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, long := context.Background(), time.Now().Add(-48*time.Hour)
		for _, id := range []string{"gone-1", "gone-2", "live"} {
			if _, _, err := st.Submit(ctx, id, wfSteps(t), 3, time.Minute, long); err != nil {
				t.Fatal(err)
			}
		}
		q.Client().Del(ctx, queue.WorkflowKey(q.Namespace(), "gone-1"), queue.WorkflowKey(q.Namespace(), "gone-2"))
		kept, end, err := st.PruneList(ctx, time.Now().Add(-24*time.Hour), 0, 100)
		if err != nil || kept != 1 || !end {
			t.Fatalf("prune = kept %d, end %v, %v; want the live one kept", kept, end, err)
		}
		ids, err := q.Client().ZRange(ctx, queue.WorkflowList(q.Namespace()), 0, -1).Result()
		if err != nil || strings.Join(ids, ",") != "live" {
			t.Fatalf("the list after the prune: %v, %v; want live alone", ids, err)
		}
		// A list that meets an entry without its record drops it too.
		q.Client().Del(ctx, queue.WorkflowKey(q.Namespace(), "live"))
		page, _, err := st.List(ctx, "", 10, nil)
		if err != nil || len(page) != 0 {
			t.Fatalf("list = %+v, %v; want nothing", page, err)
		}
		if n, _ := q.Client().ZCard(ctx, queue.WorkflowList(q.Namespace())).Result(); n != 0 {
			t.Fatalf("the list holds %d after a list met the gone entry; want 0", n)
		}
	})
}

// chain is a workflow of n steps, each after the one before: s0 -> s1 ->
// ... with job ids job-0, job-1, ...
func chain(t *testing.T, n int) []record.NewStep {
	steps := make([]record.NewStep, n)
	for k := range steps {
		steps[k] = record.NewStep{Label: "s" + strconv.Itoa(k), JobID: "job-" + strconv.Itoa(k), Template: []byte("tpl")}
		if k == 0 {
			steps[k].Args = mp(t, 1)
		} else {
			steps[k].After = []int{k - 1}
		}
	}
	return steps
}

func states(t *testing.T, st *redisstore.Store, id string) string {
	t.Helper()
	rec, err := st.Read(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, s := range rec.Steps {
		b.WriteByte(byte(s.State))
	}
	return b.String()
}

// A cancel cancels the steps whose jobs are being made (creating) as it
// cancels those that wait, and hands back their jobs to cancel: a job made
// after the cancel is then canceled by its maker (StepsCreated returns it).
func TestWorkflowCancel_AStepBeingCreatedIsCanceledAndItsJobHandedBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), time.Now()
		if _, _, err := st.Submit(ctx, "wf1", wfSteps(t), 3, time.Minute, now); err != nil {
			t.Fatal(err)
		}
		if got := states(t, st, "wf1"); got != "ccww" {
			t.Fatalf("states %q; want a and b creating", got)
		}
		status, jobs, err := st.Cancel(ctx, "wf1", time.Hour, now)
		if err != nil || status != "canceled" || strings.Join(jobs, ",") != "job-a,job-b" {
			t.Fatalf("cancel = %s %v %v; want canceled, jobs job-a and job-b to cancel", status, jobs, err)
		}
		if got := states(t, st, "wf1"); got != "xxxx" {
			t.Fatalf("states after the cancel %q; want every step canceled", got)
		}
		if back, err := st.StepsCreated(ctx, "wf1", made(0, "job-a", 1, "job-b")); err != nil || strings.Join(back, ",") != "job-a,job-b" {
			t.Fatalf("StepsCreated after the cancel = %v, %v; want both jobs handed back to cancel", back, err)
		}
		if got := states(t, st, "wf1"); got != "xxxx" {
			t.Fatalf("states after the late StepsCreated %q; want every step still canceled", got)
		}
	})
}

// A retry never runs a completed step again, even when the caller lists it
// (a retry that read the record before the step completed): it keeps its
// state and result and is not returned to make.
func TestWorkflowRetry_ACompletedStepListedIsLeftAlone(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), time.Now()
		if _, _, err := st.Submit(ctx, "wf1", chain(t, 3), 2, time.Minute, now); err != nil {
			t.Fatal(err)
		}
		if _, err := st.StepsCreated(ctx, "wf1", made(0, "job-0")); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Advance(ctx, "wf1", 0, "job-0", queue.EndCompleted, mp(t, "R0"), "", keepWF); err != nil {
			t.Fatal(err)
		}
		if _, err := st.StepsCreated(ctx, "wf1", made(1, "job-1")); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Advance(ctx, "wf1", 1, "job-1", queue.EndDead, []byte("boom"), "", keepWF); err != nil {
			t.Fatal(err)
		}
		if got := states(t, st, "wf1"); got != "dfx" {
			t.Fatalf("states %q; want completed, failed, canceled", got)
		}
		a, err := st.Retry(ctx, "wf1", map[int]string{0: "job-0b", 1: "job-1b", 2: ""}, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Ready) != 1 || a.Ready[0].Index != 1 || a.Ready[0].JobID != "job-1b" {
			t.Fatalf("ready after the retry: %+v; want step 1 alone, under job-1b", a.Ready)
		}
		rec, err := st.Read(ctx, "wf1")
		if err != nil {
			t.Fatal(err)
		}
		if s := rec.Steps[0]; s.State != record.StepCompleted || s.JobID != "job-0" || string(s.Result) != string(mp(t, "R0")) {
			t.Fatalf("the completed step after the retry: %+v; want it completed under job-0 with its result", s)
		}
		if got := states(t, st, "wf1"); got != "dcw" {
			t.Fatalf("states %q; want completed, creating, waiting", got)
		}
	})
}

// A step that fails cancels at once every step that comes after it, however
// far down: the steps after its successors too, on every branch. A replay
// of it that completes brings them all back.
func TestWorkflow_AFailedStepCancelsEveryStepDownstream(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), time.Now()
		steps := chain(t, 5)
		// s5 after s2 alone: a second branch below s2, two deep.
		steps = append(steps, record.NewStep{Label: "s5", JobID: "job-5", Template: []byte("tpl"), After: []int{2}},
			record.NewStep{Label: "s6", JobID: "job-6", Template: []byte("tpl"), After: []int{5}})
		if _, _, err := st.Submit(ctx, "wf1", steps, 4, time.Minute, now); err != nil {
			t.Fatal(err)
		}
		for k := range 2 {
			j := "job-" + strconv.Itoa(k)
			if _, err := st.StepsCreated(ctx, "wf1", made(k, j)); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Advance(ctx, "wf1", k, j, queue.EndCompleted, mp(t, k), "", keepWF); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.StepsCreated(ctx, "wf1", made(2, "job-2")); err != nil {
			t.Fatal(err)
		}
		a, err := st.Advance(ctx, "wf1", 2, "job-2", queue.EndDead, []byte("boom"), "", keepWF)
		if err != nil || a.Status != "failed" || a.Why != 2 {
			t.Fatalf("s2 failed: %+v, %v", a, err)
		}
		if got := states(t, st, "wf1"); got != "ddfxxxx" {
			t.Fatalf("states %q; want every step below s2 canceled (s3, s4, s5, s6)", got)
		}
		rec, err := st.Read(ctx, "wf1")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{3, 4, 5, 6} {
			if e := rec.Steps[k].Error; e != "canceled: step s2 failed" {
				t.Fatalf("step s%d's error %q; want it to name s2", k, e)
			}
		}
		// Its dead job replayed and completed: every step it canceled waits again.
		a, err = st.Advance(ctx, "wf1", 2, "job-2", queue.EndCompleted, mp(t, 2), "", keepWF)
		if err != nil || a.Status != "running" {
			t.Fatalf("s2 completed after all: %+v, %v", a, err)
		}
		if got := states(t, st, "wf1"); got != "dddcwcw" {
			t.Fatalf("states %q; want s3 and s5 creating, s4 and s6 waiting again", got)
		}
	})
}

// A step ends completed, dead or canceled: an advance with any other
// ending (a retry, a hand-back) is refused, naming it, and changes nothing.
func TestWorkflow_AnAdvanceWithAnEndingThatEndsNoStepIsRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), time.Now()
		if _, _, err := st.Submit(ctx, "wf1", wfSteps(t), 3, time.Minute, now); err != nil {
			t.Fatal(err)
		}
		if _, err := st.StepsCreated(ctx, "wf1", made(0, "job-a", 1, "job-b")); err != nil {
			t.Fatal(err)
		}
		for _, how := range []queue.Ending{queue.EndRetrying, queue.EndHandedBack, queue.EndStale} {
			if _, err := st.Advance(ctx, "wf1", 0, "job-a", how, mp(t, "A"), "", keepWF); err == nil || !strings.Contains(err.Error(), how.String()) {
				t.Fatalf("advance ended %s = %v; want refused naming it", how, err)
			}
		}
		rec, err := st.Read(ctx, "wf1")
		if err != nil || rec.Steps[0].State != record.StepCreated {
			t.Fatalf("after refused advances: %+v, %v; want step a still created", rec, err)
		}
	})
}

// Ends of one workflow's steps that come together (they go out coalesced,
// several in one script run) each get their answer, and the step they
// make ready is given to exactly one of them.
func TestWorkflow_EndsThatComeTogetherMakeTheNextStepReadyOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), time.Now()
		const n = 8
		var steps []record.NewStep
		var all []int
		var created []record.ReadyStep
		for k := range n {
			j := "job-" + strconv.Itoa(k)
			steps = append(steps, record.NewStep{Label: "s" + strconv.Itoa(k), JobID: j, Template: []byte("tpl"), Args: mp(t, k)})
			all = append(all, k)
			created = append(created, record.ReadyStep{Index: k, JobID: j})
		}
		steps = append(steps, record.NewStep{Label: "all", Gather: true, After: all},
			record.NewStep{Label: "d", JobID: "job-d", Template: []byte("tpl"), After: []int{n}})
		if _, _, err := st.Submit(ctx, "wf1", steps, n+1, time.Minute, now); err != nil {
			t.Fatal(err)
		}
		if _, err := st.StepsCreated(ctx, "wf1", created); err != nil {
			t.Fatal(err)
		}
		answers := make([]record.Advance, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for k := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[k], errs[k] = st.Advance(ctx, "wf1", k, "job-"+strconv.Itoa(k), queue.EndCompleted, mp(t, k), "", keepWF)
			}()
		}
		wg.Wait()
		given := 0
		for k, a := range answers {
			if errs[k] != nil || a.Status != "running" {
				t.Fatalf("end of s%d = %+v, %v; want running", k, a, errs[k])
			}
			for _, r := range a.Ready {
				if r.Index == n+1 {
					given++
				}
			}
		}
		if given != 1 {
			t.Fatalf("d was given to %d callers; want exactly one", given)
		}
		if got := states(t, st, "wf1"); got != strings.Repeat("d", n+1)+"c" {
			t.Fatalf("states %q; want every root and the gather completed, d creating", got)
		}
	})
}
