package mpack_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/bananas-go/bananas/internal/mpack"
)

// ext builds a msgpack ext value of type typ with data, in the form given by
// code (0xd4..0xd8 fixext, 0xc7..0xc9 ext8/16/32).
func ext(code byte, typ int8, data []byte) []byte {
	b := []byte{code}
	switch code {
	case 0xc7:
		b = append(b, byte(len(data)))
	case 0xc8:
		b = binary.BigEndian.AppendUint16(b, uint16(len(data)))
	case 0xc9:
		b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	}
	return append(append(b, byte(typ)), data...)
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// nest wraps leaf in n one-element containers: fixarrays, or fixmaps keyed "a".
func nest(n int, maps bool, leaf []byte) []byte {
	var b []byte
	for range n {
		if maps {
			b = append(b, 0x81, 0xa1, 'a')
		} else {
			b = append(b, 0x91)
		}
	}
	return append(b, leaf...)
}

type inner struct {
	Tags []string
	When time.Time
}

type outer struct {
	Name   string
	Blob   []byte
	Inner  inner
	Ptr    *inner
	Counts map[int]float64
	Labels map[string]string
	Grid   [2][3]int8
}

// Every kind of msgpack value, in each of its header forms, passes Check,
// and Check ends it where msgpack's own decoder does.
func TestCheck_AcceptsEveryKindOfValidValue(t *testing.T) {
	strOf := func(n int) string { return strings.Repeat("s", n) }
	binOf := func(n int) []byte { return bytes.Repeat([]byte{7}, n) }
	intsOf := func(n int) []int { return make([]int, n) }
	mapOf := func(n int) map[int]bool {
		m := make(map[int]bool, n)
		for i := range n {
			m[i] = true
		}
		return m
	}
	cases := map[string][]byte{
		"nil": marshal(t, nil), "false": marshal(t, false), "true": marshal(t, true),
		"positive fixint": marshal(t, 5), "negative fixint": marshal(t, -5),
		"uint8": marshal(t, uint8(200)), "uint16": marshal(t, uint16(60000)), "uint32": marshal(t, uint32(4e9)), "uint64": marshal(t, uint64(math.MaxUint64)),
		"int8": marshal(t, int8(-100)), "int16": marshal(t, int16(-30000)), "int32": marshal(t, int32(-2e9)), "int64": marshal(t, int64(math.MinInt64)),
		"float32": marshal(t, float32(1.5)), "float64": marshal(t, 2.5),
		"fixstr empty": marshal(t, ""), "fixstr": marshal(t, strOf(31)),
		"str8": marshal(t, strOf(32)), "str16": marshal(t, strOf(256)), "str32": marshal(t, strOf(1<<16)),
		"bin8 empty": marshal(t, []byte{}), "bin8": marshal(t, binOf(255)), "bin16": marshal(t, binOf(256)), "bin32": marshal(t, binOf(1<<16)),
		"fixarray empty": marshal(t, []int{}), "fixarray": marshal(t, intsOf(15)), "array16": marshal(t, intsOf(16)), "array32": marshal(t, intsOf(1<<16)),
		"fixmap empty": marshal(t, map[int]bool{}), "fixmap": marshal(t, mapOf(15)), "map16": marshal(t, mapOf(16)), "map32": marshal(t, mapOf(1<<16)),
		"fixext1": ext(0xd4, 5, binOf(1)), "fixext2": ext(0xd5, 5, binOf(2)), "fixext4": ext(0xd6, 5, binOf(4)),
		"fixext8": ext(0xd7, 5, binOf(8)), "fixext16": ext(0xd8, 5, binOf(16)),
		"ext8": ext(0xc7, -3, binOf(200)), "ext16": ext(0xc8, 1, binOf(300)), "ext32": ext(0xc9, 1, binOf(1<<16)),
		"ext8 empty": ext(0xc7, 1, nil),
		"time":       marshal(t, time.Date(2024, 5, 6, 7, 8, 9, 10, time.UTC)),
		"time 64":    marshal(t, time.Unix(1e9, 5)),
		"time 96":    marshal(t, time.Unix(-1e12, 0)),
		"struct": marshal(t, outer{
			Name: "n", Blob: binOf(3), Inner: inner{Tags: []string{"a", "b"}, When: time.Unix(5, 0)}, Ptr: &inner{},
			Counts: map[int]float64{-7: 1.5, 300: 2}, Labels: map[string]string{"k": "v"}, Grid: [2][3]int8{{1, 2, 3}},
		}),
		"arrays nested MaxDepth deep": nest(mpack.MaxDepth, false, []byte{0x01}),
		"maps nested MaxDepth deep":   nest(mpack.MaxDepth, true, []byte{0x01}),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if err := mpack.Check(b); err != nil {
				t.Fatalf("Check = %v; want nil", err)
			}
			r := bytes.NewReader(b)
			if err := msgpack.NewDecoder(r).Skip(); err != nil {
				t.Fatalf("msgpack's Skip: %v", err)
			}
			if r.Len() != 0 {
				t.Fatalf("msgpack's decoder ends the value %d bytes before Check does", r.Len())
			}
		})
	}
}

