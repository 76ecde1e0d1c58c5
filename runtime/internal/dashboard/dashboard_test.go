package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
)

// fakeAdmin answers from memory. The embedded interface is nil: a page that
// calls a method the fake does not define panics, which the test reports.
type fakeAdmin struct {
	admin.Admin
	routes  []bananastype.Route
	tasks   []admin.Task
	schemas map[string]json.RawMessage
	jobs    map[string]*bananastype.Job
	// replayErr is what Replay answers.
	replayErr error
	// listed is the last query Jobs was given.
	listed admin.JobQuery
	// workflows are Workflow's answers, by id; wfActed the workflow
	// actions taken ("retry ID").
	workflows map[string]*bananastype.Workflow
	wfActed   []string
	// audits are the audit entries recorded.
	audits []bananastype.AuditEntry
}

func (f *fakeAdmin) Audit(_ context.Context, e bananastype.AuditEntry) error {
	f.audits = append(f.audits, e)
	return nil
}

func (f *fakeAdmin) AuditLog(context.Context, admin.AuditQuery) (bananastype.AuditPage, error) {
	return bananastype.AuditPage{Entries: f.audits}, nil
}

func (f *fakeAdmin) Workflow(_ context.Context, id string) (*bananastype.Workflow, error) {
	if w, ok := f.workflows[id]; ok {
		return w, nil
	}
	return nil, fmt.Errorf("%w: %s", admin.ErrWorkflowNotFound, id)
}

func (f *fakeAdmin) CancelWorkflow(ctx context.Context, id string) (*bananastype.Workflow, error) {
	f.wfActed = append(f.wfActed, "cancel "+id)
	return f.Workflow(ctx, id)
}

func (f *fakeAdmin) RetryWorkflow(ctx context.Context, id string) (*bananastype.Workflow, int, error) {
	f.wfActed = append(f.wfActed, "retry "+id)
	w, err := f.Workflow(ctx, id)
	return w, 2, err
}

func (f *fakeAdmin) Routes(context.Context) ([]bananastype.Route, error) { return f.routes, nil }
func (f *fakeAdmin) Tasks() []admin.Task                                 { return f.tasks }

func (f *fakeAdmin) ArgsSchemas() (map[string]json.RawMessage, error) { return f.schemas, nil }

func (f *fakeAdmin) Job(_ context.Context, id string) (*bananastype.Job, error) {
	if j, ok := f.jobs[id]; ok {
		return j, nil
	}
	return nil, fmt.Errorf("%w: %s", admin.ErrJobNotFound, id)
}

func (f *fakeAdmin) Jobs(_ context.Context, q admin.JobQuery) (bananastype.JobPage, error) {
	f.listed = q
	var page bananastype.JobPage
	for _, j := range f.jobs {
		if j.Status == q.State {
			page.Jobs = append(page.Jobs, *j)
		}
	}
	return page, nil
}

func (f *fakeAdmin) Replay(context.Context, string) error { return f.replayErr }

// server is the dashboard of f, without a token, and a client that keeps
// its cookies and does not follow redirects.
func server(t *testing.T, f admin.Admin) (*httptest.Server, *http.Client) {
	t.Helper()
	srv := httptest.NewServer(New(f, Config{}))
	t.Cleanup(srv.Close)
	c := srv.Client()
	c.Jar = &jar{}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return srv, c
}

// jar is the one cookie jar the tests need: every cookie set, sent back.
type jar struct{ cookies []*http.Cookie }

func (j *jar) SetCookies(_ *url.URL, cs []*http.Cookie) { j.cookies = append(j.cookies, cs...) }
func (j *jar) Cookies(*url.URL) []*http.Cookie          { return j.cookies }

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func TestOverview_ShowsEachRouteWithItsCountsAndState(t *testing.T) {
	f := &fakeAdmin{routes: []bananastype.Route{
		{Route: "mail", High: 3, Normal: 4, Dead: 2, Workers: 1, OldestPendingAge: 90 * time.Second},
		{Route: "reports", Paused: true},
	}}
	srv, c := server(t, f)
	status, body := get(t, c, srv.URL+"/")
	if status != http.StatusOK {
		t.Fatalf("GET / = %d; want 200:\n%s", status, body)
	}
	for _, want := range []string{
		`id="route-mail"`, `data-col="high" data-label="High">3<`, `data-col="normal" data-label="Normal">4<`,
		`href="/jobs?route=mail&amp;state=failed">2<`, `1m30s`, `action="/routes/mail/purge-dead"`,
		`id="route-reports" class="orphan paused"`, `action="/routes/reports/resume"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the overview lacks %s:\n%s", want, body)
		}
	}
}

func TestJobPage_ShowsArgsResultAndEarlierLives(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	f := &fakeAdmin{jobs: map[string]*bananastype.Job{"j1": {
		ID: "j1", Name: "email.send", Route: "mail", Priority: queue.Normal, Status: queue.StatusCompleted, Attempts: 1, MaxRetries: 3,
		CreatedAt: at(0), StartedAt: at(10), FinishedAt: at(11),
		Args:       json.RawMessage(`{"to":"a<b>@example.com"}`),
		ResultJSON: json.RawMessage(`{"sent":true}`),
		Earlier: []admin.EarlierLife{{FirstRun: 1, Attempts: 2, FailedAt: []time.Time{at(1), at(3)}, Started: at(2), Died: at(3),
			Replayed: at(9), Error: "smtp: mailbox unavailable"}},
	}}}
	srv, c := server(t, f)
	status, body := get(t, c, srv.URL+"/jobs/j1")
	if status != http.StatusOK {
		t.Fatalf("GET /jobs/j1 = %d; want 200:\n%s", status, body)
	}
	for _, want := range []string{
		`<dt>Task</dt><dd>email.send</dd>`, `1 (0 of 3 retries)`,
		"<pre class=\"json\" id=\"args\">{\n  &#34;to&#34;: &#34;a&lt;b&gt;@example.com&#34;\n}</pre>",
		"<pre class=\"json\" id=\"result\">{\n  &#34;sent&#34;: true\n}</pre>",
		`<span>Run 2 failed</span>`, `smtp: mailbox unavailable`, `<span>Replayed</span>`, `<span>Run 3 started</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the job page lacks %s:\n%s", want, body)
		}
	}
}

