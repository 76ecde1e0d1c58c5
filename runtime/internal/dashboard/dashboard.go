package dashboard

import (
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/access"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config is how the dashboard behaves; the API's settings carry over.
type Config struct {
	// Token, when set, must be given at the login form (API_TOKEN), or
	// one of Tokens (API_TOKENS): the session then has that token's name
	// and role, and shows and takes only the actions of its role.
	Token  string
	Tokens []access.Token
	// ReadOnly hides every action and refuses it with 403 (API_READ_ONLY).
	ReadOnly bool
	// Refresh is how often the overview polls for fresh counts when
	// JavaScript is on (default 2 s).
	Refresh time.Duration
	Logger  *slog.Logger
	// Redis is the address of the Redis the admin layer reads (no
	// credentials), named by the page shown while it does not answer.
	Redis string
}

// Dashboard serves the pages. Mount it for each of Patterns on a mux.
type Dashboard struct {
	a     admin.Admin
	cfg   Config
	keys  keys
	mux   *http.ServeMux
	pages map[string]*template.Template
	// handlers by pattern, for Patterns
	handlers map[string]http.Handler
}

// New returns the dashboard of a.
func New(a admin.Admin, cfg Config) *Dashboard {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 2 * time.Second
	}
	checkTable()
	d := &Dashboard{a: a, cfg: cfg, keys: newKeys(access.NewSet(cfg.Token, cfg.Tokens)), mux: http.NewServeMux(), pages: parsePages(), handlers: map[string]http.Handler{}}
	static, _ := fs.Sub(staticFS, "static")
	files := http.StripPrefix("/static/", http.FileServerFS(static))
	for pattern, h := range map[string]http.Handler{
		"GET /{$}":                   d.view(d.overview),
		"GET /charts":                d.view(d.charts),
		"GET /jobs":                  d.view(d.jobs),
		"GET /jobs/{id}":             d.view(d.job),
		"GET /history":               d.view(d.history),
		"GET /cron":                  d.view(d.cron),
		"GET /schedules":             d.view(d.schedules),
		"GET /workers":               d.view(d.workers),
		"GET /tasks":                 d.view(d.tasks),
		"GET /routes/{route}/limits": d.view(d.limits),
		"GET /workflows":             http.HandlerFunc(d.workflows),
		"GET /workflows/{id}":        d.view(d.workflow),
		"GET /audit":                 d.view(d.audit),
		"GET /static/": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// A name fs.Sub refuses (bytes that are not UTF-8) is an "invalid
			// name" error that the file server answers 500: it names no file.
			if name := strings.TrimPrefix(r.URL.Path, "/static/"); name != "" && !fs.ValidPath(strings.TrimSuffix(name, "/")) {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Cache-Control", "max-age=300")
			files.ServeHTTP(w, r)
		}),
		"GET /login":   http.HandlerFunc(d.loginForm),
		"POST /login":  http.HandlerFunc(d.login),
		"POST /logout": http.HandlerFunc(d.logout),

		"POST /jobs/bulk": d.action(d.bulk),
	} {
		d.handle(pattern, h)
	}
	// Every other action is a form of the API's endpoint table.
	for _, list := range buttons {
		for _, a := range list {
			d.handle("POST "+formPath(a), d.action(d.tableAction(a)))
		}
	}
	return d
}

func (d *Dashboard) handle(pattern string, h http.Handler) {
	d.mux.Handle(pattern, h)
	d.handlers[pattern] = h
}

