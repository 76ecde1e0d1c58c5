package runtime_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/keytasks"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

var shotsFlag = flag.String("shots", "", "directory for the dashboard tests' screenshots (default: a new temp dir, printed)")

// One browser per test binary: starting Chromium costs about a second, a
// new browser context (its own cookies) in it almost nothing.
var browser struct {
	once     sync.Once
	ctx      context.Context
	err      error
	shots    string
	shotsErr error
}

// chromiumPath finds the browser; without one the test fails with the
// command that installs it, unless BANANAS_SKIP_BROWSER=1 says to skip.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("BANANAS_SKIP_BROWSER") == "1" {
		t.Skip("no Chromium on PATH and BANANAS_SKIP_BROWSER=1: skipping the dashboard's browser test")
	}
	t.Fatal("the dashboard's browser tests need Chromium (chromium, chromium-browser or google-chrome on PATH); install it:\n" +
		"  apt-get install -y chromium   (make test does, through scripts/test-deps.sh)\n" +
		"or set BANANAS_SKIP_BROWSER=1 to skip these tests")
	return ""
}

// tab opens a tab in a browser context of its own, closed when the test ends.
func tab(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	browser.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
			chromedp.WindowSize(1280, 800), chromedp.Flag("disable-dev-shm-usage", true))
		// Never cancelled: the browser lives as long as the test binary, and
		// the kernel ends it with the binary (the allocator's Pdeathsig).
		alloc, _ := chromedp.NewExecAllocator(context.Background(), opts...)
		browser.ctx, _ = chromedp.NewContext(alloc)
		browser.err = chromedp.Do(browser.ctx)
	})
	if browser.err != nil {
		t.Fatalf("start Chromium: %v", browser.err)
	}
	ctx, cancel := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	ctx, stop := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(stop)
	return ctx
}

// run does the browser steps, failing the test with what was under way.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
}

// text is the text of the element css selects now (the live overview
// replaces its nodes, so no node is kept across calls), its white space
// collapsed.
func text(t *testing.T, ctx context.Context, css string) string {
	t.Helper()
	return readText(t, ctx, css, "textContent")
}

// innerText is the text of the element css selects as the page shows it
// (table cells apart), its white space collapsed.
func innerText(t *testing.T, ctx context.Context, css string) string {
	t.Helper()
	return readText(t, ctx, css, "innerText")
}

