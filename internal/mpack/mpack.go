// Package mpack writes and reads the msgpack maps Bananas handles on its hot
// paths (the job envelope at every enqueue and fetch, the result record at
// every ack and Await) by hand, where msgpack's reflection cost more than the
// rest of the call: append helpers for the few forms written, and ReadMap for
// reading. The output is standard msgpack that msgpack.Unmarshal reads.
//
// Reading is bounded: Unmarshal and ReadMap run Check over their bytes before
// msgpack decodes them, so a header that claims more than the bytes present
// (a corrupt or hostile job read from Redis) is an error naming where it is,
// not an allocation of what it claims.
package mpack

import "encoding/binary"

// MapHeader appends the header of a map of n entries.
func MapHeader(b []byte, n int) []byte { return header(b, n, 0x80, 0xde) }

// ArrayHeader appends the header of an array of n items.
func ArrayHeader(b []byte, n int) []byte { return header(b, n, 0x90, 0xdc) }

// header appends a map's or an array's header: fix|n below 16, else the
// 16-bit form's code (its 32-bit form's is the next) and n.
func header(b []byte, n int, fix, code16 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, code16), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(b, code16+1), uint32(n))
	}
}

// String appends s as a msgpack str.
func String(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n <= 0xff:
		b = append(b, 0xd9, byte(n))
	case n <= 0xffff:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

// Bytes appends p as a msgpack bin, or nil for a nil slice (as Marshal does).
func Bytes(b []byte, p []byte) []byte {
	if p == nil {
		return append(b, 0xc0)
	}
	return append(withLength(b, len(p), 0xc4), p...)
}

// withLength appends the head of a value of n bytes in the smallest of the three
// forms that follow one another from first (bin 8/16/32 from 0xc4, ext
// 8/16/32 from 0xc7): the byte, then n in 1, 2 or 4 bytes.
func withLength(b []byte, n int, first byte) []byte {
	switch {
	case n <= 0xff:
		return append(b, first, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, first+1), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(b, first+2), uint32(n))
	}
}

// Bool appends v.
func Bool(b []byte, v bool) []byte {
	if v {
		return append(b, 0xc3)
	}
	return append(b, 0xc2)
}

// Int appends v in its smallest msgpack integer form.
func Int(b []byte, v int64) []byte {
	switch {
	case v >= 0 && v <= 0x7f:
		return append(b, byte(v))
	case v < 0 && v >= -32:
		return append(b, byte(v))
	case v >= 0 && v <= 0xff:
		return append(b, 0xcc, byte(v))
	case v >= 0 && v <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(v))
	case v >= 0 && v <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(v))
	case v >= 0:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(v))
	case v >= -0x80:
		return append(b, 0xd0, byte(v))
	case v >= -0x8000:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(v))
	case v >= -0x80000000:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(v))
	default:
		return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(v))
	}
}
