package runtime

import "testing"

// BenchmarkEncodeArgs measures the args encoding of every enqueue.
func BenchmarkEncodeArgs(b *testing.B) {
	type payload struct{ To, Subject, Body string }
	p := payload{"user@example.com", "hello", "0123456789012345678901234567890123456789"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := encode(p); err != nil {
			b.Fatal(err)
		}
	}
}