func readText(t *testing.T, ctx context.Context, css, prop string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {%s: "(no element)"}).%[2]s`, css, prop)))
	if err != nil {
		t.Fatalf("browser: text of %s: %v", css, err)
	}
	return strings.Join(strings.Fields(s), " ")
}

// waitJS waits until the JavaScript expression holds on the page.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("browser: waiting for %s (%s): %v", what, expr, err)
	}
}

// shoot saves the page at a desktop size (1280×800) and a phone's (390×844)
// into the screenshot directory, and leaves the desktop size on.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	browser.once.Do(func() {}) // the browser is up: tab ran first
	dir := shotsDir(t)
	for _, size := range []struct {
		w, h   int64
		mobile bool
	}{{390, 844, true}, {1280, 800, false}} {
		vp := chromedp.EmulateViewport(size.w, size.h)
		if size.mobile {
			vp = chromedp.EmulateViewport(size.w, size.h, chromedp.EmulateMobile, chromedp.EmulateScale(2))
		}
		run(t, ctx, "set the viewport", vp)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		file := filepath.Join(dir, fmt.Sprintf("%s-%s-%dx%d.png", strings.ReplaceAll(t.Name(), "/", "_"), name, size.w, size.h))
		if err := os.WriteFile(file, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots of %s in %s", name, dir)
}

var shotsOnce sync.Once

func shotsDir(t *testing.T) string {
	shotsOnce.Do(func() {
		if *shotsFlag != "" {
			browser.shots, browser.shotsErr = *shotsFlag, os.MkdirAll(*shotsFlag, 0o755)
			return
		}
		// Not t.TempDir: the screenshots are artifacts to look at after the run.
		browser.shots, browser.shotsErr = os.MkdirTemp("", "bananas-dashboard-shots-")
	})
	if browser.shotsErr != nil {
		t.Fatalf("screenshot directory: %v", browser.shotsErr)
	}
	return browser.shots
}

// The overview lists every route with its counts, marks a route no worker
// takes, and its counts follow the queues without a reload.
func TestDashboard_OverviewCountsFollowAnEnqueue(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	testtasks.Register(w)
	startWorker(t, w)
	served, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "served"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "waits"}, runtime.Route("unserved")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the default route's job to complete", func() bool { return jobStatus(t, c, served) == runtime.StatusCompleted })
	url := serveAPI(t, w.Inspector(), runtime.APIOptions{}).url

	run(t, ctx, "open the overview", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS("#route-unserved")))
	if got := text(t, ctx, "#route-unserved [data-col=normal]"); got != "1" {
		t.Fatalf("unserved route's normal pending = %q; want 1", got)
	}
	waitJS(t, ctx, "the default route to show its worker",
		`document.querySelector('#route-default [data-col=workers]').textContent.trim() === '1'`)
	waitJS(t, ctx, "the unserved route to stand out as taken by no worker",
		`document.querySelector('#route-unserved').classList.contains('orphan') && !document.querySelector('#route-default').classList.contains('orphan')`)
	if got := text(t, ctx, "#route-unserved [data-col=state]"); !strings.Contains(got, "no worker") {
		t.Fatalf("unserved route's state = %q; want it to say no worker takes it", got)
	}

	if _, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "urgent"}, runtime.Route("unserved"), runtime.WithPriority(runtime.PriorityHigh)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the overview to show the new high-priority job without a reload",
		`document.querySelector('#route-unserved [data-col=high]').textContent.trim() === '1'`)
	shoot(t, ctx, "overview")
}

// A dead job is found in the dead list, opened — its timeline shows each
// failed run, its error the stack the error carried — and replayed with a
// click; it then runs again.
func TestDashboard_ReplayADeadJobByClicking(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	var runs atomic.Int32
	runtime.Handle(w, testtasks.Note, func(context.Context, testtasks.Msg) (runtime.None, error) {
		switch runs.Add(1) {
		case 1:
			return runtime.None{}, errors.New("smtp: connection reset")
		case 2:
			return runtime.None{}, &stackError{msg: "smtp: mailbox unavailable", stack: "mail.Send\n\tmail/send.go:17", cause: runtime.SkipRetry}
		}
		return runtime.None{}, nil
	})
	startWorker(t, w)
	id, err := testtasks.Note.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: `<b>doomed</b> & "quoted"`, N: 7})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the job to die", func() bool { return jobStatus(t, c, id) == runtime.StatusFailed })
	url := serveAPI(t, w.Inspector(), runtime.APIOptions{}).url

	link := fmt.Sprintf(`a[href="/jobs/%s"]`, id)
	run(t, ctx, "open the dead list and the job", chromedp.Navigate(url+"/jobs?state=failed"), chromedp.WaitVisible(chromedp.CSS(link)),
		chromedp.Click(chromedp.CSS(link)), chromedp.WaitVisible(chromedp.CSS("#replay")))
	if got := text(t, ctx, "#status"); got != "failed" {
		t.Fatalf("status = %q; want failed", got)
	}
	if got := text(t, ctx, "#error"); got != "smtp: mailbox unavailable" {
		t.Fatalf("error = %q; want the last run's error", got)
	}
	if got := text(t, ctx, "#stack"); !strings.Contains(got, "mail/send.go:17") {
		t.Fatalf("stack = %q; want the stack the error carried", got)
	}
	if got := text(t, ctx, "#timeline"); !regexp.MustCompile(`^Created .+ Run 1 failed .+ Run 2 started .+ Run 2 failed .+ Finished .+$`).MatchString(got) {
		t.Fatalf("timeline = %q; want created, run 1 failed, the retry's start, run 2 failed, finished, in that order", got)
	}
	// The args as indented JSON, the markup in them shown as text.
	if got := text(t, ctx, "#args"); !strings.Contains(got, `"Text": "<b>doomed</b> & \"quoted\""`) {
		t.Fatalf("args = %q; want the indented JSON of the args", got)
	}
	shoot(t, ctx, "dead-job")
	run(t, ctx, "click Replay", chromedp.Click(chromedp.CSS("#replay")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	waitFor(t, 20*time.Second, "the replayed job to complete", func() bool { return jobStatus(t, c, id) == runtime.StatusCompleted })
	run(t, ctx, "reload the job", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#status")))
	if got := text(t, ctx, "#status"); got != "completed" {
		t.Fatalf("status after replay = %q; want completed", got)
	}
}

// Pausing a route with a click stops the worker from taking its jobs (they
// stay pending while it takes another route's), and Resume lets them run.
func TestDashboard_PauseARouteByClicking(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	// The worker prefers "pausable": while it may take that route, it takes
	// its jobs before canary's.
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"pausable", "canary"}}))
	testtasks.Register(w)
	startWorker(t, w)
	enqueue := func(route string) string {
		t.Helper()
		id, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: route}, runtime.Route(route))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := enqueue("pausable")
	waitFor(t, 20*time.Second, "a first job of the route to run", func() bool { return jobStatus(t, c, first) == runtime.StatusCompleted })
	url := serveAPI(t, w.Inspector(), runtime.APIOptions{}).url

	run(t, ctx, "click Pause", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS(`#route-pausable button[name=pause]`)),
		chromedp.Click(chromedp.CSS(`#route-pausable button[name=pause]`)), chromedp.WaitVisible(chromedp.CSS("#flash")))
	if got := text(t, ctx, "#route-pausable [data-col=state]"); !strings.Contains(got, "paused") {
		t.Fatalf("state after Pause = %q; want paused", got)
	}
	held := []string{enqueue("pausable"), enqueue("pausable"), enqueue("pausable")}
	canary := enqueue("canary")
	waitFor(t, 20*time.Second, "the canary route's job to run", func() bool { return jobStatus(t, c, canary) == runtime.StatusCompleted })
	for _, id := range held {
		if st := jobStatus(t, c, id); st != runtime.StatusPending {
			t.Fatalf("a job of the paused route is %s; want it left pending", st)
		}
	}
	waitJS(t, ctx, "the overview to show the held jobs", `document.querySelector('#route-pausable [data-col=normal]').textContent.trim() === '3'`)
	shoot(t, ctx, "paused")

	run(t, ctx, "click Resume", chromedp.Click(chromedp.CSS(`#route-pausable button[name=resume]`)), chromedp.WaitVisible(chromedp.CSS("#flash")))
	for _, id := range held {
		waitFor(t, 20*time.Second, "the held jobs to run after Resume", func() bool { return jobStatus(t, c, id) == runtime.StatusCompleted })
	}
}

