package mpack

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// MaxDepth caps how deeply arrays and maps may nest in the bytes Check
// accepts. Decoding recurses once per level — msgpack's decoder into a
// recursive type, and Skip over a field the reader does not know — so without
// a cap the goroutine stack grows with the input: a payload of n 0x91 bytes
// is n levels, and a stack past Go's 1 GB limit is a fatal error that no
// recover catches. 128 is far deeper than any struct nesting written by hand;
// a recursive type (a tree, a list) that runs deeper should travel as a slice.
const MaxDepth = 128

// BoundsError is Check's refusal of a value: what is wrong and where.
type BoundsError struct {
	// Path leads from the top value to the offending one through map keys
	// and array indexes, as Go would write the selector (Inner.Tags[3],
	// Counts[7]); "" when the offending value is the top one.
	Path   string
	Offset int    // byte offset of the offending value or header in the checked bytes
	Reason string // e.g. "array32 header claims 4294967295 elements, only 3 bytes left"

	rev []string // path segments collected on the way out of the walk, innermost first
}

func (e *BoundsError) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return fmt.Sprintf("field %q: %s", e.Path, e.Reason)
}

// pathSegmentsShown bounds the segments Path spells out: a value refused for
// nesting too deep sits MaxDepth levels down, and its path is shown with its
// first and last segments around an ellipsis.
const pathSegmentsShown = 12

func (e *BoundsError) finish() *BoundsError {
	segs := make([]string, 0, len(e.rev))
	for i := len(e.rev) - 1; i >= 0; i-- {
		segs = append(segs, e.rev[i])
	}
	if len(segs) > pathSegmentsShown {
		keep := pathSegmentsShown / 2
		segs = append(append(segs[:keep:keep], "…"), segs[len(segs)-keep:]...)
	}
	e.Path = strings.TrimPrefix(strings.Join(segs, ""), ".")
	e.rev = nil
	return e
}

// Check reports whether b holds exactly one well-formed msgpack value whose
// every declared length fits in b, with containers nested at most MaxDepth
// deep. It runs before every decode of bytes read from Redis or the network:
// msgpack's decoder trusts the headers it reads and allocates what they
// declare before reading a byte of it (a []T whose array32 header claims 2^32
// elements makes tens of GiB, and a failed allocation that size kills the
// process), so a header must be refused before the decoder sees it.
//
// "Fits" is measured against the bytes from just past the header to the end
// of b: a str, bin or ext of n bytes needs n of them (ext one more, for its
// type); an array of n elements needs at least n, a map of n entries at
// least 2n, every value taking at least a byte. The walk then visits every
// element, so a container whose count fits b but not its own extent is
// refused at the value that runs past the end. Bytes after the value are an
// error: every writer of these bytes writes exactly one value, so anything
// after it is corruption, not data to ignore.
//
// What the decoder allocates for bytes that pass is then bounded by b itself:
// a slice gets at most len(b) elements (each present as at least a byte),
// times the Go size of its element type.
//
// Check allocates nothing for a valid value, and only its error otherwise.
func Check(b []byte) error {
	end, err := check(b, 0, 0)
	if err != nil {
		return err.finish()
	}
	if end != len(b) {
		return &BoundsError{Offset: end, Reason: fmt.Sprintf("%d trailing bytes after the value", len(b)-end)}
	}
	return nil
}

func fail(at int, format string, args ...any) *BoundsError {
	return &BoundsError{Offset: at, Reason: fmt.Sprintf(format, args...)}
}