// Typed values of every shape come back equal through Unmarshal, which
// checks them first.
func TestUnmarshal_RoundTripsCheckedValuesOfEveryShape(t *testing.T) {
	values := []any{
		outer{
			Name: strings.Repeat("x", 70000), Blob: bytes.Repeat([]byte{1}, 70000),
			Inner: inner{Tags: make([]string, 20), When: time.Unix(1e9, 7)}, Ptr: &inner{Tags: []string{"p"}},
			Counts: map[int]float64{-1: 0.5}, Labels: map[string]string{"a": "b"}, Grid: [2][3]int8{{-1}, {0, 0, 127}},
		},
		"plain string", 42, -42, uint64(math.MaxUint64), 3.25, true, []byte("raw"),
		map[string][]int{"a": {1, 2}}, [4]string{"a", "", "c"}, struct{}{},
	}
	for _, v := range values {
		t.Run(fmt.Sprintf("%T", v), func(t *testing.T) {
			b := marshal(t, v)
			got := reflect.New(reflect.TypeOf(v))
			if err := mpack.Unmarshal(b, got.Interface()); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if !reflect.DeepEqual(got.Elem().Interface(), v) {
				t.Fatalf("round trip of %T changed the value:\n got %+v\nwant %+v", v, got.Elem().Interface(), v)
			}
		})
	}
}

// header is a container or str/bin/ext header of kind claiming n (elements,
// entries or bytes), followed by a few bytes of content.
func header(kind string, n uint32) []byte {
	codes := map[string]byte{
		"str8": 0xd9, "str16": 0xda, "str32": 0xdb, "bin8": 0xc4, "bin16": 0xc5, "bin32": 0xc6,
		"ext8": 0xc7, "ext16": 0xc8, "ext32": 0xc9, "array16": 0xdc, "array32": 0xdd, "map16": 0xde, "map32": 0xdf,
	}
	b := []byte{codes[kind]}
	switch kind[len(kind)-1] {
	case '8':
		b = append(b, byte(n))
	case '6':
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(b, n)
	}
	if strings.HasPrefix(kind, "ext") {
		b = append(b, 9) // the ext's type
	}
	return b
}