// The search box finds a dead job by a word of its error, and the filter
// lives in the link.
func TestDashboard_SearchAJobByErrorText(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := tab(t)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, testtasks.Note, func(_ context.Context, m testtasks.Msg) (runtime.None, error) {
			return runtime.None{}, fmt.Errorf("%s: %w", m.Text, runtime.SkipRetry)
		})
		startWorker(t, w)
		ids := map[string]string{}
		for _, msg := range []string{"connection reset by peer", "Quota exceeded for project 12", "mailbox full"} {
			id, err := testtasks.Note.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: msg})
			if err != nil {
				t.Fatal(err)
			}
			ids[msg] = id
		}
		for _, id := range ids {
			waitFor(t, 20*time.Second, "the jobs to die", func() bool { return jobStatus(t, c, id) == runtime.StatusFailed })
		}
		url := serveAPI(t, w.Inspector(), runtime.APIOptions{}).url

		run(t, ctx, "search the dead jobs", chromedp.Navigate(url+"/jobs?state=failed"), chromedp.WaitVisible(chromedp.CSS(`input[name=q]`)),
			chromedp.SendKeys(chromedp.CSS(`input[name=q]`), "quota"), chromedp.Click(chromedp.CSS("#filter")),
			// Only the answer renders the search as the field's value attribute.
			chromedp.WaitVisible(chromedp.CSS(`input[name=q][value=quota]`)))
		if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.Contains(loc, "q=quota") || !strings.Contains(loc, "state=failed") {
			t.Fatalf("the search is at %q; want its filters in the link", loc)
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('table.jobs tbody td.id a')].map(a => a.textContent.trim())`))
		if err != nil {
			t.Fatal(err)
		}
		if want := ids["Quota exceeded for project 12"]; len(got) != 1 || got[0] != want {
			t.Fatalf("search for quota found %v; want only %s", got, want)
		}
		if state := text(t, ctx, `select[name=state] option:checked`); state != "failed" {
			t.Fatalf("the form kept state %q; want failed", state)
		}
		if strings.HasSuffix(t.Name(), "redis") {
			shoot(t, ctx, "search")
		}
	})
}

// With a token the dashboard asks for it: a wrong one is refused, the right
// one sets a cookie that scripts cannot read and lands on the page asked for.
func TestDashboard_LogInWithTheToken(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, "mem://")
	url := serveAPI(t, runtime.NewInspector(c, testtasks.Register), runtime.APIOptions{Token: "s3cret-token"}).url

	run(t, ctx, "open a page", chromedp.Navigate(url+"/tasks"), chromedp.WaitVisible(chromedp.CSS("#token")))
	shoot(t, ctx, "login")
	run(t, ctx, "log in with a wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "s3cret"), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#wrong")))
	run(t, ctx, "log in with the token", chromedp.SendKeys(chromedp.CSS("#token"), "s3cret-token"), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/jobs?task=t_echo"]`)))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.HasSuffix(loc, "/tasks") {
		t.Fatalf("after login at %q (%v); want the page asked for, /tasks", loc, err)
	}
	if cookies, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie`)); cookies != "" {
		t.Fatalf("scripts can read cookies %q; want them HttpOnly", cookies)
	}
	shoot(t, ctx, "tasks")
}

// Without a browser: every action needs the form's CSRF token and its
// cookie, read-only mode hides and refuses actions, and cookies are
// HttpOnly and SameSite=Strict.
func TestDashboard_ActionsNeedTheCSRFTokenAndAreRefusedReadOnly(t *testing.T) {
	t.Parallel()
	c := connect(t, "mem://")
	in := runtime.NewInspector(c, testtasks.Register)
	if _, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	paused := func() bool {
		routes, err := in.Routes(ctxT(t))
		if err != nil || len(routes) != 1 {
			t.Fatalf("routes = %v, %v", routes, err)
		}
		return routes[0].Paused
	}
	csrfRE := regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	browse := func(base string) (get func(string) (int, string, http.Header), post func(string, url.Values) (int, string)) {
		jar, _ := cookiejar.New(nil)
		hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		get = func(path string) (int, string, http.Header) {
			resp, err := hc.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b), resp.Header
		}
		post = func(path string, form url.Values) (int, string) {
			resp, err := hc.PostForm(base+path, form)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		return get, post
	}

	base := serveAPI(t, in, runtime.APIOptions{}).url
	get, post := browse(base)
	st, body, hdr := get("/")
	m := csrfRE.FindStringSubmatch(body)
	if st != http.StatusOK || m == nil || !strings.Contains(body, "/routes/default/pause") {
		t.Fatalf("GET / = %d, want 200 with a pause form carrying a CSRF token:\n%s", st, body)
	}
	if sc := hdr.Get("Set-Cookie"); !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict") {
		t.Fatalf("Set-Cookie = %q; want HttpOnly and SameSite=Strict", sc)
	}
	_, otherPost := browse(base) // another browser: the token without its cookie
	for what, try := range map[string]func() (int, string){
		"no token":                func() (int, string) { return post("/routes/default/pause", nil) },
		"a wrong token":           func() (int, string) { return post("/routes/default/pause", url.Values{"csrf": {m[1] + "x"}}) },
		"the token but no cookie": func() (int, string) { return otherPost("/routes/default/pause", url.Values{"csrf": {m[1]}}) },
	} {
		if st, body := try(); st != http.StatusForbidden || !strings.Contains(body, "CSRF") || paused() {
			t.Fatalf("pause with %s = %d, paused %v; want 403 naming the CSRF token, and not paused:\n%s", what, st, paused(), body)
		}
	}
	if st, _ := post("/routes/default/pause", url.Values{"csrf": {m[1]}}); st != http.StatusSeeOther || !paused() {
		t.Fatalf("pause with the token = %d, paused %v; want 303 and paused", st, paused())
	}
	if err := in.Resume(ctxT(t), "default"); err != nil {
		t.Fatal(err)
	}

	roGet, roPost := browse(serveAPI(t, in, runtime.APIOptions{ReadOnly: true}).url)
	_, body, _ = roGet("/")
	if strings.Contains(body, "/pause") || !strings.Contains(body, "read-only") {
		t.Fatalf("read-only overview shows actions or hides the mode:\n%s", body)
	}
	if st, body := roPost("/routes/default/pause", url.Values{"csrf": {"any"}}); st != http.StatusForbidden || !strings.Contains(body, "read-only") || paused() {
		t.Fatalf("read-only pause = %d, paused %v; want 403 saying read-only, and not paused:\n%s", st, paused(), body)
	}

	// The API keeps answering its own unknown paths in JSON.
	if st, v := (&apiClient{t: t, url: base}).do("GET", "/api/v1/nothing", ""); st != http.StatusNotFound || !strings.Contains(fmt.Sprint(v), "no route") {
		t.Fatalf("GET /api/v1/nothing = %d %v; want the API's JSON 404", st, v)
	}
}

// The charts page draws the last hour's history as SVG, one line per series
// and a legend naming each, with totals that match the jobs that ran; a
// window it does not offer is a 400 naming it.
func TestDashboard_ChartsShowTheLastHour(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	const jobs, failing = 9, 3 // N = 0, 3 and 6 fail
	w := runChartJobs(t, jobs)
	url := serveAPI(t, w.Inspector(), runtime.APIOptions{}).url

	run(t, ctx, "open the charts from the nav", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS(`nav a[href="/charts"]`)),
		chromedp.Click(chromedp.CSS(`nav a[href="/charts"]`)), chromedp.WaitVisible(chromedp.CSS("#summary")))
	for id, want := range map[string]int{"#total-enqueued": jobs, "#total-processed": jobs - failing, "#total-failed": failing} {
		if got := text(t, ctx, id); got != fmt.Sprint(want) {
			t.Fatalf("%s = %q; want %d (summary: %q)", id, got, want, text(t, ctx, "#summary"))
		}
	}
	if got := text(t, ctx, "#summary"); !strings.Contains(got, "in the last hour") {
		t.Fatalf("summary = %q; want it to name the last hour", got)
	}
	for chart, series := range chartSeries {
		chartDrawsEachSeries(t, ctx, chart, series)
	}
	shoot(t, ctx, "charts")

	run(t, ctx, "switch to 24 hours", chromedp.Click(chromedp.CSS(`nav.windows a[href="/charts?window=24h"]`)),
		chromedp.WaitVisible(chromedp.CSS(`nav.windows a[href="/charts?window=24h"][aria-current=page]`)))
	if got := text(t, ctx, "#summary"); !strings.Contains(got, "in the last 24 hours") || text(t, ctx, "#total-processed") != fmt.Sprint(jobs-failing) {
		t.Fatalf("24h summary = %q; want the same totals over the last 24 hours", got)
	}

	resp, err := http.Get(url + "/charts?window=7d")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "7d") {
		t.Fatalf("GET /charts?window=7d = %d; want 400 naming the window:\n%s", resp.StatusCode, body)
	}
}

// runChartJobs has a worker run t_note jobs of N = 0 to jobs-1, those of N
// a multiple of 3 failing without retry, and returns the worker once every
// job has finished.
func runChartJobs(t *testing.T, jobs int) *runtime.Worker {
	t.Helper()
	c := connect(t, redistest.Shared(t).URL())
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(w, testtasks.Note, func(_ context.Context, m testtasks.Msg) (runtime.None, error) {
		if m.N%3 == 0 {
			return runtime.None{}, fmt.Errorf("job %d: %w", m.N, runtime.SkipRetry)
		}
		return runtime.None{}, nil
	})
	startWorker(t, w)
	var ids []string
	for n := range jobs {
		id, err := testtasks.Note.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "chart", N: n})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		waitFor(t, 20*time.Second, "the jobs to finish", func() bool {
			st := jobStatus(t, c, id)
			return st == runtime.StatusCompleted || st == runtime.StatusFailed
		})
	}
	return w
}

// chartSeries are the series each chart of the charts page draws, in the
// order of its legend.
var chartSeries = map[string][]string{
	"counts": {"Enqueued", "Processed", "Failed"},
	"times":  {"Wait p50", "Wait p99", "Run p50", "Run p99"},
}

// chartDrawsEachSeries checks that the chart's legend names each series, in
// order, and that its visible drawing has a line of points for each.
func chartDrawsEachSeries(t *testing.T, ctx context.Context, chart string, series []string) {
	t.Helper()
	sel := "#chart-" + chart
	legend, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(
		`[...document.querySelectorAll(%q)].map(li => li.textContent.trim())`, sel+" ul.legend li")))
	if err != nil {
		t.Fatal(err)
	}
	// The visible drawing's lines, with the number of points each draws.
	lines, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]int](fmt.Sprintf(
		`Object.fromEntries([...document.querySelectorAll(%q)].filter(s => s.getBoundingClientRect().width > 0)
		  .flatMap(s => [...s.querySelectorAll('path.line')]).map(p => [p.querySelector('title').textContent, (p.getAttribute('d').match(/[ML]/g) || []).length]))`,
		sel+" svg.plot")))
	if err != nil {
		t.Fatal(err)
	}
	if len(legend) != len(series) || len(lines) != len(series) {
		t.Fatalf("%s: legend %q, lines %v; want one of each per series %q", chart, legend, lines, series)
	}
	for i, name := range series {
		if !strings.HasPrefix(legend[i], name) {
			t.Fatalf("%s: legend %q; want %q in it, in order", chart, legend, name)
		}
		// Every series has a minute in it: the jobs were enqueued, some
		// failed, all started and ran.
		if lines[name] == 0 {
			t.Fatalf("%s: the line of %s draws nothing: %v", chart, name, lines)
		}
	}
}

// Three dead jobs are selected at once on the dead list ("select all on
// this page"), the confirmation ticked and Replay selected clicked: each is
// replayed and runs to completion on the real worker, the handler having
// been healed meanwhile.
func TestDashboard_BulkReplaySelectedDeadJobs(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	// Failing without retry until healed: the jobs die at once, and their
	// replays complete, so completion proves each one was replayed.
	var healed atomic.Bool
	runtime.Handle(w, testtasks.Note, func(context.Context, testtasks.Msg) (runtime.None, error) {
		if !healed.Load() {
			return runtime.None{}, fmt.Errorf("upstream down: %w", runtime.SkipRetry)
		}
		return runtime.None{}, nil
	})
	startWorker(t, w)
	var ids []string
	for n := range 3 {
		id, err := testtasks.Note.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "bulk", N: n})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		waitFor(t, 20*time.Second, "the jobs to die", func() bool { return jobStatus(t, c, id) == runtime.StatusFailed })
	}
	healed.Store(true)
	url := serveAPI(t, w.Inspector(), runtime.APIOptions{}).url

	run(t, ctx, "open the dead list and select all", chromedp.Navigate(url+"/jobs?state=failed"), chromedp.WaitVisible(chromedp.CSS("#select-all")),
		chromedp.Click(chromedp.CSS("#select-all")), chromedp.Click(chromedp.CSS("#bulk-confirm")))
	picked, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#bulk input[name=id]:checked')].map(b => b.value)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(picked) != len(ids) {
		t.Fatalf("select all ticked %v; want the %d dead jobs %v", picked, len(ids), ids)
	}
	// A dead job can only be replayed: the other bulk buttons are not offered.
	if got := text(t, ctx, "#bulk-delete") + text(t, ctx, "#bulk-cancel"); got != "(no element)(no element)" {
		t.Fatalf("the dead list offers delete or cancel: %q", got)
	}
	shoot(t, ctx, "bulk-selection")
	run(t, ctx, "click Replay selected", chromedp.Click(chromedp.CSS("#bulk-replay")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	if got := text(t, ctx, "#flash"); !strings.Contains(got, "Replayed 3 selected jobs; 0 refused") {
		t.Fatalf("flash = %q; want 3 replayed and 0 refused", got)
	}
	for _, id := range ids {
		waitFor(t, 20*time.Second, "the replayed jobs to complete", func() bool { return jobStatus(t, c, id) == runtime.StatusCompleted })
	}
}

// Without a browser: a bulk action needs the CSRF token and the ticked
// confirmation, takes at most 500 ids, counts a job that is gone as
// refused, and is neither offered nor done in read-only mode. The Tasks
// page shows each task's args schema.
func TestDashboard_BulkActionsNeedConfirmationAndCSRF(t *testing.T) {
	t.Parallel()
	c := connect(t, "mem://")
	in := runtime.NewInspector(c, testtasks.Register)
	var ids []string
	for n := range 2 {
		id, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "x", N: n})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	allPending := func() bool {
		for _, id := range ids {
			if jobStatus(t, c, id) != runtime.StatusPending {
				return false
			}
		}
		return true
	}
	do := newFormBrowser(t).do
	base := serveAPI(t, in, runtime.APIOptions{}).url
	st, body, _ := do("GET", base+"/jobs", nil)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if st != http.StatusOK || m == nil || !strings.Contains(body, `id="bulk-delete"`) || !strings.Contains(body, `id="select-all"`) {
		t.Fatalf("GET /jobs = %d; want the bulk form with a CSRF token, select all and Delete selected:\n%s", st, body)
	}
	form := func(extra url.Values) url.Values {
		f := url.Values{"action": {"delete"}, "id": ids}
		for k, v := range extra {
			f[k] = v
		}
		return f
	}
	for what, try := range map[string]struct {
		form   url.Values
		status int
		says   string
	}{
		"no CSRF token":     {form(url.Values{"confirm": {"yes"}}), http.StatusForbidden, "CSRF"},
		"no confirmation":   {form(url.Values{"csrf": {m[1]}}), http.StatusBadRequest, "confirmation"},
		"501 ids":           {url.Values{"csrf": {m[1]}, "confirm": {"yes"}, "action": {"delete"}, "id": make([]string, 501)}, http.StatusBadRequest, "at most 500"},
		"an unknown action": {form(url.Values{"csrf": {m[1]}, "confirm": {"yes"}, "action": {"explode"}}), http.StatusBadRequest, "explode"},
	} {
		if st, body, _ := do("POST", base+"/jobs/bulk", try.form); st != try.status || !strings.Contains(body, try.says) || !allPending() {
			t.Fatalf("bulk delete with %s = %d; want %d saying %q, and the jobs left pending:\n%s", what, st, try.status, try.says, body)
		}
	}
	// With both, the two jobs go and an id that is not there is refused.
	st, _, hdr := do("POST", base+"/jobs/bulk", form(url.Values{"csrf": {m[1]}, "confirm": {"yes"}, "id": append(ids[:2:2], "01NOSUCHJOB.default")}))
	if st != http.StatusSeeOther {
		t.Fatalf("bulk delete = %d; want 303", st)
	}
	_, body, _ = do("GET", base+hdr.Get("Location"), nil)
	if !strings.Contains(body, "Deleted 2 selected jobs; 1 refused") {
		t.Fatalf("after bulk delete at %s; want the flash saying 2 deleted and 1 refused:\n%s", hdr.Get("Location"), body)
	}
	for _, id := range ids {
		if _, err := c.Job(ctxT(t), id); err == nil {
			t.Fatalf("job %s is still there after the bulk delete", id)
		}
	}

	// The Tasks page: each task's args schema, in a <details>.
	_, body, _ = do("GET", base+"/tasks", nil)
	if !strings.Contains(body, `<details class="schema">`) || !strings.Contains(body, `&#34;properties&#34;`) {
		t.Fatalf("the Tasks page shows no args schema:\n%s", body)
	}

	ro := serveAPI(t, in, runtime.APIOptions{ReadOnly: true}).url
	_, body, _ = do("GET", ro+"/jobs", nil)
	if strings.Contains(body, "/jobs/bulk") || strings.Contains(body, "select-all") {
		t.Fatalf("read-only job list offers bulk actions:\n%s", body)
	}
	if st, body, _ := do("POST", ro+"/jobs/bulk", url.Values{"csrf": {m[1]}, "confirm": {"yes"}, "action": {"delete"}, "id": {"x"}}); st != http.StatusForbidden || !strings.Contains(body, "read-only") {
		t.Fatalf("read-only bulk = %d; want 403 saying read-only:\n%s", st, body)
	}
}

