package mpack

import (
	"bytes"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// Ext writes what msgpack reads as an ext of its type and data, in every
// size form, and ReadExt reads it back, refusing bytes after it or a cut.
func TestExt_RoundTripsEverySizeAndRefusesWhatIsNotOneExt(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, 65535, 65536} {
		data := bytes.Repeat([]byte{'x'}, n)
		b := Ext(nil, 'W', data)
		if err := Check(b); err != nil {
			t.Fatalf("ext of %d bytes: Check: %v", n, err)
		}
		var raw msgpack.RawMessage
		if err := msgpack.Unmarshal(b, &raw); err != nil {
			t.Fatalf("ext of %d bytes does not read as msgpack: %v", n, err)
		}
		typ, got, ok := ReadExt(b)
		if !ok || typ != 'W' || !bytes.Equal(got, data) {
			t.Fatalf("ReadExt of %d bytes = %d, %d bytes, %v", n, typ, len(got), ok)
		}
		if _, _, ok := ReadExt(append(b, 0xc0)); ok {
			t.Fatalf("ReadExt took an ext of %d bytes with a byte after it", n)
		}
		if _, _, ok := ReadExt(b[:len(b)-1]); ok {
			t.Fatalf("ReadExt took an ext of %d bytes cut short", n)
		}
	}
	if typ, data, ok := ReadExt([]byte{0xd4, 'W', 7}); !ok || typ != 'W' || !bytes.Equal(data, []byte{7}) {
		t.Fatalf("ReadExt of a fixext1 = %d, %v, %v", typ, data, ok)
	}
	for _, b := range [][]byte{nil, {0xc0}, {0x91, 0xc0}, {0xc8, 0}} {
		if _, _, ok := ReadExt(b); ok {
			t.Fatalf("ReadExt took % x", b)
		}
	}
}

// ArrayOf reads each array header form; Next steps over one value and
// refuses one that claims more than the bytes present.
func TestArrayOfAndNext(t *testing.T) {
	for _, n := range []int{0, 15, 16, 65535, 65536} {
		b := ArrayHeader(nil, n)
		got, first, ok := ArrayOf(b)
		if !ok || got != n || first != len(b) {
			t.Fatalf("ArrayOf(header of %d) = %d, %d, %v", n, got, first, ok)
		}
	}
	if _, _, ok := ArrayOf([]byte{0x80}); ok {
		t.Fatal("ArrayOf took a map")
	}
	b := append(ArrayHeader(nil, 2), String(String(nil, "ab"), "c")...)
	if end, err := Next(b, 1); err != nil || end != 4 {
		t.Fatalf("Next over the first element = %d, %v; want 4", end, err)
	}
	if end, err := Next(b, 0); err != nil || end != len(b) {
		t.Fatalf("Next over the array = %d, %v", end, err)
	}
	if _, err := Next([]byte{0xc4, 9, 1}, 0); err == nil {
		t.Fatal("Next took a bin claiming 9 bytes of 1")
	}
}
