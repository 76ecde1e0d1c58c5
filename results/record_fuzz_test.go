package results_test

import (
	"bytes"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/bananas-go/bananas/internal/mpack"
	"github.com/bananas-go/bananas/results"
)

// hostileRecords are result records a corrupt key or a foreign publisher may
// hold: lengths claiming gigabytes, and nesting far past mpack.MaxDepth.
func hostileRecords() map[string][]byte {
	field := func(key string, tail ...byte) []byte {
		return append(mpack.String(mpack.MapHeader(nil, 1), key), tail...)
	}
	return map[string][]byte{
		"map32 of 2^32-1 entries":      {0xdf, 0xff, 0xff, 0xff, 0xff, 1, 2, 3},
		"value bin32 of 4 GiB":         field("v", 0xc6, 0xff, 0xff, 0xff, 0xff, 1, 2, 3),
		"failed-at array32 of 2^31":    field("fa", 0xdd, 0x80, 0, 0, 0, 1),
		"unknown field nested 10,000":  field("z", append(bytes.Repeat([]byte{0x91}, 10000), 0xc0)...),
		"error str32 of 4 GiB":         field("e", 0xdb, 0xff, 0xff, 0xff, 0xff, 'x'),
		"arrays nested 10,000 deep":    append(bytes.Repeat([]byte{0x91}, 10000), 0xc0),
		"a record cut in the middle":   mustEncode(results.Record{ID: "j", OK: true, Value: []byte{1, 2, 3}})[:5],
		"failed-at of a string":        field("fa", 0x91, 0xa1, 'x'),
		"id of an integer":             field("id", 0x05),
		"a map key that is no string":  {0x81, 0x01, 0x02},
		"two records back to back":     append(mustEncode(results.Record{ID: "a"}), mustEncode(results.Record{ID: "b"})...),
		"an empty record":              {},
		"an array where a map belongs": {0x90},
	}
}

func mustEncode(r results.Record) []byte {
	b, err := results.Encode(r)
	if err != nil {
		panic(err)
	}
	return b
}

// Decoding a hostile record fails with an error and allocates a few KiB,
// not what the bytes claim.
func TestRecord_HostileBytesAreRefusedWithinAFewMiB(t *testing.T) {
	for name, b := range hostileRecords() {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := results.Decode(b)
			runtime.ReadMemStats(&after)
			if err == nil || err.Error() == "" {
				t.Fatalf("Decode(% x) = %v; want an error saying what is wrong", b[:min(len(b), 16)], err)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
				t.Fatalf("decoding %d bytes allocated %d KiB (error %v)", len(b), grew>>10, err)
			}
		})
	}
}

// Whatever bytes a result key or a pub/sub message holds, Decode returns a
// record or an error, never panics, and a record it returns encodes to
// bytes that decode to the same record.
func FuzzRecord_DecodeNeverPanicsAndReencodesWhatItAccepts(f *testing.F) {
	f.Add(mustEncode(results.Record{ID: "01J.default", OK: true, Value: []byte{0xa2, 'o', 'k'}, FinishedAt: 1700000000000, Name: "t", Priority: "high", Args: []byte{0x80}, MaxRetries: 3, FailedAt: []int64{1, 2}}))
	f.Add(mustEncode(results.Record{ID: "x", Error: "boom", Attempts: 4, Canceled: true}))
	for _, b := range hostileRecords() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := results.Decode(b)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		again, err := results.Encode(r)
		if err != nil {
			t.Fatalf("Encode of a decoded record: %v", err)
		}
		r2, err := results.Decode(again)
		if err != nil {
			t.Fatalf("a record decoded from % x re-encodes to % x, which does not decode: %v", b, again, err)
		}
		if !bytes.Equal(r.Value, r2.Value) || !bytes.Equal(r.Args, r2.Args) || !slices.Equal(r.FailedAt, r2.FailedAt) {
			t.Fatalf("round trip changed the record's bytes: %+v → %+v", r, r2)
		}
		r.Value, r.Args, r.FailedAt, r2.Value, r2.Args, r2.FailedAt = nil, nil, nil, nil, nil, nil
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip changed the record: %+v → %+v", r, r2)
		}
	})
}
