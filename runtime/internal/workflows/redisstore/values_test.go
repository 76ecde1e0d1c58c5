package redisstore_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/mpack"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows/redisstore"
)

// Values sealed in msgpack ext values (as the runtime stores them with
// keys) pass through the scripts opaque: a gather makes its successor's
// args the array of both, byte for byte. IDs lists the workflow, Values
// reads the fields that hold its user's values, and SwapValues replaces
// them only while they hold what was read.
func TestValues_OpaqueExtValuesAreGatheredListedAndSwapped(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue, st *redisstore.Store) {
		ctx, now := context.Background(), time.Now()
		if _, _, err := st.Submit(ctx, "wf1", wfSteps(t), 3, time.Minute, now); err != nil {
			t.Fatal(err)
		}
		if _, err := st.StepsCreated(ctx, "wf1", made(0, "job-a", 1, "job-b")); err != nil {
			t.Fatal(err)
		}
		extA := mpack.Ext(nil, 'W', []byte("\xc1\x02sealed-a\x00\xff"))
		extB := mpack.Ext(nil, 'W', bytes.Repeat([]byte{0xc1}, 300))
		if _, err := st.Advance(ctx, "wf1", 0, "job-a", queue.EndCompleted, extA, "", keepWF); err != nil {
			t.Fatal(err)
		}
		a, err := st.Advance(ctx, "wf1", 1, "job-b", queue.EndCompleted, extB, "", keepWF)
		if err != nil || len(a.Ready) != 1 {
			t.Fatalf("b completed: %+v, %v; want d ready", a, err)
		}
		want := append(append(mpack.ArrayHeader(nil, 2), extB...), extA...)
		if !bytes.Equal(a.Ready[0].Args, want) {
			t.Fatalf("d's args = % x; want the array of b's and a's values as stored", a.Ready[0].Args)
		}

		ids, err := st.IDs(ctx, 0, 10)
		if err != nil || len(ids) != 1 || ids[0] != "wf1" {
			t.Fatalf("IDs = %v, %v; want [wf1]", ids, err)
		}
		vals, err := st.Values(ctx, "wf1")
		if err != nil || !bytes.Equal(vals["o:0"], extA) || !bytes.Equal(vals["o:1"], extB) || len(vals["x:0"]) == 0 || vals["t:0"] != nil {
			t.Fatalf("Values = %q, %v; want x:k and o:k as stored, nothing else", vals, err)
		}
		stale := []queue.FieldSwap{{Field: "o:0", Old: []byte("other"), New: []byte("new")}}
		if ok, err := st.SwapValues(ctx, "wf1", stale); err != nil || ok {
			t.Fatalf("SwapValues of a value changed meanwhile = %v, %v; want left alone", ok, err)
		}
		swap := []queue.FieldSwap{{Field: "o:0", Old: extA, New: extB}}
		if ok, err := st.SwapValues(ctx, "wf1", swap); err != nil || !ok {
			t.Fatalf("SwapValues = %v, %v; want swapped", ok, err)
		}
		if vals, _ := st.Values(ctx, "wf1"); !bytes.Equal(vals["o:0"], extB) {
			t.Fatalf("o:0 after the swap = % x", vals["o:0"])
		}
		if vals, err := st.Values(ctx, "gone"); err != nil || len(vals) != 0 {
			t.Fatalf("Values of no workflow = %v, %v; want none", vals, err)
		}
	})
}
