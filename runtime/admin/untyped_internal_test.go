package admin

import (
	"math"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// untypedJSON writes what JSON cannot hold in a way it can, and refuses
// bytes that are not one whole msgpack value.
func TestUntypedJSON_WritesEveryValueJSONCanHoldAndRefusesGarbage(t *testing.T) {
	b, err := msgpack.Marshal(map[any]any{"nan": math.NaN(), "inf": float32(math.Inf(-1)), 1: []any{map[bool]int{true: 2}, []byte("hi"), nil}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := untypedJSON(b)
	if want := `{"1":[{"true":2},"aGk=",null],"inf":"-Inf","nan":"NaN"}`; err != nil || string(got) != want {
		t.Fatalf("untypedJSON = %s, %v; want %s", got, err, want)
	}
	for _, bad := range [][]byte{nil, {0xc1}, {0x92, 0x01}, {0xdd, 0xff, 0xff, 0xff, 0xff}} {
		if got, err := untypedJSON(bad); err == nil {
			t.Fatalf("untypedJSON(% x) = %s; want an error", bad, got)
		}
	}
}
