package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
)

const jobID = "01JABCDEFGHJKMNPQRSTVWXYZ0.default"

// wantRun runs args and fails the test unless the command exits with code
// and stderr is wantErr.
func wantRun(t *testing.T, app *fakeApp, code int, wantErr string, args ...string) string {
	t.Helper()
	got, out, errOut := run(t, app, args...)
	if got != code || errOut != wantErr {
		t.Fatalf("%q: exit %d, stderr %q; want exit %d, stderr %q", args, got, errOut, code, wantErr)
	}
	return out
}

// jsonOf is v's JSON as printJSON writes it.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	var b strings.Builder
	if err := printJSON(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestEnqueue_SubmitsTheFlagsAsGivenAndPrintsTheID(t *testing.T) {
	f := &fakeAdmin{id: jobID}
	out := wantRun(t, &fakeApp{admin: f}, 0, "", "enqueue", "count_words", `{"Body":"a b"}`, "--route", "bulk", "--priority", "high", "--delay", "90s")
	if out != jobID+"\n" {
		t.Fatalf("enqueue printed %q, want the id", out)
	}
	want := admin.Submission{Name: "count_words", Args: json.RawMessage(`{"Body":"a b"}`), Route: "bulk", Priority: "high", Delay: "1m30s"}
	if len(f.submitted) != 1 || fmt.Sprint(f.submitted[0]) != fmt.Sprint(want) {
		t.Fatalf("submitted %+v, want %+v", f.submitted, want)
	}
	out = wantRun(t, &fakeApp{admin: f}, 0, "", "enqueue", "count_words", `{}`, "--json")
	if out != jsonOf(t, map[string]string{"id": jobID}) || f.submitted[1].Delay != "" {
		t.Fatalf("enqueue --json printed %q (submitted %+v); want the id as JSON, no delay", out, f.submitted[1])
	}
}

func TestEnqueue_SaysTheWarningOfASubmissionNoWorkerTakes(t *testing.T) {
	f := &fakeAdmin{id: jobID, warning: "no live worker takes route default (from their heartbeats); job " + jobID + " waits until one does"}
	out := wantRun(t, &fakeApp{admin: f}, 0, "warning: "+f.warning+"\n", "enqueue", "count_words", `{}`)
	if out != jobID+"\n" {
		t.Fatalf("enqueue printed %q, want the id", out)
	}
}

func TestEnqueue_RefusalsExitAsTheirClassSays(t *testing.T) {
	for _, c := range []struct {
		err     error
		args    []string
		code    int
		message string
	}{
		{admin.InvalidValue("priority", "urgent", "use high, normal or low"), []string{"--priority", "urgent"}, 2, "--priority urgent: use high, normal or low"},
		{admin.InvalidValue("route", "", `invalid route "a b": a route is 1-64 characters`), []string{"--route", "a b"}, 2, `--route: invalid route "a b": a route is 1-64 characters`},
		{admin.InvalidValue("delay", "-1s", "want a duration such as 90s or 1h30m"), []string{"--delay", "-1s"}, 2, "--delay -1s: want a duration such as 90s or 1h30m"},
		{fmt.Errorf("%w: no task named %q (registered: count_words)", admin.ErrUnknownTask, "nope"), nil, 2, `unknown task: no task named "nope" (registered: count_words)`},
		{fmt.Errorf("%w: count_words: unknown field \"Bdy\"", admin.ErrBadArgs), nil, 2, `bad args: count_words: unknown field "Bdy"`},
		{fmt.Errorf("%w: args of 2 MB", admin.ErrPayloadTooLarge), nil, 2, "payload too large: args of 2 MB"},
		{fmt.Errorf("%w: 1 of 1 count_words jobs were already enqueued", admin.ErrDuplicate), nil, 1, "duplicate job: 1 of 1 count_words jobs were already enqueued"},
		{fmt.Errorf("dial tcp: connection refused"), nil, 1, "dial tcp: connection refused"},
	} {
		f := &fakeAdmin{errs: map[string]error{"Submit": c.err}}
		out := wantRun(t, &fakeApp{admin: f}, c.code, "enqueue: "+c.message+"\n", append([]string{"enqueue", "count_words", `{}`}, c.args...)...)
		if out != "" {
			t.Errorf("a refused enqueue printed %q", out)
		}
	}
}

func TestEnqueue_BadFlagsAreUsageErrorsBeforeAnySubmission(t *testing.T) {
	f := &fakeAdmin{}
	wantRun(t, &fakeApp{admin: f}, 2, "enqueue: --delay soon: not a duration, e.g. 30s, 5m or 1h (enqueue -h lists the flags)\n", "enqueue", "t", "{}", "--delay", "soon")
	wantRun(t, &fakeApp{admin: f}, 2, "enqueue: want NAME and JSON, got 1 argument(s)\n", "enqueue", "t")
	if len(f.submitted) != 0 {
		t.Fatalf("submitted %+v", f.submitted)
	}
}

func TestEnqueueWait_PrintsTheResultOfTheJob(t *testing.T) {
	f := &fakeAdmin{id: jobID, tasks: []admin.Task{{Name: "count_words", Result: "int"}},
		jobs: map[string]*bananastype.Job{jobID: {ID: jobID, Name: "count_words", Status: "completed", ResultJSON: json.RawMessage("4")}}}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "enqueue", "count_words", `{}`, "--wait"); out != "4\n" {
		t.Fatalf("enqueue --wait printed %q, want the result", out)
	}
	out := wantRun(t, &fakeApp{admin: f}, 0, "", "enqueue", "count_words", `{}`, "--wait", "--timeout", "20s", "--json")
	if out != jsonOf(t, map[string]any{"id": jobID, "result": 4}) {
		t.Fatalf("enqueue --wait --json printed %q", out)
	}
	if len(f.waited) != 2 || f.waited[0] < 24*time.Hour || f.waited[1] != 20*time.Second {
		t.Fatalf("Result waited %v; want for ever without --timeout, then 20s", f.waited)
	}
}

