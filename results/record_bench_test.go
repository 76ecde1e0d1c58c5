package results_test

import (
	"testing"

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
