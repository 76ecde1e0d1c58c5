package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A request a web page of another origin sent is refused with 403 before
// anything acts on it — an API action, a read whose answer the page could
// read, or a dashboard action (the extra routes) — whether the browser says
// so in Sec-Fetch-Site or, an older one, only in Origin; with or without a
// token. What no browser sent (no Sec-Fetch-Site, no Origin: curl, the CLI)
// and what the server's own pages send go through.
func TestCrossOrigin_RequestsOfAnotherOriginAreRefusedBeforeTheyAct(t *testing.T) {
	t.Parallel()
	const own = "http://127.0.0.1:8080"
	submit := `{"name": "t", "args": {}}`
	for _, c := range []struct {
		name           string
		method, target string
		headers        []string
		refused        bool
	}{
		{"Origin of another site", "POST", "/api/v1/jobs", []string{"Origin", "http://evil.example"}, true},
		{"Origin of another port", "POST", "/api/v1/jobs", []string{"Origin", "http://127.0.0.1:9999"}, true},
		{"Origin of another scheme's host", "POST", "/api/v1/jobs", []string{"Origin", "http://localhost:8080"}, true},
		{"Origin null (a sandboxed page)", "POST", "/api/v1/jobs", []string{"Origin", "null"}, true},
		{"Sec-Fetch-Site cross-site", "POST", "/api/v1/jobs", []string{"Sec-Fetch-Site", "cross-site", "Origin", own}, true},
		{"Sec-Fetch-Site same-site", "POST", "/api/v1/jobs", []string{"Sec-Fetch-Site", "same-site"}, true},
		{"a cross-site fetch that would read a list", "GET", "/api/v1/jobs?route=r", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "cors"}, true},
		{"a cross-site form posted to the dashboard", "POST", "/extra", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate"}, true},
		{"an old browser's form posted to the dashboard", "POST", "/extra", []string{"Origin", "http://evil.example"}, true},

		{"no browser (curl, the CLI)", "POST", "/api/v1/jobs", nil, false},
		{"the server's own page (Origin)", "POST", "/api/v1/jobs", []string{"Origin", own}, false},
		{"the server's own page (Sec-Fetch-Site)", "POST", "/api/v1/jobs", []string{"Sec-Fetch-Site", "same-origin", "Origin", own}, false},
		{"an address typed in the browser", "GET", "/api/v1/jobs?route=r", []string{"Sec-Fetch-Site", "none", "Sec-Fetch-Mode", "navigate"}, false},
		{"a link followed from another site", "GET", "/extra", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate"}, false},
	} {
		for _, token := range []string{"", "s3cret"} {
			f := &fakeAdmin{}
			extraCalls := 0
			h := newAPI(f, Config{Token: token, Extra: map[string]http.Handler{"/extra": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				extraCalls++
			})}})
			headers := c.headers
			if token != "" {
				headers = append([]string{"Authorization", "Bearer " + token}, headers...)
			}
			body := ""
			if c.method == "POST" && strings.HasPrefix(c.target, "/api/") {
				body = submit
			}
			r := send(t, h, c.method, c.target, body, headers...)
			acted := len(f.subs) > 0 || extraCalls > 0 || f.query.Route == "r"
			switch {
			case c.refused && (r.status != http.StatusForbidden || acted || !strings.Contains(r.raw, "another origin")):
				t.Errorf("%s (token %q): %s %s answered %d %s (acted: %v); want 403 naming another origin, nothing done",
					c.name, token, c.method, c.target, r.status, r.raw, acted)
			case !c.refused && (r.status >= 400 || !acted):
				t.Errorf("%s (token %q): %s %s answered %d %s (acted: %v); want it served",
					c.name, token, c.method, c.target, r.status, r.raw, acted)
			}
		}
	}
}

// Without a token, the server answers loopback Host names only (with or
// without a port, in any case): a name an attacker's DNS points at
// 127.0.0.1 (rebinding) gets a 421 and nothing is done. With a token the
// Host is not checked, as the server then listens on every interface.
func TestHost_WithoutATokenOnlyLoopbackNamesAreServed(t *testing.T) {
	t.Parallel()
	for host, served := range map[string]bool{
		"127.0.0.1": true, "127.0.0.1:8080": true, "localhost": true, "LocalHost:1": true, "[::1]": true, "[::1]:8080": true,

		"attacker.example": false, "attacker.example:8080": false, "127.0.0.1.attacker.example": false,
		"localhost.attacker.example:8080": false, "10.0.0.7:8080": false, "0.0.0.0:8080": false,
		"::1": false, "[::1]:x": false, "127.0.0.1:": false, "127.0.0.1:80x": false, "": false,
	} {
		for _, token := range []string{"", "s3cret"} {
			f := &fakeAdmin{}
			r := httptest.NewRequest("POST", "/api/v1/jobs", strings.NewReader(`{"name": "t", "args": {}}`))
			r.Host = host
			r.Header.Set("Content-Type", "application/json")
			if token != "" {
				r.Header.Set("Authorization", "Bearer "+token)
			}
			w := httptest.NewRecorder()
			newAPI(f, Config{Token: token}).ServeHTTP(w, r)
			want := served || token != ""
			switch {
			case want && (w.Code != http.StatusCreated || len(f.subs) != 1):
				t.Errorf("Host %q (token %q): answer %d %s, %d submissions; want it served", host, token, w.Code, w.Body, len(f.subs))
			case !want && (w.Code != http.StatusMisdirectedRequest || len(f.subs) != 0 || !strings.Contains(w.Body.String(), "not a loopback name")):
				t.Errorf("Host %q (token %q): answer %d %s, %d submissions; want 421 naming the Host, nothing done", host, token, w.Code, w.Body, len(f.subs))
			}
		}
	}
}
