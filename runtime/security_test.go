package runtime_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// raw sends one request with exactly the given headers and body, and returns
// the status, the body and the headers of the answer (redirects not followed).
func raw(t *testing.T, hc *http.Client, method, u string, hdr map[string]string, body string) (int, string, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if hc == nil {
		hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// jsonError is the "error" of a JSON error answer, "" when body is not one.
func jsonError(body string) string {
	var v struct{ Error string }
	if json.Unmarshal([]byte(body), &v) != nil {
		return ""
	}
	return v.Error
}

func jobCount(t *testing.T, in *admin.Inspector) int {
	t.Helper()
	page, err := in.Jobs(ctxT(t), admin.JobQuery{})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Jobs)
}

func routePaused(t *testing.T, in *admin.Inspector, route string) bool {
	t.Helper()
	routes, err := in.Routes(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if r.Route == route {
			return r.Paused
		}
	}
	return false
}

// Without a token the API answers loopback names only: a page of a domain
// that the attacker points at 127.0.0.1 (DNS rebinding) sends its own name
// as Host and is refused, in JSON, before anything runs.
func TestAPI_WithoutATokenAHostThatIsNotLoopbackIsRefused(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	in := runtime.NewInspector(c, testtasks.Register)
	base := serveAPI(t, in, runtime.APIOptions{}).url
	port := base[strings.LastIndex(base, ":")+1:]
	job := `{"name":"t_echo","args":{"Text":"x"}}`
	for _, host := range []string{"attacker.example", "attacker.example:" + port, "127.0.0.1.attacker.example", "localhost.", "0.0.0.0:" + port, "[::2]:" + port, "127.0.0.2"} {
		hdr := map[string]string{"Host": host, "Content-Type": "application/json"}
		st, body, _ := raw(t, nil, "POST", base+"/api/v1/jobs", hdr, job)
		if st != http.StatusMisdirectedRequest || !strings.Contains(jsonError(body), "loopback") {
			t.Errorf("POST /api/v1/jobs with Host %q = %d %s; want 421 with a JSON error naming loopback names", host, st, body)
		}
		if st, body, _ := raw(t, nil, "GET", base+"/api/v1/jobs", map[string]string{"Host": host}, ""); st != http.StatusMisdirectedRequest {
			t.Errorf("GET /api/v1/jobs with Host %q = %d %s; want 421", host, st, body)
		}
	}
	if n := jobCount(t, in); n != 0 {
		t.Fatalf("%d jobs were created by requests with a foreign Host", n)
	}
	for _, host := range []string{"127.0.0.1", "127.0.0.1:" + port, "localhost", "localhost:" + port, "LOCALHOST:" + port, "[::1]", "[::1]:" + port} {
		hdr := map[string]string{"Host": host, "Content-Type": "application/json"}
		if st, body, _ := raw(t, nil, "POST", base+"/api/v1/jobs", hdr, job); st != http.StatusCreated {
			t.Errorf("POST /api/v1/jobs with Host %q = %d %s; want 201", host, st, body)
		}
	}
	// With a token the API listens on every interface under any name.
	tok := serveAPI(t, in, runtime.APIOptions{Token: "s3cret"}).url
	if st, body, _ := raw(t, nil, "GET", tok+"/api/v1/queues", map[string]string{"Host": "bananas.internal.example", "Authorization": "Bearer s3cret"}, ""); st != http.StatusOK {
		t.Fatalf("with a token, GET /api/v1/queues with Host bananas.internal.example = %d %s; want 200", st, body)
	}
}

// A body the API acts on must be JSON by its Content-Type: a browser's
// form or a no-cors fetch can only send text/plain, form or multipart
// bodies, so none of them gets past this.
func TestAPI_ABodyThatIsNotDeclaredJSONIsA415(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	in := runtime.NewInspector(c, testtasks.Register)
	base := serveAPI(t, in, runtime.APIOptions{}).url
	job := `{"name":"t_echo","args":{"Text":"x"}}`
	for _, ct := range []string{"", "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", "application/json;;"} {
		hdr := map[string]string{}
		if ct != "" {
			hdr["Content-Type"] = ct
		}
		st, body, _ := raw(t, nil, "POST", base+"/api/v1/jobs", hdr, job)
		if st != http.StatusUnsupportedMediaType || !strings.Contains(jsonError(body), "application/json") {
			t.Errorf("POST /api/v1/jobs with Content-Type %q = %d %s; want 415 with a JSON error naming application/json", ct, st, body)
		}
	}
	if n := jobCount(t, in); n != 0 {
		t.Fatalf("%d jobs were created by bodies that are not declared JSON", n)
	}
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON"} {
		if st, body, _ := raw(t, nil, "POST", base+"/api/v1/jobs", map[string]string{"Content-Type": ct}, job); st != http.StatusCreated {
			t.Errorf("POST /api/v1/jobs with Content-Type %q = %d %s; want 201", ct, st, body)
		}
	}
	// An action without a body needs no Content-Type.
	if st, body, _ := raw(t, nil, "POST", base+"/api/v1/routes/default/pause", nil, ""); st != http.StatusOK {
		t.Fatalf("POST pause without a body = %d %s; want 200", st, body)
	}
}

