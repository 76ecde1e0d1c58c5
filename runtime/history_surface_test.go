package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// searchStore is memStore with the search the operator surfaces call: every
// field of history.Query, newest end first, paged by a cursor (the offset
// of the next row, as text). It counts its migrations for `history
// migrate`.
type searchStore struct {
	*memStore
	migrations int
}

func newSearchStore() *searchStore { return &searchStore{memStore: newMemStore()} }

func (s *searchStore) Search(_ context.Context, q history.Query) (history.Page, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows []bananastype.Job
	for _, r := range s.rows {
		if selects(q, r) {
			rows = append(rows, r)
		}
	}
	slices.SortFunc(rows, func(a, b bananastype.Job) int {
		if c := b.FinishedAt.Compare(a.FinishedAt); c != 0 {
			return c
		}
		return strings.Compare(rowKey(b), rowKey(a))
	})
	from := 0
	if q.Cursor != "" {
		n, err := strconv.Atoi(q.Cursor)
		if err != nil || n < 0 {
			return history.Page{}, fmt.Errorf("%w: %q", history.ErrBadCursor, q.Cursor)
		}
		from = min(n, len(rows))
	}
	limit := q.Limit
	if limit == 0 {
		limit = 100
	}
	to := min(from+limit, len(rows))
	page := history.Page{Rows: rows[from:to]}
	if to < len(rows) {
		page.Next = strconv.Itoa(to)
	}
	return page, nil
}

func (s *searchStore) Migrate(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.migrations++
	return nil
}

// selects reports whether q selects r.
func selects(q history.Query, r bananastype.Job) bool {
	switch {
	case q.Task != "" && r.Name != q.Task, q.Route != "" && r.Route != q.Route, q.Status != "" && r.Status != q.Status,
		!q.Since.IsZero() && r.FinishedAt.Before(q.Since), !q.Until.IsZero() && !r.FinishedAt.Before(q.Until),
		q.Text != "" && !strings.Contains(r.ID, q.Text) && !strings.Contains(r.Error, q.Text):
		return false
	}
	for path, want := range q.Args {
		if got, ok := argAt(r.Args, path); !ok || got != want {
			return false
		}
	}
	return true
}

// argAt is the value at the dotted path of args as text: a string as it
// is, anything else as its JSON.
func argAt(args json.RawMessage, path string) (string, bool) {
	var v any
	if json.Unmarshal(args, &v) != nil {
		return "", false
	}
	for _, key := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		if v, ok = m[key]; !ok {
			return "", false
		}
	}
	if s, ok := v.(string); ok {
		return s, true
	}
	b, _ := json.Marshal(v)
	return string(b), true
}

// historyRows are n rows of t_echo on route default, one a minute ending at
// end - i minutes for row i, every third failed and every fifth canceled;
// row i's args are {"Text": "row i", "N": i}.
func historyRows(n int, end time.Time) []bananastype.Job {
	rows := make([]bananastype.Job, n)
	for i := range rows {
		r := bananastype.Job{ID: fmt.Sprintf("hist-%03d", i), Attempts: 1, Name: testtasks.Echo.Name(), Route: "default", Priority: "normal",
			Status: queue.StatusCompleted, Args: json.RawMessage(fmt.Sprintf(`{"Text":"row %d","N":%d}`, i, i)),
			ResultJSON: json.RawMessage(fmt.Sprintf(`{"Text":"row %d"}`, i)),
			CreatedAt:  end.Add(-time.Duration(i)*time.Minute - 2*time.Second), StartedAt: end.Add(-time.Duration(i)*time.Minute - time.Second),
			FinishedAt: end.Add(-time.Duration(i) * time.Minute), Worker: "host-1/42"}
		switch {
		case i%5 == 4:
			r.Status, r.ResultJSON, r.StartedAt, r.Error = queue.StatusCanceled, nil, time.Time{}, "canceled"
		case i%3 == 2:
			r.Status, r.ResultJSON, r.Attempts, r.Error = queue.StatusFailed, nil, 3, fmt.Sprintf("smtp: mailbox %d full", i)
		}
		rows[i] = r
	}
	return rows
}