// Every header whose declared length is more than the bytes after it is
// refused, saying which header and what it claimed; the same header claiming
// what is there passes.
func TestCheck_RefusesHeadersClaimingMoreThanThePresentBytes(t *testing.T) {
	content := []byte{1, 2, 3, 4} // four fixints: 4 bytes, 4 elements, 2 entries
	cases := []struct {
		kind string
		max  uint32
		fits uint32 // the claim content satisfies exactly
		unit string
	}{
		{"str8", 0xff, 4, "bytes"}, {"str16", 0xffff, 4, "bytes"}, {"str32", 0xffffffff, 4, "bytes"},
		{"bin8", 0xff, 4, "bytes"}, {"bin16", 0xffff, 4, "bytes"}, {"bin32", 0xffffffff, 4, "bytes"},
		{"ext8", 0xff, 4, "bytes"}, {"ext16", 0xffff, 4, "bytes"}, {"ext32", 0xffffffff, 4, "bytes"},
		{"array16", 0xffff, 4, "elements"}, {"array32", 0xffffffff, 4, "elements"},
		{"map16", 0xffff, 2, "entries"}, {"map32", 0xffffffff, 2, "entries"},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			ok := append(header(tc.kind, tc.fits), content...)
			if err := mpack.Check(ok); err != nil {
				t.Fatalf("%s claiming the %d %s present: Check = %v; want nil", tc.kind, tc.fits, tc.unit, err)
			}
			for _, claim := range []uint32{tc.fits + 1, tc.max} {
				b := append(header(tc.kind, claim), content...)
				err := mpack.Check(b)
				var be *mpack.BoundsError
				if !errors.As(err, &be) {
					t.Fatalf("%s claiming %d %s over %d bytes: Check = %v; want a *BoundsError", tc.kind, claim, tc.unit, len(content), err)
				}
				want := fmt.Sprintf("%s header claims %d %s", tc.kind, claim, tc.unit)
				if !strings.Contains(be.Reason, want) || be.Path != "" || be.Offset != 0 {
					t.Fatalf("Check = %+v; want reason %q at offset 0 with no path", be, want)
				}
			}
		})
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"fixstr", []byte{0xbf, 'a'}, "fixstr header claims 31 bytes, only 1 left"},
		{"fixarray", []byte{0x9f, 1, 2}, "fixarray header claims 15 elements, only 2 bytes left"},
		{"fixmap", []byte{0x8f, 1, 2, 3}, "fixmap header claims 15 entries, only 3 bytes left"},
		{"fixext16", []byte{0xd8, 1, 2}, "fixext16 cut short: needs 17 bytes, only 2 left"},
		{"uint32", []byte{0xce, 1}, "uint32 cut short: needs 4 bytes, only 1 left"},
		{"str32 length", []byte{0xdb, 0, 0}, "str32 header cut short: needs 4 length bytes, only 2 left"},
		{"ext8 type byte", []byte{0xc7, 0}, "ext8 header cut short: no type byte"},
		{"array count fits, elements do not", []byte{0x93, 0xd9, 5, 'a', 'b'}, `field "[0]": str8 header claims 5 bytes, only 2 left`},
		{"empty", nil, "value missing"},
		{"invalid code", []byte{0xc1}, "invalid msgpack code 0xc1"},
		{"trailing bytes", []byte{0xc0, 0xc0, 0xc0}, "2 trailing bytes after the value"},
		{"arrays nested past MaxDepth", nest(mpack.MaxDepth+1, false, []byte{1}), fmt.Sprintf("nested deeper than %d levels", mpack.MaxDepth)},
		{"maps nested past MaxDepth", nest(mpack.MaxDepth+1, true, []byte{1}), fmt.Sprintf("nested deeper than %d levels", mpack.MaxDepth)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := mpack.Check(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check(% x) = %v; want an error with %q", tc.b, err, tc.want)
			}
		})
	}
}

// The error names the way to the offending header through map keys and
// array indexes, as a Go selector.
func TestCheck_ErrorNamesThePathToTheOffendingHeader(t *testing.T) {
	str := func(s string) []byte { return mpack.String(nil, s) }
	poison := header("array32", 0xffffffff)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	cases := []struct {
		name, path string
		b          []byte
	}{
		{"top", "", poison},
		{"struct field", "Tags", cat([]byte{0x82}, str("Name"), str("n"), str("Tags"), poison)},
		{"nested field and index", "Inner.Tags[1]", cat([]byte{0x81}, str("Inner"), []byte{0x81}, str("Tags"), []byte{0x92}, str("ok"), poison)},
		{"integer keys", "[7][-3][300]", cat([]byte{0x81, 0x07, 0x81, 0xfd, 0x81, 0xcd, 0x01, 0x2c}, poison)},
		{"bool key", "[true]", cat([]byte{0x81, 0xc3}, poison)},
		{"key itself", "Labels[key 1]", cat([]byte{0x81}, str("Labels"), []byte{0x82}, str("a"), str("b"), header("str32", 0xffffffff))},
		{"long string key", "Inner." + strings.Repeat("k", 40), cat([]byte{0x81}, str("Inner"), []byte{0x81}, str(strings.Repeat("k", 40)), poison)},
		{"deep path elided", "[0][0][0][0][0][0]…[0][0][0][0][0][0]", nest(20, false, poison)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var be *mpack.BoundsError
			if err := mpack.Check(tc.b); !errors.As(err, &be) {
				t.Fatalf("Check = %v; want a *BoundsError", err)
			}
			if be.Path != tc.path || !strings.Contains(be.Reason, "header claims 4294967295") {
				t.Fatalf("Check = path %q, reason %q; want path %q", be.Path, be.Reason, tc.path)
			}
			if want := fmt.Sprintf("field %q: ", tc.path); tc.path != "" && !strings.HasPrefix(be.Error(), want) {
				t.Fatalf("Error() = %q; want it to start %q", be.Error(), want)
			}
			if got := tc.b[be.Offset]; got != 0xdd && got != 0xdb {
				t.Fatalf("Offset %d points at 0x%02x, not the offending header", be.Offset, got)
			}
		})
	}
}

