package results_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/bananas-go/bananas/results"
)

// BenchmarkRecordCodec measures the result record round trip of every
// completed job (encode at ack, decode at Await).
func BenchmarkRecordCodec(b *testing.B) {
	r := results.Record{ID: "01JD3WZZZZZZZZZZZZZZZZZZZZ.default", OK: true, Value: make([]byte, 64), FinishedAt: 1}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		raw, err := results.Encode(r)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := results.Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// The hand-written record codec agrees with msgpack's reflection both ways:
// what Encode writes Unmarshal reads, and Decode reads what Marshal wrote
// (records stored by earlier versions), with every field set or empty.
func TestRecordCodec_MatchesMsgpack(t *testing.T) {
	for _, r := range []results.Record{
		{ID: "a.default", OK: true, FinishedAt: 1},
		{ID: "01JD3WZZZZZZZZZZZZZZZZZZZZ.default", OK: true, Value: []byte{}, FinishedAt: 1 << 40},
		{ID: "x", OK: false, Error: strings.Repeat("boom ", 100), Attempts: 300, FinishedAt: 1795370000000,
			Name: "send_email", Priority: "high", CreatedAt: 1795360000000, StartedAt: 1795369999000},
		{ID: "y", OK: true, Value: make([]byte, 70000), Error: "last failure", Attempts: 2, FinishedAt: 5},
		{ID: "z", OK: true, FinishedAt: 6, Worker: "w1", Workflow: "01M8DHQF1349GHA0SAC0DDZAS2"},
	} {
		got, err := results.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		same := func(x results.Record) bool { // an empty Value is omitted, as by Marshal
			if !bytes.Equal(x.Value, r.Value) {
				return false
			}
			x.Value = r.Value
			return reflect.DeepEqual(x, r)
		}
		var viaReflect results.Record
		if err := msgpack.Unmarshal(got, &viaReflect); err != nil || !same(viaReflect) {
			t.Fatalf("msgpack.Unmarshal(Encode(r)) = %+v, %v; want %+v", viaReflect, err, r)
		}
		old, err := msgpack.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range [][]byte{got, old} {
			back, err := results.Decode(raw)
			if err != nil || !same(back) {
				t.Fatalf("Decode = %+v, %v; want %+v", back, err, r)
			}
		}
	}
	if _, err := results.Decode([]byte("\xc1 not msgpack")); err == nil {
		t.Fatal("garbage decoded")
	}
}
