package api

import (
	"context"
	"net/http"
)

// CronRunner is a Backend that runs a cron entry now: one job of the
// entry's task, its schedule left alone.
type CronRunner interface {
	// RunCron enqueues one job of cron entry name and returns its id; an
	// unknown name is a 404 *Error.
	RunCron(ctx context.Context, name string) (id string, err error)
}

// runCron is POST /api/v1/cron/{name}/run: 201 {"id"}, like a submission.
func (s *server) runCron(w http.ResponseWriter, r *http.Request) error {
	cr, ok := s.b.(CronRunner)
	if !ok {
		return &Error{Status: http.StatusNotFound, Msg: "this server cannot run cron entries"}
	}
	id, err := cr.RunCron(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/jobs/"+id)
	return writeJSON(w, http.StatusCreated, map[string]string{"id": id})
}
