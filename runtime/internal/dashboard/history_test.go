package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
)

// historyAdmin is fakeAdmin with a task history: History answers page and
// keeps the query it was given, or answers err.
type historyAdmin struct {
	*fakeAdmin
	page  bananastype.HistoryPage
	err   error
	asked []admin.HistoryQuery
}

func (h *historyAdmin) History(_ context.Context, q admin.HistoryQuery) (bananastype.HistoryPage, error) {
	h.asked = append(h.asked, q)
	return h.page, h.err
}

func historyServer(t *testing.T, h *historyAdmin) (string, *http.Client) {
	t.Helper()
	srv := httptest.NewServer(New(h, Config{}))
	t.Cleanup(srv.Close)
	c := srv.Client()
	c.Jar = &jar{}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return srv.URL, c
}

func TestHistoryPage_PassesTheFiltersAndLinksEachRowAndTheNextPage(t *testing.T) {
	ended := time.Date(2026, 11, 26, 22, 4, 5, 0, time.UTC)
	h := &historyAdmin{fakeAdmin: &fakeAdmin{}, page: bananastype.HistoryPage{Next: "c2", Jobs: []bananastype.Job{
		{ID: "a/b.email", Life: 1, Attempts: 3, Name: "send_email", Route: "email", Status: queue.StatusFailed, Error: "<b>smtp</b>", FinishedAt: ended},
	}}}
	base, c := historyServer(t, h)
	status, body := get(t, c, base+"/history?task=send_email&route=email&status=failed&since=2026-11-26T00:00&until=2026-11-27T00:00:00Z"+
		"&q=smtp&arg=To%3Da%40b&arg=&arg=customer.id%3D42&limit=10")
	if status != http.StatusOK {
		t.Fatalf("GET /history = %d:\n%s", status, body)
	}
	want := admin.HistoryQuery{Task: "send_email", Route: "email", Status: "failed", Since: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC),
		Until: time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC), Text: "smtp", Args: map[string]string{"To": "a@b", "customer.id": "42"}, Limit: 10}
	if !reflect.DeepEqual(h.asked[0], want) {
		t.Fatalf("the page asked %+v\nwant %+v", h.asked[0], want)
	}
	for _, s := range []string{
		`<a href="/jobs/a%2Fb.email">a/b.email</a>`, `life 1`, `&lt;b&gt;smtp&lt;/b&gt;`, `2026-11-26 22:04:05Z`,
		`<option selected>failed</option>`, `name="arg" value="To=a@b"`, `name="arg" value="customer.id=42"`, `name="arg" value=""`,
		`aria-current="page">History</a>`,
		`href="/history?arg=To%3Da%40b&amp;arg=&amp;arg=customer.id%3D42&amp;cursor=c2&amp;limit=10&amp;q=smtp&amp;route=email&amp;since=2026-11-26T00%3A00&amp;status=failed&amp;task=send_email&amp;until=2026-11-27T00%3A00%3A00Z"`,
	} {
		if !strings.Contains(body, s) {
			t.Errorf("the history page lacks %s:\n%s", s, body)
		}
	}
}

func TestHistoryPage_ABadFilterKeepsTheFormAndSaysWhy(t *testing.T) {
	h := &historyAdmin{fakeAdmin: &fakeAdmin{}}
	base, c := historyServer(t, h)
	for target, why := range map[string]string{
		"/history?since=yesterday": `since &#34;yesterday&#34;: want a time`,
		"/history?arg=nothing":     `args &#34;nothing&#34;: want field=value`,
	} {
		status, body := get(t, c, base+target)
		if status != http.StatusBadRequest || !strings.Contains(body, why) || !strings.Contains(body, `id="history-filters"`) {
			t.Errorf("GET %s = %d; want 400 with the form and %s:\n%s", target, status, why, body)
		}
	}
	if len(h.asked) != 0 {
		t.Fatalf("a bad filter reached the admin layer: %+v", h.asked)
	}
	h.err = admin.InvalidValue("status", "done", "use completed, failed or canceled")
	if status, body := get(t, c, base+"/history?status=done"); status != http.StatusBadRequest || !strings.Contains(body, "use completed, failed or canceled") {
		t.Errorf("GET /history?status=done = %d:\n%s", status, body)
	}
}

func TestHistoryPage_WithoutAHistorySaysToSetHISTORY_URL(t *testing.T) {
	base, c := historyServer(t, &historyAdmin{fakeAdmin: &fakeAdmin{}, err: admin.ErrNoHistory})
	if status, body := get(t, c, base+"/history"); status != http.StatusNotFound || !strings.Contains(body, "HISTORY_URL") {
		t.Fatalf("GET /history without a history = %d; want 404 naming HISTORY_URL:\n%s", status, body)
	}
}

func TestJobPage_AJobFromTheHistorySaysSoAndOffersNoAction(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	f := &fakeAdmin{jobs: map[string]*bananastype.Job{"j1": {
		ID: "j1", Name: "email.send", Route: "mail", Priority: queue.Normal, Status: queue.StatusFailed, Attempts: 3, FromHistory: true,
		CreatedAt: t0, StartedAt: t0.Add(time.Second), FinishedAt: t0.Add(2 * time.Second), Error: "smtp: mailbox full",
		Args: json.RawMessage(`{"to":"a@example.com"}`),
	}}}
	srv, c := server(t, f)
	status, body := get(t, c, srv.URL+"/jobs/j1")
	if status != http.StatusOK {
		t.Fatalf("GET /jobs/j1 = %d:\n%s", status, body)
	}
	for _, want := range []string{`id="from-history"`, `Read from the task history`, `<pre class="error" id="error">smtp: mailbox full</pre>`,
		`&#34;to&#34;: &#34;a@example.com&#34;`, `<span>Run 3 started</span>`, `<span>Failed for good</span>`, `href="/history?route=mail"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the job page lacks %s:\n%s", want, body)
		}
	}
	for _, action := range []string{`id="replay"`, `id="cancel"`, `id="delete"`} {
		if strings.Contains(body, action) {
			t.Errorf("the page of a job gone from Redis offers %s", action)
		}
	}
}

func TestJobPage_ACompletedJobFromTheHistoryShowsItsResult(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	f := &fakeAdmin{jobs: map[string]*bananastype.Job{"j2": {
		ID: "j2", Name: "count_words", Route: "default", Priority: queue.Low, Status: queue.StatusCompleted, Attempts: 1, FromHistory: true,
		CreatedAt: t0, StartedAt: t0.Add(time.Second), FinishedAt: t0.Add(2 * time.Second),
		Args: json.RawMessage(`{"Body":"a b c"}`), ResultJSON: json.RawMessage(`3`),
	}}}
	srv, c := server(t, f)
	status, body := get(t, c, srv.URL+"/jobs/j2")
	for _, want := range []string{`id="from-history"`, `<pre class="json" id="result">3</pre>`, `&#34;Body&#34;: &#34;a b c&#34;`, `<span>Completed</span>`} {
		if status != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET /jobs/j2 = %d, lacking %s:\n%s", status, want, body)
		}
	}
}
