package runtime

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/bananas-go/bananas/queue"
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
	id, err := b.submit(ctx, s)
	if err != nil {
		return "", "", err
	}
	return id, b.in.unservedWarning(ctx, id), nil
}

func (b apiBackend) submit(ctx context.Context, s api.Submission) (string, error) {
	opts, err := submissionOptions(s)
	if err != nil {
		return "", err
	}
	id, err := b.in.Enqueue(ctx, s.Name, s.Args, opts...)
	switch {
	case errors.Is(err, ErrUnknownTask):
		return "", api.BadRequest("name", "%s", trimBananas(err))
	case errors.Is(err, ErrBadArgs):
		return "", api.BadRequest("args", "%s", trimBananas(err))
	case errors.Is(err, ErrPayloadTooLarge):
		return "", &api.Error{Status: http.StatusRequestEntityTooLarge, Msg: trimBananas(err), Field: "args"}
	case errors.Is(err, ErrDuplicate):
		return "", &api.Error{Status: http.StatusConflict, Msg: trimBananas(err)}
	}
	return id, err
}

func (b apiBackend) Jobs(ctx context.Context, q api.JobQuery) (any, error) {
	page, err := b.in.Jobs(ctx, JobQuery{Route: q.Route, State: Status(q.State), Task: q.Task, Text: q.Text, Cursor: q.Cursor, Limit: q.Limit, Newest: q.Newest})
	if err != nil {
		return nil, httpError(err)
	}
	return b.in.pageView(page), nil
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
	return b.in.jobView(info), nil
}

func (b apiBackend) Result(ctx context.Context, id string, wait time.Duration) (any, bool, error) {
	if _, err := b.in.Job(ctx, id); err != nil {
		return nil, false, httpError(err)
	}
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		_, err := b.in.c.waiter.Wait(wctx, id, b.in.c.lookupResult)
		cancel()
		if err != nil && ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
	}
	info, err := b.in.Job(ctx, id)
	if err != nil {
		return nil, false, httpError(err)
	}
	return b.in.jobView(info), info.Status.Finished(), nil
}

func (b apiBackend) Cancel(ctx context.Context, id string) (any, error) {
	status, err := b.in.Cancel(ctx, id)
	if err != nil {
		return nil, httpError(err)
	}
	return canceledJSON{ID: id, Status: status}, nil
}

func (b apiBackend) Delete(ctx context.Context, id string) error {
	return httpError(b.in.Delete(ctx, id))
}

func (b apiBackend) Tasks(context.Context) (any, error) { return views(b.in.Tasks(), taskView), nil }

func (b apiBackend) Queues(ctx context.Context) (any, error) {
	routes, err := b.in.Routes(ctx)
	if err != nil {
		return nil, err
	}
	return views(routes, routeView), nil
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
	return views(entries, cronView), nil
}

func (b apiBackend) Workers(ctx context.Context) (any, error) {
	ws, err := b.in.Workers(ctx)
	if err != nil {
		return nil, err
	}
	return views(ws, func(w WorkerState) WorkerState { return w }), nil
}

func (b apiBackend) Stats(ctx context.Context, window time.Duration) (any, error) {
	st, err := b.in.Stats(ctx, window)
	if err != nil {
		return nil, httpError(err)
	}
	return statsView(st), nil
}

func (b apiBackend) OpenAPI(context.Context) ([]byte, error) { return b.in.OpenAPI() }

func (b apiBackend) Ready(ctx context.Context) error {
	return b.in.c.rdb.Ping(ctx).Err()
}

// submissionOptions are the enqueue options of a submission's route,
// priority and delay, or a 400 naming the one that is wrong.
func submissionOptions(s api.Submission) ([]Option, error) {
	var opts []Option
	if s.Route != "" {
		if err := queue.CheckRoute(s.Route); err != nil {
			return nil, api.BadRequest("route", "route: %v", err)
		}
		opts = append(opts, Route(s.Route))
	}
	if s.Priority != "" {
		if !queue.ValidPriority(s.Priority) {
			return nil, api.BadRequest("priority", "priority %q: use high, normal or low", s.Priority)
		}
		opts = append(opts, WithPriority(Priority(s.Priority)))
	}
	if s.Delay != "" {
		d, err := time.ParseDuration(s.Delay)
		if err != nil || d < 0 {
			return nil, api.BadRequest("delay", "delay %q: want a duration such as 90s or 1h30m", s.Delay)
		}
		if d > 0 {
			opts = append(opts, Delay(d))
		}
	}
	return opts, nil
}

// httpError gives the admin layer's errors their HTTP status; the rest are
// failures of the server or of Redis (500).
func httpError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrJobNotFound):
		return &api.Error{Status: http.StatusNotFound, Msg: trimBananas(err)}
	case errors.Is(err, ErrUnknownRoute):
		return &api.Error{Status: http.StatusNotFound, Msg: trimBananas(err), Field: "route"}
	case errors.Is(err, ErrUnknownCron):
		return &api.Error{Status: http.StatusNotFound, Msg: trimBananas(err), Field: "name"}
	case errors.Is(err, ErrWrongState), errors.Is(err, ErrDuplicate):
		return &api.Error{Status: http.StatusConflict, Msg: trimBananas(err)}
	case errors.Is(err, ErrBadQuery), errors.Is(err, ErrUnknownTask):
		var qe *queryError
		field := ""
		if errors.As(err, &qe) {
			field = qe.field
		}
		return &api.Error{Status: http.StatusBadRequest, Msg: trimBananas(err), Field: field}
	}
	return err
}

// trimBananas drops the "bananas: " prefix that Go errors of the runtime
// carry: an HTTP client knows where the answer came from.
func trimBananas(err error) string {
	msg := err.Error()
	for len(msg) > 9 && msg[:9] == "bananas: " {
		msg = msg[9:]
	}
	return msg
}
