package dashboard

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
)

type loginData struct {
	Next  string
	Wrong bool
}

func (d *Dashboard) loginForm(w http.ResponseWriter, r *http.Request) {
	if d.keys.tokens.Empty() {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	next, ok := localPath(r.URL.Query().Get("next"))
	if !ok {
		next = "/"
	}
	d.render(w, http.StatusOK, &page{Title: "Log in", Nav: "login", CSRF: d.keys.csrfToken(w, r), Data: loginData{Next: next}})
}

// login trades an API token for a session cookie of its name (and so its
// role). Each client has a few
// tries, then one more every few seconds: a 429 says how long to wait.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if d.keys.tokens.Empty() {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	next, ok := localPath(r.PostFormValue("next"))
	if !ok {
		next = "/"
	}
	p := &page{Title: "Log in", Nav: "login", CSRF: d.keys.csrfToken(w, r), Data: loginData{Next: next, Wrong: true}}
	if !d.keys.checkCSRF(r) {
		p.Flash = "The form was stale: log in again."
		d.render(w, http.StatusForbidden, p)
		return
	}
	if ok, wait := d.keys.logins.allow(r); !ok {
		secs := int(math.Ceil(wait.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		p.Data = loginData{Next: next}
		p.Flash = "Too many tries from this address: wait " + admin.FormatDuration(time.Duration(secs)*time.Second) + " and log in again."
		d.render(w, http.StatusTooManyRequests, p)
		return
	}
	who, ok := d.keys.tokenMatches(r.PostFormValue("token"))
	if !ok {
		d.render(w, http.StatusUnauthorized, p)
		return
	}
	http.SetCookie(w, d.keys.newSession(r, who.Name))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session on the server, not only in this browser: a copy
// of the cookie opens nothing after it.
func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	if d.keys.checkCSRF(r) {
		d.keys.endSession(r)
		http.SetCookie(w, strictCookie(r, sessionCookie, "", -1))
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
