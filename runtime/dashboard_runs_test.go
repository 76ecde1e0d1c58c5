package runtime_test

import (
	"context"
	"errors"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// A job that failed three times and died keeps when each of its runs
// started, not only its last: each start before its run's failure, after
// the failure before it.
func TestJob_EveryFailedRunKeepsItsStart(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		id := deadAfterThreeRuns(t, c)
		info, err := c.Job(ctxT(t), id)
		if err != nil {
			t.Fatal(err)
		}
		if info.Status != runtime.StatusFailed || len(info.FailedAt) != 3 || len(info.FailedStartedAt) != 3 {
			t.Fatalf("job %s: failed at %v, started at %v; want three runs, each with its start and end", info.Status, info.FailedAt, info.FailedStartedAt)
		}
		for i, started := range info.FailedStartedAt {
			if started.IsZero() || started.After(info.FailedAt[i]) || (i > 0 && started.Before(info.FailedAt[i-1])) {
				t.Fatalf("run %d started %v; its failure at %v, the runs' failures %v", i+1, started, info.FailedAt[i], info.FailedAt)
			}
		}
	})
}

// A job that failed twice and then completed keeps its failed runs' starts
// in its result record, which is all that is left of it.
func TestJob_ACompletedJobKeepsItsFailedRunsStarts(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := testtasks.Echo.With(c)
		var runs atomic.Int32
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Backoff: func(int) time.Duration { return 5 * time.Millisecond }}))
		runtime.Handle(w, task, func(context.Context, testtasks.Msg) (testtasks.Reply, error) {
			if runs.Add(1) <= 2 {
				return testtasks.Reply{}, errors.New("not yet")
			}
			return testtasks.Reply{Text: "done"}, nil
		})
		startWorker(t, w)
		id, err := task.Enqueue(ctx, testtasks.Msg{Text: "x"}, runtime.MaxRetries(5))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := task.Await(ctx, id); err != nil {
			t.Fatal(err)
		}
		info, err := c.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if info.Status != runtime.StatusCompleted || len(info.FailedAt) != 2 || len(info.FailedStartedAt) != 2 {
			t.Fatalf("job %s: failed at %v, started at %v; want two failed runs, each with its start", info.Status, info.FailedAt, info.FailedStartedAt)
		}
		for i, started := range info.FailedStartedAt {
			if started.IsZero() || started.After(info.FailedAt[i]) || (i > 0 && started.Before(info.FailedAt[i-1])) {
				t.Fatalf("run %d started %v; the runs' failures %v", i+1, started, info.FailedAt)
			}
		}
		if info.StartedAt.Before(info.FailedAt[1]) {
			t.Fatalf("the completed run started %v, before the last failure %v", info.StartedAt, info.FailedAt[1])
		}
	})
}

// The dashboard's timeline of a dead job shows every run's start, each
// before its failure.
func TestDashboard_ADeadJobsTimelineShowsEveryRunsStart(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	id := deadAfterThreeRuns(t, c)
	url := serveAPI(t, runtime.NewInspector(c, testtasks.Register), runtime.APIOptions{}).url
	run(t, ctx, "open the dead job", chromedp.Navigate(url+"/jobs/"+id), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	want := regexp.MustCompile(`^Created \S+ \S+ Run 1 started \S+ \S+ Run 1 failed \S+ \S+ Run 2 started \S+ \S+ Run 2 failed \S+ \S+ ` +
		`Run 3 started \S+ \S+ Run 3 failed \S+ \S+ Finished \S+ \S+$`)
	if got := text(t, ctx, "#timeline"); !want.MatchString(got) {
		t.Fatalf("timeline = %q; want each of the three runs started, then failed, then the end", got)
	}
	shoot(t, ctx, "dead-job-timeline")
}

// deadAfterThreeRuns runs a job whose every run fails, with two retries,
// until it is dead, and returns its id.
func deadAfterThreeRuns(t *testing.T, c *runtime.Client) string {
	t.Helper()
	ctx := ctxT(t)
	task := testtasks.Echo.With(c)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Backoff: func(int) time.Duration { return 5 * time.Millisecond }}))
	runtime.Handle(w, task, func(context.Context, testtasks.Msg) (testtasks.Reply, error) {
		return testtasks.Reply{}, errors.New("smtp: mailbox unavailable")
	})
	startWorker(t, w)
	id, err := task.Enqueue(ctx, testtasks.Msg{Text: "x"}, runtime.MaxRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.Await(ctx, id); err == nil {
		t.Fatal("the job completed; want it dead")
	}
	return id
}
