package runtime_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// The API's submission takes a unique key's options: a second submission
// of the same fields is a 409 naming the holder, a debounced one a 200
// with the waiting job's id, and a bad value a 400 naming the field.
func TestAPI_SubmissionTakesUniqueOptions(t *testing.T) {
	onEveryServer(t, func(t *testing.T, c *runtime.Client) {
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		testtasks.Register(w)
		a := serveAPI(t, w.Inspector(), runtime.APIOptions{})
		body := `{"name":"t_echo","args":{"Text":"%s"},"delay":"1h","unique":"1h","unique_by":"Text","unique_until":"completed"}`
		first, _ := a.want(http.StatusCreated, "POST", "/api/v1/jobs", strings.Replace(body, "%s", "a", 1))["id"].(string)
		got := a.want(http.StatusConflict, "POST", "/api/v1/jobs", strings.Replace(body, "%s", "a", 1))
		if msg, _ := got["error"].(string); !strings.Contains(msg, first) {
			t.Fatalf("duplicate: %v; want a 409 naming %s", got, first)
		}
		deb := `{"name":"t_echo","args":{"Text":"%s"},"unique":"1h","unique_by":"Text","debounce":"1h"}`
		d1, _ := a.want(http.StatusCreated, "POST", "/api/v1/jobs", strings.Replace(deb, "%s", "d", 1))["id"].(string)
		got = a.want(http.StatusOK, "POST", "/api/v1/jobs", strings.Replace(deb, "%s", "d", 1))
		if got["id"] != d1 || got["debounced"] != true {
			t.Fatalf("debounced submission: %v; want 200 with id %s and debounced", got, d1)
		}
		for _, bad := range []struct{ body, field string }{
			{`{"name":"t_echo","args":{},"unique":"soon"}`, "unique"},
			{`{"name":"t_echo","args":{},"unique":"1h","unique_by":"Nope"}`, "unique_by"},
			{`{"name":"t_echo","args":{},"unique_by":"Text"}`, "unique_by"},
			{`{"name":"t_echo","args":{},"unique":"1h","unique_until":"later"}`, "unique_until"},
			{`{"name":"t_echo","args":{},"debounce":"5s"}`, "debounce"},
			{`{"name":"t_echo","args":{},"unique":"1h","debounce":"-1s"}`, "debounce"},
			{`{"name":"t_echo","args":{},"unique":1}`, "unique"},
		} {
			if got := a.want(http.StatusBadRequest, "POST", "/api/v1/jobs", bad.body); got["field"] != bad.field {
				t.Errorf("%s: %v; want a 400 naming %s", bad.body, got, bad.field)
			}
		}
	})
}

// app enqueue takes the same options as flags; a bad value exits 2 naming
// the flag.
func TestCLI_EnqueueTakesUniqueFlags(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	first := strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body":"x"}`, "--delay", "1h", "--unique", "1h", "--unique-until", "completed"))
	code, out, errOut := a.run("enqueue", "count_words", `{"Body":"x"}`, "--unique", "1h", "--unique-until", "completed")
	if code != 1 || !strings.Contains(errOut, first) || out != "" {
		t.Fatalf("duplicate enqueue: exit %d, %q %q; want 1 naming %s", code, out, errOut, first)
	}
	d := strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body":"d"}`, "--unique", "1h", "--unique-by", "Body", "--debounce", "1h"))
	if again := strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body":"d"}`, "--unique", "1h", "--unique-by", "Body", "--debounce", "1h")); again != d {
		t.Fatalf("debounced enqueue printed %q; want the waiting job's id %s", again, d)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--unique", "soon"}, "--unique soon:"},
		{[]string{"--unique", "1h", "--unique-by", "Nope"}, "--unique-by Nope:"},
		{[]string{"--unique", "1h", "--unique-until", "later"}, "--unique-until later:"},
		{[]string{"--debounce", "5s"}, "--debounce 5s: needs unique"},
	} {
		code, _, errOut := a.run(append([]string{"enqueue", "count_words", `{"Body":"y"}`}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 saying %q", c.args, code, errOut, c.want)
		}
	}
}