// A task that keeps nothing of a completed job (result_ttl=0) leaves
// nothing to find once its job completed, which a wait begun after that
// would miss: --wait is refused before anything is enqueued.
func TestEnqueueWait_OfATaskThatKeepsNothingIsAUsageError(t *testing.T) {
	f := &fakeAdmin{id: jobID, tasks: []admin.Task{{Name: "send_email", KeepsNothing: true}}}
	wantRun(t, &fakeApp{admin: f}, 2, "enqueue: --wait: task send_email keeps nothing once a job completed (result_ttl=0), so the wait could begin after the end and find nothing; enqueue without --wait\n",
		"enqueue", "send_email", `{}`, "--wait")
	if len(f.submitted) != 0 {
		t.Fatalf("submitted %+v; want nothing", f.submitted)
	}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "enqueue", "send_email", `{}`); out != jobID+"\n" {
		t.Fatalf("enqueue without --wait printed %q; want the id", out)
	}
}

func TestEnqueueWait_OfATaskWithoutAResultPrintsNull(t *testing.T) {
	f := &fakeAdmin{id: jobID, tasks: []admin.Task{{Name: "send_email"}},
		jobs: map[string]*bananastype.Job{jobID: {ID: jobID, Name: "send_email", Status: "completed", ResultJSON: json.RawMessage("{}")}}}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "enqueue", "send_email", `{}`, "--wait"); out != "null\n" {
		t.Fatalf("enqueue --wait printed %q, want null", out)
	}
	out := wantRun(t, &fakeApp{admin: f}, 0, "", "enqueue", "send_email", `{}`, "--wait", "--json")
	if out != jsonOf(t, map[string]any{"id": jobID, "result": nil}) {
		t.Fatalf("enqueue --wait --json printed %q, want a null result", out)
	}
}

