package runtime

import (
	"net/http"

	"github.com/bananas-go/bananas/runtime/internal/dashboard"
)

// dashboardRoutes is the dashboard of in (GET / and its pages), as mux
// patterns to mount beside the API: every process that serves the API serves
// the dashboard, with the same token and read-only mode.
func dashboardRoutes(in *Inspector, o APIOptions) map[string]http.Handler {
	d := dashboard.New(in, dashboard.Config{Token: o.Token, ReadOnly: o.ReadOnly, Logger: o.Logger, Redis: in.c.redisAddr()})
	out := map[string]http.Handler{}
	for _, p := range d.Patterns() {
		out[p] = d
	}
	return out
}
