package dashboard

import (
	"html/template"
	"net/url"
	"strings"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
)

// nav is the header's links, in order.
var nav = []struct{ Key, Label, Href string }{
	{"overview", "Overview", "/"}, {"charts", "Charts", "/charts"}, {"jobs", "Jobs", "/jobs"}, {"dlq", "Dead-letter queue", "/jobs?state=failed"},
	{"history", "History", "/history"}, {"workflows", "Workflows", "/workflows"}, {"cron", "Cron", "/cron"}, {"schedules", "Schedules", "/schedules"}, {"workers", "Workers", "/workers"}, {"tasks", "Tasks", "/tasks"},
	{"audit", "Audit", "/audit"},
}

var funcs = template.FuncMap{
	"nav":  func() any { return nav },
	"age":  age,
	"when": when,
	// instant is when to the millisecond: a job's timeline can hold several
	// events in one second.
	"instant": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000Z") },
	// ago is how long ago t was, for a job's progress: "2s ago".
	"ago": func(t time.Time) string {
		if d := time.Since(t); d >= time.Second {
			return age(d) + " ago"
		}
		return "just now"
	},
	"since": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return age(time.Since(t))
	},
	// until is how far off t is, as an operator reads it: "in 4m59s", or
	// "due" once it has passed (a scheduled job waits for a worker to
	// promote it).
	"until": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		if d := time.Until(t); d > 0 {
			return "in " + age(d)
		}
		return "due"
	},
	"dur": func(d time.Duration) string {
		if d == 0 {
			return "—"
		}
		return admin.FormatDuration(d)
	},
	// jobsLink is the job list filtered by route and state.
	"jobsLink": func(route, state string) string {
		return "/jobs?" + url.Values{"route": {route}, "state": {state}}.Encode()
	},
	"jobLink":     func(id string) string { return "/jobs/" + url.PathEscape(id) },
	"cronSpec":    cronSpec,
	"pathEscape":  url.PathEscape,
	"actions":     actions,
	"routeStates": routeStates,
	"join":        strings.Join,
	"short": func(s string, n int) string {
		if r := []rune(s); len(r) > n {
			return string(r[:n]) + "…"
		}
		return s
	},
}

// age is a duration as an operator reads it: its two largest units, in the
// spelling of every duration the surfaces show (admin.FormatDuration).
func age(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Second:
		d = d.Truncate(time.Millisecond)
	case d < time.Hour:
		d = d.Truncate(time.Second)
	default:
		d = d.Truncate(time.Minute)
	}
	return admin.FormatDuration(d)
}

// cronSpec is when a task's cron entry fires, as its spec and time zone:
// "0 3 * * * (Europe/Paris)"; "" when the task has none.
func cronSpec(c *admin.CronSpec) string {
	switch {
	case c == nil:
		return ""
	case c.TZ == "":
		return c.Spec
	}
	return c.Spec + " (" + c.TZ + ")"
}

// when is a time in UTC to the second; "—" when unset.
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// parsePages parses the layout with each page; a page's name is its file's.
func parsePages() map[string]*template.Template {
	base := template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/forms.html"))
	pages := map[string]*template.Template{}
	for _, name := range []string{"overview", "charts", "jobs", "job", "history", "cron", "workers", "tasks", "limits", "workflow", "workflows", "schedules", "login", "error", "audit"} {
		pages[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html"))
	}
	return pages
}
