package queue_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// rotationPayloads are the Payloads of a process with keys, newest first.
func rotationPayloads(t *testing.T, keys ...queue.Key) *queue.Payloads {
	return &queue.Payloads{Limit: 1 << 20, Keys: ring(t, keys...)}
}

// sealedJob is a job of route whose args are plain sealed by p.
func sealedJob(t *testing.T, p *queue.Payloads, route string, plain []byte) queue.NewJob {
	t.Helper()
	j := job(t, route)
	args, err := p.Pack(queue.PurposeArgs, j.ID, plain)
	if err != nil {
		t.Fatal(err)
	}
	if j.Envelope, err = queue.EncodeEnvelope(queue.Envelope{Args: args, Description: "kept"}); err != nil {
		t.Fatal(err)
	}
	return j
}

// argsKey is the key id the stored args of job id are sealed under.
func argsKey(t *testing.T, q *queue.Queue, route, id string) string {
	t.Helper()
	env, _, _ := q.StoredEnvelope(context.Background(), route, id)
	e, err := queue.DecodeEnvelope(env)
	if err != nil {
		t.Fatalf("job %s: %v", id, err)
	}
	kid, _ := queue.Sealed(e.Args)
	return kid
}

// Reseal moves every waiting and scheduled job's args from k1 to k2 and
// leaves what else the envelope holds; a second run reseals none. Its
// script replaces stored bytes only while they are the bytes read and the
// job is not leased: a job fetched or changed between the read and the
// write is left alone, and a resent call writes nothing.
func TestReseal_CompareAndSetLeavesAJobTakenMeanwhile(t *testing.T) {
	eachServer(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		k1, k2 := testKey("k1", 1), testKey("k2", 2)
		old, both := rotationPayloads(t, k1), rotationPayloads(t, k2, k1)
		now := time.Now()
		ready, later := sealedJob(t, old, "r", []byte("ready")), sealedJob(t, old, "r", []byte("later"))
		later.RunAt = now.Add(time.Hour)
		taken := sealedJob(t, old, "r", []byte("taken"))
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{taken}, now); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{ready, later}, now); err != nil {
			t.Fatal(err)
		}

		// taken is read, then fetched before the write: left alone.
		_, kind, stale := q.StoredEnvelope(ctx, "r", taken.ID)
		if kind != "p" {
			t.Fatalf("taken is stored as %q, want a light job's payload", kind)
		}
		if ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 1, now.Add(time.Minute), now); err != nil || len(ds) != 1 || ds[0].ID != taken.ID {
			t.Fatalf("fetch: %v %v", ds, err)
		}
		if done, left, err := q.ResealRaw(ctx, "r", "p", taken.ID, stale, []byte("x|normal|1|0|\x81")); err != nil || done != 0 || left != 1 {
			t.Fatalf("reseal of a fetched job: %d resealed, %d left alone, %v; want 0, 1", done, left, err)
		}
		if _, _, now := q.StoredEnvelope(ctx, "r", taken.ID); !bytes.Equal(now, stale) {
			t.Fatal("a fetched job's payload was rewritten")
		}

		// later is read, then changed before the write: left alone; with
		// the bytes read, resealed once, and a resend changes nothing.
		env, kind, read := q.StoredEnvelope(ctx, "r", later.ID)
		if kind != "h" {
			t.Fatalf("later is stored as %q, want a job hash", kind)
		}
		changed := append(bytes.Clone(read), 0xc0)
		if done, left, err := q.ResealRaw(ctx, "r", "h", later.ID, changed, env); err != nil || done != 0 || left != 1 {
			t.Fatalf("reseal with bytes not stored: %d resealed, %d left alone, %v; want 0, 1", done, left, err)
		}
		bigger := bytes.Repeat([]byte{0x90}, 150) // more slices than stored
		for run, want := range []int{1, 0} {
			if done, _, err := q.ResealRaw(ctx, "r", "h", later.ID, read, bigger); err != nil || done != want {
				t.Fatalf("run %d: %d resealed, %v; want %d", run, done, err, want)
			}
			if got, _, _ := q.StoredEnvelope(ctx, "r", later.ID); !bytes.Equal(got, bigger) {
				t.Fatalf("run %d: stored envelope is %x", run, got)
			}
		}
		if done, _, err := q.ResealRaw(ctx, "r", "h", later.ID, bigger, env); err != nil || done != 1 {
			t.Fatalf("putting the envelope back: %d, %v", done, err)
		}

		// A bad entry is refused before anything is written.
		if _, _, err := q.ResealRaw(ctx, "r", "z", later.ID, env, bigger); err == nil || !strings.Contains(err.Error(), "entry kind must be p or h") {
			t.Fatalf("reseal of an entry of kind z: %v", err)
		}
		if _, _, err := q.ResealRaw(ctx, "r", "h", later.ID, env, nil); err == nil || !strings.Contains(err.Error(), "must not be empty") {
			t.Fatalf("reseal to empty bytes: %v", err)
		}
		if got, _, _ := q.StoredEnvelope(ctx, "r", later.ID); !bytes.Equal(got, env) {
			t.Fatalf("a refused reseal wrote: %x", got)
		}

		n, err := q.Reseal(ctx, both)
		if err != nil {
			t.Fatal(err)
		}
		if n.Resealed != 2 || n.LeftAlone != 1 || n.Already != 0 {
			t.Fatalf("reseal: %+v; want 2 resealed (ready, later), 1 left alone (taken, leased)", n)
		}
		for _, j := range []queue.NewJob{ready, later} {
			if kid := argsKey(t, q, "r", j.ID); kid != "k2" {
				t.Errorf("job %s's args are under %q, want k2", j.ID, kid)
			}
			env, _, _ := q.StoredEnvelope(ctx, "r", j.ID)
			e, _ := queue.DecodeEnvelope(env)
			if e.Description != "kept" {
				t.Errorf("job %s lost its description: %+v", j.ID, e)
			}
		}
		if kid := argsKey(t, q, "r", taken.ID); kid != "k1" {
			t.Errorf("the fetched job's args are under %q, want k1 still", kid)
		}
		if n, err := q.Reseal(ctx, both); err != nil || n.Resealed != 0 || n.Already != 2 {
			t.Fatalf("second reseal: %+v %v; want 0 resealed, 2 already", n, err)
		}
		if _, err := q.Reseal(ctx, &queue.Payloads{}); err != queue.ErrNoResealKeys {
			t.Fatalf("reseal without keys: %v", err)
		}
	})
}