// What a browser says of a request from a page of another origin (Origin,
// Sec-Fetch-Site) gets it refused: a 403 in JSON, before anything runs.
// The server's own pages, and clients that are not browsers, go through.
func TestAPI_CrossOriginRequestsAreRefused(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	in := runtime.NewInspector(c, testtasks.Register)
	if _, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	base := serveAPI(t, in, runtime.APIOptions{}).url
	self := base // http://127.0.0.1:port
	for what, hdr := range map[string]map[string]string{
		"Origin of another site":              {"Origin": "https://attacker.example"},
		"Origin of another port":              {"Origin": "http://127.0.0.1:1"},
		"Origin null":                         {"Origin": "null"},
		"Sec-Fetch-Site cross-site":           {"Sec-Fetch-Site": "cross-site"},
		"Sec-Fetch-Site same-site":            {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"},
		"a cross-site form navigation (POST)": {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"},
	} {
		st, body, _ := raw(t, nil, "POST", base+"/api/v1/routes/default/pause", hdr, "")
		if st != http.StatusForbidden || !strings.Contains(jsonError(body), "origin") {
			t.Errorf("POST pause with %s = %d %s; want 403 with a JSON error about the origin", what, st, body)
		}
		if st, body, _ := raw(t, nil, "GET", base+"/api/v1/jobs", hdr, ""); st != http.StatusForbidden && hdr["Sec-Fetch-Mode"] == "" {
			t.Errorf("GET /api/v1/jobs with %s = %d %s; want 403", what, st, body)
		}
	}
	if routePaused(t, in, "default") {
		t.Fatal("a cross-origin request paused the route")
	}
	// A link to the API followed from another site is a navigation the user
	// sees: it reads, and acts on nothing.
	if st, body, _ := raw(t, nil, "GET", base+"/api/v1/queues", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, ""); st != http.StatusOK {
		t.Errorf("GET /api/v1/queues navigated to from another site = %d %s; want 200", st, body)
	}
	for what, hdr := range map[string]map[string]string{
		"no browser headers":         {},
		"its own Origin":             {"Origin": self},
		"Sec-Fetch-Site same-origin": {"Sec-Fetch-Site": "same-origin", "Origin": self},
		"Sec-Fetch-Site none":        {"Sec-Fetch-Site": "none"},
	} {
		if st, body, _ := raw(t, nil, "POST", base+"/api/v1/routes/default/resume", hdr, ""); st != http.StatusOK {
			t.Errorf("POST resume with %s = %d %s; want 200", what, st, body)
		}
	}
}

// login logs hc in at base with token, and returns the form's CSRF token.
func login(t *testing.T, hc *http.Client, base, token string) string {
	t.Helper()
	st, body, _ := raw(t, hc, "GET", base+"/login", nil, "")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if st != http.StatusOK || m == nil {
		t.Fatalf("GET /login = %d, no CSRF token:\n%s", st, body)
	}
	form := url.Values{"csrf": {m[1]}, "token": {token}, "next": {"/"}}.Encode()
	if st, body, _ := raw(t, hc, "POST", base+"/login", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, form); st != http.StatusSeeOther {
		t.Fatalf("POST /login = %d; want 303:\n%s", st, body)
	}
	st, body, _ = raw(t, hc, "GET", base+"/", nil, "")
	m = regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if st != http.StatusOK || m == nil {
		t.Fatalf("GET / after login = %d, no CSRF token:\n%s", st, body)
	}
	return m[1]
}

func browserClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// With a token, the dashboard's session cookie would ride along with a
// request of a page on another port of the same host (cookies know no
// ports); the Origin the browser sends refuses it, whatever the cookie.
func TestDashboard_ACrossOriginFormIsRefusedEvenWithASession(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	in := runtime.NewInspector(c, testtasks.Register)
	if _, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	base := serveAPI(t, in, runtime.APIOptions{Token: "s3cret"}).url
	hc := browserClient()
	csrf := login(t, hc, base, "s3cret")
	form := url.Values{"csrf": {csrf}}.Encode()
	for what, hdr := range map[string]map[string]string{
		"Origin of another port":    {"Origin": "http://127.0.0.1:1"},
		"Sec-Fetch-Site same-site":  {"Sec-Fetch-Site": "same-site"},
		"Sec-Fetch-Site cross-site": {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"},
	} {
		hdr["Content-Type"] = "application/x-www-form-urlencoded"
		if st, body, _ := raw(t, hc, "POST", base+"/routes/default/pause", hdr, form); st != http.StatusForbidden || routePaused(t, in, "default") {
			t.Fatalf("dashboard pause with the session, the CSRF token and %s = %d, paused %v; want 403 and not paused:\n%s", what, st, routePaused(t, in, "default"), body)
		}
	}
	hdr := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": base, "Sec-Fetch-Site": "same-origin"}
	if st, body, _ := raw(t, hc, "POST", base+"/routes/default/pause", hdr, form); st != http.StatusSeeOther || !routePaused(t, in, "default") {
		t.Fatalf("dashboard pause from its own page = %d; want 303 and paused:\n%s", st, body)
	}
}

// /healthz says whether Redis answers, and nothing of why not: the error
// text of Redis (addresses, ACL names) goes to the log only.
func TestAPI_HealthzTellsNoRedisErrorText(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := connect(t, srv.URL())
	a := serveAPI(t, runtime.NewInspector(c), runtime.APIOptions{})
	a.want(http.StatusOK, "GET", "/healthz", "")
	srv.Close()
	st, body, _ := raw(t, nil, "GET", a.url+"/healthz", nil, "")
	if st != http.StatusServiceUnavailable || strings.TrimSpace(body) != `{"status":"unavailable"}` {
		t.Fatalf("/healthz with Redis down = %d %s; want 503 and exactly {\"status\":\"unavailable\"}", st, body)
	}
}

// /metrics needs no token by default, as scrapers carry none; with
// MetricsNeedToken (Main sets it when METRICS_PORT serves the metrics
// elsewhere) it asks for the token like /api.
func TestAPI_MetricsNeedTheTokenWhenOneIsSetAndAsked(t *testing.T) {
	t.Parallel()
	c := connect(t, "mem://")
	in := runtime.NewInspector(c, testtasks.Register)
	scrape := serveAPI(t, in, runtime.APIOptions{Token: "s3cret"}).url
	if st, body, _ := raw(t, nil, "GET", scrape+"/metrics", nil, ""); st != http.StatusOK || !strings.Contains(body, "bananas_") {
		t.Fatalf("GET /metrics without the token, by default = %d; want 200 and bananas_ metrics (scrapers carry no token)", st)
	}
	tok := serveAPI(t, in, runtime.APIOptions{Token: "s3cret", MetricsNeedToken: true}).url
	if st, body, hdr := raw(t, nil, "GET", tok+"/metrics", nil, ""); st != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") == "" || jsonError(body) == "" {
		t.Fatalf("GET /metrics without the token = %d %s; want 401 with WWW-Authenticate and a JSON error", st, body)
	}
	if st, body, _ := raw(t, nil, "GET", tok+"/metrics", map[string]string{"Authorization": "Bearer s3cret"}, ""); st != http.StatusOK || !strings.Contains(body, "bananas_") {
		t.Fatalf("GET /metrics with the token = %d; want 200 and bananas_ metrics", st)
	}
	open := serveAPI(t, in, runtime.APIOptions{}).url
	if st, body, _ := raw(t, nil, "GET", open+"/metrics", nil, ""); st != http.StatusOK || !strings.Contains(body, "bananas_") {
		t.Fatalf("GET /metrics without a token set = %d; want 200 and bananas_ metrics", st)
	}
}

// METRICS_PORT serves /metrics on a listener of its own, without the token
// (for Prometheus on a private network), while the API's port keeps asking
// for it; a bad value exits 2 naming the variable.
func TestCLI_MetricsPortServesMetricsWithoutTheToken(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"0", "70000", "x", "1.2.3.4:", "nohost:99", "[::1]:0"} {
		code, _, errOut := newApp(t).with("API_PORT", fmt.Sprint(freeTCPPort(t)), "METRICS_PORT", bad).run("api")
		if code != 2 || !strings.Contains(errOut, "METRICS_PORT") {
			t.Errorf("METRICS_PORT=%q: exit %d, %q; want 2 naming METRICS_PORT", bad, code, errOut)
		}
	}
	apiPort, metricsPort := freeTCPPort(t), freeTCPPort(t)
	if code, _, errOut := newApp(t).with("API_PORT", fmt.Sprint(apiPort), "METRICS_PORT", fmt.Sprint(apiPort)).run("api"); code != 2 || !strings.Contains(errOut, "METRICS_PORT") {
		t.Errorf("METRICS_PORT equal to API_PORT: exit %d, %q; want 2 naming METRICS_PORT", code, errOut)
	}
	a := newApp(t).with("API_PORT", fmt.Sprint(apiPort), "API_TOKEN", "s3cret", "METRICS_PORT", "127.0.0.1:"+fmt.Sprint(metricsPort))
	a.background("api")
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	hc := &http.Client{Timeout: 2 * time.Second}
	waitFor(t, 10*time.Second, "the metrics listener to answer", func() bool {
		resp, err := hc.Get(metrics)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if st, body, _ := raw(t, hc, "GET", metrics, nil, ""); st != http.StatusOK || !strings.Contains(body, "bananas_") {
		t.Fatalf("GET %s = %d; want 200 and bananas_ metrics", metrics, st)
	}
	if st, _, _ := raw(t, hc, "GET", fmt.Sprintf("http://127.0.0.1:%d/api/v1/queues", metricsPort), nil, ""); st != http.StatusNotFound {
		t.Fatalf("the metrics listener serves the API: GET /api/v1/queues = %d; want 404", st)
	}
	waitFor(t, 10*time.Second, "the API to answer", func() bool {
		resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/livez", apiPort))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	if st, _, _ := raw(t, hc, "GET", fmt.Sprintf("http://127.0.0.1:%d/metrics", apiPort), nil, ""); st != http.StatusUnauthorized {
		t.Fatalf("GET /metrics on the API's port without the token = %d; want 401", st)
	}

	// A worker without API_PORT serves its metrics on METRICS_PORT alone.
	workerMetrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", freeTCPPort(t))
	newApp(t).with("METRICS_PORT", strings.TrimSuffix(strings.TrimPrefix(workerMetrics, "http://"), "/metrics")).background("worker")
	waitFor(t, 10*time.Second, "the worker's metrics listener to answer", func() bool {
		resp, err := hc.Get(workerMetrics)
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && strings.Contains(string(b), "bananas_")
	})
}

// A redirect after an action or a login goes to a path of this site only,
// whatever the form says: no control byte, no //host, no backslash; an odd
// byte in the form never fails the request after the action ran.
func TestDashboard_RedirectsStayOnTheSite(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	in := runtime.NewInspector(c, testtasks.Register)
	if _, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	base := serveAPI(t, in, runtime.APIOptions{}).url
	hc := browserClient()
	_, body, _ := raw(t, hc, "GET", base+"/", nil, "")
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)[1]
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for _, back := range []string{"/\x7f", "/\t/evil.example", "//evil.example", "/\\evil.example", "/%09/x\n", "https://evil.example/", "/jobs\x00", "/\u00a0x", "javascript:alert(1)", "/%zz"} {
		for _, action := range []string{"pause", "resume"} {
			st, body, hdr := raw(t, hc, "POST", base+"/routes/default/"+action, form, url.Values{"csrf": {csrf}, "back": {back}}.Encode())
			loc := hdr.Get("Location")
			if st != http.StatusSeeOther || !strings.HasPrefix(loc, "/?done=") {
				t.Errorf("%s with back %q = %d Location %q; want 303 to the action's own page /?done=…:\n%s", action, back, st, loc, body)
			}
		}
	}
	st, _, hdr := raw(t, hc, "POST", base+"/routes/default/pause", form, url.Values{"csrf": {csrf}, "back": {"/jobs?route=default&state=pending"}}.Encode())
	if loc := hdr.Get("Location"); st != http.StatusSeeOther || loc != "/jobs?done=paused&route=default&state=pending" {
		t.Errorf("pause with back /jobs?route=default&state=pending = %d Location %q; want it kept, with done=paused", st, loc)
	}

	tok := serveAPI(t, in, runtime.APIOptions{Token: "s3cret"}).url
	for next, want := range map[string]string{
		"/\t/evil.example": "/", "/%09/evil.example": "/%09/evil.example", "//evil.example": "/", "/\\evil.example": "/",
		"/\x7f": "/", "https://evil.example": "/", "/jobs?state=failed": "/jobs?state=failed", "/\r\nSet-Cookie: x=1": "/",
	} {
		hc := browserClient()
		_, body, _ := raw(t, hc, "GET", tok+"/login?"+url.Values{"next": {next}}.Encode(), nil, "")
		m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("GET /login?next=%q: no form:\n%s", next, body)
		}
		st, _, hdr := raw(t, hc, "POST", tok+"/login", form, url.Values{"csrf": {m[1]}, "token": {"s3cret"}, "next": {next}}.Encode())
		if loc := hdr.Get("Location"); st != http.StatusSeeOther || loc != want {
			t.Errorf("login with next %q = %d Location %q; want 303 to %q", next, st, loc, want)
		}
	}
}

// Served over TLS, the dashboard's cookies are Secure: the browser never
// sends them over plain HTTP.
func TestDashboard_CookiesAreSecureOverTLS(t *testing.T) {
	t.Parallel()
	c := connect(t, "mem://")
	srv := httptest.NewTLSServer(runtime.APIHandler(runtime.NewInspector(c, testtasks.Register), runtime.APIOptions{Token: "s3cret"}))
	t.Cleanup(srv.Close)
	hc := browserClient()
	hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	st, body, hdr := raw(t, hc, "GET", srv.URL+"/login", nil, "")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if st != http.StatusOK || m == nil {
		t.Fatalf("GET /login = %d:\n%s", st, body)
	}
	cookies := hdr.Values("Set-Cookie")
	_, _, hdr = raw(t, hc, "POST", srv.URL+"/login", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, url.Values{"csrf": {m[1]}, "token": {"s3cret"}}.Encode())
	cookies = append(cookies, hdr.Values("Set-Cookie")...)
	if len(cookies) < 2 {
		t.Fatalf("cookies set: %q; want the CSRF and the session cookies", cookies)
	}
	for _, sc := range cookies {
		if !strings.Contains(sc, "; Secure") || !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict") {
			t.Errorf("Set-Cookie %q over TLS; want Secure, HttpOnly and SameSite=Strict", sc)
		}
	}
	// Plain HTTP: Secure only when a TLS-terminating proxy says the browser
	// came over https.
	plain := serveAPI(t, runtime.NewInspector(c, testtasks.Register), runtime.APIOptions{Token: "s3cret"}).url
	for proto, secure := range map[string]bool{"": false, "https": true, "http": false} {
		hdr := map[string]string{}
		if proto != "" {
			hdr["X-Forwarded-Proto"] = proto
		}
		_, _, h := raw(t, nil, "GET", plain+"/login", hdr, "")
		if sc := h.Get("Set-Cookie"); sc == "" || strings.Contains(sc, "; Secure") != secure {
			t.Errorf("Set-Cookie %q over plain HTTP with X-Forwarded-Proto %q; want Secure %v", sc, proto, secure)
		}
	}
}

// Logging out ends the session on the server: the cookie, replayed after
// the logout, opens nothing.
func TestDashboard_LogoutEndsTheSession(t *testing.T) {
	t.Parallel()
	c := connect(t, "mem://")
	base := serveAPI(t, runtime.NewInspector(c, testtasks.Register), runtime.APIOptions{Token: "s3cret"}).url
	hc := browserClient()
	csrf := login(t, hc, base, "s3cret")
	u, _ := url.Parse(base)
	var session *http.Cookie
	for _, ck := range hc.Jar.Cookies(u) {
		if ck.Name == "bananas_session" {
			session = ck
		}
	}
	if session == nil {
		t.Fatal("no session cookie after login")
	}
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	if st, _, hdr := raw(t, hc, "POST", base+"/logout", form, url.Values{"csrf": {csrf}}.Encode()); st != http.StatusSeeOther || hdr.Get("Location") != "/login" {
		t.Fatalf("logout = %d to %q; want 303 to /login", st, hdr.Get("Location"))
	}
	// Another client that kept the cookie: what a stolen copy would do.
	thief := browserClient()
	thief.Jar.SetCookies(u, []*http.Cookie{{Name: "bananas_session", Value: session.Value, Path: "/"}})
	if st, _, hdr := raw(t, thief, "GET", base+"/tasks", nil, ""); st != http.StatusSeeOther || !strings.HasPrefix(hdr.Get("Location"), "/login") {
		t.Fatalf("GET /tasks with the session cookie after logout = %d to %q; want 303 to /login", st, hdr.Get("Location"))
	}
	// A new login works.
	login(t, browserClient(), base, "s3cret")
}

// Guessing the token at the login form is slowed down per client address:
// past a burst of tries the form answers 429 with Retry-After, even to the
// right token, until the wait is over.
func TestDashboard_LoginIsRateLimitedPerClient(t *testing.T) {
	t.Parallel()
	c := connect(t, "mem://")
	base := serveAPI(t, runtime.NewInspector(c, testtasks.Register), runtime.APIOptions{Token: "s3cret"}).url
	hc := browserClient()
	_, body, _ := raw(t, hc, "GET", base+"/login", nil, "")
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)[1]
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	try := func(token string) (int, string, http.Header) {
		return raw(t, hc, "POST", base+"/login", form, url.Values{"csrf": {csrf}, "token": {token}}.Encode())
	}
	limited := 0
	for i := range 50 {
		st, _, hdr := try(fmt.Sprintf("guess-%d", i))
		if st == http.StatusTooManyRequests {
			limited = i
			if s, err := strconv.Atoi(hdr.Get("Retry-After")); err != nil || s < 1 {
				t.Fatalf("429 with Retry-After %q; want whole seconds >= 1", hdr.Get("Retry-After"))
			}
			break
		}
		if st != http.StatusUnauthorized {
			t.Fatalf("wrong token #%d = %d; want 401", i, st)
		}
	}
	if limited == 0 || limited > 20 {
		t.Fatalf("50 wrong tokens in a row: first 429 at try %d; want one within 20 tries", limited)
	}
	if st, body, _ := try("s3cret"); st != http.StatusTooManyRequests || !strings.Contains(body, "Too many") {
		t.Fatalf("the right token while limited = %d; want 429 saying too many tries:\n%s", st, body)
	}
}