func TestEnqueueWait_OfAJobThatDidNotCompleteExits1WithWhy(t *testing.T) {
	for _, c := range []struct {
		job  bananastype.Job
		want string
	}{
		{bananastype.Job{Status: "failed", Attempts: 3, Error: `invalid recipient "nobody": no @`}, "job " + jobID + ` (send_email) failed after 3 attempt(s): invalid recipient "nobody": no @`},
		{bananastype.Job{Status: "canceled", Error: "canceled by an operator"}, "job " + jobID + " (send_email) was canceled: canceled by an operator"},
		{bananastype.Job{Status: "pending"}, "job " + jobID + " is still pending after --timeout 1s"},
	} {
		j := c.job
		j.ID, j.Name = jobID, "send_email"
		f := &fakeAdmin{id: jobID, jobs: map[string]*bananastype.Job{jobID: &j}}
		if out := wantRun(t, &fakeApp{admin: f}, 1, "enqueue: "+c.want+"\n", "enqueue", "send_email", `{}`, "--wait", "--timeout", "1s"); out != "" {
			t.Fatalf("printed %q", out)
		}
	}
	f := &fakeAdmin{id: jobID, errs: map[string]error{"Result": fmt.Errorf("%w: %s", admin.ErrJobNotFound, jobID)}}
	wantRun(t, &fakeApp{admin: f}, 1, "enqueue: job not found: "+jobID+"\n", "enqueue", "send_email", `{}`, "--wait")
	f.errs["Result"] = context.Canceled
	wantRun(t, &fakeApp{admin: f}, 1, "enqueue: job "+jobID+": context canceled\n", "enqueue", "send_email", `{}`, "--wait")
}

// A wait that ends with the job still pending on a paused route says the
// route is paused and how to resume it, not only "still pending".
func TestEnqueueWait_OnAPausedRouteSaysItIsPaused(t *testing.T) {
	f := &fakeAdmin{id: jobID, warning: "route default is paused: job " + jobID + " waits",
		routes: []bananastype.Route{{Route: "bulk"}, {Route: "default", Paused: true}},
		jobs:   map[string]*bananastype.Job{jobID: {ID: jobID, Name: "count_words", Route: "default", Status: "pending"}}}
	want := "enqueue: job " + jobID + " is still pending after --timeout 1s: route default is paused, and no worker takes its jobs until it is resumed; " +
		"resume with `app resume default`\n"
	wantRun(t, &fakeApp{admin: f}, 1, "warning: "+f.warning+"\n"+want, "enqueue", "count_words", `{}`, "--wait", "--timeout", "1s")
	// Resumed meanwhile: only still pending.
	f.routes[1].Paused = false
	wantRun(t, &fakeApp{admin: f}, 1, "warning: "+f.warning+"\nenqueue: job "+jobID+" is still pending after --timeout 1s\n", "enqueue", "count_words", `{}`, "--wait", "--timeout", "1s")
}

// A page of jobs that a filter emptied while more remain to read says so
// and gives the cursor; it never says there are no jobs.
func TestJobs_AnEmptyFilteredPageWithMoreSaysNoneMatchedYet(t *testing.T) {
	f := &fakeAdmin{page: bananastype.JobPage{Jobs: []bananastype.Job{}, Next: "c2"}}
	out := wantRun(t, &fakeApp{admin: f}, 0, "", "jobs", "--route", "bulk", "--task", "send_email")
	want := "none of the pending jobs this page read on route bulk, task send_email matched; more to read (next page below)\nmore: --cursor c2\n"
	if out != want {
		t.Fatalf("jobs printed\n%s\nwant\n%s", out, want)
	}
}