// SwapFields replaces every field given, or none: only while each holds the
// old value read. A resent call (the same swaps) writes nothing more; a
// field changed meanwhile leaves the record as it is; a bad call (an empty
// new value, a key of another type) is refused before any write.
func TestSwapFields_ReplacesAllOrNoneWhileTheOldValuesHold(t *testing.T) {
	eachServer(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		rdb := q.Client()
		key := q.Namespace() + ":swap:{x}:rec"
		if err := rdb.HSet(ctx, key, "env", "e1", "args", "a1", "other", "o").Err(); err != nil {
			t.Fatal(err)
		}
		swaps := []queue.FieldSwap{{Field: "env", Old: []byte("e1"), New: []byte("e2")}, {Field: "args", Old: []byte("a1"), New: []byte("a2")}}
		for run := 1; run <= 2; run++ {
			swapped, err := q.SwapFields(ctx, key, swaps...)
			if err != nil || swapped != (run == 1) {
				t.Fatalf("run %d: swapped %v, %v; want %v", run, swapped, err, run == 1)
			}
			if got := rdb.HGetAll(ctx, key).Val(); got["env"] != "e2" || got["args"] != "a2" || got["other"] != "o" {
				t.Fatalf("run %d: the record is %v", run, got)
			}
		}
		// args changed by someone else: neither field is replaced.
		stale := []queue.FieldSwap{{Field: "env", Old: []byte("e2"), New: []byte("e3")}, {Field: "args", Old: []byte("a-old"), New: []byte("a3")}}
		if swapped, err := q.SwapFields(ctx, key, stale...); err != nil || swapped {
			t.Fatalf("a swap over a changed field: %v, %v; want left alone", swapped, err)
		}
		if got := rdb.HGet(ctx, key, "env").Val(); got != "e2" {
			t.Fatalf("env is %q after a refused swap, want e2", got)
		}
		if _, err := q.SwapFields(ctx, key, queue.FieldSwap{Field: "env", Old: []byte("e2"), New: nil}); err == nil || !strings.Contains(err.Error(), "empty") {
			t.Fatalf("an empty new value: %v; want a refusal", err)
		}
		if err := rdb.Set(ctx, key+"s", "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := q.SwapFields(ctx, key+"s", swaps...); err == nil || !strings.Contains(err.Error(), "not a hash") {
			t.Fatalf("a string key: %v; want a refusal naming its type", err)
		}
		if swapped, err := q.SwapFields(ctx, key+"-gone", swaps...); err != nil || swapped {
			t.Fatalf("a record that is gone: %v, %v; want left alone", swapped, err)
		}
	})
}
