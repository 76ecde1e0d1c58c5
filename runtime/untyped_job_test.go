package runtime_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

type ghostArgs struct {
	Customer string
	Cents    int
	Tags     map[int]string // keys that are not strings: written as printed
}

type ghostResult struct {
	Charged bool
	Ref     string
}

// ghost is a task that the programs reading its jobs below do not know:
// declared twice with different types, no declaration decodes its args
// (as in a program that does not link its generated code).
var (
	ghost = runtime.NewTask[ghostArgs, ghostResult]("t_ghost")
	_     = runtime.NewTask[int, int]("t_ghost")
)

// runGhost runs one job of ghost to completion on a worker that has it,
// and returns its id.
func runGhost(t *testing.T, c *runtime.Client) string {
	t.Helper()
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(w, ghost, func(_ context.Context, a ghostArgs) (ghostResult, error) {
		return ghostResult{Charged: true, Ref: "ch_" + a.Customer}, nil
	})
	stop := startWorker(t, w)
	defer stop()
	id, err := ghost.With(c).Enqueue(ctxT(t), ghostArgs{Customer: "cus_1", Cents: 1250, Tags: map[int]string{7: "vip"}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the ghost job to complete", func() bool { return jobStatus(t, c, id) == runtime.StatusCompleted })
	return id
}

const (
	ghostArgsJSON   = `{"Cents":1250,"Customer":"cus_1","Tags":{"7":"vip"}}`
	ghostResultJSON = `{"Charged":true,"Ref":"ch_cus_1"}`
)

// A program that does not register a job's task shows its args and result
// as stored, decoded without their Go types, and says that the task is not
// in this program: through the admin layer, `job ID` and the API.
func TestJob_OfATaskThisProgramDoesNotKnowShowsItsStoredArgsAndResult(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		id := runGhost(t, c)
		j, err := runtime.NewInspector(c, tasks.Register).Job(ctxT(t), id)
		if err != nil {
			t.Fatal(err)
		}
		if string(j.Args) != ghostArgsJSON || string(j.ResultJSON) != ghostResultJSON || !j.Untyped {
			t.Fatalf("Job: args %s, result %s, untyped %v; want %s, %s, true", j.Args, j.ResultJSON, j.Untyped, ghostArgsJSON, ghostResultJSON)
		}

		api := serveAPI(t, runtime.NewInspector(c, tasks.Register), runtime.APIOptions{})
		got := api.want(http.StatusOK, "GET", "/api/v1/jobs/"+id, "")
		args, _ := json.Marshal(got["args"])
		result, _ := json.Marshal(got["result"])
		if string(args) != ghostArgsJSON || string(result) != ghostResultJSON || got["untyped"] != true {
			t.Fatalf("GET /api/v1/jobs/{id} = %v; want the stored args and result and untyped", got)
		}

		// A program that registers the task: typed, and not untyped.
		w := runtime.NewWorker(c, runtime.WorkerOptions{})
		runtime.Handle(w, ghost, func(context.Context, ghostArgs) (ghostResult, error) { return ghostResult{}, nil })
		if j, err := w.Inspector().Job(ctxT(t), id); err != nil || j.Untyped {
			t.Fatalf("Job in a program with the task: %+v, %v; want it typed", j, err)
		}
	})
}

func TestCLI_JobOfATaskThisBinaryDoesNotKnowShowsItsStoredArgsAndResult(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	c := connect(t, redistest.Shared(t).URL(), runtime.WithNamespace(a.env["BANANAS_NAMESPACE"]))
	id := runGhost(t, c)
	out := a.ok("job", id)
	for _, want := range []string{ghostArgsJSON, ghostResultJSON, "task t_ghost is not registered in this program"} {
		if !strings.Contains(out, want) {
			t.Fatalf("job %s does not show %q:\n%s", id, want, out)
		}
	}
	var js map[string]any
	if err := json.Unmarshal([]byte(a.ok("job", id, "--json")), &js); err != nil || js["untyped"] != true || js["result"] == nil {
		t.Fatalf("job --json = %v, %v; want untyped and the result", js, err)
	}
}

func TestDashboard_JobOfATaskThisProgramDoesNotKnowShowsItsStoredArgsAndResult(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	id := runGhost(t, c)
	url := serveAPI(t, runtime.NewInspector(c, tasks.Register), runtime.APIOptions{}).url
	run(t, ctx, "open the job", chromedp.Navigate(url+"/jobs/"+id), chromedp.WaitVisible(chromedp.CSS("h1")))
	if got := text(t, ctx, "#untyped"); !strings.Contains(got, "Task t_ghost is not registered in this program") {
		t.Fatalf("the job page says %q; want it to say the task is not in this program", got)
	}
	if got := text(t, ctx, "#args"); !strings.Contains(got, `"Customer": "cus_1"`) || !strings.Contains(got, `"7": "vip"`) {
		t.Fatalf("args = %q", got)
	}
	if got := text(t, ctx, "#result"); !strings.Contains(got, `"Ref": "ch_cus_1"`) {
		t.Fatalf("result = %q", got)
	}
	shoot(t, ctx, "job-of-an-unknown-task")
}