// check walks the value at b[i:], depth containers down, and returns the
// offset just past it.
func check(b []byte, i, depth int) (int, *BoundsError) {
	if i >= len(b) {
		return i, fail(i, "value missing: the bytes end at %d", len(b))
	}
	c := b[i]
	switch {
	case c <= 0x7f || c >= 0xe0: // positive and negative fixint
		return i + 1, nil
	case c <= 0x8f:
		return checkMap(b, i, i+1, uint64(c&0x0f), depth, "fixmap")
	case c <= 0x9f:
		return checkArray(b, i, i+1, uint64(c&0x0f), depth, "fixarray")
	case c <= 0xbf:
		return checkBytes(b, i, i+1, uint64(c&0x1f), 0, "fixstr")
	}
	switch c {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return i + 1, nil
	case 0xdc, 0xdd:
		n, j, err := length(b, i, 2<<(c-0xdc), kinds[c])
		if err != nil {
			return j, err
		}
		return checkArray(b, i, j, n, depth, kinds[c])
	case 0xde, 0xdf:
		n, j, err := length(b, i, 2<<(c-0xde), kinds[c])
		if err != nil {
			return j, err
		}
		return checkMap(b, i, j, n, depth, kinds[c])
	}
	s := &scalars[c]
	switch {
	case s.header > 0:
		return sized(b, i, s.header, s.extra, s.kind)
	case s.n > 0:
		return fixed(b, i, s.n, s.kind)
	}
	return i, fail(i, "invalid msgpack code 0x%02x", c)
}

// scalar is how check measures a value whose code is neither a fix type,
// nil, a bool nor a container header: a fixed-size one takes n bytes after
// its code; a sized one has a length of header bytes after its code, then
// that many bytes and extra more (an ext's type). kind names it in errors.
type scalar struct {
	kind          string
	n             int
	header, extra int
}

// scalars holds the scalar of every such code; the codes it leaves zero are
// no msgpack code at all.
var scalars = [256]scalar{
	0xc4: {kind: "bin8", header: 1},
	0xc5: {kind: "bin16", header: 2},
	0xc6: {kind: "bin32", header: 4},
	0xc7: {kind: "ext8", header: 1, extra: 1},
	0xc8: {kind: "ext16", header: 2, extra: 1},
	0xc9: {kind: "ext32", header: 4, extra: 1},
	0xca: {kind: "float32", n: 4},
	0xcb: {kind: "float64", n: 8},
	0xcc: {kind: "uint8", n: 1},
	0xcd: {kind: "uint16", n: 2},
	0xce: {kind: "uint32", n: 4},
	0xcf: {kind: "uint64", n: 8},
	0xd0: {kind: "int8", n: 1},
	0xd1: {kind: "int16", n: 2},
	0xd2: {kind: "int32", n: 4},
	0xd3: {kind: "int64", n: 8},
	0xd4: {kind: "fixext1", n: 2}, // type byte and data
	0xd5: {kind: "fixext2", n: 3},
	0xd6: {kind: "fixext4", n: 5},
	0xd7: {kind: "fixext8", n: 9},
	0xd8: {kind: "fixext16", n: 17},
	0xd9: {kind: "str8", header: 1},
	0xda: {kind: "str16", header: 2},
	0xdb: {kind: "str32", header: 4},
}

var kinds = [256]string{0xdc: "array16", 0xdd: "array32", 0xde: "map16", 0xdf: "map32"}

// fixed checks the n bytes a fixed-size value needs after its code.
func fixed(b []byte, i, n int, kind string) (int, *BoundsError) {
	if left := len(b) - i - 1; left < n {
		return i, fail(i, "%s cut short: needs %d bytes, only %d left", kind, n, left)
	}
	return i + 1 + n, nil
}

// length reads the size big-endian bytes of a header's length at b[i+1:].
func length(b []byte, i, size int, kind string) (n uint64, next int, err *BoundsError) {
	j := i + 1
	if left := len(b) - j; left < size {
		return 0, i, fail(i, "%s header cut short: needs %d length bytes, only %d left", kind, size, left)
	}
	return uintAt(b, j, size), j + size, nil
}

// uintAt reads the big-endian unsigned integer of size bytes (1, 2, 4 or 8)
// at b[j:].
func uintAt(b []byte, j, size int) uint64 {
	switch size {
	case 1:
		return uint64(b[j])
	case 2:
		return uint64(binary.BigEndian.Uint16(b[j:]))
	case 4:
		return uint64(binary.BigEndian.Uint32(b[j:]))
	default:
		return binary.BigEndian.Uint64(b[j:])
	}
}