// formBrowser is an HTTP client that keeps cookies, as a browser does, and
// does not follow redirects, so that a test sees them.
type formBrowser struct {
	t  *testing.T
	hc *http.Client
}

func newFormBrowser(t *testing.T) *formBrowser {
	jar, _ := cookiejar.New(nil)
	return &formBrowser{t: t, hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a GET of u, or a POST of form to u, and returns the status, the
// body and the headers of the answer.
func (b *formBrowser) do(method, u string, form url.Values) (int, string, http.Header) {
	b.t.Helper()
	var resp *http.Response
	var err error
	if method == "GET" {
		resp, err = b.hc.Get(u)
	} else {
		resp, err = b.hc.PostForm(u, form)
	}
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

// darkMode makes the tab prefer a dark color scheme, as an operator's
// system setting does.
func darkMode() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	})
}

// "Replay every failed job of ROUTE" on a route's dead-letter queue replays every failed job
// of that route, after its confirmation is ticked, and no other route's.
// The page follows a dark color scheme.
func TestDashboard_ReplayAllDeadOfARouteByClicking(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"mail", "default"}}))
	var healed atomic.Bool
	runtime.Handle(w, testtasks.Note, func(context.Context, testtasks.Msg) (runtime.None, error) {
		if !healed.Load() {
			return runtime.None{}, fmt.Errorf("smtp relay down: %w", runtime.SkipRetry)
		}
		return runtime.None{}, nil
	})
	startWorker(t, w)
	var mail []string
	for n := range 3 {
		id, err := testtasks.Note.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "mail", N: n}, runtime.Route("mail"))
		if err != nil {
			t.Fatal(err)
		}
		mail = append(mail, id)
	}
	other, err := testtasks.Note.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "default"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range append(mail, other) {
		waitFor(t, 20*time.Second, "the jobs to die", func() bool { return jobStatus(t, c, id) == runtime.StatusFailed })
	}
	healed.Store(true)
	url := serveAPI(t, w.Inspector(), runtime.APIOptions{}).url

	run(t, ctx, "open the mail route's dead list in dark mode", darkMode(),
		chromedp.Navigate(url+"/jobs?route=mail&state=failed"), chromedp.WaitVisible(chromedp.CSS("#replay-dead")))
	waitJS(t, ctx, "a dark page background", `(() => {
		const [r, g, b] = getComputedStyle(document.body).backgroundColor.match(/\d+/g).map(Number);
		return r + g + b < 150;
	})()`)
	shoot(t, ctx, "dead-list-dark")
	run(t, ctx, "tick the confirmation and click Replay every failed job of mail",
		chromedp.Click(chromedp.CSS("#replay-dead-confirm")), chromedp.Click(chromedp.CSS("#replay-dead")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	if got := text(t, ctx, "#flash"); !strings.Contains(got, "3") {
		t.Fatalf("flash = %q; want it to count the 3 replayed jobs", got)
	}
	for _, id := range mail {
		waitFor(t, 20*time.Second, "the mail route's replayed jobs to complete", func() bool { return jobStatus(t, c, id) == runtime.StatusCompleted })
	}
	if got := jobStatus(t, c, other); got != runtime.StatusFailed {
		t.Fatalf("the default route's dead job is %s; want it left dead", got)
	}
}

// noScript turns JavaScript off in the tab: the pages are server-rendered
// and must read the same without it.
func noScript() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	})
}

