package runtime_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// roleTokens are a token of each role, as API_TOKENS gives them.
func roleTokens(t *testing.T) []runtime.APIToken {
	t.Helper()
	ts, err := runtime.ParseAPITokens("viewer:read:tok-viewer-1,oncall:operate:tok-oncall-1,root:admin:tok-root-1")
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// Against Redis: each token may do what its role allows and is refused the
// rest with a 403 naming the role needed, which changes nothing; API_TOKEN
// is an admin beside the others.
func TestAPI_EachTokenActsWithinItsRole(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	in := runtime.NewInspector(c, testtasks.Register)
	srv := serveAPI(t, in, runtime.APIOptions{Tokens: roleTokens(t), Token: "legacy-admin"})
	as := func(token string) *apiClient { a := *srv; a.token = token; return &a }

	if st, _ := as("tok-viewer-1").do("GET", "/api/v1/queues", ""); st != http.StatusOK {
		t.Fatalf("read token, GET queues = %d", st)
	}
	st, body := as("tok-viewer-1").do("POST", "/api/v1/routes/default/pause", "")
	if m, _ := body.(map[string]any); st != http.StatusForbidden || m["role"] != "operate" || !strings.Contains(m["error"].(string), "needs the operate role") {
		t.Fatalf("read token, pause = %d %v; want 403 naming operate", st, body)
	}
	if routePaused(t, in, "default") {
		t.Fatal("a read token paused the route")
	}
	if st, body := as("tok-oncall-1").do("POST", "/api/v1/routes/default/pause", ""); st != http.StatusOK || !routePaused(t, in, "default") {
		t.Fatalf("operate token, pause = %d %v", st, body)
	}
	st, body = as("tok-oncall-1").do("PUT", "/api/v1/routes/default/limits", `{"max_running": 3}`)
	if m, _ := body.(map[string]any); st != http.StatusForbidden || m["role"] != "admin" {
		t.Fatalf("operate token, set limits = %d %v; want 403 naming admin", st, body)
	}
	if l, err := in.Limits(ctxT(t), "default"); err != nil || l.MaxRunning != 0 {
		t.Fatalf("limits after the refusal: %+v %v", l, err)
	}
	for _, admin := range []string{"tok-root-1", "legacy-admin"} {
		if st, body := as(admin).do("PUT", "/api/v1/routes/default/limits", `{"max_running": 3}`); st != http.StatusOK {
			t.Fatalf("admin token %s, set limits = %d %v", admin, st, body)
		}
	}
}

// The dashboard shows a session only the actions of its token's role: a
// read token sees no action at all, an operate token pauses a route but is
// not offered the limits form, and a form sent anyway beyond the role is
// refused naming the role needed.
func TestBrowser_TheDashboardShowsOnlyTheActionsOfTheRole(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	in := runtime.NewInspector(c, testtasks.Register)
	id, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "waits"})
	if err != nil {
		t.Fatal(err)
	}
	base := serveAPI(t, in, runtime.APIOptions{Tokens: roleTokens(t)}).url
	actionForms := `document.querySelectorAll("main form[method=post]").length`

	read := tab(t)
	run(t, read, "log in with the read token", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), "tok-viewer-1"), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#route-default")))
	if who := text(t, read, "#who"); !strings.Contains(who, "viewer") || !strings.Contains(who, "read") {
		t.Errorf("the header says %q; want the token's name and role", who)
	}
	for _, page := range []string{"/", "/jobs/" + url.PathEscape(id), "/jobs", "/routes/default/limits", "/cron", "/schedules"} {
		run(t, read, "open "+page, chromedp.Navigate(base+page), chromedp.WaitVisible(chromedp.CSS("main")))
		if n, err := chromedp.Run(read, chromedp.Evaluate[int](actionForms)); err != nil || n != 0 {
			t.Errorf("read token: %s shows %d action forms (%v); want none", page, n, err)
		}
	}

	operate := tab(t)
	run(t, operate, "log in with the operate token", chromedp.Navigate(base+"/routes/default/limits"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), "tok-oncall-1"), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#who")))
	if n, err := chromedp.Run(operate, chromedp.Evaluate[int](`document.querySelectorAll(".limits-form").length`)); err != nil || n != 0 {
		t.Errorf("operate token: the limits page shows %d limits forms (%v); want none", n, err)
	}
	run(t, operate, "the job page offers cancel but not delete", chromedp.Navigate(base+"/jobs/"+url.PathEscape(id)), chromedp.WaitVisible(chromedp.CSS("#cancel")))
	if n, _ := chromedp.Run(operate, chromedp.Evaluate[int](`document.querySelectorAll("#delete").length`)); n != 0 {
		t.Errorf("operate token: the job page offers Delete (an admin's action)")
	}
	run(t, operate, "pause the route", chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#route-default button[name=pause]`)),
		chromedp.Click(chromedp.CSS(`#route-default button[name=pause]`)), chromedp.WaitVisible(chromedp.CSS("#flash")))
	if !routePaused(t, in, "default") {
		t.Fatal("the operate token's Pause did not pause the route")
	}

	// The limits form sent without the page, by a session of the operate role.
	hc := browserClient()
	csrf := login(t, hc, base, "tok-oncall-1")
	form := url.Values{"csrf": {csrf}, "max_running": {"3"}}.Encode()
	hdr := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": base, "Sec-Fetch-Site": "same-origin"}
	if st, body, _ := raw(t, hc, "POST", base+"/routes/default/limits", hdr, form); st != http.StatusForbidden || !strings.Contains(body, "needs the admin role") {
		t.Fatalf("operate session, limits form = %d; want 403 naming the admin role:\n%s", st, body)
	}
	if l, err := in.Limits(ctxT(t), "default"); err != nil || l.MaxRunning != 0 {
		t.Fatalf("limits after the refusal: %+v %v", l, err)
	}
	// The refusal is in the audit log, as denied to the session's token.
	log, err := in.AuditLog(ctxT(t), admin.AuditQuery{Limit: 1})
	if e := log.Entries; err != nil || len(e) != 1 || e[0].Outcome != "denied" || e[0].Who != "oncall" || e[0].Via != "dashboard" || e[0].What != "setRouteLimits" {
		t.Fatalf("the newest audit entry %+v, %v; want the limits form denied to oncall", log, err)
	}
}