// sized checks a str, bin or ext whose length takes size bytes; extra is the
// ext's type byte.
func sized(b []byte, i, size, extra int, kind string) (int, *BoundsError) {
	n, j, err := length(b, i, size, kind)
	if err != nil {
		return j, err
	}
	return checkBytes(b, i, j, n, extra, kind)
}

// checkBytes checks that the n bytes of data (after extra header bytes) of
// the value at i fit in b[j:].
func checkBytes(b []byte, i, j int, n uint64, extra int, kind string) (int, *BoundsError) {
	left := len(b) - j - extra
	if left < 0 {
		return i, fail(i, "%s header cut short: no type byte", kind)
	}
	if n > uint64(left) {
		return i, fail(i, "%s header claims %d bytes, only %d left", kind, n, left)
	}
	return j + extra + int(n), nil
}

func tooDeep(i int) *BoundsError {
	return fail(i, "nested deeper than %d levels", MaxDepth)
}

// checkArray checks the n elements of the array at i, whose first is at j.
func checkArray(b []byte, i, j int, n uint64, depth int, kind string) (int, *BoundsError) {
	if depth >= MaxDepth {
		return i, tooDeep(i)
	}
	if left := len(b) - j; n > uint64(left) {
		return i, fail(i, "%s header claims %d elements, only %d bytes left", kind, n, left)
	}
	for k := range int(n) {
		var err *BoundsError
		if j, err = check(b, j, depth+1); err != nil {
			err.rev = append(err.rev, "["+strconv.Itoa(k)+"]")
			return j, err
		}
	}
	return j, nil
}

// checkMap checks the n entries of the map at i, whose first key is at j.
func checkMap(b []byte, i, j int, n uint64, depth int, kind string) (int, *BoundsError) {
	if depth >= MaxDepth {
		return i, tooDeep(i)
	}
	if left := len(b) - j; n > uint64(left)/2 {
		return i, fail(i, "%s header claims %d entries, only %d bytes left (an entry takes at least 2)", kind, n, left)
	}
	for k := range int(n) {
		key := j
		var err *BoundsError
		if j, err = check(b, j, depth+1); err != nil {
			err.rev = append(err.rev, "[key "+strconv.Itoa(k)+"]")
			return j, err
		}
		if j, err = check(b, j, depth+1); err != nil {
			err.rev = append(err.rev, keySegment(b, key, k))
			return j, err
		}
	}
	return j, nil
}

// keySegment renders the (checked) key at b[i:], the k-th of its map, as a
// path segment: .Name for a string, [7] for an integer or a bool, and the
// entry's index otherwise.
func keySegment(b []byte, i, k int) string {
	c := b[i]
	var s []byte
	switch {
	case c >= 0xa0 && c <= 0xbf:
		s = b[i+1 : i+1+int(c&0x1f)]
	case c == 0xd9 || c == 0xda || c == 0xdb:
		size := 1 << (c - 0xd9)
		s = b[i+1+size : i+1+size+int(uintAt(b, i+1, size))]
	case c <= 0x7f:
		return "[" + strconv.Itoa(int(c)) + "]"
	case c >= 0xe0:
		return "[" + strconv.Itoa(int(int8(c))) + "]"
	case c >= 0xcc && c <= 0xcf:
		return "[" + strconv.FormatUint(uintAt(b, i+1, 1<<(c-0xcc)), 10) + "]"
	case c >= 0xd0 && c <= 0xd3:
		size := 1 << (c - 0xd0)
		shift := 64 - 8*size // sign-extend from size bytes
		v := int64(uintAt(b, i+1, size)<<shift) >> shift
		return "[" + strconv.FormatInt(v, 10) + "]"
	case c == 0xc2 || c == 0xc3:
		return "[" + strconv.FormatBool(c == 0xc3) + "]"
	default:
		return "[entry " + strconv.Itoa(k) + "]"
	}
	return "." + string(s)
}
