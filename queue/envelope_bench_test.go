package queue_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/bananas-go/bananas/queue"
)

// BenchmarkEnvelopeCodec measures the envelope round trip every job makes
// (encode at enqueue, decode at fetch) with the bench's 90-byte args.
func BenchmarkEnvelopeCodec(b *testing.B) {
	e := queue.Envelope{Args: make([]byte, 90), Timeout: 30000, Description: "welcome mail"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		raw, err := queue.EncodeEnvelope(e)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := queue.DecodeEnvelope(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// The hand-written envelope codec agrees with msgpack's reflection both ways
// (what it writes Unmarshal reads, what Marshal wrote it reads: envelopes
// stored by earlier versions), for every field set or empty and sizes across
// the format's length classes.
func TestEnvelopeCodec_MatchesMsgpack(t *testing.T) {
	for _, e := range []queue.Envelope{
		{},
		{Args: []byte{0x90}},
		{Args: make([]byte, 300), Timeout: 30000, Description: "welcome mail"},
		{Args: make([]byte, 70000), Timeout: 1, ResultTTL: 1 << 40, FailureTTL: 200, Description: strings.Repeat("d", 40)},
		{Args: []byte("x"), Timeout: 128, ResultTTL: 65536, FailureTTL: 255, Description: strings.Repeat("é", 200)},
	} {
		want, err := msgpack.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := queue.EncodeEnvelope(e)
		if err != nil {
			t.Fatal(err)
		}
		var viaReflect queue.Envelope
		if err := msgpack.Unmarshal(got, &viaReflect); err != nil {
			t.Fatal(err)
		}
		same := func(x queue.Envelope) bool {
			return bytes.Equal(x.Args, e.Args) && (x.Args == nil) == (e.Args == nil) && x.Timeout == e.Timeout &&
				x.ResultTTL == e.ResultTTL && x.FailureTTL == e.FailureTTL && x.Description == e.Description
		}
		if !same(viaReflect) {
			t.Fatalf("msgpack.Unmarshal(EncodeEnvelope(e)) = %+v", viaReflect)
		}
		for _, raw := range [][]byte{got, want} {
			back, err := queue.DecodeEnvelope(raw)
			if err != nil || !same(back) {
				t.Fatalf("DecodeEnvelope(% x...) = %+v, %v", raw[:min(len(raw), 16)], back, err)
			}
		}
	}
	if _, err := queue.DecodeEnvelope([]byte("\xc1 not msgpack")); err == nil || !strings.Contains(err.Error(), "decode envelope") {
		t.Fatalf("garbage decoded: %v", err)
	}
}