// `app api` with API_TOKENS serves each token with its role (and a request
// to a non-loopback name, as the tokens make it listen on every interface);
// a bad entry stops it at start, exit 2, naming the entry and not its token.
func TestCLI_APITokensGiveEachTokenItsRole(t *testing.T) {
	t.Parallel()
	code, _, errOut := newApp(t).with("API_PORT", fmt.Sprint(freeTCPPort(t)), "API_TOKENS", "ci:read:tok-ci-123,ops:superuser:tok-ops-123").run("api")
	if code != 2 || !strings.Contains(errOut, "API_TOKENS") || !strings.Contains(errOut, "entry 2 (ops)") || strings.Contains(errOut, "tok-") {
		t.Fatalf("a bad API_TOKENS: exit %d, %q; want 2 naming entry 2 (ops), no token", code, errOut)
	}
	port := freeTCPPort(t)
	newApp(t).with("API_PORT", fmt.Sprint(port), "API_TOKENS", "ci:read:tok-ci-123,ops:operate:tok-ops-123").background("api")
	base := fmt.Sprintf("http://localhost:%d", port)
	hc := &http.Client{Timeout: 5 * time.Second}
	waitFor(t, 10*time.Second, "the API to answer", func() bool {
		resp, err := hc.Get(base + "/livez")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	if st, _, _ := raw(t, hc, "GET", base+"/api/v1/queues", nil, ""); st != http.StatusUnauthorized {
		t.Fatalf("no token: %d; want 401", st)
	}
	if st, _, _ := raw(t, hc, "GET", base+"/api/v1/queues", bearer("tok-ci-123"), ""); st != http.StatusOK {
		t.Fatalf("read token, GET queues: %d", st)
	}
	if st, body, _ := raw(t, hc, "POST", base+"/api/v1/routes/default/pause", bearer("tok-ci-123"), ""); st != http.StatusForbidden || !strings.Contains(body, `"role":"operate"`) {
		t.Fatalf("read token, pause: %d %s; want 403 naming operate", st, body)
	}
	if st, body, _ := raw(t, hc, "POST", base+"/api/v1/routes/default/pause", bearer("tok-ops-123"), ""); st != http.StatusOK {
		t.Fatalf("operate token, pause: %d %s", st, body)
	}
}
