package strictjson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// jsonNode is an args type that nests: each level is an object and a list.
type jsonNode struct{ K []jsonNode }

// nestedJSON is a jsonNode levels deep.
func nestedJSON(levels int) []byte {
	return []byte(strings.Repeat(`{"K":[`, levels) + `{}` + strings.Repeat(`]}`, levels))
}

// Strict decoding takes args nested as deep as msgpack carries and refuses
// deeper ones, naming where; the scan that checks the keys of args that are
// right checks their depth too, so that a body nested thousands deep never
// reaches encoding/json.
func TestDecode_NestingPastTheCapIsRefusedNamingWhere(t *testing.T) {
	t.Parallel()
	for _, levels := range []int{1, 10, 30, 63} { // 63 levels: 127 containers, within the cap
		data := nestedJSON(levels)
		var n jsonNode
		if err := Decode(data, &n, false); err != nil {
			t.Fatalf("%d levels: %v", levels, err)
		}
	}
	typ := reflect.TypeFor[jsonNode]()
	if !exactKeysScan(nestedJSON(63), typ) || exactKeysScan(nestedJSON(64), typ) {
		t.Errorf("the key scan takes 127 containers = %v, 129 = %v; want true, false (MaxDepth %d)",
			exactKeysScan(nestedJSON(63), typ), exactKeysScan(nestedJSON(64), typ), MaxDepth)
	}
	data := nestedJSON(5000) // about 40 KB
	var n jsonNode
	err := Decode(data, &n, false)
	want := fmt.Sprintf(`field "K[0].K[0].K[0]….K[0].K[0].K[0]": nested deeper than %d levels`, MaxDepth)
	if err == nil || err.Error() != want {
		t.Errorf("5,000 levels: %v; want %s", err, want)
	}
}

// BenchmarkDecode_Nested decodes args nested 10, 100 and 1,000
// levels deep: 10 decode; 100 and 1,000 (past 64 levels, 128 containers)
// are refused at the first container too deep, after one scan of the bytes
// before it, so their cost does not grow with their depth.
func BenchmarkDecode_Nested(b *testing.B) {
	for _, levels := range []int{10, 100, 1000} {
		data := nestedJSON(levels)
		b.Run(fmt.Sprintf("depth=%d", levels), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				var n jsonNode
				_ = Decode(data, &n, false)
			}
		})
	}
}

type scanArgs struct {
	URL    string
	Width  int `json:"width"`
	Skip   int `json:"-"`
	Quoted int `json:"q,string"`
	Crop   *struct{ X, Y int }
	Tags   []struct {
		Name string `json:"name"`
	}
	At     time.Time
	Labels map[string]struct {
		Name string `json:"name"`
	}
	Any  any
	Raw  []byte
	Grid [2]int
}

// The scan that passes args that are right without the walk never passes
// what the walk refuses: on each input, the scan and encoding/json accept
// only what the walk accepts.
func TestDecode_TheKeyScanAcceptsNothingTheWalkRefuses(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"URL":"u","width":2,"q":"7","Crop":{"X":1},"Tags":[{"name":"a"}],"At":"2026-01-02T03:04:05Z","Labels":{"k":{"name":"b"}},"Any":{"x":[1,{"Y":2}]},"Raw":"AQID","Grid":[1,2,3]}`,
		`{"url":"u"}`, `{"Width":2}`, `{"Skip":1}`, `{"q":7}`, `{"q":"x"}`, `{"Crop":{"x":1}}`, `{"Crop":[1]}`,
		`{"Tags":[{"name":"a"},{"Name":"b"}]}`, `{"Labels":{"k":{"NAME":"b"}}}`, `{"Labels":{"k\"":{"name":"b"}}}`,
		`{"U\u0052L":"u"}`, `{"URL":"a\"b"}`, `{"At":"tomorrow"}`, `{"Raw":"!!"}`, `{"Grid":{"a":1}}`, `{"width":1.5}`,
		`{"URL":"u"} {}`, `{"URL":"u",}`, `{"URL" "u"}`, `[1]`, `"x"`, `{"Any":{"URL":1}}`, ` {"URL" : "u" } `,
	} {
		typ := reflect.TypeFor[*scanArgs]()
		fast := exactKeysScan([]byte(in), typ) && json.Unmarshal([]byte(in), new(scanArgs)) == nil
		var tree any
		dec := json.NewDecoder(strings.NewReader(in))
		dec.UseNumber()
		walked := dec.Decode(&tree) == nil && !dec.More()
		if walked {
			walked = (&strictWalk{}).value(tree, typ) == nil && json.Unmarshal([]byte(in), new(scanArgs)) == nil
		}
		if fast && !walked {
			t.Errorf("%s: the scan and encoding/json accept it, the walk refuses it", in)
		}
	}
}
