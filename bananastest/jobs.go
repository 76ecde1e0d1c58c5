package bananastest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
)

// Job is a job of a task whose args are A, as a listing found it: the
// job's snapshot (bananastype.Job: its ID, Status, Route, Priority,
// Attempts, Error — a dead job's is why it died —, ScheduledAt, ...) with
// its args decoded. Args are decoded from the JSON the Inspector renders
// them as (Job.Args, the JSON, stays reachable as j.Job.Args), so a field
// that JSON leaves out (json:"-") is its zero value here.
type Job[A any] struct {
	bananastype.Job
	Args A
}

// Enqueued returns the jobs of task waiting to run on c — pending in the
// order a worker takes them within each route, then scheduled — with their
// args decoded. A failure to read them fails t.
func Enqueued[A, R any](t TB, c *runtime.Client, task *runtime.Task[A, R]) []Job[A] {
	t.Helper()
	jobs, err := list(c, task, runtime.StatusPending, runtime.StatusScheduled)
	if err != nil {
		t.Fatalf("bananastest: list the enqueued jobs of task %s: %v", task.Name(), err)
	}
	return jobs
}

// DeadJobs returns the dead-lettered jobs of task on c (failed for good),
// with their args decoded and the error they died of. A failure to read
// them fails t.
func DeadJobs[A, R any](t TB, c *runtime.Client, task *runtime.Task[A, R]) []Job[A] {
	t.Helper()
	jobs, err := list(c, task, runtime.StatusFailed)
	if err != nil {
		t.Fatalf("bananastest: list the dead jobs of task %s: %v", task.Name(), err)
	}
	return jobs
}

// list reads every job of task in the states given, in that order. The
// listing carries no args, so each job is read once more, through an
// Inspector that knows the task, for its args as JSON.
func list[A, R any](c *runtime.Client, task *runtime.Task[A, R], states ...runtime.Status) ([]Job[A], error) {
	ctx := context.Background()
	in := runtime.NewInspector(c, func(w *runtime.Worker) {
		runtime.Handle(w, task, func(context.Context, A) (R, error) {
			var zero R
			return zero, nil
		})
	})
	var out []Job[A]
	for _, state := range states {
		q := admin.JobQuery{State: state, Task: task.Name(), Limit: 500}
		for {
			page, err := in.Jobs(ctx, q)
			if err != nil {
				return nil, err
			}
			for _, listed := range page.Jobs {
				j, err := read[A](ctx, in, listed.ID)
				if err != nil {
					return nil, err
				}
				if j.Status == state { // a job that moved meanwhile is listed where it went, or not at all
					out = append(out, j)
				}
			}
			if page.Next == "" {
				break
			}
			q.Cursor = page.Next
		}
	}
	return out, nil
}

// read reads job id and decodes its args as the JSON of A, the form the
// Inspector renders them in.
func read[A any](ctx context.Context, in *admin.Inspector, id string) (Job[A], error) {
	info, err := in.Job(ctx, id)
	if err != nil {
		return Job[A]{}, err
	}
	j := Job[A]{Job: *info}
	if info.Args == nil {
		return j, fmt.Errorf("job %s: its args do not decode as task %s's", id, info.Name)
	}
	if err := json.Unmarshal(info.Args, &j.Args); err != nil {
		return j, fmt.Errorf("job %s: args %s: %w", id, info.Args, err)
	}
	return j, nil
}

// describe lists jobs one a line, with their args as JSON, for a message.
func describe[A any](jobs []Job[A]) string {
	if len(jobs) == 0 {
		return "\t(none)"
	}
	var b strings.Builder
	for i, j := range jobs {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "\t%s %s route=%s priority=%s args=%s", j.ID, j.Status, j.Route, j.Priority, j.Job.Args)
		if j.Status == runtime.StatusScheduled {
			fmt.Fprintf(&b, " ready_at=%s", j.ScheduledAt.UTC().Format(time.RFC3339Nano))
		}
		if j.Error != "" {
			fmt.Fprintf(&b, " error=%q", firstLine(j.Error))
		}
	}
	return b.String()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