// Every refusal arrives, even when the client sent a body the server did
// not read and asked to close the connection: the answer is never lost to
// a reset.
func TestAPI_EveryRefusalArrivesWithALargeBody(t *testing.T) {
	t.Parallel()
	c := connect(t, "mem://")
	in := runtime.NewInspector(c, testtasks.Register)
	open := serveAPI(t, in, runtime.APIOptions{}).url
	tok := serveAPI(t, in, runtime.APIOptions{Token: "s3cret"}).url
	body := `{"name":"t_echo","args":{"Text":"` + strings.Repeat("x", 60<<10) + `"}}`
	for _, tc := range []struct {
		what, base, method, path, headers string
		status                            int
	}{
		{"no token", tok, "POST", "/api/v1/jobs", "Content-Type: application/json\r\n", 401},
		{"no route", open, "POST", "/api/v1/nothing", "Content-Type: application/json\r\n", 404},
		{"a method the path does not take", open, "PUT", "/api/v1/jobs", "Content-Type: application/json\r\n", 405},
		{"not JSON", open, "POST", "/api/v1/jobs", "Content-Type: text/plain\r\n", 415},
		{"another origin", open, "POST", "/api/v1/jobs", "Content-Type: application/json\r\nOrigin: http://attacker.example\r\n", 403},
		{"a dashboard action without CSRF", open, "POST", "/routes/default/pause", "Content-Type: application/x-www-form-urlencoded\r\n", 403},
		{"an unknown query parameter", open, "POST", "/api/v1/jobs?x=1", "Content-Type: application/json\r\n", 400},
	} {
		addr := strings.TrimPrefix(tc.base, "http://")
		for i := range 50 {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n%s", tc.method, tc.path, addr, tc.headers, len(body), body)
			if _, err := io.WriteString(conn, req); err != nil {
				conn.Close()
				t.Fatalf("%s, try %d: writing the request: %v", tc.what, i, err)
			}
			// The whole answer, then the end of the connection: a reset
			// instead (the server closing with the body unread) is what
			// destroys an answer in flight, in the client's kernel or in a
			// client that reports its failed write before the answer.
			answer, err := io.ReadAll(conn)
			conn.Close()
			if err != nil || !strings.HasPrefix(string(answer), fmt.Sprintf("HTTP/1.1 %d ", tc.status)) {
				t.Fatalf("%s, try %d: answer %.40q, then %v; want %d and a clean end of the connection", tc.what, i, answer, err, tc.status)
			}
		}
	}
}