// On this process's own mem:// server no worker can run the job: --wait
// says so at once instead of waiting for ever.
func TestEnqueueWait_OnMemWithNoWorkerSaysTheJobCannotFinish(t *testing.T) {
	f := &fakeAdmin{id: jobID, warning: "no live worker takes route default", jobs: map[string]*bananastype.Job{jobID: {ID: jobID, Route: "default", Status: "pending"}}}
	want := "enqueue: job " + jobID + " cannot finish: REDIS_URL=mem:// is this process's own in-memory server, and no worker runs in this process; " +
		"use a Redis server that a worker of route default reaches\n"
	wantRun(t, &fakeApp{admin: f, embedded: true}, 1, want, "enqueue", "count_words", `{}`, "--wait")
	if len(f.waited) != 0 {
		t.Fatal("it waited")
	}
}

func TestJobs_ListsAPageWithWhatItListsAndTheNextCursor(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := &fakeAdmin{page: bananastype.JobPage{Next: "c2", Jobs: []bananastype.Job{
		{ID: "a.default", Route: "default", Name: "count_words", Priority: "low", Status: "pending", Attempts: 0, CreatedAt: created},
		{ID: "b.default", Route: "default", Name: "count_words", Priority: "low", Status: "pending", Attempts: 1, CreatedAt: created, Error: "boom\nstack"},
	}}}
	out := wantRun(t, &fakeApp{admin: f}, 0, "", "jobs", "--route", "default", "--limit", "2", "--task", "count_words")
	want := "pending jobs on route default, task count_words (--state pending, scheduled, processing or failed lists the others; a completed job is shown by job ID while its result is kept)\n" +
		"ID         ROUTE    TASK         PRIORITY  STATUS   ATTEMPTS  WHEN                  ERROR\n" +
		"a.default  default  count_words  low       pending  0         2026-01-02T03:04:05Z  -\n" +
		"b.default  default  count_words  low       pending  1         2026-01-02T03:04:05Z  boom\n" +
		"more: --cursor c2\n"
	if out != want {
		t.Fatalf("jobs printed\n%s\nwant\n%s", out, want)
	}
	if q := f.queries[0]; q != (admin.JobQuery{Route: "default", State: "pending", Task: "count_words", Limit: 2}) {
		t.Fatalf("jobs asked %+v", q)
	}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "jobs", "--state", "failed", "--newest", "--json"); out != jsonOf(t, f.page) {
		t.Fatalf("jobs --json printed %s; want the page's own JSON", out)
	}
	if q := f.queries[1]; q.State != "failed" || !q.Newest || q.Limit != 50 {
		t.Fatalf("jobs --state failed --newest asked %+v", q)
	}
}

func TestJobs_ABadQueryIsAUsageError(t *testing.T) {
	f := &fakeAdmin{errs: map[string]error{"Jobs": admin.BadQuery("state", "state %q: want pending, scheduled, processing or failed", "lost")}}
	wantRun(t, &fakeApp{admin: f}, 2, `jobs: bad query: state "lost": want pending, scheduled, processing or failed`+"\n", "jobs", "--state", "lost")
	wantRun(t, &fakeApp{admin: f}, 2, `jobs: unexpected argument "extra"`+"\n", "jobs", "extra")
}

func TestJob_ShowsTheJobAndItsJSON(t *testing.T) {
	j := &bananastype.Job{ID: jobID, Name: "count_words", Route: "default", Priority: "low", Status: "completed", Attempts: 1, MaxRetries: 3,
		Args: json.RawMessage(`{"Body":"a b c"}`), ResultJSON: json.RawMessage("3"), CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	f := &fakeAdmin{jobs: map[string]*bananastype.Job{jobID: j}}
	out := wantRun(t, &fakeApp{admin: f}, 0, "", "job", jobID)
	for _, want := range []string{"task               count_words", "attempts           1 (0 of 3 retries)", "timeout            the worker's default",
		"created            2026-01-02T03:04:05Z", "started            -", `args               {"Body":"a b c"}`, "result             3"} {
		if !strings.Contains(out, want+"\n") {
			t.Fatalf("job table lacks %q:\n%s", want, out)
		}
	}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "job", jobID, "--json"); out != jsonOf(t, j) {
		t.Fatalf("job --json printed %s; want the job's own JSON", out)
	}
	wantRun(t, &fakeApp{admin: f}, 1, "job: job not found\n", "job", "nosuchjob")
}