// storeWith is a searchStore holding rows.
func storeWith(t *testing.T, rows []bananastype.Job) *searchStore {
	t.Helper()
	s := newSearchStore()
	if err := s.Write(ctxT(t), rows); err != nil {
		t.Fatal(err)
	}
	return s
}

func historyIDs(p bananastype.HistoryPage) []string {
	ids := make([]string, len(p.Jobs))
	for i, r := range p.Jobs {
		ids[i] = r.ID
	}
	return ids
}

func TestInspectorHistory_FiltersNewestFirstAndPagesByCursor(t *testing.T) {
	t.Parallel()
	end := time.Now().UTC().Truncate(time.Minute) // within the default window
	c := connect(t, "mem://", runtime.WithHistory(storeWith(t, historyRows(20, end))))
	in := runtime.NewInspector(c, testtasks.Register)
	ctx := ctxT(t)

	var seen []string
	q := admin.HistoryQuery{Status: "failed", Limit: 2}
	for pages := 0; ; pages++ {
		p, err := in.History(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Jobs {
			if r.Status != runtime.StatusFailed || r.Attempts != 3 || !strings.HasPrefix(r.Error, "smtp: mailbox") || r.ResultJSON != nil {
				t.Fatalf("failed row = %+v", r)
			}
		}
		seen = append(seen, historyIDs(p)...)
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
	}
	// Failed: i%3 == 2 and not i%5 == 4 (those are canceled).
	if want := []string{"hist-002", "hist-005", "hist-008", "hist-011", "hist-017"}; !slices.Equal(seen, want) {
		t.Fatalf("failed rows by page = %v; want %v, newest end first", seen, want)
	}

	p, err := in.History(ctx, admin.HistoryQuery{Args: map[string]string{"N": "7", "Text": "row 7"}})
	if err != nil || !slices.Equal(historyIDs(p), []string{"hist-007"}) {
		t.Fatalf("args N=7 = %v, %v; want hist-007", historyIDs(p), err)
	}
	r := p.Jobs[0]
	if string(r.Args) != `{"Text":"row 7","N":7}` || string(r.ResultJSON) != `{"Text":"row 7"}` || r.Name != "t_echo" || r.Worker != "host-1/42" ||
		!r.FinishedAt.Equal(end.Add(-7*time.Minute)) || r.StartedAt.IsZero() || r.Priority != runtime.PriorityNormal {
		t.Fatalf("row 7 = %+v", r)
	}
	p, err = in.History(ctx, admin.HistoryQuery{Since: end.Add(-3 * time.Minute), Until: end, Status: "canceled"})
	if err != nil || len(p.Jobs) != 0 {
		t.Fatalf("canceled in the last 3 minutes = %v, %v; want none", historyIDs(p), err)
	}
	p, err = in.History(ctx, admin.HistoryQuery{Since: end.Add(-5 * time.Minute), Status: "canceled"})
	if err != nil || !slices.Equal(historyIDs(p), []string{"hist-004"}) || !p.Jobs[0].StartedAt.IsZero() {
		t.Fatalf("canceled since 5 minutes before = %+v, %v; want hist-004, never started", p.Jobs, err)
	}
	p, err = in.History(ctx, admin.HistoryQuery{Text: "mailbox 11"})
	if err != nil || !slices.Equal(historyIDs(p), []string{"hist-011"}) {
		t.Fatalf("q=mailbox 11 = %v, %v", historyIDs(p), err)
	}
	if p, err = in.History(ctx, admin.HistoryQuery{}); err != nil || len(p.Jobs) != 20 || p.Jobs[0].ID != "hist-000" {
		t.Fatalf("every row = %v, %v; want 20, newest first", historyIDs(p), err)
	}
}

func TestInspectorHistory_RefusesABadQueryNamingItsField(t *testing.T) {
	t.Parallel()
	c := connect(t, "mem://", runtime.WithHistory(newSearchStore()))
	in := runtime.NewInspector(c)
	now := time.Now()
	for field, q := range map[string]admin.HistoryQuery{
		"status":       {Status: "pending"},
		"limit":        {Limit: 501},
		"until":        {Since: now, Until: now.Add(-time.Hour)},
		"args.a..b":    {Args: map[string]string{"a..b": "1"}},
		"args.":        {Args: map[string]string{"": "1"}},
		"args.custom.": {Args: map[string]string{"custom.": "1"}},
	} {
		_, err := in.History(ctxT(t), q)
		p := admin.Classify(err)
		if !errors.Is(err, runtime.ErrBadQuery) || p.Field != field {
			t.Errorf("%+v: %v (field %q); want a bad query naming %s", q, err, p.Field, field)
		}
	}
	if _, err := in.History(ctxT(t), admin.HistoryQuery{Status: "done"}); err == nil || !strings.Contains(err.Error(), "completed, failed or canceled") {
		t.Errorf("status done: %v; want the statuses named", err)
	}
}

// A text shorter than the minimum is refused naming q and the minimum: it
// matches through no trigram index, and would read every row in range.
func TestInspectorHistory_RefusesATextShorterThanTheMinimum(t *testing.T) {
	t.Parallel()
	c := connect(t, "mem://", runtime.WithHistory(storeWith(t, historyRows(3, time.Now()))))
	in := runtime.NewInspector(c)
	for _, text := range []string{"a", "ab", "é1"} {
		_, err := in.History(ctxT(t), admin.HistoryQuery{Text: text})
		if p := admin.Classify(err); p.Class != admin.BadInput || p.Field != "q" || !strings.Contains(p.Msg, "at least 3 characters") {
			t.Errorf("q=%q: %v (field %q); want a refusal of q naming the minimum", text, err, p.Field)
		}
	}
	if p, err := in.History(ctxT(t), admin.HistoryQuery{Text: "001"}); err != nil || !slices.Equal(historyIDs(p), []string{"hist-001"}) {
		t.Errorf("q=001: %v, %v; want hist-001", historyIDs(p), err)
	}
}

// A search without since reads the default window before its until, or
// before now, and the page says which window it searched.
func TestInspectorHistory_WithoutSinceSearchesTheDefaultWindowAndSaysWhich(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	old := historyRows(1, now.Add(-admin.HistoryWindow-time.Hour))[0]
	old.ID = "old"
	recent := historyRows(1, now.Add(-admin.HistoryWindow+time.Hour))[0]
	recent.ID = "recent"
	c := connect(t, "mem://", runtime.WithHistory(storeWith(t, []bananastype.Job{old, recent})))
	in := runtime.NewInspector(c)
	p, err := in.History(ctxT(t), admin.HistoryQuery{})
	if err != nil || !slices.Equal(historyIDs(p), []string{"recent"}) {
		t.Fatalf("no since: %v, %v; want only the row within the window", historyIDs(p), err)
	}
	if d := now.Add(-admin.HistoryWindow).Sub(p.Since); d < -time.Minute || d > time.Minute || !p.Until.IsZero() {
		t.Fatalf("the page says it searched %v to %v; want %s before now, open", p.Since, p.Until, admin.HistoryWindow)
	}
	until := now.Add(-admin.HistoryWindow)
	if p, err = in.History(ctxT(t), admin.HistoryQuery{Until: until}); err != nil || !slices.Equal(historyIDs(p), []string{"old"}) ||
		!p.Since.Equal(until.Add(-admin.HistoryWindow)) || !p.Until.Equal(until) {
		t.Fatalf("until only: %v (%v to %v), %v; want old, the window before until", historyIDs(p), p.Since, p.Until, err)
	}
	since := now.Add(-30 * 24 * time.Hour)
	if p, err = in.History(ctxT(t), admin.HistoryQuery{Since: since}); err != nil || len(p.Jobs) != 2 || !p.Since.Equal(since) {
		t.Fatalf("since 30 days: %v (since %v), %v; want both", historyIDs(p), p.Since, err)
	}
}

func TestInspectorHistory_AProgramWithoutAHistoryRefusesNamingHISTORY_URL(t *testing.T) {
	t.Parallel()
	in := runtime.NewInspector(connect(t, "mem://"))
	_, err := in.History(ctxT(t), admin.HistoryQuery{})
	if !errors.Is(err, runtime.ErrNoHistory) || !strings.Contains(err.Error(), "HISTORY_URL") {
		t.Fatalf("History without a store: %v; want ErrNoHistory naming HISTORY_URL", err)
	}
	if _, err := in.MigrateHistory(ctxT(t)); !errors.Is(err, runtime.ErrNoHistory) {
		t.Fatalf("MigrateHistory without a store: %v; want ErrNoHistory", err)
	}
	if p := admin.Classify(err); p.Class.HTTPStatus() >= 500 || p.Class.HTTPStatus() < 400 {
		t.Fatalf("ErrNoHistory is a %d; want a 4xx", p.Class.HTTPStatus())
	}
}

// A job that ended for good reaches the history and is found there by the
// Inspector's search with its args and result as JSON.
func TestInspectorHistory_FindsAJobAWorkerEnded(t *testing.T) {
	t.Parallel()
	store := newSearchStore()
	c := connect(t, sharedRedisURL(t), runtime.WithHistory(store))
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	testtasks.Register(w)
	startWorker(t, w)
	id, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "kept", N: 9})
	if err != nil {
		t.Fatal(err)
	}
	var p bananastype.HistoryPage
	waitFor(t, 10*time.Second, "the job in the history", func() bool {
		p, err = w.Inspector().History(ctxT(t), admin.HistoryQuery{Args: map[string]string{"N": "9"}})
		return err == nil && len(p.Jobs) == 1
	})
	r := p.Jobs[0]
	if r.ID != id || r.Status != runtime.StatusCompleted || string(r.Args) != `{"Text":"kept","N":9}` || string(r.ResultJSON) != `{"Text":"kept"}` {
		t.Fatalf("row = %+v", r)
	}
}

