package runtime

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/api"
)

// APIOptions configure the HTTP API.
type APIOptions struct {
	// Token, when set, is required as "Authorization: Bearer <token>" on every
	// /api call and on /metrics, and at the dashboard's login (API_TOKEN).
	// Without it the handler answers loopback Host names only (127.0.0.1,
	// localhost, [::1]; others get a 421): it is meant for a listener on
	// loopback, where any local process, and no web page, may drive it.
	Token string
	// ReadOnly refuses every action with 403 (API_READ_ONLY).
	ReadOnly bool
	// MetricsNeedToken puts /metrics behind Token too. By default /metrics
	// needs no token, as scrapers carry none; Main sets this when
	// METRICS_PORT serves the metrics on a listener of their own.
	MetricsNeedToken bool
	// Logger logs failures of the server's own (a 500); nil logs nothing.
	Logger *slog.Logger
}

// APIHandler serves the HTTP API of in: /api/v1/..., /healthz, /livez,
// /metrics and the dashboard at /. Whatever a browser says a page of another
// origin sent (Sec-Fetch-Site, Origin) is refused with 403, and an API body
// must be application/json (415). The JSON shapes are the CLI's
// --json shapes. Mount it on a server of your own, or let runtime.Main serve
// it on API_PORT.
func APIHandler(in *Inspector, o APIOptions) http.Handler {
	return api.New(apiBackend{in}, api.Config{
		Token: o.Token, ReadOnly: o.ReadOnly, Logger: o.Logger, MetricsNeedToken: o.MetricsNeedToken,
		MaxBody: int64(in.c.maxPayload) + 64<<10, // the args, and room for the rest of the submission
		Metrics: in.c.MetricsHandler(),
		Extra:   dashboardRoutes(in, o),
	})
}

// apiBackend answers the API's requests from the admin layer.
type apiBackend struct{ in *Inspector }

func (b apiBackend) Submit(ctx context.Context, s api.Submission) (string, string, error) {
	id, warning, err := b.in.Submit(ctx, admin.Submission(s))
	if err != nil {
		return "", "", httpError(err)
	}
	return id, warning, nil
}

func (b apiBackend) SubmitBatch(ctx context.Context, subs []api.Submission, refused []api.BatchRefusal) ([]string, error) {
	asubs := make([]admin.Submission, len(subs))
	for i, s := range subs {
		asubs[i] = admin.Submission(s)
	}
	arefused := make([]admin.BatchRefusal, len(refused))
	for i, r := range refused {
		arefused[i] = admin.BatchRefusal(r)
	}
	ids, err := b.in.SubmitBatch(ctx, asubs, arefused)
	var be *admin.BatchError
	if errors.As(err, &be) {
		status := map[admin.Class]int{admin.BadInput: http.StatusBadRequest, admin.Conflict: http.StatusConflict}[be.Class]
		if status == 0 {
			status = http.StatusInternalServerError
		}
		jobs := make([]api.BatchRefusal, len(be.Jobs))
		for i, r := range be.Jobs {
			jobs[i] = api.BatchRefusal(r)
		}
		return nil, &api.BatchError{Status: status, Msg: be.Msg, Jobs: jobs, IDs: be.IDs}
	}
	return ids, err
}

func (b apiBackend) Jobs(ctx context.Context, q api.JobQuery) (any, error) {
	page, err := b.in.Jobs(ctx, JobQuery{Route: q.Route, State: Status(q.State), Task: q.Task, Text: q.Text, Cursor: q.Cursor, Limit: q.Limit, Newest: q.Newest})
	if err != nil {
		return nil, httpError(err)
	}
	return page, nil
}

func (b apiBackend) Dead(ctx context.Context, q api.JobQuery) (any, error) {
	if q.State != "" && q.State != string(StatusFailed) && q.State != "dead" {
		return nil, api.BadRequest("state", "state %q: the dead-letter queue holds failed jobs only", q.State)
	}
	q.State = "dead"
	return b.Jobs(ctx, q)
}