// Unmarshal and ReadMap refuse a lying header before msgpack decodes it,
// with Check's error: the decoder would otherwise allocate what it claims.
func TestUnmarshalAndReadMap_RefuseBeforeDecoding(t *testing.T) {
	poison := append([]byte{0x81, 0xa4, 'T', 'a', 'g', 's'}, header("array32", 1<<20)...)
	var v struct{ Tags []int64 }
	var be *mpack.BoundsError
	if err := mpack.Unmarshal(poison, &v); !errors.As(err, &be) || be.Path != "Tags" {
		t.Fatalf("Unmarshal = %v; want Check's error naming Tags", err)
	}
	called := false
	err := mpack.ReadMap(poison, func(d *msgpack.Decoder, key string) error { called = true; return d.Skip() })
	if !errors.As(err, &be) || be.Path != "Tags" || called {
		t.Fatalf("ReadMap = %v (field called: %v); want Check's error naming Tags before any field", err, called)
	}
}

// Check is on the path of every job's args and every result: a valid value
// costs it no allocation.
func TestCheck_AllocatesNothingForAValidValue(t *testing.T) {
	b := marshal(t, outer{Name: "n", Inner: inner{Tags: []string{"a", "b"}}, Counts: map[int]float64{1: 2}})
	if n := testing.AllocsPerRun(100, func() {
		if mpack.Check(b) != nil {
			t.Fatal("refused")
		}
	}); n != 0 {
		t.Fatalf("Check allocates %.0f times per valid value; want 0", n)
	}
}

// Whatever the bytes, Check does not panic, and what it accepts msgpack's
// decoder reads to the end without running out of bytes.
func FuzzCheck(f *testing.F) {
	f.Add(marshal(f, outer{Name: "n", Inner: inner{Tags: []string{"a"}}, Counts: map[int]float64{1: 2}}))
	f.Add(header("array32", 0xffffffff))
	f.Add(ext(0xc8, 1, []byte{1, 2, 3}))
	f.Add(nest(mpack.MaxDepth, true, []byte{0xc0}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if mpack.Check(b) != nil {
			return
		}
		r := bytes.NewReader(b)
		if err := msgpack.NewDecoder(r).Skip(); err != nil {
			t.Fatalf("Check accepted % x, msgpack's Skip fails: %v", b, err)
		}
		if r.Len() != 0 {
			t.Fatalf("Check accepted % x as one value, msgpack's decoder leaves %d bytes", b, r.Len())
		}
	})
}

func BenchmarkCheck(b *testing.B) {
	for _, bc := range []struct {
		name string
		v    any
	}{
		{"small struct", struct {
			Text string
			N    int
		}{"hello", 42}},
		{"struct with 100 strings", inner{Tags: strings.Split(strings.Repeat("tag,", 100), ",")}},
		{"64KiB bin", bytes.Repeat([]byte{1}, 64<<10)},
		{"10k ints", make([]int, 10000)},
	} {
		buf := marshal(b, bc.v)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				if err := mpack.Check(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	env := append(mpack.Bytes(mpack.String(mpack.MapHeader(nil, 2), "a"), marshal(b, "args")), mpack.Int(mpack.String(nil, "t"), 30000)...)
	b.Run("envelope", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := mpack.Check(env); err != nil {
				b.Fatal(err)
			}
		}
	})
}
