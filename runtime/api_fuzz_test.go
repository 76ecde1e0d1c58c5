package runtime_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/api"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

var fuzzAPI struct {
	once sync.Once
	h    http.Handler
	err  error
}

// fuzzHandler is the API of an embedded server with the test tasks and a
// task history, made once per fuzzing process.
func fuzzHandler(t *testing.T) http.Handler {
	fuzzAPI.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := runtime.Connect(ctx, "mem://", runtime.WithNamespace("fuzz"), runtime.WithHistory(newSearchStore()))
		if err != nil {
			fuzzAPI.err = err
			return
		}
		fuzzAPI.h = runtime.APIHandler(runtime.NewInspector(c, testtasks.Register), runtime.APIOptions{})
	})
	if fuzzAPI.err != nil {
		t.Fatal(fuzzAPI.err)
	}
	return fuzzAPI.h
}

// FuzzAPI_NoServerErrorOnAnEmbeddedServer sends every endpoint of the
// API's table, served by the real admin layer over an embedded server,
// arbitrary path values, query values and bodies: the answer is never a
// 5xx (the probes' 503 apart), and the server never panics.
func FuzzAPI_NoServerErrorOnAnEmbeddedServer(f *testing.F) {
	endpoints := api.Endpoints()
	awkward := []string{"", "\x00", "a\x00b", "\xff", "\xc3", "\x80", "%00", "..", "a/b", "99999999999999999999999", "-1", "0",
		"-9223372036854775808", "1e400", "5m", "-5m", "2026-11-26T22:00:00Z", "0000-01-01T00:00:00Z", "null", "t_echo", "default", "failed",
		strings.Repeat("x", 2048)}
	bodies := []string{"", "{}", "null", `{"name":"t_echo","args":{"Text":"\u0000"}}`, "{\"name\":\"t_echo\xff\"}", `{"shards":1e400}`,
		`{"max_running":99999999999999999999}`, `{"rate":"-1/s"}`, `{"jobs":[{"name":"t_echo","delay":"-1s"}]}`,
		`{"name":"t_echo","priority":"\u0000","route":"\xff","delay":"9999999999h"}`, `{"steps":[{"id":"\u0000","name":"t_echo"}]}`}
	for i := range endpoints {
		for j, v := range awkward {
			f.Add(uint8(i), v, uint8(j), v, bodies[j%len(bodies)])
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, pathValue string, param uint8, value, body string) {
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
			if p.Name == "wait" {
				return // a long wait is the caller's to choose, and only waits
			}
			q.Set(name, value)
		}
		// The client gives up after a while, as a client does (a wait for a
		// result, a search that takes long): its answer is then not read.
		ctx, cancel := context.WithCancel(context.Background())
		stop := time.AfterFunc(5*time.Second, cancel)
		defer stop.Stop()
		r, err := http.NewRequestWithContext(ctx, e.Method, "http://127.0.0.1"+path+"?"+q.Encode(), strings.NewReader(body))
		if err != nil {
			return
		}
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		w := httptest.NewRecorder()
		fuzzHandler(t).ServeHTTP(w, r)
		if ctx.Err() == nil && w.Code >= 500 && !(e.Public && w.Code == http.StatusServiceUnavailable) {
			t.Fatalf("%s %s with body %q: %d %s", e.Method, r.URL, body, w.Code, w.Body)
		}
	})
}
