package dashboard

import (
	"errors"
	"net/http"

	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/api"
)

// problem is what the error page shows: a status and what to tell the
// operator. The dashboard makes one itself for a request it refuses before
// asking the admin layer (a bad form, read-only mode, a stale CSRF token).
type problem struct {
	Status int
	Msg    string
	// Retry, when set, is the page to try again (Redis is unreachable),
	// which the browser loads by itself after RetryIn seconds.
	Retry   string
	RetryIn int
}

func (p *problem) Error() string { return p.Msg }

// statusOf is the status and message err is shown with: the dashboard's
// own problem as it is; a refusal of the admin layer with its class's
// status (a job or route that does not exist 404, a bad filter 400, a job
// that moved to a state the action does not fit 409); anything else is a
// failure of the server or of Redis (500), which the caller logs, or
// answers 503 while Redis is unreachable (Dashboard.fail).
func statusOf(err error) (int, string) {
	if p := (*problem)(nil); errors.As(err, &p) {
		return p.Status, p.Msg
	}
	// An endpoint of the API's table that a form serves refuses with its own.
	if e := (*api.Error)(nil); errors.As(err, &e) {
		return e.Status, e.Msg
	}
	c := admin.Classify(err)
	if c.Class == admin.Failure {
		return http.StatusInternalServerError, err.Error()
	}
	return c.Class.HTTPStatus(), c.Msg
}