func (b apiBackend) Job(ctx context.Context, id string) (any, error) {
	info, err := b.in.Job(ctx, id)
	if err != nil {
		return nil, httpError(err)
	}
	return info, nil
}

func (b apiBackend) Result(ctx context.Context, id string, wait time.Duration) (any, bool, error) {
	info, err := b.in.Result(ctx, id, wait)
	if err != nil {
		return nil, false, httpError(err)
	}
	return info, info.Status.Finished(), nil
}

func (b apiBackend) Cancel(ctx context.Context, id string) (any, error) {
	status, err := b.in.Cancel(ctx, id)
	if err != nil {
		return nil, httpError(err)
	}
	return admin.Canceled{ID: id, Status: status}, nil
}

func (b apiBackend) Delete(ctx context.Context, id string) error {
	return httpError(b.in.Delete(ctx, id))
}

func (b apiBackend) Tasks(context.Context) (any, error) { return b.in.Tasks(), nil }

func (b apiBackend) Queues(ctx context.Context) (any, error) {
	routes, err := b.in.Routes(ctx)
	if err != nil {
		return nil, err
	}
	return admin.Map(routes, func(r RouteInfo) RouteInfo { return r }), nil
}

func (b apiBackend) Pause(ctx context.Context, route string) error {
	return httpError(b.in.Pause(ctx, route))
}

func (b apiBackend) Resume(ctx context.Context, route string) error {
	return httpError(b.in.Resume(ctx, route))
}

func (b apiBackend) Replay(ctx context.Context, id string) error {
	return httpError(b.in.Replay(ctx, id))
}

func (b apiBackend) ReplayDead(ctx context.Context, task string) (int, error) {
	n, err := b.in.ReplayDead(ctx, "", task)
	return n, httpError(err)
}

func (b apiBackend) PurgeDead(ctx context.Context, task string, olderThan time.Duration) (int, error) {
	n, err := b.in.PurgeDead(ctx, "", task, olderThan)
	return n, httpError(err)
}

func (b apiBackend) Cron(ctx context.Context) (any, error) {
	entries, err := b.in.Cron(ctx)
	if err != nil {
		return nil, err
	}
	return admin.Map(entries, func(e CronStatus) CronStatus { return e }), nil
}

func (b apiBackend) RunCron(ctx context.Context, name string) (string, error) {
	id, err := b.in.RunCron(ctx, name)
	return id, httpError(err)
}

func (b apiBackend) Workers(ctx context.Context) (any, error) {
	ws, err := b.in.Workers(ctx)
	if err != nil {
		return nil, err
	}
	return admin.Map(ws, func(w WorkerState) WorkerState { return w }), nil
}

func (b apiBackend) Stats(ctx context.Context, window time.Duration) (any, error) {
	st, err := b.in.Stats(ctx, window)
	if err != nil {
		return nil, httpError(err)
	}
	return st, nil
}

func (b apiBackend) OpenAPI(context.Context) ([]byte, error) { return b.in.OpenAPI() }

func (b apiBackend) Ready(ctx context.Context) error { return b.in.Ready(ctx) }

// httpError gives the admin layer's errors their HTTP status; the rest are
// failures of the server or of Redis (500).
func httpError(err error) error {
	if err == nil {
		return nil
	}
	p := admin.Classify(err)
	status, ok := map[admin.Class]int{admin.BadInput: http.StatusBadRequest, admin.NotFound: http.StatusNotFound,
		admin.Conflict: http.StatusConflict, admin.TooLarge: http.StatusRequestEntityTooLarge}[p.Class]
	if !ok {
		return err
	}
	return &api.Error{Status: status, Msg: p.Msg, Field: p.Field}
}

// trimBananas drops the "bananas: " prefix that Go errors of the runtime
// carry: whoever reads it knows where the answer came from.
func trimBananas(err error) string { return admin.Message(err) }
