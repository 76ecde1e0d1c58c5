package api

import "net/http"

// runCron is POST /api/v1/cron/{name}/run: 201 {"id"}, like a submission.
func (s *server) runCron(w http.ResponseWriter, r *http.Request) error {
	id, err := s.b.RunCron(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/jobs/"+id)
	return writeJSON(w, http.StatusCreated, submitted{ID: id})
}