// GET /api/v1/history answers as the served document says, for every filter
// and a page after the first; what it refuses the document refuses too, and
// a program without a history answers the document's 404.
func TestOpenAPI_HistoryAnswersFollowTheDocument(t *testing.T) {
	t.Parallel()
	end := time.Now().UTC().Truncate(time.Second)
	c := connect(t, "mem://", runtime.WithHistory(storeWith(t, historyRows(12, end))))
	r := newSpecRig(t, c)
	first := r.conforms(http.StatusOK, "GET", "/api/v1/history?status=failed&limit=2", "").(map[string]any)
	next, _ := first["next"].(string)
	if jobs, _ := first["jobs"].([]any); len(jobs) != 2 || next == "" {
		t.Fatalf("first page = %v; want 2 rows and a next cursor", first)
	}
	r.conforms(http.StatusOK, "GET", "/api/v1/history?status=failed&limit=2&cursor="+next, "")
	since, until := url.QueryEscape(end.Add(-time.Hour).Format(time.RFC3339)), url.QueryEscape(end.Add(time.Second).Format(time.RFC3339))
	r.conforms(http.StatusOK, "GET", "/api/v1/history?task=t_echo&route=default&status=canceled&since="+since+"&until="+until+"&q=hist", "")
	path := "/api/v1/history?args.N=7&args.Text=row%207"
	page := r.conforms(http.StatusOK, "GET", path, "").(map[string]any)
	if jobs, _ := page["jobs"].([]any); len(jobs) != 1 || jobs[0].(map[string]any)["id"] != "hist-007" {
		t.Fatalf("%s = %v; want hist-007", path, page)
	}
	if !strings.Contains(string(r.doc), "args.customer.id=42") {
		t.Errorf("the served document does not describe the args.<field> parameters")
	}
	r.conforms(http.StatusOK, "GET", "/api/v1/history", "")
	for path, param := range map[string]string{
		"/api/v1/history?status=pending": "status", "/api/v1/history?limit=0": "limit", "/api/v1/history?nope=1": "nope",
		// An RFC 3339 time: the document says date-time, which its
		// validator does not check in a query.
		"/api/v1/history?since=yesterday": "", "/api/v1/history?args.a..b=1": "",
	} {
		e := r.answerConforms(http.StatusBadRequest, "GET", path, "")
		if param != "" && e["field"] != param {
			t.Errorf("GET %s: 400 %v; want an error about %s", path, e, param)
		}
		if param != "" {
			r.documentRefuses("GET", path, param)
		}
	}

	none := newSpecRig(t, connect(t, "mem://"))
	if e := none.answerConforms(http.StatusNotFound, "GET", "/api/v1/history", ""); !strings.Contains(fmt.Sprint(e["error"]), "HISTORY_URL") {
		t.Errorf("without a history: 404 %v; want it to name HISTORY_URL", e)
	}
}

