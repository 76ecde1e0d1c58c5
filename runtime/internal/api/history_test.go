package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
)

func TestHistory_PassesEveryFilterToTheAdminLayer(t *testing.T) {
	f := &fakeAdmin{}
	h := newAPI(f, Config{})
	r := send(t, h, "GET", "/api/v1/history?task=send_email&route=email&status=failed&since=2026-11-26T10:00:00Z&until=2026-11-26T11:00:00%2B01:00"+
		"&q=smtp&args.To=a%40b&args.customer.id=42&cursor=c1&limit=20", "")
	if r.status != http.StatusOK {
		t.Fatalf("answer %d %s", r.status, r.raw)
	}
	want := admin.HistoryQuery{Task: "send_email", Route: "email", Status: "failed",
		Since: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC), Until: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC),
		Text: "smtp", Args: map[string]string{"To": "a@b", "customer.id": "42"}, Cursor: "c1", Limit: 20}
	got := f.hquery
	if !got.Since.Equal(want.Since) || !got.Until.Equal(want.Until) {
		t.Fatalf("since %v until %v; want %v and %v", got.Since, got.Until, want.Since, want.Until)
	}
	got.Since, got.Until, want.Since, want.Until = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("query %+v\nwant  %+v", got, want)
	}
}

func TestHistory_BadParameterIsRefusedByName(t *testing.T) {
	h := newAPI(&fakeAdmin{}, Config{})
	for target, field := range map[string]string{
		"/api/v1/history?since=yesterday":   "since",
		"/api/v1/history?until=2026-11-26":  "until",
		"/api/v1/history?limit=501":         "limit",
		"/api/v1/history?limit=x":           "limit",
		"/api/v1/history?state=failed":      "state",
		"/api/v1/history?argsX=1":           "argsX",
		"/api/v1/history?args.N=1&args.N=2": "args.N",
		"/api/v1/history?status=a&status=b": "status",
		"/api/v1/history?cursor=a&cursor=b": "cursor",
		"/api/v1/jobs?args.N=1":             "args.N",
	} {
		send(t, h, "GET", target, "").refused(t, http.StatusBadRequest, field)
	}
	// The admin layer's refusals keep their field and class.
	h = newAPI(&fakeAdmin{err: admin.InvalidValue("status", "done", "use completed, failed or canceled")}, Config{})
	send(t, h, "GET", "/api/v1/history?status=done", "").refused(t, http.StatusBadRequest, "status")
}

func TestHistory_WithoutAHistoryIsA404NamingHISTORY_URL(t *testing.T) {
	r := send(t, newAPI(&fakeAdmin{err: admin.ErrNoHistory}, Config{}), "GET", "/api/v1/history", "")
	r.refused(t, http.StatusNotFound, "")
	if msg, _ := r.body["error"].(string); !strings.Contains(msg, "HISTORY_URL") {
		t.Fatalf("error %q; want it to name HISTORY_URL", msg)
	}
}

func TestHistory_AnswerIsThePageOfRows(t *testing.T) {
	at := time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)
	f := &fakeAdmin{hpage: bananastype.HistoryPage{Next: "n2", Since: at.Add(-7 * 24 * time.Hour), Jobs: []bananastype.Job{
		{ID: "j1", Attempts: 1, Name: "t", Route: "default", Priority: "normal", Status: "completed", Args: json.RawMessage(`{"N":1}`),
			ResultJSON: json.RawMessage(`2`), CreatedAt: at, StartedAt: at.Add(time.Second), FinishedAt: at.Add(2 * time.Second), Worker: "w1"},
		{ID: "j2", Life: 1, Attempts: 3, Name: "t", Route: "default", Priority: "high", Status: "canceled", Error: "canceled␀", CreatedAt: at, FinishedAt: at,
			Sanitized: "error: NUL bytes replaced by U+2400"},
	}}}
	r := send(t, newAPI(f, Config{}), "GET", "/api/v1/history", "")
	want := `{"jobs":[` +
		`{"id":"j1","life":0,"attempt":1,"task":"t","route":"default","priority":"normal","status":"completed","args":{"N":1},"result":2,"error":"",` +
		`"enqueued_at":"2026-11-26T22:00:00Z","started_at":"2026-11-26T22:00:01Z","ended_at":"2026-11-26T22:00:02Z","worker":"w1"},` +
		`{"id":"j2","life":1,"attempt":3,"task":"t","route":"default","priority":"high","status":"canceled","args":null,"result":null,"error":"canceled␀",` +
		`"enqueued_at":"2026-11-26T22:00:00Z","started_at":null,"ended_at":"2026-11-26T22:00:00Z","worker":"","sanitized":"error: NUL bytes replaced by U+2400"}` +
		`],"next":"n2","since":"2026-11-19T22:00:00Z","until":null}` + "\n"
	if r.raw != want {
		t.Fatalf("answer %d\n%s\nwant\n%s", r.status, r.raw, want)
	}
	var back bananastype.HistoryPage
	if err := json.Unmarshal([]byte(r.raw), &back); err != nil || !reflect.DeepEqual(back.Jobs[1], f.hpage.Jobs[1]) || back.Next != "n2" || !back.Since.Equal(f.hpage.Since) || !back.Until.IsZero() ||
		string(back.Jobs[0].Args) != `{"N":1}` || !back.Jobs[0].StartedAt.Equal(f.hpage.Jobs[0].StartedAt) {
		t.Fatalf("read back %+v, %v", back, err)
	}
}