// Every page, on the embedded server and on redis-server, with JavaScript
// off: the overview's route, the charts, a completed job's result, the cron
// entry with its spec, time zone, runs and last error, the live worker with
// its host, pid, routes and concurrency, and each task's annotation.
func TestDashboard_EveryPageReadsWithoutJavaScriptOnBothBackends(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := tab(t)
		register := func(w *runtime.Worker) {
			runtime.Handle(w, testtasks.Echo, func(_ context.Context, m testtasks.Msg) (testtasks.Reply, error) {
				return testtasks.Reply{Text: m.Text}, nil
			})
			runtime.Handle(w, testtasks.Tick, func(context.Context, runtime.None) (runtime.None, error) {
				return runtime.None{}, fmt.Errorf("tick failed: %w", runtime.SkipRetry)
			})
		}
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 7}))
		register(w)
		startWorker(t, w)
		// The cron entry ticks on a scheduler of its own, stopped once a tick
		// failed: its last error, the failure of its last job, then stays
		// (a tick fired later would show none until its job failed).
		withCron := func(w *runtime.Worker) {
			register(w)
			runtime.Schedule(w, testtasks.Tick, "@every 1s", "Europe/Paris")
		}
		cron := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{SchedulerOnly: true}))
		withCron(cron)
		stopCron := startWorker(t, cron)
		done, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "echoed back"})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "the echo job to complete", func() bool { return jobStatus(t, c, done) == runtime.StatusCompleted })
		in := runtime.NewInspector(c, withCron)
		tickFailed := func() bool {
			entries, err := in.Cron(ctxT(t))
			return err == nil && len(entries) == 1 && entries[0].RunCount >= 1 && strings.Contains(entries[0].LastError, "tick failed")
		}
		waitFor(t, 20*time.Second, "the cron entry to run and fail", tickFailed)
		stopCron()
		waitFor(t, 20*time.Second, "the cron entry's last tick to fail", tickFailed)
		url := serveAPI(t, in, runtime.APIOptions{}).url
		host, _ := os.Hostname()

		run(t, ctx, "turn JavaScript off", noScript())
		for _, p := range []struct{ path, css, want string }{ // want: a regular expression
			{"/", "#route-default", "default"},
			{"/charts", "#summary", "1 processed"},
			{"/jobs?state=failed", "table.jobs", "t_tick"},
			{"/jobs/" + done, "#result", regexp.QuoteMeta(`"Text": "echoed back"`)},
			{"/cron", "table", "t_tick default @every 1s Europe/Paris"},
			{"/cron", "table", "tick failed"},
			{"/workers", "table", regexp.QuoteMeta(fmt.Sprintf("%s %d", host, os.Getpid()))},
			{"/workers", "table", `default \d+ 7`}, // in flight: a cron tick may be running
			{"/tasks", "table", "t_echo"},
		} {
			run(t, ctx, "open "+p.path, chromedp.Navigate(url+p.path), chromedp.WaitVisible(chromedp.CSS(p.css)))
			if got := innerText(t, ctx, p.css); !regexp.MustCompile(p.want).MatchString(got) {
				t.Fatalf("%s: %s reads %q; want it to hold %q", p.path, p.css, got, p.want)
			}
			if strings.HasSuffix(t.Name(), "redis") && (p.path == "/cron" || p.path == "/workers") && p.want != "tick failed" && !strings.HasPrefix(p.want, "default") {
				shoot(t, ctx, strings.TrimPrefix(p.path, "/"))
			}
		}
	})
}

