package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/bananas-go/bananas/runtime/admin"

	"github.com/bananas-go/bananas/queue"
)

func done(what string) url.Values { return url.Values{"done": {what}} }

func (d *Dashboard) replay(r *http.Request) (string, url.Values, error) {
	id := r.PathValue("id")
	return "/jobs/" + url.PathEscape(id), done("replayed"), d.a.Replay(r.Context(), id)
}

func (d *Dashboard) delete(r *http.Request) (string, url.Values, error) {
	// The job is gone: back to the list, unless the form says where.
	return "/jobs", done("deleted"), d.a.Delete(r.Context(), r.PathValue("id"))
}

func (d *Dashboard) cancel(r *http.Request) (string, url.Values, error) {
	id := r.PathValue("id")
	status, err := d.a.Cancel(r.Context(), id)
	what := "canceled"
	if status != queue.StatusCanceled {
		what = "cancel-requested"
	}
	return "/jobs/" + url.PathEscape(id), done(what), err
}

func (d *Dashboard) pause(r *http.Request) (string, url.Values, error) {
	return "/", done("paused"), d.a.Pause(r.Context(), r.PathValue("route"))
}

func (d *Dashboard) resume(r *http.Request) (string, url.Values, error) {
	return "/", done("resumed"), d.a.Resume(r.Context(), r.PathValue("route"))
}

// purgeDead deletes the failed jobs of a route's dead-letter queue for good, so the form asks for a
// ticked confirmation (required in HTML, checked here too).
func (d *Dashboard) purgeDead(r *http.Request) (string, url.Values, error) {
	if r.PostFormValue("confirm") != "yes" {
		return "", nil, &problem{Status: http.StatusBadRequest, Msg: "tick the confirmation to purge: the failed jobs are deleted for good"}
	}
	n, err := d.a.PurgeDead(r.Context(), r.PathValue("route"), "", 0)
	return "/", url.Values{"done": {"purged"}, "n": {strconv.Itoa(n)}}, err
}

// replayDead replays every failed job of a route; the dead-letter queue asks for a
// ticked confirmation first (required in HTML, checked here too), since it
// may put thousands of jobs back to work at once.
func (d *Dashboard) replayDead(r *http.Request) (string, url.Values, error) {
	if r.PostFormValue("confirm") != "yes" {
		return "", nil, &problem{Status: http.StatusBadRequest, Msg: "tick the confirmation to replay every failed job of the route"}
	}
	route := r.PathValue("route")
	n, err := d.a.ReplayDead(r.Context(), route, "")
	to := "/jobs?" + url.Values{"route": {route}, "state": {"failed"}}.Encode()
	return to, url.Values{"done": {"replayed-dead"}, "n": {strconv.Itoa(n)}}, err
}

// MaxBulk is the most jobs one bulk action takes: a page of the job list
// holds at most 50, and a bound keeps one request from holding the server
// (and Redis) for long.
const MaxBulk = 500

// bulk applies one action (replay, delete or cancel) to the jobs selected
// on a page of the job list, one by one through the admin layer. A job that
// moved to a state the action does not fit, or is gone, since the page was
// drawn is counted as refused and the rest go on; a failure of the server
// stops the lot, and is shown with how many were done before it.
func (d *Dashboard) bulk(r *http.Request) (string, url.Values, error) {
	if err := r.ParseForm(); err != nil {
		return "", nil, &problem{Status: http.StatusBadRequest, Msg: "the form could not be read: " + err.Error()}
	}
	if r.PostFormValue("confirm") != "yes" {
		return "", nil, &problem{Status: http.StatusBadRequest, Msg: "tick the confirmation to act on the selected jobs"}
	}
	ids := r.PostForm["id"]
	switch {
	case len(ids) == 0:
		return "", nil, &problem{Status: http.StatusBadRequest, Msg: "select at least one job"}
	case len(ids) > MaxBulk:
		return "", nil, &problem{Status: http.StatusBadRequest, Msg: "at most " + strconv.Itoa(MaxBulk) + " jobs at once: " + strconv.Itoa(len(ids)) + " were selected"}
	}
	var act func(id string) error
	what := ""
	switch action := r.PostFormValue("action"); action {
	case "replay":
		act, what = func(id string) error { return d.a.Replay(r.Context(), id) }, "bulk-replayed"
	case "delete":
		act, what = func(id string) error { return d.a.Delete(r.Context(), id) }, "bulk-deleted"
	case "cancel":
		act, what = func(id string) error { _, err := d.a.Cancel(r.Context(), id); return err }, "bulk-canceled"
	default:
		return "", nil, &problem{Status: http.StatusBadRequest, Msg: "unknown bulk action " + strconv.Quote(action) + ": use replay, delete or cancel"}
	}
	ok, refused := 0, 0
	for _, id := range ids {
		err := act(id)
		switch {
		case err == nil:
			ok++
		case refusal(err):
			refused++
		default:
			return "", nil, fmt.Errorf("bulk %s stopped after %d jobs: %w", r.PostFormValue("action"), ok, err)
		}
	}
	return "/jobs", url.Values{"done": {what}, "n": {strconv.Itoa(ok)}, "refused": {strconv.Itoa(refused)}}, nil
}

// refusal reports whether err is the admin layer refusing the action (the
// job is gone, or in a state the action does not fit), not a failure.
func refusal(err error) bool {
	status, _ := statusOf(err)
	return status != http.StatusInternalServerError
}

// setLimits sets a route's own limits from the form: each field as typed, an
// empty one removing its limit.
func (d *Dashboard) setLimits(r *http.Request) (string, url.Values, error) {
	route := r.PathValue("route")
	field := func(name string) *string {
		v := strings.TrimSpace(r.PostFormValue(name))
		return &v
	}
	p := admin.LimitsPatch{MaxRunning: field("max_running"), Rate: field("rate"), Burst: field("burst")}
	_, err := d.a.SetLimits(r.Context(), route, p)
	return "/routes/" + url.PathEscape(route) + "/limits", done("limits-set"), err
}
