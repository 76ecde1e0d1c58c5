package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
)

func done(what string) url.Values { return url.Values{"done": {what}} }

func (d *Dashboard) replay(r *http.Request) (string, url.Values, error) {
	id := r.PathValue("id")
	return "/jobs/" + url.PathEscape(id), done("replayed"), d.b.Replay(r.Context(), id)
}

func (d *Dashboard) delete(r *http.Request) (string, url.Values, error) {
	// The job is gone: back to the list, unless the form says where.
	return "/jobs", done("deleted"), d.b.Delete(r.Context(), r.PathValue("id"))
}

func (d *Dashboard) cancel(r *http.Request) (string, url.Values, error) {
	id := r.PathValue("id")
	status, err := d.b.Cancel(r.Context(), id)
	what := "canceled"
	if status != "canceled" {
		what = "cancel-requested"
	}
	return "/jobs/" + url.PathEscape(id), done(what), err
}

func (d *Dashboard) pause(r *http.Request) (string, url.Values, error) {
	return "/", done("paused"), d.b.Pause(r.Context(), r.PathValue("route"))
}

func (d *Dashboard) resume(r *http.Request) (string, url.Values, error) {
	return "/", done("resumed"), d.b.Resume(r.Context(), r.PathValue("route"))
}

// purgeDead deletes a route's dead jobs for good, so the form asks for a
// ticked confirmation (required in HTML, checked here too).
func (d *Dashboard) purgeDead(r *http.Request) (string, url.Values, error) {
	if r.PostFormValue("confirm") != "yes" {
		return "", nil, &Problem{Status: http.StatusBadRequest, Msg: "tick the confirmation to purge: dead jobs are deleted for good"}
	}
	n, err := d.b.PurgeDead(r.Context(), r.PathValue("route"))
	return "/", url.Values{"done": {"purged"}, "n": {strconv.Itoa(n)}}, err
}