// No path or form value, however odd its bytes, fails the server: every API
// route and dashboard page and action answers it with a 4xx (or its normal
// answer), never a 5xx or a panic.
func TestHTTP_OddBytesInPathsAndFormsNeverFailTheServer(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	in := runtime.NewInspector(c, testtasks.Register)
	if _, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	base := serveAPI(t, in, runtime.APIOptions{}).url
	hc := browserClient()
	_, body, _ := raw(t, hc, "GET", base+"/", nil, "")
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)[1]
	odd := []string{"%7F", "%00", "%FF%FE", "%0D%0ASet-Cookie:%20x=1", "..%2F..%2Fetc", "%7B%7D", "a%2Fb", "%C0%AF", strings.Repeat("z", 4000), "%E2%80%AE", "01M8C1Y3N4PJDH1Q4MECZKV2MA.%7F"}
	type req struct{ method, path string }
	var reqs []req
	for _, x := range odd {
		reqs = append(reqs,
			req{"GET", "/api/v1/jobs/" + x}, req{"GET", "/api/v1/jobs/" + x + "/result"}, req{"POST", "/api/v1/jobs/" + x + "/cancel"},
			req{"DELETE", "/api/v1/jobs/" + x}, req{"POST", "/api/v1/routes/" + x + "/pause"}, req{"POST", "/api/v1/routes/" + x + "/resume"},
			req{"POST", "/api/v1/dlq/" + x + "/replay"}, req{"GET", "/api/v1/jobs?route=" + x + "&state=" + x + "&task=" + x + "&q=" + x + "&cursor=" + x},
			req{"GET", "/api/v1/dlq?cursor=" + x + "&q=" + x}, req{"POST", "/api/v1/dlq/replay?task=" + x}, req{"DELETE", "/api/v1/dlq?task=" + x + "&older_than=" + x},
			req{"GET", "/api/v1/stats?window=" + x}, req{"GET", "/jobs/" + x}, req{"GET", "/jobs?route=" + x + "&state=" + x + "&cursor=" + x + "&q=" + x},
			req{"GET", "/charts?window=" + x}, req{"GET", "/login?next=" + x}, req{"GET", "/static/" + x},
			req{"POST", "/jobs/" + x + "/replay"}, req{"POST", "/jobs/" + x + "/delete"}, req{"POST", "/jobs/" + x + "/cancel"},
			req{"POST", "/routes/" + x + "/pause"}, req{"POST", "/routes/" + x + "/resume"}, req{"POST", "/routes/" + x + "/purge-dead"},
			req{"POST", "/routes/" + x + "/replay-dead"}, req{"POST", "/jobs/bulk"})
	}
	formHdr := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for i, r := range reqs {
		x := odd[i%len(odd)]
		var hdr map[string]string
		body := ""
		if r.method == "POST" && !strings.HasPrefix(r.path, "/api/") {
			hdr = formHdr
			body = "csrf=" + csrf + "&confirm=yes&action=" + x + "&id=" + x + "&back=" + x
		}
		st, got, _ := raw(t, hc, r.method, base+r.path, hdr, body)
		if st >= 500 {
			t.Errorf("%s %s = %d; want no 5xx:\n%.300s", r.method, r.path, st, got)
		}
	}
}