func TestJobCancelAndDelete_SayWhatHappenedOrWhyNot(t *testing.T) {
	f := &fakeAdmin{canceled: "canceled"}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "job", "cancel", jobID); out != "canceled "+jobID+"\n" {
		t.Fatalf("job cancel printed %q", out)
	}
	f.canceled = "processing"
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "job", "cancel", jobID); !strings.HasPrefix(out, "cancel of "+jobID+" asked: it is running") {
		t.Fatalf("job cancel of a running job printed %q", out)
	}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "job", "delete", jobID); out != "deleted "+jobID+"\n" {
		t.Fatalf("job delete printed %q", out)
	}
	if got := strings.Join(f.acted, ", "); got != "cancel "+jobID+", cancel "+jobID+", delete "+jobID {
		t.Fatalf("acted: %s", got)
	}
	for _, action := range []string{"cancel", "delete"} {
		refused := fmt.Errorf("%w: cannot %s job %s: it is canceled", admin.ErrWrongState, action, jobID)
		f := &fakeAdmin{errs: map[string]error{"Cancel": refused, "Delete": refused}}
		wantRun(t, &fakeApp{admin: f}, 1, "job: job is in the wrong state: cannot "+action+" job "+jobID+": it is canceled\n", "job", action, jobID)
		f.errs = map[string]error{"Cancel": fmt.Errorf("%w: nosuchjob", admin.ErrJobNotFound), "Delete": fmt.Errorf("%w: nosuchjob", admin.ErrJobNotFound)}
		wantRun(t, &fakeApp{admin: f}, 1, "job: job not found: nosuchjob\n", "job", action, "nosuchjob")
		wantRun(t, &fakeApp{admin: f}, 2, "job: want one job ID after "+action+"\n", "job", action)
	}
}

func TestPause_OfAnUnknownRouteIsAUsageErrorNamingTheKnownOnes(t *testing.T) {
	unknown := fmt.Errorf(`%w "defualt": known routes: default, email`, admin.ErrUnknownRoute)
	for _, cmd := range []string{"pause", "resume"} {
		f := &fakeAdmin{errs: map[string]error{"Pause": unknown, "Resume": unknown}}
		wantRun(t, &fakeApp{admin: f}, 2, cmd+`: unknown route "defualt": known routes: default, email`+"\n", cmd, "defualt")
		f.errs = nil
		if out := wantRun(t, &fakeApp{admin: f}, 0, "", cmd, "default", "email"); out != cmd+"d default, email\n" {
			t.Fatalf("%s printed %q", cmd, out)
		}
	}
}

func TestQueues_TableSaysPausedAndRoutesNoWorkerTakes(t *testing.T) {
	f := &fakeAdmin{routes: []bananastype.Route{
		{Route: "default", Low: 3, Scheduled: 1, Paused: true, OldestPending: time.Now(), OldestPendingAge: 90 * time.Second},
		{Route: "email", High: 1, Dead: 2, Workers: 2},
	}}
	want := "ROUTE    HIGH  NORMAL  LOW  SCHEDULED  ACTIVE  DLQ  OLDEST  STATE    WORKERS\n" +
		"default  0     0       3    1          0       0    1m30s   PAUSED   none\n" +
		"email    1     0       0    0          0       2    -       running  2\n"
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "queues"); out != want {
		t.Fatalf("queues printed\n%s\nwant\n%s", out, want)
	}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "queues", "--json"); out != jsonOf(t, f.routes) {
		t.Fatalf("queues --json printed %s; want the routes' own JSON", out)
	}
}

