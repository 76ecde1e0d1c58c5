package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzEndpoints sends every endpoint of the table arbitrary path values,
// query values (under the names the endpoint takes, and raw) and bodies:
// whatever arrives, the answer is not a 5xx, the server does not panic, and
// an answer other than success is the JSON error shape.
func FuzzEndpoints(f *testing.F) {
	awkward := []string{"", "\x00", "a\x00b", "\xff", "\xc3", "\x80", "caf\xc3\xa9", "%", "%00", "..", "/", "a/b", " ",
		"99999999999999999999999", "-1", "0", "-9223372036854775808", "1e400", "NaN", "-0", "5m", "-5m", "9999999h",
		"2026-11-26T22:00:00Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999+14:00", "null", "true",
		strings.Repeat("x", 4096), "\u2400", "\ufffd", "\xed\xa0\x80"} // the last: a surrogate in UTF-8, which is not valid
	bodies := []string{"", "{}", "null", "[]", `{"name":"t","args":{"s":"\u0000"}}`, "{\"name\":\"t\xff\"}", `{"shards":1e400}`,
		`{"shards":-1}`, `{"max_running":99999999999999999999}`, `{"rate":"-1/s"}`, `{"jobs":[{"name":"t","delay":"-1s"}]}`,
		`{"steps":[{"id":"\u0000","name":"t"}]}`, `{"name":"t","priority":"\u0000","route":"\xff","delay":"9999999999h"}`, "{\"a\":" + strings.Repeat("[", 10000)}
	for i := range endpoints {
		for j, v := range awkward {
			f.Add(uint8(i), v, uint8(j), v, "", bodies[j%len(bodies)])
		}
		f.Add(uint8(i), "j1", uint8(0), "", "limit=-5&limit=0&cursor=%ff&args.%00=%00", "{}")
	}
	f.Fuzz(func(t *testing.T, which uint8, pathValue string, param uint8, value, rawQuery, body string) {
		e := endpoints[int(which)%len(endpoints)]
		path := e.Path
		for _, p := range e.PathParams {
			path = strings.Replace(path, "{"+p.Name+"}", url.PathEscape(pathValue), 1)
		}
		q := url.Values{}
		if len(e.Query) > 0 {
			p := e.Query[int(param)%len(e.Query)]
			name := p.Name
			if p.Prefix {
				name += pathValue
			}
			q.Set(name, value)
		}
		target := path + "?" + q.Encode()
		if rawQuery != "" {
			target += "&" + rawQuery
		}
		r, err := http.NewRequest(e.Method, "http://127.0.0.1"+target, strings.NewReader(body))
		if err != nil {
			return // not a request a client can send
		}
		r.Host = "127.0.0.1"
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		w := httptest.NewRecorder()
		New(&fakeAdmin{}, Config{MaxBody: 1 << 16}).ServeHTTP(w, r)
		if w.Code >= 500 && !(e.Public && w.Code == http.StatusServiceUnavailable) {
			t.Fatalf("%s %q with body %q: %d %s", e.Method, target, body, w.Code, w.Body)
		}
		if w.Code >= 400 {
			var answer errorBody
			d := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
			if err := d.Decode(&answer); err != nil || answer.Error == "" {
				t.Fatalf("%s %q: %d with no JSON error: %q", e.Method, target, w.Code, w.Body)
			}
		}
	})
}
