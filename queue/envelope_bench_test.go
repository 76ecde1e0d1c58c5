package queue_test

import (
	"testing"

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
