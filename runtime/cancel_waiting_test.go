package runtime_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// POST /api/v1/routes/{route}/cancel cancels every pending and scheduled
// job of the route, or those of one task, and says how many: each ends
// canceled (its waiters wake with ErrJobCanceled); other tasks' jobs wait on.
func TestAPI_CancelWaitingEndsEveryWaitingJobOfTheRouteOrTask(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		testtasks.Register(w)
		a := serveAPI(t, w.Inspector(), runtime.APIOptions{})
		ctx := ctxT(t)
		var echoes []string
		for i := 0; i < 3; i++ {
			id, err := testtasks.Echo.With(c).Enqueue(ctx, testtasks.Msg{Text: "now"})
			if err != nil {
				t.Fatal(err)
			}
			echoes = append(echoes, id)
		}
		later, err := testtasks.Echo.With(c).Enqueue(ctx, testtasks.Msg{Text: "later"}, runtime.Delay(3600e9))
		if err != nil {
			t.Fatal(err)
		}
		other, err := testtasks.Other.With(c).Enqueue(ctx, testtasks.Msg{Text: "stays"})
		if err != nil {
			t.Fatal(err)
		}
		if got := a.want(http.StatusOK, "POST", "/api/v1/routes/default/cancel?task=t_echo", ""); got["canceled"] != 4.0 {
			t.Fatalf("cancel of t_echo's waiting jobs = %v; want 4 canceled", got)
		}
		for _, id := range append(echoes, later) {
			if _, err := testtasks.Echo.With(c).Await(ctx, id); !errors.Is(err, runtime.ErrJobCanceled) {
				t.Fatalf("await %s = %v; want it canceled", id, err)
			}
		}
		if info, err := c.Job(ctx, other); err != nil || info.Status != runtime.StatusPending {
			t.Fatalf("the other task's job = %+v, %v; want it still pending", info, err)
		}
		if got := a.want(http.StatusOK, "POST", "/api/v1/routes/default/cancel", ""); got["canceled"] != 1.0 {
			t.Fatalf("cancel of every waiting job = %v; want the other task's one", got)
		}
		msg, _ := a.want(http.StatusNotFound, "POST", "/api/v1/routes/biling/cancel", "")["error"].(string)
		if !strings.Contains(msg, "biling") || !strings.Contains(msg, "default") {
			t.Fatalf("cancel on an unknown route: %q; want the route named and the known ones listed", msg)
		}
	})
}

// `cancel ROUTE` does the same from the command line; a route nothing
// knows is a usage error.
func TestCLI_CancelCancelsTheWaitingJobsOfARoute(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.ok("enqueue", "count_words", `{"Body": "a"}`)
	a.ok("enqueue", "count_words", `{"Body": "b"}`, "--delay", "1h")
	if out := a.ok("cancel", "default", "--task", "count_words"); !strings.Contains(out, "canceled 2 waiting job(s) of route default") {
		t.Fatalf("cancel = %q; want 2 canceled", out)
	}
	if code, _, errOut := a.run("cancel", "biling"); code != runtime.ExitUsage || !strings.Contains(errOut, "biling") {
		t.Fatalf("cancel of an unknown route = %d %q; want a usage error naming it", code, errOut)
	}
}
