package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/runtime/internal/access"
)

// roleTokens are a token of each role, as API_TOKENS gives them.
var roleTokens = []access.Token{
	{Name: "viewer", Role: access.Read, Token: "tok-read-0001"},
	{Name: "oncall", Role: access.Operate, Token: "tok-operate-1"},
	{Name: "root", Role: access.Admin, Token: "tok-admin-001"},
}

// wantRole is the least role each action needs, written out here rather
// than read from the table, so that a change of the table's roles is a
// change of this test too. An action not listed needs admin (the default of
// an action whose entry says nothing).
var wantRole = map[string]access.Role{
	"submitJob": access.Operate, "submitJobs": access.Operate, "runJobNow": access.Operate, "cancelJob": access.Operate,
	"submitWorkflow": access.Operate, "cancelWorkflow": access.Operate, "retryWorkflow": access.Operate,
	"pauseRoute": access.Operate, "resumeRoute": access.Operate, "cancelWaitingJobs": access.Operate, "runScheduledJobs": access.Operate,
	"replayDeadJob": access.Operate, "replayDeadJobs": access.Operate, "runCron": access.Operate,
	"putSchedule": access.Operate, "deleteSchedule": access.Operate, "pauseSchedule": access.Operate,
	"resumeSchedule": access.Operate, "runSchedule": access.Operate, "backfillSchedule": access.Operate,
	"signalWorkflow": access.Operate,

	"deleteJob": access.Admin, "setRouteShards": access.Admin, "setRouteLimits": access.Admin, "purgeDeadJobs": access.Admin,
	"rotateKeys": access.Admin,
}

// Every endpoint of the table, called with a token of each role: a role
// below what the endpoint needs is a 403 whose body names the role needed
// (in its role key and its words), and nothing of the endpoint runs; a role
// that may is let through to the endpoint's own checks (here the unknown
// query parameter it refuses with a 400, so that no action is taken). Reads
// are open to every role; the probes to callers without a token.
func TestRoles_EveryEndpointRefusesExactlyTheRolesBelowWhatItNeeds(t *testing.T) {
	f := &fakeAdmin{}
	h := newAPI(f, Config{Tokens: roleTokens})
	for _, e := range endpoints {
		need := access.Read
		switch {
		case e.Public:
			need = ""
		case e.Action:
			need = access.Admin
			if r, ok := wantRole[e.ID]; ok {
				need = r
			}
		}
		if got := e.Needs(); got != need {
			t.Errorf("%s (%s) needs %q in the table, want %q", e.Pattern(), e.ID, got, need)
		}
		if e.Public {
			continue
		}
		path := e.Path
		for _, p := range e.PathParams {
			path = strings.ReplaceAll(path, "{"+p.Name+"}", "x")
		}
		for _, tok := range roleTokens {
			r := send(t, h, e.Method, path+"?not_a_param=1", "", "Authorization", "Bearer "+tok.Token)
			what := fmt.Sprintf("%s %s as %s (%s)", e.Method, path, tok.Name, tok.Role)
			if tok.Role.Allows(need) {
				if r.status != http.StatusBadRequest || r.body["field"] != "not_a_param" {
					t.Errorf("%s: answer %d %s; want it let through to the endpoint (400 for the unknown parameter)", what, r.status, r.raw)
				}
				continue
			}
			if r.status != http.StatusForbidden || r.body["role"] != string(need) || !strings.Contains(r.raw, "needs the "+string(need)+" role") {
				t.Errorf("%s: answer %d %s; want 403 naming the %s role", what, r.status, r.raw, need)
			}
		}
	}
	if len(f.subs) != 0 || f.route != "" {
		t.Fatalf("an endpoint ran: %+v", f)
	}
}

// API_TOKEN is one more token, of the admin role, beside API_TOKENS.
func TestRoles_TheSingleTokenIsAnAdminBesideTheOthers(t *testing.T) {
	h := newAPI(&fakeAdmin{}, Config{Token: "legacy-token", Tokens: roleTokens[:1]})
	r := send(t, h, "PUT", "/api/v1/routes/x/limits?not_a_param=1", "", "Authorization", "Bearer legacy-token")
	r.refused(t, http.StatusBadRequest, "not_a_param")
	r = send(t, h, "PUT", "/api/v1/routes/x/limits", "", "Authorization", "Bearer tok-read-0001")
	if r.status != http.StatusForbidden || r.body["role"] != "admin" {
		t.Fatalf("read token on PUT limits: %d %s", r.status, r.raw)
	}
	for _, bad := range []string{"", "Bearer ", "Bearer tok-read-000", "Bearer legacy-token-x", "tok-read-0001"} {
		r := send(t, h, "GET", "/api/v1/queues", "", "Authorization", bad)
		if r.status != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d %s", bad, r.status, r.raw)
		}
	}
}
