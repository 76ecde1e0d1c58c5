package runtime_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
)

type thumbArgs struct {
	URL    string
	Width  int `json:"width"`
	Skip   int `json:"-"`
	Crop   *cropBox
	Tags   []tag
	At     time.Time
	Labels map[string]tag
}

type cropBox struct{ X, Y int }

type tag struct {
	Name string `json:"name"`
}

// JSON args (CLI enqueue, the HTTP API) decode exactly: keys as the fields'
// JSON names are written (tags honoured), at any depth; empty input and null
// are refused for a task with args; each error names the field.
func TestDecodeStrictJSON_KeysMatchExactlyAndEmptyIsRefused(t *testing.T) {
	t.Parallel()
	good := `{"URL":"u","width":2,"Crop":{"X":1},"Tags":[{"name":"a"}],"At":"2026-01-02T03:04:05Z","Labels":{"k":{"name":"b"}}}`
	var a thumbArgs
	if err := runtime.DecodeStrictJSON([]byte(good), &a); err != nil || a.URL != "u" || a.Width != 2 || a.Crop.X != 1 || a.Tags[0].Name != "a" || a.Labels["k"].Name != "b" {
		t.Fatalf("exact keys: %+v, %v", a, err)
	}
	for _, c := range []struct{ in, want string }{
		{``, "no args given"},
		{`  `, "no args given"},
		{`null`, "args are null"},
		{`{"url":"u"}`, `unknown field "url": JSON keys match exactly; did you mean "URL"?`},
		{`{"Width":2}`, `unknown field "Width": JSON keys match exactly; did you mean "width"?`},
		{`{"Skip":1}`, `unknown field "Skip"`},
		{`{"Crop":{"x":1}}`, `unknown field "x" in Crop: JSON keys match exactly; did you mean "X"?`},
		{`{"Tags":[{"name":"a"},{"Name":"b"}]}`, `unknown field "Name" in Tags[1]`},
		{`{"Labels":{"k":{"NAME":"b"}}}`, `unknown field "NAME" in Labels["k"]`},
		{`{"width":"wide"}`, `field "width": want int, got JSON string`},
		{`{"Tags":[{"name":"a"},{"name":"b"},{"name":7}]}`, `field "Tags[2].name": want string, got JSON number 7`},
		{`{"Labels":{"k":{"name":false}}}`, `field "Labels[\"k\"].name": want string, got JSON bool`},
		{`{"Crop":{"X":1.5}}`, `field "Crop.X": want int, got JSON number 1.5`},
		{`{"At":"tomorrow"}`, `field "At": want an RFC 3339 time such as "2026-01-02T15:04:05Z", got "tomorrow"`},
		{`{"At":7}`, `field "At": want an RFC 3339 time such as "2026-01-02T15:04:05Z", got 7`},
		{`[1]`, `want runtime_test.thumbArgs, got JSON array`},
	} {
		var a thumbArgs
		err := runtime.DecodeStrictJSON([]byte(c.in), &a)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DecodeStrictJSON(%q) = %v; want an error with %q", c.in, err, c.want)
		}
	}
	var none runtime.None
	for _, in := range []string{``, `null`, `{}`} {
		if err := runtime.DecodeStrictJSON([]byte(in), &none); err != nil {
			t.Errorf("a task without args, %q: %v", in, err)
		}
	}
}
