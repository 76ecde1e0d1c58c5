package runtime

import (
	"net/http"

	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/dashboard"
)

// dashboardRoutes is the dashboard of in (GET / and its pages), as mux
// patterns to mount beside the API: every process that serves the API serves
// the dashboard, with the same token and read-only mode.
func dashboardRoutes(in *admin.Inspector, o APIOptions, redis string) map[string]http.Handler {
	d := dashboard.New(in, dashboard.Config{Token: o.Token, ReadOnly: o.ReadOnly, Logger: o.Logger, Redis: redis})
	out := map[string]http.Handler{}
	for _, p := range d.Patterns() {
		out[p] = d
	}
	return out
}
