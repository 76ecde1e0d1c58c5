package cli

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
)

func TestHistory_ListsAPageNewestFirstWithTheNextCursor(t *testing.T) {
	ended := time.Date(2026, 11, 26, 22, 4, 5, 0, time.UTC)
	f := &fakeAdmin{history: bananastype.HistoryPage{Next: "c2", Jobs: []bananastype.Job{
		{ID: "b.email", Name: "send_email", Route: "email", Status: "failed", Attempts: 3, Error: "smtp: mailbox full\nstack", FinishedAt: ended,
			Args: json.RawMessage(`{"To":"a@b"}`)},
		{ID: "a.email", Name: "send_email", Route: "email", Status: "completed", Attempts: 1, FinishedAt: ended.Add(-time.Minute)},
	}}}
	out := wantRun(t, &fakeApp{admin: f}, 0, "", "history", "--task", "send_email", "--route", "email", "--status", "failed",
		"--since", "2026-11-26T00:00:00Z", "--until", "2026-11-27T00:00:00+01:00", "--q", "smtp", "--arg", "To=a@b", "--arg", "customer.id=42",
		"--limit", "2", "--cursor", "c1")
	want := "ENDED                 ID       TASK        ROUTE  STATUS     ATTEMPT  ERROR\n" +
		"2026-11-26T22:04:05Z  b.email  send_email  email  failed     3        smtp: mailbox full\n" +
		"2026-11-26T22:03:05Z  a.email  send_email  email  completed  1        -\n" +
		"more: --cursor c2\n"
	if out != want {
		t.Fatalf("history printed\n%s\nwant\n%s", out, want)
	}
	q := f.hqueries[0]
	if !q.Since.Equal(time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)) || !q.Until.Equal(time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)) {
		t.Fatalf("history asked since %v until %v", q.Since, q.Until)
	}
	q.Since, q.Until = time.Time{}, time.Time{}
	if want := (admin.HistoryQuery{Task: "send_email", Route: "email", Status: "failed", Text: "smtp",
		Args: map[string]string{"To": "a@b", "customer.id": "42"}, Cursor: "c1", Limit: 2}); !reflect.DeepEqual(q, want) {
		t.Fatalf("history asked %+v; want %+v", q, want)
	}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "history", "--json"); out != jsonOf(t, f.history) {
		t.Fatalf("history --json printed %s; want the page's own JSON", out)
	}
	if q := f.hqueries[1]; q.Limit != 50 || q.Status != "" || q.Args != nil {
		t.Fatalf("history asked %+v; want every row, 50 a page", q)
	}
}

func TestHistory_SinceTakesADurationBackFromNow(t *testing.T) {
	f := &fakeAdmin{}
	out := wantRun(t, &fakeApp{admin: f}, 0, "", "history", "--since", "24h")
	if out != "no job in the task history matches\n" {
		t.Fatalf("an empty page printed %q", out)
	}
	if d := time.Since(f.hqueries[0].Since); d < 24*time.Hour || d > 25*time.Hour {
		t.Fatalf("--since 24h asked since %v (%v ago)", f.hqueries[0].Since, d)
	}
}

func TestHistory_SaysTheWindowItSearched(t *testing.T) {
	since := time.Date(2026, 11, 19, 22, 0, 0, 0, time.UTC)
	f := &fakeAdmin{history: bananastype.HistoryPage{Since: since}}
	out := wantRun(t, &fakeApp{admin: f}, 0, "", "history")
	if want := "no job in the task history matches (searched jobs ended since 2026-11-19T22:00:00Z)\n"; out != want {
		t.Fatalf("an empty page of the default window printed %q; want %q", out, want)
	}
	f.history = bananastype.HistoryPage{Since: since, Until: since.Add(time.Hour), Jobs: []bananastype.Job{
		{ID: "a.email", Name: "send_email", Route: "email", Status: "completed", Attempts: 1, FinishedAt: since.Add(time.Minute)}}}
	out = wantRun(t, &fakeApp{admin: f}, 0, "", "history")
	if first, _, _ := strings.Cut(out, "\n"); first != "jobs ended since 2026-11-19T22:00:00Z, before 2026-11-19T23:00:00Z:" {
		t.Fatalf("a page printed %q first; want the window it searched", first)
	}
}

func TestHistory_RefusalsAreUsageErrorsNamingTheFlag(t *testing.T) {
	app := &fakeApp{admin: &fakeAdmin{}}
	wantRun(t, app, 2, "history: --since yesterday: want an RFC 3339 time such as 2026-11-26T22:00:00Z, or a duration back from now such as 24h (history -h lists the flags)\n",
		"history", "--since", "yesterday")
	wantRun(t, app, 2, "history: --arg nothing: want field=value, such as customer.id=42 (history -h lists the flags)\n", "history", "--arg", "nothing")
	f := &fakeAdmin{errs: map[string]error{"History": admin.InvalidValue("status", "done", "use completed, failed or canceled")}}
	wantRun(t, &fakeApp{admin: f}, 2, "history: --status done: use completed, failed or canceled\n", "history", "--status", "done")
	f = &fakeAdmin{errs: map[string]error{"History": admin.BadQuery("args.a..b", "args.a..b: want a field of the args")}}
	wantRun(t, &fakeApp{admin: f}, 2, "history: --arg a..b: bad query: args.a..b: want a field of the args\n", "history", "--arg", "a..b=1")
}

func TestHistory_WithoutAHistoryIsAConfigurationErrorNamingHISTORY_URL(t *testing.T) {
	f := &fakeAdmin{errs: map[string]error{"History": admin.ErrNoHistory, "MigrateHistory": admin.ErrNoHistory}}
	for _, args := range [][]string{{"history"}, {"history", "migrate"}} {
		code, out, errOut := run(t, &fakeApp{admin: f}, args...)
		if code != ExitUsage || out != "" || !strings.Contains(errOut, "HISTORY_URL") || !strings.HasPrefix(errOut, "history: no task history") {
			t.Fatalf("%q: exit %d, stdout %q, stderr %q; want exit 2 naming HISTORY_URL", args, code, out, errOut)
		}
	}
}

func TestHistoryMigrate_RunsTheMigrationAndSaysWhatItDid(t *testing.T) {
	f := &fakeAdmin{migrated: true}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "history", "migrate"); out != "the task history's schema is created and up to date\n" || f.migrateds != 1 {
		t.Fatalf("history migrate printed %q after %d migrations", out, f.migrateds)
	}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "history", "migrate", "--json"); out != "{\n  \"migrated\": true\n}\n" {
		t.Fatalf("history migrate --json printed %q", out)
	}
	f.migrated = false
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "history", "migrate"); !strings.Contains(out, "nothing to migrate") {
		t.Fatalf("history migrate of a store without a schema printed %q", out)
	}
	wantRun(t, &fakeApp{admin: f}, 2, `history: unexpected argument "now"`+"\n", "history", "migrate", "now")
}

func TestHelp_ListsTheHistoryCommands(t *testing.T) {
	out := wantRun(t, &fakeApp{admin: &fakeAdmin{}}, 0, "", "help")
	for _, want := range []string{"\n  history                     search the task history", "\n  history migrate             create or migrate"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
	if out := wantRun(t, &fakeApp{admin: &fakeAdmin{}}, 0, "", "history", "-h"); !strings.Contains(out, "-arg") || !strings.Contains(out, "history migrate") {
		t.Errorf("history -h printed\n%s", out)
	}
}
