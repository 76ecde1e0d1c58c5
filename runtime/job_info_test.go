package runtime_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// A completed job is only its result record in Redis, and Job(id) still shows
// what it was enqueued with: args, max retries, timeout, description — for a
// job enqueued ready to run (its payload travels in the ready list) and for a
// delayed one (it has a hash of its own).
func TestJob_CompletedJobShowsWhatItWasEnqueuedWith(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		echo := testtasks.Echo.With(c)
		opts := []runtime.Option{runtime.MaxRetries(7), runtime.Timeout(42 * time.Second), runtime.Description("from the test")}
		ready, err := echo.Enqueue(ctx, testtasks.Msg{Text: "ready", N: 1}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		delayed, err := echo.Enqueue(ctx, testtasks.Msg{Text: "delayed", N: 2}, append(opts, runtime.Delay(50*time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		testtasks.Register(w)
		startWorker(t, w)
		for _, j := range []struct {
			id   string
			want testtasks.Msg
		}{{ready, testtasks.Msg{Text: "ready", N: 1}}, {delayed, testtasks.Msg{Text: "delayed", N: 2}}} {
			if _, err := echo.Await(ctx, j.id); err != nil {
				t.Fatal(err)
			}
			info, err := c.Job(ctx, j.id)
			if err != nil {
				t.Fatal(err)
			}
			var args testtasks.Msg
			if err := msgpack.Unmarshal(info.ArgsMsgpack, &args); err != nil || args != j.want {
				t.Errorf("completed job %s: args %+v (%v), want %+v", j.want.Text, args, err, j.want)
			}
			if info.Status != runtime.StatusCompleted || info.MaxRetries != 7 || info.Timeout != 42*time.Second ||
				info.Description != "from the test" || info.Name != "t_echo" || info.CreatedAt.IsZero() || info.StartedAt.IsZero() {
				raw, _ := json.Marshal(info)
				t.Errorf("completed job %s = %s; want status completed, max retries 7, timeout 42s, its description, name and times", j.want.Text, raw)
			}
		}
	})
}
