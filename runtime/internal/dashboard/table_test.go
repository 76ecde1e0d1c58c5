package dashboard

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/api"
)

// purging is a fake whose PurgeDead and SetLimits record what they were
// given.
type purging struct {
	fakeAdmin
	purged []string
	set    []admin.LimitsPatch
}

func (f *purging) PurgeDead(_ context.Context, route, task string, older time.Duration) (int, error) {
	f.purged = append(f.purged, route+"|"+task+"|"+older.String())
	return 7, nil
}

func (f *purging) SetLimits(_ context.Context, route string, p admin.LimitsPatch) (admin.Limits, error) {
	f.set = append(f.set, p)
	return admin.Limits{Route: route}, nil
}

func TestTable_EveryButtonOfTheEndpointTableIsAFormTheDashboardServes(t *testing.T) {
	d := New(&fakeAdmin{}, Config{})
	patterns := d.Patterns()
	n := 0
	for _, a := range api.Actions() {
		n++
		if !a.Action {
			t.Errorf("%s has a Button but is no action: read-only mode would not refuse it", a.ID)
		}
		if p := "POST " + formPath(a); !slices.Contains(patterns, p) {
			t.Errorf("the dashboard does not serve %s, the form of %s", p, a.ID)
		}
		if flashes[a.Button.Done] == "" {
			t.Errorf("the flash %q of %s has no text", a.Button.Done, a.ID)
		}
	}
	if n < 10 {
		t.Fatalf("the endpoint table has %d buttons; want every dashboard action", n)
	}
}

// A form serves its endpoint: the route of the page goes to the endpoint as
// its query parameter, the answer's count into the flash, and the fields as
// the JSON body (an empty field as null: the limit removed).
func TestTable_AFormServesItsEndpointWithThePagesTarget(t *testing.T) {
	f := &purging{fakeAdmin: fakeAdmin{routes: []bananastype.Route{{Route: "mail", Dead: 7, Workers: 1}}}}
	srv, c := server(t, f)
	_, page := get(t, c, srv.URL+"/")
	m := csrfInput.FindStringSubmatch(page)
	if m == nil || !strings.Contains(page, `id="purge-mail"`) || !strings.Contains(page, `id="pause-mail"`) || strings.Contains(page, `id="resume-mail"`) {
		t.Fatalf("the overview lacks the forms of route mail (purge and pause, not resume):\n%s", page)
	}
	post := func(path string, form url.Values) (*http.Response, string) {
		t.Helper()
		form.Set("csrf", m[1])
		resp, err := c.PostForm(srv.URL+path, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, body := post("/routes/mail/purge-dead", url.Values{}); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "tick the confirmation to purge") || len(f.purged) != 0 {
		t.Fatalf("a purge without the ticked box = %d, purged %v; want 400 and nothing purged:\n%s", resp.StatusCode, f.purged, body)
	}
	resp, _ := post("/routes/mail/purge-dead", url.Values{"confirm": {"yes"}, "back": {"/"}})
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/?done=purged&n=7" || !slices.Equal(f.purged, []string{"mail||0s"}) {
		t.Fatalf("purge = %d to %q, purged %v; want 303 to /?done=purged&n=7 and route mail purged", resp.StatusCode, loc, f.purged)
	}
	if _, page := get(t, c, srv.URL+"/?done=purged&n=7"); !strings.Contains(page, "Purged 7 failed jobs") {
		t.Errorf("the flash after the purge does not count the jobs:\n%s", page)
	}
	resp, _ = post("/routes/mail/limits", url.Values{"max_running": {" 5 "}, "rate": {"10/s"}, "burst": {""}})
	if resp.StatusCode != http.StatusSeeOther || len(f.set) != 1 || *f.set[0].MaxRunning != "5" || *f.set[0].Rate != "10/s" || *f.set[0].Burst != "" {
		t.Fatalf("set limits = %d, patches %+v; want max_running 5, rate 10/s, burst removed", resp.StatusCode, f.set)
	}
	if resp, body := post("/routes/mail/limits", url.Values{"max_running": {"lots"}}); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "max_running") {
		t.Fatalf("limits max_running=lots = %d; want 400 naming max_running:\n%s", resp.StatusCode, body)
	}
}

// A button's label names its target where the table says {name}.
func TestTable_ALabelNamesItsTarget(t *testing.T) {
	f := &fakeAdmin{jobs: map[string]*bananastype.Job{"j1": {ID: "j1", Route: "mail", Status: "failed"}}}
	srv, c := server(t, f)
	if _, page := get(t, c, srv.URL+"/jobs?route=mail&state=failed"); !strings.Contains(page, ">Replay every failed job of mail</button>") {
		t.Fatalf("the dead-letter listing of mail lacks its replay button naming the route:\n%s", page)
	}
}
