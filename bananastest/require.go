package bananastest

import (
	"github.com/bananas-go/bananas/runtime"
)

// RequireEnqueued asserts that a job of task is waiting to run on c whose
// args match (nil matches any), and returns the first such job. Otherwise it
// fails t, listing the enqueued jobs of task with their args as JSON.
func RequireEnqueued[A, R any](t TB, c *runtime.Client, task *runtime.Task[A, R], match func(A) bool) Job[A] {
	t.Helper()
	jobs := Enqueued(t, c, task)
	found := matching(jobs, match)
	if len(found) == 0 {
		t.Fatalf("bananastest: RequireEnqueued: no enqueued job of task %s matches; its %d enqueued job(s):\n%s",
			task.Name(), len(jobs), describe(jobs))
		return Job[A]{}
	}
	return found[0]
}

// RequireEnqueuedN asserts that exactly n jobs of task waiting to run on c
// have args that match (nil matches any), and returns them. Otherwise it
// fails t, listing the enqueued jobs of task with their args as JSON.
func RequireEnqueuedN[A, R any](t TB, c *runtime.Client, task *runtime.Task[A, R], n int, match func(A) bool) []Job[A] {
	t.Helper()
	jobs := Enqueued(t, c, task)
	found := matching(jobs, match)
	if len(found) != n {
		t.Fatalf("bananastest: RequireEnqueuedN: want %d enqueued job(s) of task %s that match, found %d; its %d enqueued job(s):\n%s",
			n, task.Name(), len(found), len(jobs), describe(jobs))
	}
	return found
}

// RequireNotEnqueued asserts that no job of task waiting to run on c has
// args that match (nil: no job of task at all). Otherwise it fails t,
// listing the jobs that match with their args as JSON.
func RequireNotEnqueued[A, R any](t TB, c *runtime.Client, task *runtime.Task[A, R], match func(A) bool) {
	t.Helper()
	found := matching(Enqueued(t, c, task), match)
	if len(found) > 0 {
		t.Fatalf("bananastest: RequireNotEnqueued: %d enqueued job(s) of task %s match:\n%s",
			len(found), task.Name(), describe(found))
	}
}

// RequireDead asserts that a job of task is dead on c (failed for good,
// dead-lettered) whose args match (nil matches any), and returns the first
// such job: its Error is the failure it died of. Otherwise it fails t,
// listing the dead jobs of task, and the enqueued ones, with their args.
func RequireDead[A, R any](t TB, c *runtime.Client, task *runtime.Task[A, R], match func(A) bool) Job[A] {
	t.Helper()
	dead := DeadJobs(t, c, task)
	found := matching(dead, match)
	if len(found) == 0 {
		waiting := Enqueued(t, c, task)
		t.Fatalf("bananastest: RequireDead: no dead job of task %s matches; its %d dead job(s):\n%s\nand its %d enqueued job(s):\n%s",
			task.Name(), len(dead), describe(dead), len(waiting), describe(waiting))
		return Job[A]{}
	}
	return found[0]
}

func matching[A any](jobs []Job[A], match func(A) bool) []Job[A] {
	if match == nil {
		return jobs
	}
	var out []Job[A]
	for _, j := range jobs {
		if match(j.Args) {
			out = append(out, j)
		}
	}
	return out
}
