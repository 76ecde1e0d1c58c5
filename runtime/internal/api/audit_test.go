package api

import (
	"net/http"
	"testing"

	"github.com/bananas-go/bananas/runtime/admin"
)

// An action is recorded once, as taken by the token's name through the
// API, with its outcome; a call beyond the role once as denied; a read not
// at all.
func TestAudit_EachActionIsRecordedOnceWithWhoAndOutcome(t *testing.T) {
	f := &fakeAdmin{}
	h := newAPI(f, Config{Tokens: roleTokens})
	send(t, h, "GET", "/api/v1/queues", "", "Authorization", "Bearer tok-read-0001")
	if len(f.audits) != 0 {
		t.Fatalf("a read was recorded: %+v", f.audits)
	}
	if r := send(t, h, "POST", "/api/v1/routes/emails/pause", "", "Authorization", "Bearer tok-operate-1"); r.status != http.StatusOK {
		t.Fatalf("pause: %d %s", r.status, r.raw)
	}
	if len(f.audits) != 1 {
		t.Fatalf("recorded %+v; want one entry", f.audits)
	}
	if e := f.audits[0]; e.Who != "oncall" || e.Via != "api" || e.What != "pauseRoute" || e.Target != "emails" || e.Outcome != "ok" {
		t.Fatalf("entry %+v", e)
	}

	f.audits = nil
	send(t, h, "POST", "/api/v1/routes/emails/pause", "", "Authorization", "Bearer tok-read-0001")
	if len(f.audits) != 1 || f.audits[0].Outcome != "denied" || f.audits[0].Who != "viewer" || f.audits[0].What != "pauseRoute" || f.audits[0].Target != "emails" {
		t.Fatalf("denied call recorded as %+v; want one denied entry", f.audits)
	}

	f.audits, f.err = nil, admin.ErrJobNotFound
	send(t, h, "POST", "/api/v1/jobs/j9/cancel", "", "Authorization", "Bearer tok-admin-001")
	if len(f.audits) != 1 || f.audits[0].Outcome != "refused" || f.audits[0].Target != "j9" || f.audits[0].Error == "" {
		t.Fatalf("refused call recorded as %+v; want one refused entry with its error", f.audits)
	}
}

// GET /api/v1/audit answers the log's page, and refuses a bad limit or
// cursor naming it.
func TestAudit_ListsThePageAndRefusesBadParameters(t *testing.T) {
	f := &fakeAdmin{}
	h := newAPI(f, Config{})
	send(t, h, "POST", "/api/v1/routes/emails/resume", "")
	r := send(t, h, "GET", "/api/v1/audit", "")
	entries, _ := r.body["entries"].([]any)
	if r.status != http.StatusOK || len(entries) != 1 || entries[0].(map[string]any)["who"] != "anonymous" {
		t.Fatalf("audit: %d %s", r.status, r.raw)
	}
	send(t, h, "GET", "/api/v1/audit?limit=0", "").refused(t, http.StatusBadRequest, "limit")
	send(t, h, "GET", "/api/v1/audit?cursor=x", "").refused(t, http.StatusBadRequest, "cursor")
}
