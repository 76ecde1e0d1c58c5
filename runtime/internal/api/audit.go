package api

import (
	"net/http"
	"strconv"

	"github.com/bananas-go/bananas/runtime/admin"
)

// audit answers GET /api/v1/audit: a page of the audit log, newest first.
func (s *server) audit(w http.ResponseWriter, r *http.Request) error {
	q := admin.AuditQuery{Cursor: r.URL.Query().Get("cursor")}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			return BadRequest("limit", "limit %q: want a whole number from 1 to 500", v)
		}
		q.Limit = n
	}
	page, err := s.a.AuditLog(r.Context(), q)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, page)
}
