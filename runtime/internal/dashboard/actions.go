package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/bananas-go/bananas/runtime/admin"
)

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
	// Each job acted on is one entry of the audit log.
	a := admin.Audited(d.a, whoOf(r).Name, "dashboard")
	var act func(id string) error
	what, endpoint := "", ""
	switch action := r.PostFormValue("action"); action {
	case "replay":
		act, what, endpoint = func(id string) error { return a.Replay(r.Context(), id) }, "bulk-replayed", "replayDeadJob"
	case "delete":
		act, what, endpoint = func(id string) error { return a.Delete(r.Context(), id) }, "bulk-deleted", "deleteJob"
	case "cancel":
		act, what, endpoint = func(id string) error { _, err := a.Cancel(r.Context(), id); return err }, "bulk-canceled", "cancelJob"
	default:
		return "", nil, &problem{Status: http.StatusBadRequest, Msg: "unknown bulk action " + strconv.Quote(action) + ": use replay, delete or cancel"}
	}
	if err := mayNot(whoOf(r), needs[endpoint], "bulk "+r.PostFormValue("action")); err != nil {
		admin.Denied(r.Context(), d.a, whoOf(r).Name, "dashboard", endpoint, strings.Join(ids, " "), err.Error())
		return "", nil, err
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
