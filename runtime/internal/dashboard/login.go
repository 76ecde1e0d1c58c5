package dashboard

import (
	"net/http"
)

type loginData struct {
	Next  string
	Wrong bool
}

func (d *Dashboard) loginForm(w http.ResponseWriter, r *http.Request) {
	if d.keys.tokenSum == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	next := r.URL.Query().Get("next")
	if !localPath(next) {
		next = "/"
	}
	d.render(w, http.StatusOK, &page{Title: "Log in", Nav: "login", CSRF: d.keys.csrfToken(w, r), Data: loginData{Next: next}})
}

// login trades the API token for a session cookie.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if d.keys.tokenSum == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	next := r.PostFormValue("next")
	if !localPath(next) {
		next = "/"
	}
	p := &page{Title: "Log in", Nav: "login", CSRF: d.keys.csrfToken(w, r), Data: loginData{Next: next, Wrong: true}}
	if !d.keys.checkCSRF(r) {
		p.Flash = "The form was stale: log in again."
		d.render(w, http.StatusForbidden, p)
		return
	}
	if !d.keys.tokenMatches(r.PostFormValue("token")) {
		d.render(w, http.StatusUnauthorized, p)
		return
	}
	http.SetCookie(w, d.keys.session())
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	if d.keys.checkCSRF(r) {
		http.SetCookie(w, strictCookie(sessionCookie, "", -1))
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