// histmemStores are the stores of histmem:// URLs, by URL: a program run
// in-process by RunCommand opens its HISTORY_URL through history.Open, as a
// program that imports a store's package does.
var histmemStores sync.Map

func init() {
	history.Register("histmem", func(_ context.Context, url string) (history.Store, error) {
		s, ok := histmemStores.Load(url)
		if !ok {
			return nil, fmt.Errorf("no histmem store %s", url)
		}
		return s.(*searchStore), nil
	})
}

// histmemURL is a HISTORY_URL that opens s.
func histmemURL(t *testing.T, s *searchStore) string {
	url := "histmem://" + strings.ReplaceAll(t.Name(), "/", "-")
	histmemStores.Store(url, s)
	t.Cleanup(func() { histmemStores.Delete(url) })
	return url
}

func TestCLI_HistorySearchesAndMigratesTheStoreOfHISTORY_URL(t *testing.T) {
	t.Parallel()
	end := time.Now().UTC().Truncate(time.Minute) // within the default window
	store := storeWith(t, historyRows(8, end))
	a := newApp(t).with("HISTORY_URL", histmemURL(t, store))
	out := a.ok("history", "--status", "failed", "--limit", "1", "--since", "24h")
	since, _, _ := strings.Cut(out, "\n")
	if s, ok := strings.CutPrefix(since, "jobs ended since "); !ok || !strings.HasSuffix(s, ":") {
		t.Fatalf("history printed %q first; want the window it searched", since)
	}
	want := since + "\n" +
		"ENDED                 ID        TASK    ROUTE    STATUS  ATTEMPT  ERROR\n" +
		end.Add(-2*time.Minute).Format(time.RFC3339) + "  hist-002  t_echo  default  failed  3        smtp: mailbox 2 full\n" +
		"more: --cursor 1\n"
	if out != want {
		t.Fatalf("history printed\n%s\nwant\n%s", out, want)
	}
	var page bananastype.HistoryPage
	if err := json.Unmarshal([]byte(a.ok("history", "--arg", "N=7", "--json")), &page); err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != "hist-007" {
		t.Fatalf("history --arg N=7 --json = %+v, %v; want hist-007", page, err)
	}
	store.mu.Lock()
	before := store.migrations
	store.mu.Unlock()
	if out := a.ok("history", "migrate"); out != "the task history's schema is created and up to date\n" {
		t.Fatalf("history migrate printed %q", out)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if store.migrations <= before {
		t.Fatalf("history migrate ran no migration (%d, then %d)", before, store.migrations)
	}
}

func TestCLI_HistoryWithoutHISTORY_URLIsAConfigurationError(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"history"}, {"history", "migrate"}} {
		code, out, errOut := newApp(t).run(args...)
		if code != runtime.ExitUsage || out != "" || !strings.Contains(errOut, "HISTORY_URL") {
			t.Fatalf("%v without HISTORY_URL: exit %d, stdout %q, stderr %q; want exit 2 naming HISTORY_URL", args, code, out, errOut)
		}
	}
}
