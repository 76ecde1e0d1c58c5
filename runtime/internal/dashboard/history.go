package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
)

// historyData is what the history page shows: its filters as typed, so
// that the form keeps them, and a page of the task history.
type historyData struct {
	Q            admin.HistoryQuery
	Since, Until string   // as typed
	Args         []string // field=value as typed, then an empty one to add
	Statuses     []admin.Status
	Routes       []string
	Tasks        []string
	Page         bananastype.HistoryPage
	Next         string // link to the next page; "" at the end
	Bad          string // why the filter was refused
	// Set counts the filters set besides the text, which the folded
	// filters' summary says on a phone.
	Set int
	// Window says the default window (admin.HistoryWindow), for a search
	// without since: "7 days".
	Window  string
	MinText int
}

// history lists a page of the task history, newest end first, filtered by
// the form's values (a GET: the link is the search).
func (d *Dashboard) history(r *http.Request, p *page) (int, error) {
	v := r.URL.Query()
	data := historyData{Statuses: admin.HistoryStatuses, Since: v.Get("since"), Until: v.Get("until"),
		Window: windowText(admin.HistoryWindow), MinText: admin.HistoryMinText}
	p.Title, p.Nav, p.Data = "History", "history", &data
	for _, t := range d.a.Tasks() {
		data.Tasks = append(data.Tasks, t.Name)
	}
	routes, err := d.a.Routes(r.Context())
	if err != nil {
		return 0, err
	}
	for _, rt := range routes {
		data.Routes = append(data.Routes, rt.Route)
	}
	q, bad := historyQueryOf(v)
	data.Q = q
	for _, a := range v["arg"] {
		if a != "" {
			data.Args = append(data.Args, a)
		}
	}
	data.Args = append(data.Args, "")
	for _, f := range []string{q.Task, q.Route, string(q.Status), data.Since, data.Until} {
		if f != "" {
			data.Set++
		}
	}
	data.Set += len(data.Args) - 1
	if bad != "" {
		data.Bad = bad
		return http.StatusBadRequest, nil
	}
	if data.Page, err = d.a.History(r.Context(), q); err != nil {
		if status, msg := statusOf(err); status == http.StatusBadRequest {
			data.Bad = msg // a bad filter keeps the form, so it can be fixed in place
			return http.StatusBadRequest, nil
		}
		return 0, err
	}
	data.Next = nextPage("/history", v, data.Page.Next)
	return http.StatusOK, nil
}

// windowText is d in days, or hours under a day: "7 days".
func windowText(d time.Duration) string {
	if days := int(d / (24 * time.Hour)); days > 0 && d%(24*time.Hour) == 0 {
		if days == 1 {
			return "1 day"
		}
		return strconv.Itoa(days) + " days"
	}
	return admin.FormatDuration(d)
}

// historyQueryOf reads the history page's filters: the API's parameters,
// except that args come as arg=field=value (a form cannot name its fields
// after what is typed in them), and times may also be typed as a date and
// time in UTC without a zone (2026-11-26T22:00, 2026-11-26). bad says what
// is wrong, naming the field.
func historyQueryOf(v url.Values) (q admin.HistoryQuery, bad string) {
	q = admin.HistoryQuery{Task: v.Get("task"), Route: v.Get("route"), Status: admin.Status(v.Get("status")), Text: v.Get("q"), Cursor: v.Get("cursor")}
	var err error
	if q.Since, err = formTime("since", v.Get("since")); err != nil {
		return q, err.Error()
	}
	if q.Until, err = formTime("until", v.Get("until")); err != nil {
		return q, err.Error()
	}
	if s := v.Get("limit"); s != "" {
		if q.Limit, err = strconv.Atoi(s); err != nil {
			return q, fmt.Sprintf("limit %q: want a number from 1 to 500", s)
		}
	}
	for _, a := range v["arg"] {
		if a == "" {
			continue
		}
		field, value, ok := strings.Cut(a, "=")
		if !ok {
			return q, fmt.Sprintf("args %q: want field=value, such as customer.id=42", a)
		}
		if q.Args == nil {
			q.Args = map[string]string{}
		}
		q.Args[strings.TrimSpace(field)] = value
	}
	return q, ""
}

// formTime reads the time typed in field: RFC 3339, or a date and time (or
// a date) in UTC; zero when empty.
func formTime(field, s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s %q: want a time such as 2026-11-26T22:00:00Z (or 2026-11-26T22:00 in UTC)", field, s)
}

// nextPage is the link to the page after this one of a filtered listing at
// path: the same query, its cursor replaced by next; "" when there is none.
func nextPage(path string, q url.Values, next string) string {
	if next == "" {
		return ""
	}
	v := url.Values{}
	for k, vs := range q {
		if k != "cursor" {
			v[k] = vs
		}
	}
	v.Set("cursor", next)
	return path + "?" + v.Encode()
}