// Patterns are the mux patterns the dashboard answers, to mount it beside
// the API without taking over the API's own 404s.
func (d *Dashboard) Patterns() []string {
	out := make([]string, 0, len(d.handlers))
	for p := range d.handlers {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// No inline script or style anywhere, so the policy can forbid both: an
	// args value that slipped past escaping still could not run.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	d.mux.ServeHTTP(w, r)
}

// page is what every template gets.
type page struct {
	Title   string
	Nav     string // the page's template
	Current string // the header link to mark; default Nav
	// ReadOnly hides every action: API_READ_ONLY (APIReadOnly) is set, or
	// the session's role takes none.
	ReadOnly, APIReadOnly bool
	// Who is the session's token (its name and role): the actions shown
	// are those its role may take.
	Who   access.Token
	Login bool // a token is set: show the logout button
	CSRF  string
	// Self is this page's path and query, without a flash: where its
	// forms send the browser back to.
	Self string
	// Values fill the fields of the page's action forms, by name.
	Values  map[string]string
	Flash   string
	Refresh int64 // ms between polls of the live part; 0: none
	// Reload is the seconds after which the browser loads ReloadTo (a
	// meta refresh, which needs no script); 0: never.
	Reload   int
	ReloadTo string
	Data     any
	// Outbox is the overview's transactional outbox backlog, nil in a
	// program without one; OutboxError why it could not be read.
	Outbox      *admin.Outbox
	OutboxError string
}

// viewFunc fills p for a GET, or returns the error to show.
type viewFunc func(r *http.Request, p *page) (status int, err error)

func (d *Dashboard) view(f viewFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who, ok := d.keys.loggedIn(r)
		if !ok {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		p := d.newPage(w, r, who)
		p.Flash, p.Self = flash(r.URL.Query()), self(r)
		status, err := f(r, p)
		if err != nil {
			d.fail(w, r, p, err)
			return
		}
		d.render(w, status, p)
	})
}

func (d *Dashboard) render(w http.ResponseWriter, status int, p *page) {
	t := d.pages[p.Nav]
	if p.Current == "" {
		p.Current = p.Nav
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", p); err != nil {
		d.cfg.Logger.Error("bananas: dashboard template failed", "page", p.Nav, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail shows err on the error page with its status (statusOf), and logs
// it when it is a failure of the server or of Redis.
//
// While Redis does not answer, the page says so instead, naming it, and
// loads again every few seconds (a GET itself, an action the page it was
// sent from): it shows the dashboard once Redis is back.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, p *page, err error) {
	status, msg := statusOf(err)
	prob := &problem{Status: status, Msg: msg}
	if status == http.StatusInternalServerError {
		if down := admin.Unreachable(r.Context(), d.a, d.cfg.Redis, err); down != nil {
			d.cfg.Logger.Warn("bananas: dashboard request failed: Redis is unreachable", "method", r.Method, "path", r.URL.Path, "err", err)
			prob = &problem{Status: http.StatusServiceUnavailable, Msg: down.Error(), Retry: retryTarget(r), RetryIn: retryIn}
			p.Reload, p.ReloadTo = retryIn, prob.Retry
			w.Header().Set("Retry-After", strconv.Itoa(retryIn))
		} else {
			d.cfg.Logger.Error("bananas: dashboard request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		}
	}
	p.Nav, p.Title, p.Data = "error", http.StatusText(prob.Status), prob
	d.render(w, prob.Status, p)
}

// retryIn is how many seconds the page shown while Redis is unreachable
// waits before it loads again.
const retryIn = 5

// retryTarget is the page to load again once Redis may be back: the page
// asked for, or for an action the page it was sent from (its back field),
// else the overview: an action is never sent again by itself.
func retryTarget(r *http.Request) string {
	if r.Method == http.MethodGet {
		return r.URL.RequestURI()
	}
	if back, ok := localPath(r.PostFormValue("back")); ok {
		return back
	}
	return "/"
}

// actionFunc does one action and returns where to send the browser and
// what happened (a key of flashes).
type actionFunc func(r *http.Request) (to string, done url.Values, err error)

// action wraps f with the login, read-only and CSRF checks, and answers a
// success with a redirect (POST, redirect, GET: a reload does not act twice).
// Where to send the browser is settled before f runs: a bad form value is
// not found out after the action is done.
func (d *Dashboard) action(f actionFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who, loggedIn := d.keys.loggedIn(r)
		p := d.newPage(w, r, who)
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		switch {
		case !loggedIn:
			d.fail(w, r, p, &problem{Status: http.StatusUnauthorized, Msg: "log in first: the dashboard asks for the API token"})
			return
		case d.cfg.ReadOnly:
			d.fail(w, r, p, &problem{Status: http.StatusForbidden, Msg: "the dashboard is read-only (API_READ_ONLY): actions are refused"})
			return
		case !d.keys.checkCSRF(r):
			d.fail(w, r, p, &problem{Status: http.StatusForbidden, Msg: "the form's CSRF token is missing or stale: reload the page and try again"})
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), whoKey{}, who))
		back, haveBack := localPath(r.PostFormValue("back"))
		to, done, err := f(r)
		if err != nil {
			d.fail(w, r, p, err)
			return
		}
		if haveBack {
			to = back
		}
		u, err := url.Parse(to)
		if err != nil {
			u = &url.URL{Path: "/"} // an id with odd bytes in the action's own page: the overview will do
		}
		q := u.Query()
		for k, v := range done {
			q[k] = v
		}
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.String(), http.StatusSeeOther)
	})
}

