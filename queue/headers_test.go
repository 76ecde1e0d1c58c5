package queue_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/internal/mpack"
	"github.com/bananas-go/bananas/queue"
)

// A job's headers travel in its envelope beside the args, and an envelope
// written without any (by an older writer) still decodes, with none.
func TestEnvelope_HeadersRoundTripAndOldEnvelopesDecodeWithout(t *testing.T) {
	h := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "baggage": "tenant=acme"}
	b, err := queue.EncodeEnvelope(queue.Envelope{Args: []byte{0x01}, Headers: h})
	if err != nil {
		t.Fatal(err)
	}
	e, err := queue.DecodeEnvelope(b)
	if err != nil || !maps.Equal(e.Headers, h) {
		t.Fatalf("decoded headers %v, %v; want %v", e.Headers, err, h)
	}
	old := mpack.Bytes(mpack.String(mpack.MapHeader(nil, 1), "a"), []byte{0x01})
	e, err = queue.DecodeEnvelope(old)
	if err != nil || e.Headers != nil || len(e.Args) != 1 {
		t.Fatalf("an envelope without headers decoded to %+v, %v", e, err)
	}
}

// Headers over their bounds are refused with an error naming the bound,
// whether a caller asks to encode them or Redis holds them.
func TestEnvelope_HeadersOverTheirBoundsAreRefused(t *testing.T) {
	many := map[string]string{}
	for i := range queue.MaxHeaders + 1 {
		many[strings.Repeat("k", i+1)] = "v"
	}
	cases := map[string]struct {
		h    map[string]string
		want string
	}{
		"too many":        {many, "at most 16"},
		"empty name":      {map[string]string{"": "v"}, "header name"},
		"space in name":   {map[string]string{"a b": "v"}, "without spaces"},
		"long value":      {map[string]string{"k": strings.Repeat("v", queue.MaxHeaderValue+1)}, "at most 2048"},
		"too many bytes":  {map[string]string{"a": strings.Repeat("v", 2000), "b": strings.Repeat("v", 2000), "c": strings.Repeat("v", 200)}, "at most 4096"},
		"value not UTF-8": {map[string]string{"k": "\xff"}, "not UTF-8"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := queue.EncodeEnvelope(queue.Envelope{Headers: c.h}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("EncodeEnvelope: %v, want an error saying %q", err, c.want)
			}
			b := mpack.String(mpack.MapHeader(nil, 2), "a")
			b = mpack.Bytes(b, nil)
			b = mpack.MapHeader(mpack.String(b, "h"), len(c.h))
			for k, v := range c.h {
				b = mpack.String(mpack.String(b, k), v)
			}
			if _, err := queue.DecodeEnvelope(b); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("DecodeEnvelope of stored headers: %v, want an error saying %q", err, c.want)
			}
		})
	}
}