func TestCron_ListsTheEntriesAndRunsOne(t *testing.T) {
	next := time.Date(2026, 1, 3, 2, 0, 0, 0, time.UTC)
	f := &fakeAdmin{id: "01JCRON.reports", cron: []bananastype.Schedule{
		{Name: "nightly_report", Spec: "0 2 * * *", Route: "reports", NextRun: next, LastError: "smtp down\nstack"},
	}}
	want := "NAME            SPEC       TZ  ROUTE    LAST RUN  NEXT RUN              RUNS  LAST ERROR\n" +
		"nightly_report  0 2 * * *  -   reports  -         2026-01-03T02:00:00Z  0     smtp down\n"
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "cron", "list"); out != want {
		t.Fatalf("cron list printed\n%s\nwant\n%s", out, want)
	}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "cron", "list", "--json"); out != jsonOf(t, f.cron) {
		t.Fatalf("cron list --json printed %s; want the entries' own JSON", out)
	}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "cron", "run", "nightly_report"); out != f.id+"\n" {
		t.Fatalf("cron run printed %q", out)
	}
	f.errs = map[string]error{"RunCron": fmt.Errorf(`%w "weekly": the cron entries of this program are nightly_report`, admin.ErrUnknownCron)}
	wantRun(t, &fakeApp{admin: f}, 2, `cron: unknown cron entry "weekly": the cron entries of this program are nightly_report`+"\n", "cron", "run", "weekly")
	wantRun(t, &fakeApp{admin: f}, 2, "cron: want: cron list, or cron run NAME\n", "cron")
}

func TestWorkers_ListsTheLiveWorkers(t *testing.T) {
	beat := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := &fakeAdmin{workers: []admin.Worker{
		{ID: "w1", Host: "box", PID: 42, Mode: "thin", Routes: []string{"images", "default"}, Concurrency: 2, InFlight: 1, LastBeat: beat},
		{ID: "s1", Host: "box", PID: 43, Mode: "scheduler-only", LastBeat: beat},
	}}
	want := "ID  HOST  PID  MODE            ROUTES          CONCURRENCY  IN FLIGHT  LAST BEAT\n" +
		"w1  box   42   thin            images,default  2            1          2026-01-02T03:04:05Z\n" +
		"s1  box   43   scheduler-only  -               0            0          2026-01-02T03:04:05Z\n"
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "workers"); out != want {
		t.Fatalf("workers printed\n%s\nwant\n%s", out, want)
	}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "workers", "--json"); out != jsonOf(t, f.workers) {
		t.Fatalf("workers --json printed %s; want the workers' own JSON", out)
	}
}

func TestDLQ_ListReplayAndPurge(t *testing.T) {
	died := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := &fakeAdmin{page: bananastype.JobPage{Jobs: []bananastype.Job{{ID: "d.email", Route: "email", Name: "send_email", Status: "failed", Attempts: 3, FinishedAt: died, Error: "no @"}}}}
	want := "ID       ROUTE  TASK        ATTEMPTS  DIED                  ERROR\n" +
		"d.email  email  send_email  3         2026-01-02T03:04:05Z  no @\n"
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "dlq", "list", "--route", "email"); out != want {
		t.Fatalf("dlq list printed\n%s\nwant\n%s", out, want)
	}
	if q := f.queries[0]; q.State != "failed" || q.Route != "email" || q.Limit != 100 {
		t.Fatalf("dlq list asked %+v", q)
	}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "dlq", "list", "--json"); out != jsonOf(t, f.page) {
		t.Fatalf("dlq list --json printed %s", out)
	}
	f.errs = map[string]error{"Jobs": admin.BadQuery("cursor", "cursor: not one of this listing")}
	wantRun(t, &fakeApp{admin: f}, 2, "dlq: bad query: cursor: not one of this listing\n", "dlq", "list", "--cursor", "x")
	wantRun(t, &fakeApp{admin: f}, 2, "dlq: want replay ID or replay --all\n", "dlq", "replay")
}

