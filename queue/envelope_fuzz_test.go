package queue_test

import (
	"bytes"
	"maps"
	"runtime"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/internal/mpack"
	"github.com/bananas-go/bananas/queue"
)

// hostileEnvelopes are stored envelopes a planted or corrupt job may hold:
// lengths claiming gigabytes, and nesting far past mpack.MaxDepth.
func hostileEnvelopes() map[string][]byte {
	field := func(tail ...byte) []byte { return append(mpack.String(mpack.MapHeader(nil, 1), "a"), tail...) }
	return map[string][]byte{
		"map32 of 2^32-1 entries":       {0xdf, 0xff, 0xff, 0xff, 0xff, 1, 2, 3},
		"args bin32 of 4 GiB":           field(0xc6, 0xff, 0xff, 0xff, 0xff, 1, 2, 3),
		"unknown field array32 of 2^31": append(mpack.String(mpack.MapHeader(nil, 1), "z"), 0xdd, 0x80, 0, 0, 0, 1),
		"unknown field nested 10,000":   append(mpack.String(mpack.MapHeader(nil, 1), "z"), append(bytes.Repeat([]byte{0x91}, 10000), 0xc0)...),
		"arrays nested 10,000 deep":     append(bytes.Repeat([]byte{0x91}, 10000), 0xc0),
	}
}

// Decoding a hostile envelope fails with an error that says what is wrong,
// and allocates a few KiB, not what the bytes claim.
func TestEnvelope_HostileBytesAreRefusedWithinAFewMiB(t *testing.T) {
	for name, b := range hostileEnvelopes() {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := queue.DecodeEnvelope(b)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.HasPrefix(err.Error(), "decode envelope: ") {
				t.Fatalf("DecodeEnvelope = %v; want an error saying the envelope cannot be decoded", err)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
				t.Fatalf("decoding %d bytes allocated %d KiB (error %v)", len(b), grew>>10, err)
			}
		})
	}
}

// Whatever bytes a job holds, DecodeEnvelope returns an envelope or an
// error, never panics, and an envelope it returns encodes to bytes that
// decode to the same envelope.
func FuzzEnvelope_DecodeNeverPanicsAndReencodesWhatItAccepts(f *testing.F) {
	good, err := queue.EncodeEnvelope(queue.Envelope{Args: []byte{0x81, 0xa1, 'x', 1}, Timeout: 1500, ResultTTL: 3600000, Description: "resize", Backoff: 100})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	withHeaders, err := queue.EncodeEnvelope(queue.Envelope{Args: []byte{0xc0}, Headers: map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tenant": "acme"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(withHeaders)
	f.Add([]byte{})
	f.Add([]byte{0x80})
	for _, b := range hostileEnvelopes() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := queue.DecodeEnvelope(b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "decode envelope: ") {
				t.Fatalf("error %q does not say it is the envelope that cannot be decoded", err)
			}
			return
		}
		again, err := queue.EncodeEnvelope(e)
		if err != nil {
			t.Fatalf("EncodeEnvelope of a decoded envelope: %v", err)
		}
		e2, err := queue.DecodeEnvelope(again)
		if err != nil {
			t.Fatalf("an envelope decoded from % x re-encodes to % x, which does not decode: %v", b, again, err)
		}
		if !bytes.Equal(e.Args, e2.Args) || e.Timeout != e2.Timeout || e.ResultTTL != e2.ResultTTL ||
			e.FailureTTL != e2.FailureTTL || e.Description != e2.Description || e.Backoff != e2.Backoff ||
			!maps.Equal(e.Headers, e2.Headers) {
			t.Fatalf("round trip changed the envelope: %+v → %+v", e, e2)
		}
	})
}
