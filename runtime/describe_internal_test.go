package runtime

import (
	"fmt"
	"strings"
	"testing"
)

// jsonNode is an args type that nests: each level is an object and a list.
type jsonNode struct{ K []jsonNode }

// nestedJSON is a jsonNode levels deep.
func nestedJSON(levels int) []byte {
	return []byte(strings.Repeat(`{"K":[`, levels) + `{}` + strings.Repeat(`]}`, levels))
}

// Strict decoding reads its input a fixed number of times whatever its
// nesting: the bytes handed to a JSON parser stay within twice the input, so
// a body nested thousands deep costs what a flat one of its size costs; and
// nesting past what msgpack carries is refused, naming where.
func TestDecodeStrictJSON_WorkIsLinearInTheInputAtAnyNesting(t *testing.T) {
	t.Parallel()
	for _, levels := range []int{1, 10, 30, 60} { // 60 levels: 120 containers, within the cap
		data := nestedJSON(levels)
		var n jsonNode
		parsed, err := decodeStrictJSON(data, &n)
		if err != nil {
			t.Fatalf("%d levels: %v", levels, err)
		}
		if parsed > 2*len(data) {
			t.Errorf("%d levels (%d bytes): %d bytes parsed; want at most twice the input", levels, len(data), parsed)
		}
	}
	data := nestedJSON(5000) // about 40 KB
	var n jsonNode
	parsed, err := decodeStrictJSON(data, &n)
	want := fmt.Sprintf(`field "K[0].K[0].K[0]….K[0].K[0].K[0]": nested deeper than %d levels`, MaxJSONDepth)
	if err == nil || err.Error() != want {
		t.Errorf("5,000 levels: %v; want %s", err, want)
	}
	if parsed > len(data) {
		t.Errorf("5,000 levels (%d bytes): %d bytes parsed before the refusal; want at most the input once", len(data), parsed)
	}
}

// BenchmarkDecodeStrictJSON_Nested decodes args nested 10, 100 and 1,000
// levels deep: 10 decode; 100 and 1,000 (past 64 levels, 128 containers)
// are refused at the first container too deep, after one scan of the bytes
// before it, so their cost does not grow with their depth.
func BenchmarkDecodeStrictJSON_Nested(b *testing.B) {
	for _, levels := range []int{10, 100, 1000} {
		data := nestedJSON(levels)
		b.Run(fmt.Sprintf("depth=%d", levels), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				var n jsonNode
				_ = DecodeStrictJSON(data, &n)
			}
		})
	}
}
