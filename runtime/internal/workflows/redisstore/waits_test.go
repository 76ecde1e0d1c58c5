package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
	"github.com/bananas-go/bananas/runtime/internal/workflows/redisstore"
)

// waitSteps: two waits of one signal name, gathered, then a step; and a
// step a, a timer after it, then a step b.
func waitSteps(t *testing.T) []record.NewStep {
	return []record.NewStep{
		{Label: "ok", Kind: record.KindSignal, Signal: "ok", Wait: time.Hour, Type: "T"},
		{Label: "ok-2", Kind: record.KindSignal, Signal: "ok", Type: "T"},
		{Label: "gather", Gather: true, After: []int{0, 1}},
		{Label: "ship", JobID: "job-ship", Template: []byte("tpl"), After: []int{2}},
		{Label: "a", JobID: "job-a", Template: []byte("tpl"), Args: mp(t, 1)},
		{Label: "sleep", Kind: record.KindTimer, Wait: time.Second, After: []int{4}},
		{Label: "b", JobID: "job-b", Template: []byte("tpl"), After: []int{5}},
	}
}

// One signal completes one wait; a signal id sent again is no second
// signal; a signal of another type, of no wait's name, to no workflow or
// to a workflow whose waits all have theirs is refused.
func TestSignal_OneSignalCompletesOneWait(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), q.Now()
		ready, _, err := st.Submit(ctx, "wf1", waitSteps(t), 3, time.Minute, now)
		if err != nil || len(ready) != 1 || ready[0].JobID != "job-a" {
			t.Fatalf("Submit = %+v, %v; want only a's job made (the waits are armed)", ready, err)
		}
		rec, err := st.Read(ctx, "wf1")
		if err != nil {
			t.Fatal(err)
		}
		if s := rec.Steps[0]; s.State != record.StepArmed || s.Kind != record.KindSignal || s.Signal != "ok" || s.Due.UnixMilli() != now.Add(time.Hour).UnixMilli() {
			t.Fatalf("wait ok = %+v; want armed, due in an hour", s)
		}
		if s := rec.Steps[1]; s.State != record.StepArmed || !s.Due.IsZero() {
			t.Fatalf("wait ok-2 = %+v; want armed, no due time", s)
		}
		if _, err := st.Signal(ctx, "wf1", "ok", "s0", mp(t, "x"), "U", keepWF, time.Time{}); !errors.Is(err, record.ErrSignalType) {
			t.Fatalf("a payload of another type: %v", err)
		}
		if _, err := st.Signal(ctx, "wf1", "nope", "s0", mp(t, "x"), "T", keepWF, time.Time{}); !errors.Is(err, record.ErrNoSuchWait) {
			t.Fatalf("no wait of that name: %v", err)
		}
		if _, err := st.Signal(ctx, "wf9", "ok", "s0", mp(t, "x"), "T", keepWF, time.Time{}); !errors.Is(err, record.ErrNotFound) {
			t.Fatalf("no such workflow: %v", err)
		}
		res, err := st.Signal(ctx, "wf1", "ok", "s1", mp(t, "first"), "T", keepWF, time.Time{})
		if err != nil || res.Duplicate || res.Kept || len(res.Ready) != 0 {
			t.Fatalf("first signal = %+v, %v; want one wait completed, nothing to make yet", res, err)
		}
		if res, err := st.Signal(ctx, "wf1", "ok", "s1", mp(t, "first"), "T", keepWF, time.Time{}); err != nil || !res.Duplicate {
			t.Fatalf("the first signal resent = %+v, %v; want a duplicate", res, err)
		}
		if rec, _ := st.Read(ctx, "wf1"); rec.Steps[0].State != record.StepCompleted || rec.Steps[1].State != record.StepArmed || rec.Steps[0].Received.IsZero() {
			t.Fatalf("after one signal: %+v, %+v; want ok completed (received), ok-2 armed", rec.Steps[0], rec.Steps[1])
		}
		res, err = st.Signal(ctx, "wf1", "ok", "s2", mp(t, "second"), "", keepWF, time.Time{})
		if err != nil || len(res.Ready) != 1 || res.Ready[0].JobID != "job-ship" {
			t.Fatalf("second signal = %+v, %v; want ship ready", res, err)
		}
		var got []string
		if err := decodeMP(res.Ready[0].Args, &got); err != nil || len(got) != 2 || got[0] != "first" || got[1] != "second" {
			t.Fatalf("ship's args %v, %v; want both payloads in order", got, err)
		}
		if _, err := st.Signal(ctx, "wf1", "ok", "s3", mp(t, "third"), "T", keepWF, time.Time{}); !errors.Is(err, record.ErrSignalsReceived) {
			t.Fatalf("a third signal for two waits: %v", err)
		}
		if _, _, err := st.Cancel(ctx, "wf1", time.Hour, q.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Signal(ctx, "wf1", "ok", "s4", mp(t, "x"), "T", keepWF, time.Time{}); !errors.Is(err, record.ErrWorkflowEnded) {
			t.Fatalf("a signal to a canceled workflow: %v", err)
		}
	})
}

