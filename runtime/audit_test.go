package runtime_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// lockedBuffer is a writer that the audit lines of every test of the
// process may reach at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// linesAbout are the JSON lines of l whose target is target.
func (l *lockedBuffer) linesAbout(t *testing.T, target string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(l.b.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["target"] == target {
			out = append(out, m)
		}
	}
	return out
}

// An action taken through the API, the command line or the dashboard is in
// the audit log once — in Redis (GET /api/v1/audit, `app audit`) and as one
// JSON log line — with who took it (the token's name, cli@host), through
// what, on what, and its outcome; a call beyond its role once as denied.
func TestAudit_EveryActionAppearsOnceWhicheverWayItCame(t *testing.T) {
	lines := &lockedBuffer{}
	admin.SetAuditWriter(lines)
	t.Cleanup(func() { admin.SetAuditWriter(os.Stderr) })

	a := newApp(t)
	c := connect(t, a.env["REDIS_URL"], runtime.WithNamespace(a.env["BANANAS_NAMESPACE"]))
	in := runtime.NewInspector(c, testtasks.Register)
	for _, route := range []string{"audit-api", "audit-cli", "audit-dash"} {
		if _, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "x"}, runtime.Route(route)); err != nil {
			t.Fatal(err)
		}
	}
	srv := serveAPI(t, in, runtime.APIOptions{Tokens: roleTokens(t)})
	as := func(token string) *apiClient { x := *srv; x.token = token; return &x }

	// The API: one action, and one call beyond the caller's role.
	if st, body := as("tok-oncall-1").do("POST", "/api/v1/routes/audit-api/pause", ""); st != http.StatusOK {
		t.Fatalf("pause through the API: %d %v", st, body)
	}
	if st, _ := as("tok-viewer-1").do("PUT", "/api/v1/routes/audit-api/limits", `{"max_running": 1}`); st != http.StatusForbidden {
		t.Fatalf("limits by a read token: %d", st)
	}
	// The command line.
	a.ok("pause", "audit-cli")
	// The dashboard's form.
	hc := browserClient()
	csrf := login(t, hc, srv.url, "tok-root-1")
	hdr := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": srv.url, "Sec-Fetch-Site": "same-origin"}
	if st, body, _ := raw(t, hc, "POST", srv.url+"/routes/audit-dash/pause", hdr, url.Values{"csrf": {csrf}}.Encode()); st != http.StatusSeeOther {
		t.Fatalf("pause through the dashboard: %d\n%s", st, body)
	}

	st, body := as("tok-viewer-1").do("GET", "/api/v1/audit", "")
	if st != http.StatusOK {
		t.Fatalf("GET /api/v1/audit: %d %v", st, body)
	}
	js, _ := json.Marshal(body)
	var page bananastype.AuditPage
	if err := json.Unmarshal(js, &page); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	want := []bananastype.AuditEntry{ // newest first
		{Who: "root", Via: "dashboard", What: "pauseRoute", Target: "audit-dash", Outcome: "ok"},
		{Who: "cli@" + host, Via: "cli", What: "pauseRoute", Target: "audit-cli", Outcome: "ok"},
		{Who: "viewer", Via: "api", What: "setRouteLimits", Target: "audit-api", Outcome: "denied"},
		{Who: "oncall", Via: "api", What: "pauseRoute", Target: "audit-api", Outcome: "ok"},
	}
	if len(page.Entries) != len(want) {
		t.Fatalf("the audit log holds %d entries, want %d: %s", len(page.Entries), len(want), js)
	}
	for i, w := range want {
		g := page.Entries[i]
		if g.Who != w.Who || g.Via != w.Via || g.What != w.What || g.Target != w.Target || g.Outcome != w.Outcome || g.ID == "" || g.When.IsZero() {
			t.Errorf("entry %d = %+v, want %+v", i, g, w)
		}
	}
	if denied := page.Entries[2]; !strings.Contains(denied.Error, "needs the admin role") {
		t.Errorf("the denied entry says %q; want the role needed", denied.Error)
	}
	for target, n := range map[string]int{"audit-api": 2, "audit-cli": 1, "audit-dash": 1} {
		if got := lines.linesAbout(t, target); len(got) != n {
			t.Errorf("%d JSON log lines about %s, want %d: %v", len(got), target, n, got)
		}
	}
	if st, html, _ := raw(t, hc, "GET", srv.url+"/audit", nil, ""); st != http.StatusOK || strings.Count(html, `class="audit-entry"`) != 4 ||
		!strings.Contains(html, "cli@"+host) || !strings.Contains(html, "denied") {
		t.Errorf("the dashboard's Audit page: %d\n%s", st, html)
	}
	if out := a.ok("audit"); !strings.Contains(out, "cli@"+host) || !strings.Contains(out, "audit-dash") || strings.Count(out, "pauseRoute") != 3 {
		t.Errorf("app audit:\n%s", out)
	}
}
