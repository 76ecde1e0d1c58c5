package strictjson_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/runtime/internal/strictjson"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// fuzzArgs has a field of every shape bananagen accepts in args.
type fuzzArgs struct {
	Name   string
	Count  int64
	Ratio  float64
	On     bool
	Tags   []string
	Grid   [2]int
	Counts map[string]int
	Inner  struct{ Vals []uint8 }
	Ptr    *testtasks.Msg
	Items  []testtasks.Msg
	Raw    []byte
}

// Whatever a submission carries as args, the generated decoders'
// strict decoder returns the args or an error naming what is wrong, never
// panics, and args it accepts encode to JSON that it accepts again as the
// same args.
func FuzzDecode_RefusesWithAReasonOrRoundTrips(f *testing.F) {
	for _, seed := range []string{
		`{"Text":"hello","N":3}`,
		`{"Name":"a","Count":-9007199254740993,"Ratio":1e308,"On":true,"Tags":["x"],"Grid":[1,2],"Counts":{"k":1},"Inner":{"Vals":[255]},"Ptr":{"Text":"p"},"Items":[{"N":1}],"Raw":"AQID"}`,
		`{"text":"case"}`, `{"Text":"a","Text":"b"}`, `{"Unknown":1}`, `{"N":1.5}`, `{"N":1e400}`,
		`{"Grid":[1,2,3]}`, `{"Inner":{"Vals":[256]}}`, `{"Raw":"!!"}`, `{} {}`, `null`, ``, `[`,
		`{"Items":[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]}`, "{\"Text\":\"\xff\"}",
	} {
		f.Add(seed)
	}
	check := func(t *testing.T, data string, fresh func() any) {
		v := fresh()
		if err := strictjson.Decode([]byte(data), v, false); err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatalf("%q refused with an empty error", data)
			}
			return
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%q accepted as %+v, which does not encode: %v", data, v, err)
		}
		v2 := fresh()
		if err := strictjson.Decode(again, v2, false); err != nil {
			t.Fatalf("%q accepted, but its re-encoding %s is refused: %v", data, again, err)
		}
		if !reflect.DeepEqual(v, v2) {
			t.Fatalf("%q: round trip through %s changed %+v into %+v", data, again, v, v2)
		}
	}
	f.Fuzz(func(t *testing.T, data string) {
		check(t, data, func() any { return new(testtasks.Msg) })
		check(t, data, func() any { return new(fuzzArgs) })
	})
}