// A timer is armed when its predecessor completes, due its duration later;
// Fire before then does nothing, at its due time completes it once with
// its predecessor's result; a signal wait whose timeout passed fails the
// workflow, and a retry arms it again.
func TestFire_ATimerFiresOnceAtItsDueTimeAndAWaitTimesOut(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx := context.Background()
		steps := waitSteps(t)
		steps[0].Wait = 500 * time.Millisecond
		if _, _, err := st.Submit(ctx, "wf1", steps, 6, time.Minute, q.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := st.StepsCreated(ctx, "wf1", made(4, "job-a")); err != nil {
			t.Fatal(err)
		}
		before := q.Now()
		a, err := st.Advance(ctx, "wf1", 4, "job-a", queue.EndCompleted, mp(t, 41), "", keepWF)
		if err != nil || len(a.Ready) != 0 || a.Due.Before(before.Add(time.Second-time.Millisecond)) || a.Due.After(q.Now().Add(time.Second)) {
			t.Fatalf("a completed = %+v, %v; want the timer armed a second on, nothing to make", a, err)
		}
		if f, err := st.Fire(ctx, "wf1", keepWF); err != nil || len(f.Ready) != 0 {
			t.Fatalf("Fire before anything is due = %+v, %v", f, err)
		}
		var fired record.Advance
		deadline := time.Now().Add(10 * time.Second)
		for len(fired.Ready) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the timer never fired")
			}
			time.Sleep(20 * time.Millisecond)
			if fired, err = st.Fire(ctx, "wf1", keepWF); err != nil {
				t.Fatal(err)
			}
		}
		var got int
		if err := decodeMP(fired.Ready[0].Args, &got); err != nil || fired.Ready[0].JobID != "job-b" || got != 41 || q.Now().Before(a.Due) {
			t.Fatalf("fired %+v (args %d); want b made with a's result, not before %v", fired, got, a.Due)
		}
		if fired.Status != record.Failed || fired.Why != 0 {
			t.Fatalf("status %s why %d; want failed by wait ok's timeout (due half a second after submission)", fired.Status, fired.Why)
		}
		if again, err := st.Fire(ctx, "wf1", keepWF); err != nil || len(again.Ready) != 0 {
			t.Fatalf("Fire again = %+v, %v; want nothing: a timer fires once", again, err)
		}
		rec, _ := st.Read(ctx, "wf1")
		if s := rec.Steps[0]; s.State != record.StepFailed || s.Error == "" {
			t.Fatalf("wait ok = %+v; want failed with its timeout", s)
		}
		r, err := st.Retry(ctx, "wf1", map[int]string{0: "", 2: "", 3: ""}, q.Now())
		if err != nil || r.Status != record.Running || r.Due.IsZero() {
			t.Fatalf("Retry = %+v, %v; want running, the wait armed again", r, err)
		}
		if rec, _ := st.Read(ctx, "wf1"); rec.Steps[0].State != record.StepArmed || !rec.Steps[0].Due.Equal(r.Due) {
			t.Fatalf("after the retry: %+v; want armed, due %v", rec.Steps[0], r.Due)
		}
	})
}