// The exit status says whose fault it was: 2 for the command line (its
// flags, its arguments, a route or cron entry it names), 1 for the rest.
func TestExitStatus_FollowsTheClassOfTheError(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
		msg  string
	}{
		{Usage(fmt.Errorf("bananas: want one job ID")), 2, "want one job ID"},
		{admin.BadQuery("limit", "limit %d: want 1 to 500", 0), 2, "bad query: limit 0: want 1 to 500"},
		{fmt.Errorf("%w %q", admin.ErrUnknownRoute, "x"), 2, `unknown route "x"`},
		{fmt.Errorf("%w %q", admin.ErrUnknownCron, "x"), 2, `unknown cron entry "x"`},
		{fmt.Errorf("%w: x", admin.ErrJobNotFound), 1, "job not found: x"},
		{fmt.Errorf("%w: it is completed", admin.ErrWrongState), 1, "job is in the wrong state: it is completed"},
		{fmt.Errorf("bananas: redis: i/o timeout"), 1, "redis: i/o timeout"},
	} {
		if code, msg := exitStatus(c.err); code != c.code || msg != c.msg {
			t.Errorf("exitStatus(%v) = %d %q; want %d %q", c.err, code, msg, c.code, c.msg)
		}
	}
}

// Text a job carries (a description, an error) with a tab, a newline or an
// escape stays in its cell and its row: each control character is a space.
func TestJob_ControlCharactersInAJobsTextStayInTheirCell(t *testing.T) {
	j := &bananastype.Job{ID: jobID, Name: "count_words", Route: "default", Priority: "low", Status: "pending",
		Description: "nightly\tbatch\nstatus  forged\x1b[2J"}
	f := &fakeAdmin{jobs: map[string]*bananastype.Job{jobID: j}}
	out := wantRun(t, &fakeApp{admin: f}, 0, "", "job", jobID)
	if !strings.Contains(out, "description        nightly batch status  forged [2J\n") || strings.Contains(out, "\x1b") ||
		strings.Count(out, "\nstatus ") != 1 {
		t.Fatalf("job table of a job whose description holds control characters:\n%s", out)
	}
}

// A running job that reported progress shows a progress row under its
// status: percent, note and how long ago; one without shows none.
func TestJob_ShowsTheProgressOfARunningJob(t *testing.T) {
	j := &bananastype.Job{ID: jobID, Name: "resize_image", Route: "images", Priority: "normal", Status: "processing", Attempts: 1,
		Progress: &bananastype.Progress{Percent: 40, Note: "resizing\nline two", At: time.Now().Add(-2 * time.Second)}}
	f := &fakeAdmin{jobs: map[string]*bananastype.Job{jobID: j}}
	out := wantRun(t, &fakeApp{admin: f}, 0, "", "job", jobID)
	if !regexp.MustCompile(`(?m)^status +processing\nprogress +40% resizing line two \([23]s ago\)\n`).MatchString(out) {
		t.Fatalf("job table of a running job with progress:\n%s\nwant a progress row under its status", out)
	}
	raw := wantRun(t, &fakeApp{admin: f}, 0, "", "job", jobID, "--json")
	var back bananastype.Job
	if err := json.Unmarshal([]byte(raw), &back); err != nil || back.Progress == nil || back.Progress.Percent != 40 ||
		back.Progress.Note != j.Progress.Note || !back.Progress.At.Equal(j.Progress.At) {
		t.Fatalf("job --json = %s (%v); want progress, note and at that read back", raw, err)
	}
	j.Progress = nil
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "job", jobID); strings.Contains(out, "progress") {
		t.Fatalf("job table without progress:\n%s\nwant no progress row", out)
	}
	if raw := wantRun(t, &fakeApp{admin: f}, 0, "", "job", jobID, "--json"); strings.Contains(raw, `"progress"`) || strings.Contains(raw, `"note"`) || strings.Contains(raw, `"at"`) {
		t.Fatalf("job --json without progress = %s; want no progress, note or at", raw)
	}
}