// The tasks page shows each task's flow control (key, max running, rate
// and burst) and its timeout as configured ("1m", "1h30m", not "1m0s"); a
// task without args shows no args schema to expand.
func TestDashboard_TasksShowFlowControlAndPlainTimeouts(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	minute := runtime.NewTask[testtasks.Msg, runtime.None]("t_minute", runtime.Timeout(time.Minute)).
		Describe("Msg", []runtime.Field{{Name: "Text", Type: "string"}}, "", nil)
	long := runtime.NewTask[runtime.None, runtime.None]("t_long", runtime.Timeout(90*time.Minute))
	in := runtime.NewInspector(c, testtasks.Register, keytasks.Register, func(w *runtime.Worker) {
		runtime.Handle(w, minute, func(context.Context, testtasks.Msg) (runtime.None, error) { return runtime.None{}, nil })
		runtime.Handle(w, long, func(context.Context, runtime.None) (runtime.None, error) { return runtime.None{}, nil })
	})
	url := serveAPI(t, in, runtime.APIOptions{}).url
	run(t, ctx, "open the tasks page", chromedp.Navigate(url+"/tasks"), chromedp.WaitVisible(chromedp.CSS("#task-t_key_customer")))

	for row, want := range map[string]string{
		"#task-t_key_customer [data-col=flow]": "key Customer max running 2 per key rate 100/s per key, burst 10",
		"#task-t_key_limited [data-col=flow]":  "max running 1",
		"#task-t_echo [data-col=flow]":         "—",
		"#task-t_minute [data-col=timeout]":    "1m",
		"#task-t_long [data-col=timeout]":      "1h30m",
		"#task-t_long [data-col=args]":         "—",
	} {
		if got := innerText(t, ctx, row); got != want {
			t.Errorf("%s = %q; want %q", row, got, want)
		}
	}
	for _, task := range []string{"t_long", "t_tick"} {
		if n := text(t, ctx, "#task-"+task+" details.schema"); n != "(no element)" {
			t.Errorf("%s, a task without args, shows an args schema: %q", task, n)
		}
	}
	if got := text(t, ctx, "#task-t_minute details.schema summary"); got != "JSON Schema" {
		t.Errorf("t_minute, a task with args, shows no args schema to expand (%q)", got)
	}
	shoot(t, ctx, "tasks")
}

// outsideWindow names the elements css selects that are not wholly inside the
// window, each with where it is; "none" when css selects nothing.
func outsideWindow(t *testing.T, ctx context.Context, css string) string {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(() => {
		const es = document.querySelectorAll(%q);
		if (es.length === 0) return 'none';
		const out = [];
		for (const e of es) {
			const r = e.getBoundingClientRect();
			if (r.left < 0 || r.right > window.innerWidth || r.width === 0) out.push(e.textContent.trim() + ' at ' + Math.round(r.left) + '..' + Math.round(r.right) + ' of ' + window.innerWidth);
		}
		return out.join('; ');
	})()`, css)))
	if err != nil {
		t.Fatalf("browser: where %s is: %v", css, err)
	}
	return out
}