// The wait scripts run twice with the same arguments change nothing the
// first did not: a signal resent is no second signal.
func TestWaitScripts_SecondRunWithSameArgumentsChangesNothing(t *testing.T) {
	runTwiceCases(t, []twiceCase{
		{"signal, fire, retry", func(t *testing.T, st *redisstore.Store, h *redistest.SecondRun) {
			ctx := context.Background()
			steps := waitSteps(t)
			steps[5].Wait = 0
			if _, _, err := st.Submit(ctx, "wf1", steps, 6, time.Minute, st.Now()); err != nil {
				t.Fatal(err)
			}
			if _, err := st.StepsCreated(ctx, "wf1", made(4, "job-a")); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Advance(ctx, "wf1", 4, "job-a", queue.EndCompleted, mp(t, 41), "", keepWF); err != nil {
				t.Fatal(err)
			}
			h.During(func() {
				if _, err := st.Signal(ctx, "wf1", "ok", "s1", mp(t, "first"), "T", keepWF, time.Time{}); err != nil {
					t.Fatal(err)
				}
				if _, err := st.Fire(ctx, "wf1", keepWF); err != nil {
					t.Fatal(err)
				}
			})
			rec, _ := st.Read(ctx, "wf1")
			if rec.Steps[0].State != record.StepCompleted || rec.Steps[1].State != record.StepArmed || rec.Steps[5].State != record.StepCompleted {
				t.Fatalf("after the calls run twice: %+v", rec.Steps)
			}
		}},
	})
}

func decodeMP(b []byte, v any) error { return msgpack.Unmarshal(b, v) }

// A signal's watch moves the workflow's entry in the keeper's index to it
// (earlier only) in the signal's round trip; a signal to no workflow adds
// no entry.
func TestSignal_TheWatchMovesTheIndexEntryAndCreatesNone(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), q.Now()
		if _, _, err := st.Submit(ctx, "wf1", waitSteps(t), 3, time.Minute, now); err != nil {
			t.Fatal(err)
		}
		index := queue.WorkflowIndex(q.Namespace())
		rdb := q.Client()
		watch := now.Add(5 * time.Second)
		if _, err := st.Signal(ctx, "wf1", "ok", "s1", mp(t, "first"), "T", keepWF, watch); err != nil {
			t.Fatal(err)
		}
		if got, err := rdb.ZScore(ctx, index, "wf1").Result(); err != nil || int64(got) != watch.UnixMilli() {
			t.Fatalf("index entry at %v, %v; want the watch, %d", got, err, watch.UnixMilli())
		}
		// Sent again (a resend after a lost reply): no second signal.
		if res, err := st.Signal(ctx, "wf1", "ok", "s1", mp(t, "first"), "T", keepWF, watch); err != nil || !res.Duplicate {
			t.Fatalf("the signal resent with its watch = %+v, %v; want a duplicate", res, err)
		}
		if rec, _ := st.Read(ctx, "wf1"); rec.Steps[1].State != record.StepArmed {
			t.Fatalf("after the resend the second wait is %c; want it still armed", rec.Steps[1].State)
		}
		if _, err := st.Signal(ctx, "wf1", "ok", "s2", mp(t, "second"), "T", keepWF, watch.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got, _ := rdb.ZScore(ctx, index, "wf1").Result(); int64(got) != watch.UnixMilli() {
			t.Fatalf("index entry moved to %v by a later watch; want it kept at %d", got, watch.UnixMilli())
		}
		if _, err := st.Signal(ctx, "wf9", "ok", "s3", mp(t, "x"), "T", keepWF, watch); !errors.Is(err, record.ErrNotFound) {
			t.Fatalf("no such workflow: %v", err)
		}
		if n, err := rdb.ZScore(ctx, index, "wf9").Result(); err == nil {
			t.Fatalf("a signal to no workflow left an index entry at %v", n)
		}
	})
}
