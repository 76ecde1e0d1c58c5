package runtime_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// The Audit page shows, newest first, who did what through which door and
// how it ended — a refusal as plainly as a success — to a read token; it
// fits a desktop window without scrolling the page sideways, and on a phone
// each entry's outcome is in sight.
func TestDashboard_TheAuditPageShowsEachActionAndItsOutcome(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	in := runtime.NewInspector(c, testtasks.Register)
	if _, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "x"}, runtime.Route("audited")); err != nil {
		t.Fatal(err)
	}
	srv := serveAPI(t, in, runtime.APIOptions{Tokens: roleTokens(t)})
	as := func(token string) *apiClient { x := *srv; x.token = token; return &x }
	if st, body := as("tok-oncall-1").do("POST", "/api/v1/routes/audited/pause", ""); st != http.StatusOK {
		t.Fatalf("pause by the operate token: %d %v", st, body)
	}
	if st, _ := as("tok-viewer-1").do("PUT", "/api/v1/routes/audited/limits", `{"max_running": 1}`); st != http.StatusForbidden {
		t.Fatalf("limits by the read token: %d; want 403", st)
	}

	ctx := tab(t)
	run(t, ctx, "log in with the read token and open the Audit page", chromedp.Navigate(srv.url+"/audit"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), "tok-viewer-1"), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#audit")))
	if got := innerText(t, ctx, "#audit tbody tr:nth-child(1)"); !strings.Contains(got, "viewer") || !strings.Contains(got, "setRouteLimits") ||
		!strings.Contains(got, "audited") || !strings.Contains(got, "denied") {
		t.Errorf("the newest row = %q; want the read token's limits call, denied", got)
	}
	if got := innerText(t, ctx, "#audit tbody tr:nth-child(1) .badge.bad"); got != "denied" {
		t.Errorf("the refusal's outcome badge = %q; want a bad badge saying denied", got)
	}
	if got := innerText(t, ctx, "#audit tbody tr:nth-child(2)"); !strings.Contains(got, "oncall") || !strings.Contains(got, "api") ||
		!strings.Contains(got, "pauseRoute") || !strings.Contains(got, "ok") {
		t.Errorf("the second row = %q; want the operate token's pause through the api, ok", got)
	}
	run(t, ctx, "a phone's window", phone())
	if off := outsideWindow(t, ctx, "#audit .badge"); off != "" {
		t.Errorf("on a phone an entry's outcome is off-screen: %s", off)
	}
	shoot(t, ctx, "audit")
	if wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)); err != nil || wide {
		t.Error("the Audit page is wider than a 1280-pixel window")
	}
}