// newPage is the page of a request by who: its actions those of who's
// role, none in read-only mode.
func (d *Dashboard) newPage(w http.ResponseWriter, r *http.Request, who access.Token) *page {
	return &page{ReadOnly: d.cfg.ReadOnly || !who.Role.Allows(access.Operate), APIReadOnly: d.cfg.ReadOnly, Who: who,
		Login: !d.keys.tokens.Empty(), CSRF: d.keys.csrfToken(w, r)}
}

// whoKey keys, in an action's request, who is logged in.
type whoKey struct{}

// whoOf is who sent the action r (the action wrapper puts it there).
func whoOf(r *http.Request) access.Token {
	who, _ := r.Context().Value(whoKey{}).(access.Token)
	return who
}

// mayNot is the refusal of an action that needs role need to who, or nil
// when who's role allows it.
func mayNot(who access.Token, need access.Role, what string) error {
	if who.Role.Allows(need) {
		return nil
	}
	return &problem{Status: http.StatusForbidden, Msg: fmt.Sprintf("%s needs the %s role: you are logged in as %s, of the %s role", what, need, who.Name, who.Role)}
}

// localPath is s when s is a path of this site to send the browser to, and
// false otherwise: a redirect to it cannot leave the site. Only printable
// ASCII (a browser drops tabs and newlines from a URL, so "/\t/host" would
// be "//host"), no "//" or backslash at the start (a host to a browser), no
// scheme or host once parsed.
func localPath(s string) (string, bool) {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.Contains(s, `\`) {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return "", false
		}
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") {
		return "", false
	}
	return s, true
}

// flashes are the messages an action's redirect may ask for, by key: the
// query string never carries text to show. The endpoint table's actions
// bring theirs (Button.Done and Flash).
var flashes = func() map[string]string {
	m := map[string]string{
		// A bulk action reports both counts: a job refused is one that moved
		// to a state the action does not fit, or is gone, since the page showed it.
		"bulk-replayed": "Replayed %s selected jobs; %r refused (no longer failed, or gone).",
		"bulk-deleted":  "Deleted %s selected jobs; %r refused (no longer pending or scheduled, or gone).",
		"bulk-canceled": "Canceled %s selected jobs (a running one stops when its worker acts); %r refused (already finished, or gone).",
	}
	for _, list := range buttons {
		for _, a := range list {
			m[a.Button.Done] = a.Button.Flash
		}
	}
	return m
}()

// self is r's path and query without the keys of a flash.
func self(r *http.Request) string {
	q := r.URL.Query()
	if q.Get("done") == "" {
		return r.URL.RequestURI()
	}
	for _, k := range []string{"done", "n", "refused"} {
		q.Del(k)
	}
	u := url.URL{Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: q.Encode()}
	return u.RequestURI()
}

func flash(q url.Values) string {
	msg, ok := flashes[q.Get("done")]
	if !ok {
		return ""
	}
	// Only numbers go into a message, so the query string cannot make the
	// page say anything else.
	for verb, key := range map[string]string{"%s": "n", "%r": "refused"} {
		if strings.Contains(msg, verb) {
			n, _ := strconv.Atoi(q.Get(key))
			msg = strings.Replace(msg, verb, strconv.Itoa(n), 1)
		}
	}
	return msg
}