func TestJobPage_AnUnknownJobIsNotFound(t *testing.T) {
	srv, c := server(t, &fakeAdmin{})
	status, body := get(t, c, srv.URL+"/jobs/nope")
	if status != http.StatusNotFound || !strings.Contains(body, `id="problem">job not found: nope<`) {
		t.Fatalf("GET /jobs/nope = %d; want 404 saying the job is not found:\n%s", status, body)
	}
}

func TestReplay_AJobThatMovedShowsTheConflict(t *testing.T) {
	moved := fmt.Errorf("%w: job j1 is completed, not failed", admin.ErrWrongState)
	f := &fakeAdmin{replayErr: moved, jobs: map[string]*bananastype.Job{"j1": {ID: "j1", Status: queue.StatusFailed}}}
	srv, c := server(t, f)
	_, page := get(t, c, srv.URL+"/jobs/j1")
	m := csrfInput.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the job page has no CSRF token:\n%s", page)
	}
	resp, err := c.PostForm(srv.URL+"/jobs/j1/replay", url.Values{"csrf": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), `id="problem">job is in the wrong state: job j1 is completed, not failed<`) {
		t.Fatalf("POST replay = %d; want 409 saying the job is completed:\n%s", resp.StatusCode, b)
	}
}

func TestJobList_DeadJobsAreListedNewestFirst(t *testing.T) {
	f := &fakeAdmin{}
	srv, c := server(t, f)
	for state, newest := range map[string]bool{"failed": true, "pending": false, "scheduled": false} {
		if status, body := get(t, c, srv.URL+"/jobs?state="+state); status != http.StatusOK {
			t.Fatalf("GET /jobs?state=%s = %d:\n%s", state, status, body)
		}
		if f.listed.Newest != newest {
			t.Errorf("listing %s jobs asked for Newest %v; want %v", state, f.listed.Newest, newest)
		}
	}
}

func TestStatusOf_AFailureOfTheServerIsA500(t *testing.T) {
	if st, _ := statusOf(errors.New("redis: connection refused")); st != http.StatusInternalServerError {
		t.Fatalf("statusOf(a Redis error) = %d; want 500", st)
	}
	if st, msg := statusOf(admin.BadQuery("state", "unknown state %q", "x")); st != http.StatusBadRequest || msg != `bad query: unknown state "x"` {
		t.Fatalf("statusOf(a bad query) = %d %q; want 400 and its text", st, msg)
	}
}

func TestTasks_ShowEachTasksCronWithItsTimeZoneAndItsArgsSchema(t *testing.T) {
	f := &fakeAdmin{
		tasks: []admin.Task{
			{Name: "report.daily", Route: "reports", Priority: queue.Low, Cron: &admin.CronSpec{Spec: "0 3 * * *", TZ: "Europe/Paris"}},
			{Name: "tick", Route: "default", Priority: queue.Normal, Cron: &admin.CronSpec{Spec: "@every 1s"}},
			{Name: "email.send", Route: "mail", Priority: queue.Normal, Args: []admin.Field{{Name: "To", JSON: "to", Type: "string"}}},
		},
		schemas: map[string]json.RawMessage{"email.send": json.RawMessage(`{"type":"object"}`)},
	}
	srv, c := server(t, f)
	status, body := get(t, c, srv.URL+"/tasks")
	if status != http.StatusOK {
		t.Fatalf("GET /tasks = %d; want 200:\n%s", status, body)
	}
	for _, want := range []string{
		`<code>0 3 * * * (Europe/Paris)</code>`, `<code>@every 1s</code>`, `<li><code>to</code> string</li>`,
		"<pre class=\"json\">{\n  &#34;type&#34;: &#34;object&#34;\n}</pre>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the tasks page lacks %s:\n%s", want, body)
		}
	}
}
