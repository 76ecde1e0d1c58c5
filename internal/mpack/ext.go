package mpack

import "encoding/binary"

// Ext appends data as a msgpack ext value of type typ, in the smallest of
// the ext8, ext16 and ext32 forms (never a fixext: one form per size keeps
// reading simple).
func Ext(b []byte, typ int8, data []byte) []byte {
	return append(append(withLength(b, len(data), 0xc7), byte(typ)), data...)
}

// ReadExt reads b as exactly one ext value of any form: its type and its
// data (a slice of b); ok is false for anything else, a value with bytes
// after it included.
func ReadExt(b []byte) (typ int8, data []byte, ok bool) {
	if len(b) < 2 {
		return 0, nil, false
	}
	var n, head int
	switch c := b[0]; {
	case c >= 0xd4 && c <= 0xd8: // fixext 1, 2, 4, 8, 16
		n, head = 1<<(c-0xd4), 2
	case c == 0xc7:
		n, head = int(b[1]), 3
	case c == 0xc8 && len(b) >= 4:
		n, head = int(binary.BigEndian.Uint16(b[1:])), 4
	case c == 0xc9 && len(b) >= 6:
		n, head = int(binary.BigEndian.Uint32(b[1:])), 6
	default:
		return 0, nil, false
	}
	if len(b) < head || len(b)-head != n {
		return 0, nil, false
	}
	return int8(b[head-1]), b[head:], true
}

// ArrayOf reads the header of the array at the start of b: its element
// count and the offset of its first element; ok is false when b does not
// start with an array header (or the header is cut).
func ArrayOf(b []byte) (n, first int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch c := b[0]; {
	case c >= 0x90 && c <= 0x9f:
		return int(c & 0x0f), 1, true
	case c == 0xdc && len(b) >= 3:
		return int(binary.BigEndian.Uint16(b[1:])), 3, true
	case c == 0xdd && len(b) >= 5:
		return int(binary.BigEndian.Uint32(b[1:])), 5, true
	}
	return 0, 0, false
}

// Next is the offset just past the well-formed value at b[i:], checked as
// Check checks a whole value (every length within b, nesting at most
// MaxDepth below it).
func Next(b []byte, i int) (int, error) {
	end, err := check(b, i, 0)
	if err != nil {
		return end, err.finish()
	}
	return end, nil
}
