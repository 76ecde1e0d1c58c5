package dashboard

import (
	"net/http"
	"net/url"
)

// runCron enqueues one job of a cron entry now and shows that job, so the
// operator sees it run.
func (d *Dashboard) runCron(r *http.Request) (string, url.Values, error) {
	id, err := d.a.RunCron(r.Context(), r.PathValue("name"))
	if err != nil {
		return "", nil, err
	}
	return "/jobs/" + url.PathEscape(id), done("cron-run"), nil
}
