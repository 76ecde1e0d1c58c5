package runtime_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

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

// A dead job's death freed its key (held until ended), so the same key can
// be enqueued again; a replay of the dead job while that new job holds the
// key is a 409 naming the holder, and goes through once the key is free.
func TestAPI_ReplayOfADeadJobWhoseKeyIsHeldNamesTheHolder(t *testing.T) {
	onEveryServer(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := uniqueMailTask.With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, task, func(ctx context.Context, m uniqueMail) (runtime.None, error) {
			return runtime.None{}, errors.New("always")
		})
		a := serveAPI(t, w.Inspector(), runtime.APIOptions{})
		stop := startWorker(t, w)
		opts := []runtime.Option{runtime.Unique(time.Hour), runtime.UniqueBy("To"), runtime.MaxRetries(0)}
		dead, err := task.Enqueue(ctx, uniqueMail{To: "a"}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		var je *runtime.JobError
		if _, err := task.Await(ctx, dead); !errors.As(err, &je) {
			t.Fatalf("Await = %v; want the job dead", err)
		}
		stop() // the replayed job must wait, holding its key, not die again
		holder, err := task.Enqueue(ctx, uniqueMail{To: "a"}, append(opts, runtime.Delay(time.Hour))...)
		if err != nil || holder == dead {
			t.Fatalf("enqueue after the death freed the key = %q, %v; want a new job", holder, err)
		}
		got := a.want(http.StatusConflict, "POST", "/api/v1/dlq/"+dead+"/replay", "")
		if msg, _ := got["error"].(string); !strings.Contains(msg, holder) {
			t.Fatalf("replay while %s holds the key: %v; want a 409 naming it", holder, got)
		}
		a.want(http.StatusOK, "DELETE", "/api/v1/jobs/"+holder, "")
		a.want(http.StatusOK, "POST", "/api/v1/dlq/"+dead+"/replay", "")
		if _, err := task.Enqueue(ctx, uniqueMail{To: "a"}, opts...); !errors.Is(err, runtime.ErrDuplicate) {
			t.Fatalf("enqueue after the replay took the key back = %v; want ErrDuplicate", err)
		}
	})
}
