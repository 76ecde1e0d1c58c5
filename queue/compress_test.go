package queue_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/bananas-go/bananas/queue"
)

// compressible is n bytes of records that repeat with small changes, as a
// batch of customer rows does.
func compressible(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"customer":%d,"name":"Ada Lovelace","plan":"pro","seats":%d},`, i%500, i%7)
	}
	return b.Bytes()[:n]
}

// A payload over CompressOver is stored compressed and reads back as it
// was; one at or under it, and with compression off, is stored as it is
// (the same bytes, no copy).
func TestPayloads_CompressOverThresholdRoundTrips(t *testing.T) {
	p := &queue.Payloads{CompressOver: 4 << 10, Limit: 2 << 20}
	big := compressible(1 << 20)
	stored, err := p.Pack(queue.PurposeArgs, "j1", big)
	if err != nil {
		t.Fatal(err)
	}
	if !queue.Framed(stored) || len(stored) > 64<<10 {
		t.Fatalf("1 MiB compressible payload stored in %d bytes (framed %v); want a frame of at most 64 KiB", len(stored), queue.Framed(stored))
	}
	back, err := p.Unpack(queue.PurposeArgs, "j1", stored)
	if err != nil || !bytes.Equal(back, big) {
		t.Fatalf("Unpack = %d bytes, %v; want the 1 MiB payload back", len(back), err)
	}
	for _, tc := range []struct {
		over int
		n    int
	}{{4 << 10, 4 << 10}, {0, 1 << 20}, {-1, 1 << 20}} {
		small := compressible(tc.n)
		q := &queue.Payloads{CompressOver: tc.over, Limit: 2 << 20}
		got, err := q.Pack(queue.PurposeArgs, "j1", small)
		if err != nil || &got[0] != &small[0] || len(got) != len(small) {
			t.Fatalf("CompressOver %d: Pack of %d bytes = %d bytes, %v; want the same bytes", tc.over, tc.n, len(got), err)
		}
		if got, err := q.Unpack(queue.PurposeArgs, "j1", small); err != nil || &got[0] != &small[0] {
			t.Fatalf("Unpack of a plain payload = %v; want the same bytes", err)
		}
	}
	// Incompressible bytes stay as they are: a frame would only add to them.
	noise := make([]byte, 8<<10)
	for i := range noise {
		noise[i] = byte(i*7919 + i*i*31)
	}
	if got, _ := p.Pack(queue.PurposeArgs, "j1", noise); queue.Framed(got) && len(got) >= len(noise) {
		t.Fatalf("an incompressible payload was framed into %d bytes", len(got))
	}
}

// bomb is a frame of a compressed payload that inflates to n zero bytes.
func bomb(t testing.TB, n int, declareSize bool) []byte {
	t.Helper()
	var z []byte
	if declareSize {
		e, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		z = e.EncodeAll(make([]byte, n), nil)
	} else {
		var buf bytes.Buffer
		e, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		z = buf.Bytes()
	}
	return append([]byte{0xc1, 0x01}, z...)
}

// A compressed bomb — a few KiB that inflate to 64 MiB — is refused with
// an error that says so, before it is inflated: the reader's limit applies
// to the inflated size, whether the frame declares it, hides it, or lies.
func TestPayloads_CompressedBombIsRefusedNotInflated(t *testing.T) {
	p := &queue.Payloads{CompressOver: 4 << 10, Limit: 1 << 20}
	small := func(n int) []byte {
		e, _ := zstd.NewWriter(nil)
		return e.EncodeAll(make([]byte, n), nil)
	}
	lying := append(append([]byte{0xc1, 0x01}, small(1000)...), small(64<<20)...) // declares 1000 bytes, then 64 MiB more
	for name, tc := range map[string]struct {
		frame []byte
		want  string
	}{
		"declares 64 MiB":             {bomb(t, 64<<20, true), "would inflate to 67108864 bytes, over the limit of 1048576 bytes"},
		"declares nothing":            {bomb(t, 64<<20, false), "does not declare its inflated size"},
		"declares 1000, holds 64 MiB": {lying, "does not inflate within its declared 1000 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got, err := p.Unpack(queue.PurposeArgs, "j1", tc.frame)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Unpack of a %d-byte bomb = %d bytes, %v; want an error saying %q", len(tc.frame), len(got), err, tc.want)
			}
			if name == "declares 64 MiB" && !errors.Is(err, queue.ErrPayloadTooLarge) {
				t.Fatalf("error %v does not match ErrPayloadTooLarge", err)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
				t.Fatalf("refusing the bomb allocated %d MiB", grew>>20)
			}
		})
	}
}

// Whatever bytes a payload holds, Unpack returns them or an error, never
// panics, and never returns more than its limit.
func FuzzPayloads_UnpackNeverPanics(f *testing.F) {
	p := &queue.Payloads{CompressOver: 16, Limit: 64 << 10}
	good, _ := p.Pack(queue.PurposeArgs, "j1", compressible(4<<10))
	f.Add(good)
	p.Keys = ring(f, testKey("k1", 1))
	sealed, _ := p.Pack(queue.PurposeArgs, "j1", compressible(4<<10))
	f.Add(sealed)
	sealedSmall, _ := p.Pack(queue.PurposeArgs, "j1", []byte{0x81, 0xa1, 'x', 1})
	f.Add(sealedSmall)
	f.Add(bomb(f, 1<<20, true))
	f.Add([]byte{0xc1})
	f.Add([]byte{0xc1, 0x01})
	f.Add([]byte{0xc1, 0x80, 1, 2})
	f.Add([]byte{0x81, 0xa1, 'x', 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := p.Unpack(queue.PurposeArgs, "j1", b)
		if err == nil && len(out) > p.Limit && queue.Framed(b) {
			t.Fatalf("Unpack returned %d bytes, over its limit of %d", len(out), p.Limit)
		}
	})
}
