package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/access"
	"github.com/bananas-go/bananas/runtime/internal/api"
	"github.com/bananas-go/bananas/runtime/internal/dashboard"
)

// APIOptions configure the HTTP API.
type APIOptions struct {
	// Token, when set, is required as "Authorization: Bearer <token>" on every
	// /api call and on /metrics, and at the dashboard's login (API_TOKEN).
	// Without it the handler answers loopback Host names only (127.0.0.1,
	// localhost, [::1]; others get a 421): it is meant for a listener on
	// loopback, where any local process, and no web page, may drive it.
	Token string
	// Tokens are tokens with a name and a role each (API_TOKENS), taken
	// as Token is, beside it; Token is one more, named admin, of the admin
	// role. A call beyond its token's role is a 403 naming the role it
	// needs, and the dashboard shows a session only the actions of its
	// role.
	Tokens []APIToken
	// ReadOnly refuses every action with 403 (API_READ_ONLY).
	ReadOnly bool
	// MetricsNeedToken puts /metrics behind Token too. By default /metrics
	// needs no token, as scrapers carry none; Main sets this when
	// METRICS_PORT serves the metrics on a listener of their own.
	MetricsNeedToken bool
	// Logger logs failures of the server's own (a 500); nil logs nothing.
	Logger *slog.Logger
}

// APIToken is one token of the HTTP API and the dashboard: Name is who it
// is in the audit log, Role what it may do — "read" (every GET, no action),
// "operate" (also submit, cancel, pause and resume, replay, run now,
// workflows and schedules) or "admin" (everything: limits, shards, deleting
// jobs, purging the dead-letter queue). ParseAPITokens reads API_TOKENS.
type APIToken struct {
	Name, Role, Token string
}

// ParseAPITokens reads the tokens of API_TOKENS: comma-separated
// name:role:token entries. An error names the entry at fault (by its place
// and name, never its token).
func ParseAPITokens(s string) ([]APIToken, error) {
	ts, err := access.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("API_TOKENS: %w", err)
	}
	out := make([]APIToken, len(ts))
	for i, t := range ts {
		out[i] = APIToken{Name: t.Name, Role: string(t.Role), Token: t.Token}
	}
	return out, nil
}

// accessTokens are ts as the API takes them; a role that is none of the
// three is a programming error, refused at once.
func accessTokens(ts []APIToken) []access.Token {
	out := make([]access.Token, len(ts))
	for i, t := range ts {
		if !access.Role(t.Role).Valid() || t.Name == "" || t.Token == "" {
			panic(fmt.Sprintf("bananas: APIOptions.Tokens[%d] (%q): want a name, a token and the role read, operate or admin, got role %q", i, t.Name, t.Role))
		}
		out[i] = access.Token{Name: t.Name, Role: access.Role(t.Role), Token: t.Token}
	}
	return out
}

// APIHandler serves the HTTP API of in: /api/v1/..., /healthz, /livez,
// /metrics and the dashboard at /. Whatever a browser says a page of another
// origin sent (Sec-Fetch-Site, Origin) is refused with 403, and an API body
// must be application/json (415). The JSON shapes are the CLI's
// --json shapes. Mount it on a server of your own, or let runtime.Main serve
// it on API_PORT. in is one this package made (NewInspector,
// Worker.Inspector).
//
// The client's enqueue hooks run around the submissions it makes, with the
// request's context, in which RequestHeader finds the request's headers.
func APIHandler(in *admin.Inspector, o APIOptions) http.Handler {
	c := inspectedClient(in)
	tokens := accessTokens(o.Tokens)
	h := api.New(in, api.Config{
		Token: o.Token, Tokens: tokens, ReadOnly: o.ReadOnly, Logger: o.Logger, MetricsNeedToken: o.MetricsNeedToken,
		MaxBody: int64(c.maxPayload) + 64<<10, // the args, and room for the rest of the submission
		Metrics: c.MetricsHandler(),
		Extra:   dashboardRoutes(in, o, tokens, c.redisAddr()),
		Redis:   c.redisAddr(),
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && c.hooks.enqueueRun.Load() != nil {
			header := r.Header.Clone() // the caller's credentials are no hook's business
			header.Del("Authorization")
			header.Del("Cookie")
			r = r.WithContext(context.WithValue(r.Context(), requestHeaderKey{}, header))
		}
		h.ServeHTTP(w, r)
	})
}

type requestHeaderKey struct{}

// RequestHeader returns the headers of the HTTP API request (APIHandler)
// that ctx serves, when the client has an enqueue hook: a hook finds there
// the trace context of a caller that submits jobs over HTTP (otelbananas
// continues its trace). Authorization and Cookie are left out. nil for any
// other context.
func RequestHeader(ctx context.Context) http.Header {
	h, _ := ctx.Value(requestHeaderKey{}).(http.Header)
	return h
}

// dashboardRoutes is the dashboard of in (GET / and its pages), as mux
// patterns to mount beside the API: every process that serves the API serves
// the dashboard, with the same token and read-only mode.
func dashboardRoutes(in *admin.Inspector, o APIOptions, tokens []access.Token, redis string) map[string]http.Handler {
	d := dashboard.New(in, dashboard.Config{Token: o.Token, Tokens: tokens, ReadOnly: o.ReadOnly, Logger: o.Logger, Redis: redis})
	out := map[string]http.Handler{}
	for _, p := range d.Patterns() {
		out[p] = d
	}
	return out
}
