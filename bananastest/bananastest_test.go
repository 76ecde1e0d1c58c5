package bananastest_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastest"
	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	bananas "github.com/bananas-go/bananas/runtime"
)

// recorder is a bananastest.TB that records what the assertions report.
// Its Fatalf ends the goroutine as testing's does, so run calls the
// assertion on a goroutine of its own.
type recorder struct {
	mu     sync.Mutex
	errors []string
	fatal  string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatal = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

// run calls f with a fresh recorder and returns it once f returned or
// stopped at a Fatalf.
func run(f func(tb bananastest.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func enqueueEmail(t *testing.T, h *bananastest.Harness, a tasks.EmailArgs) string {
	t.Helper()
	id, err := tasks.SendEmail.With(h.Client).Enqueue(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func to(addr string) func(tasks.EmailArgs) bool {
	return func(a tasks.EmailArgs) bool { return a.To == addr }
}

func TestRequireEnqueued_FindsTheJobWhoseArgsMatch(t *testing.T) {
	h := bananastest.New(t, tasks.Register)
	enqueueEmail(t, h, tasks.EmailArgs{To: "bo@example.com", Subject: "other"})
	id := enqueueEmail(t, h, tasks.EmailArgs{To: "ana@example.com", Subject: "welcome"})

	job := bananastest.RequireEnqueued(t, h.Client, tasks.SendEmail, to("ana@example.com"))
	if job.ID != id || job.Args.Subject != "welcome" || job.Status != bananas.StatusPending || job.Route != "email" {
		t.Fatalf("RequireEnqueued returned %+v, want job %s pending on route email with its args", job, id)
	}
}

func TestRequireEnqueued_FailsNamingTheTaskAndListingItsJobsAsJSON(t *testing.T) {
	h := bananastest.New(t, tasks.Register)
	id := enqueueEmail(t, h, tasks.EmailArgs{To: "bo@example.com", Subject: "hi"})
	if _, err := tasks.CountWords.With(h.Client).Enqueue(context.Background(), tasks.Text{Body: "not an email"}); err != nil {
		t.Fatal(err)
	}

	r := run(func(tb bananastest.TB) {
		bananastest.RequireEnqueued(tb, h.Client, tasks.SendEmail, to("ana@example.com"))
		tb.Errorf("RequireEnqueued returned after it failed")
	})
	if len(r.errors) > 0 {
		t.Fatalf("recorded errors %q, want only a Fatalf", r.errors)
	}
	for _, want := range []string{"RequireEnqueued", "send_email", "1 enqueued job", id, `{"To":"bo@example.com","Subject":"hi"}`} {
		if !strings.Contains(r.fatal, want) {
			t.Errorf("the failure does not say %q:\n%s", want, r.fatal)
		}
	}
	if strings.Contains(r.fatal, "not an email") {
		t.Errorf("the failure lists a job of another task:\n%s", r.fatal)
	}
}

func TestRequireEnqueued_FailsSayingNoneWhenTheTaskHasNoJob(t *testing.T) {
	h := bananastest.New(t, tasks.Register)
	r := run(func(tb bananastest.TB) {
		bananastest.RequireEnqueued(tb, h.Client, tasks.SendEmail, nil)
	})
	if !strings.Contains(r.fatal, "its 0 enqueued job(s):\n\t(none)") {
		t.Fatalf("the failure does not say the task has no job:\n%s", r.fatal)
	}
}

func TestRequireEnqueued_CountsAScheduledJob(t *testing.T) {
	h := bananastest.New(t, tasks.Register)
	id, err := tasks.SendEmail.With(h.Client).Enqueue(context.Background(), tasks.EmailArgs{To: "ana@example.com"}, bananas.Delay(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	job := bananastest.RequireEnqueued(t, h.Client, tasks.SendEmail, nil)
	if job.ID != id || job.Status != bananas.StatusScheduled || job.ScheduledAt.Before(time.Now().Add(50*time.Minute)) {
		t.Fatalf("RequireEnqueued returned %+v, want job %s scheduled an hour on", job, id)
	}
}

func TestRequireEnqueuedN_PassesOnExactlyNAndFailsOtherwise(t *testing.T) {
	h := bananastest.New(t, tasks.Register)
	enqueueEmail(t, h, tasks.EmailArgs{To: "ana@example.com", Subject: "one"})
	enqueueEmail(t, h, tasks.EmailArgs{To: "ana@example.com", Subject: "two"})
	enqueueEmail(t, h, tasks.EmailArgs{To: "bo@example.com"})

	jobs := bananastest.RequireEnqueuedN(t, h.Client, tasks.SendEmail, 2, to("ana@example.com"))
	if jobs[0].Args.Subject != "one" || jobs[1].Args.Subject != "two" {
		t.Errorf("jobs %+v, want one then two, in the order a worker takes them", jobs)
	}
	r := run(func(tb bananastest.TB) {
		bananastest.RequireEnqueuedN(tb, h.Client, tasks.SendEmail, 3, to("ana@example.com"))
	})
	for _, want := range []string{"want 3", "found 2", "its 3 enqueued job(s)", "bo@example.com"} {
		if !strings.Contains(r.fatal, want) {
			t.Errorf("the failure does not say %q:\n%s", want, r.fatal)
		}
	}
}

func TestRequireNotEnqueued_FailsListingTheJobsThatMatch(t *testing.T) {
	h := bananastest.New(t, tasks.Register)
	bananastest.RequireNotEnqueued(t, h.Client, tasks.SendEmail, nil)
	id := enqueueEmail(t, h, tasks.EmailArgs{To: "ana@example.com"})
	bananastest.RequireNotEnqueued(t, h.Client, tasks.SendEmail, to("bo@example.com"))

	r := run(func(tb bananastest.TB) {
		bananastest.RequireNotEnqueued(tb, h.Client, tasks.SendEmail, to("ana@example.com"))
	})
	for _, want := range []string{"RequireNotEnqueued", "1 enqueued job(s) of task send_email match", id, `"To":"ana@example.com"`} {
		if !strings.Contains(r.fatal, want) {
			t.Errorf("the failure does not say %q:\n%s", want, r.fatal)
		}
	}
}

func TestDrain_RunsWhatIsReadyAndLeavesDelayedJobs(t *testing.T) {
	h := bananastest.New(t, tasks.Register)
	ctx := context.Background()
	ids, err := tasks.CountWords.With(h.Client).EnqueueMany(ctx, []tasks.Text{{Body: "a b c"}, {Body: "d"}})
	if err != nil {
		t.Fatal(err)
	}
	enqueueEmail(t, h, tasks.EmailArgs{To: "ana@example.com"})
	if _, err := tasks.CountWords.With(h.Client).Enqueue(ctx, tasks.Text{Body: "later"}, bananas.Delay(time.Hour)); err != nil {
		t.Fatal(err)
	}

	report := h.Drain(t)
	if report.Completed != 3 || len(report.Ends) != 3 {
		t.Fatalf("report %s, want 3 completed", report)
	}
	n, err := tasks.CountWords.With(h.Client).Await(ctx, ids[0])
	if err != nil || n != 3 {
		t.Fatalf("count_words of %q = %d, %v; want 3", "a b c", n, err)
	}
	bananastest.RequireEnqueuedN(t, h.Client, tasks.CountWords, 1, func(a tasks.Text) bool { return a.Body == "later" })
	bananastest.RequireNotEnqueued(t, h.Client, tasks.SendEmail, nil)
}

func TestDrain_RetriesAFailingJobUntilItIsDead(t *testing.T) {
	h := bananastest.New(t, tasks.Register)
	id := enqueueEmail(t, h, tasks.EmailArgs{To: "nobody", Subject: "lost"})

	report := h.Drain(t) // send_email: retries=2, so three runs
	if report.Retried != 2 || report.Dead != 1 {
		t.Fatalf("report %s, want 2 retried then 1 dead", report)
	}
	dead := bananastest.RequireDead(t, h.Client, tasks.SendEmail, to("nobody"))
	if dead.ID != id || dead.Args.Subject != "lost" || dead.Attempts != 3 || !strings.Contains(dead.Error, `invalid recipient "nobody"`) {
		t.Fatalf("dead job %+v, want %s after 3 attempts with the handler's error", dead, id)
	}
	// The job is the one job type (bananastype.Job), its args decoded beside
	// the JSON they were read from.
	if dead.Name != tasks.SendEmail.Name() || len(dead.FailedAt) != 3 || dead.Retries() != 2 || !strings.Contains(string(dead.Job.Args), `"lost"`) {
		t.Fatalf("dead job %+v, want task %s, 3 failure times, 2 retries and its args as JSON", dead, tasks.SendEmail.Name())
	}
	if jobs := bananastest.DeadJobs(t, h.Client, tasks.SendEmail); len(jobs) != 1 {
		t.Fatalf("DeadJobs = %+v, want the one job", jobs)
	}
}

func TestDrain_RunsTheJobsItsJobsEnqueue(t *testing.T) {
	h := bananastest.New(t, registerChain)
	h.SetDefault(t) // the handler enqueues through the default client
	if _, err := first.With(h.Client).Enqueue(context.Background(), Step{N: 3}); err != nil {
		t.Fatal(err)
	}
	report := h.Drain(t)
	if report.Completed != 4 {
		t.Fatalf("report %s, want the first job and the three it chained", report)
	}
}

// first enqueues a job of next with N-1, and next too, until N is 0: a
// handler that enqueues, to a route (default) no job had before.
var (
	first = bananas.NewTask[Step, bananas.None]("first", bananas.Route("chain"))
	next  = bananas.NewTask[Step, bananas.None]("next")
)

type Step struct{ N int }

func registerChain(w *bananas.Worker) {
	step := func(ctx context.Context, s Step) (bananas.None, error) {
		if s.N == 0 {
			return bananas.None{}, nil
		}
		_, err := next.Enqueue(ctx, Step{N: s.N - 1})
		return bananas.None{}, err
	}
	bananas.Handle(w, first, step)
	bananas.Handle(w, next, step)
}

func TestRequireDead_FailsListingDeadAndEnqueuedJobs(t *testing.T) {
	h := bananastest.New(t, tasks.Register)
	enqueueEmail(t, h, tasks.EmailArgs{To: "nobody"})
	h.Drain(t)
	waiting := enqueueEmail(t, h, tasks.EmailArgs{To: "ana@example.com"})

	r := run(func(tb bananastest.TB) {
		bananastest.RequireDead(tb, h.Client, tasks.SendEmail, to("ana@example.com"))
	})
	for _, want := range []string{"no dead job of task send_email matches", "its 1 dead job(s)", `"To":"nobody"`, `error="invalid recipient`, "its 1 enqueued job(s)", waiting} {
		if !strings.Contains(r.fatal, want) {
			t.Errorf("the failure does not say %q:\n%s", want, r.fatal)
		}
	}
}

func TestDrain_FailsListingWhatIsStillToRunPastItsTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	stuck := bananas.NewTask[Step, bananas.None]("stuck", bananas.Route("slow"))
	h := bananastest.NewWithOptions(t, bananastest.Options{
		DrainTimeout: 200 * time.Millisecond,
		Worker:       bananas.WorkerOptions{ShutdownTimeout: 20 * time.Millisecond},
	}, func(w *bananas.Worker) {
		bananas.Handle(w, stuck, func(ctx context.Context, _ Step) (bananas.None, error) {
			<-release
			return bananas.None{}, nil
		})
	})
	if _, err := stuck.With(h.Client).Enqueue(context.Background(), Step{}); err != nil {
		t.Fatal(err)
	}
	r := run(func(tb bananastest.TB) { h.Drain(tb) })
	for _, want := range []string{"jobs still to run after 200ms", "route slow: 1 pending"} {
		if !strings.Contains(r.fatal, want) {
			t.Errorf("the failure does not say %q:\n%s", want, r.fatal)
		}
	}
}

func TestStart_RunsTheWorkerLiveForCallAndAwait(t *testing.T) {
	h := bananastest.New(t, tasks.Register)
	h.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := tasks.CountWords.With(h.Client).Call(ctx, tasks.Text{Body: "one two"})
	if err != nil || n != 2 {
		t.Fatalf("count_words = %d, %v; want 2", n, err)
	}
}
