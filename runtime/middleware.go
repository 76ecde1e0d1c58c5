package runtime

import "context"

// Middleware wraps every handler call of a worker (WorkerOptions.Middleware;
// a Middleware is a HookWorkBegin, which Client.AddHook adds to every
// worker of the client):
// tracing, logging, a per-task limit, context values the handlers read. It
// receives the handler's context and the job, and calls next to run the
// handler — with ctx itself, or a context derived from it (a span's), which
// the handler then receives. What it returns is the run's outcome: nil
// succeeds, an error fails the run as a handler's error would (wrap
// SkipRetry or RetryAfter with %w to keep their meaning), and a middleware
// that returns next's error unchanged leaves the outcome to the handler.
//
// A middleware that does not call next skips the handler; the run then has no
// result (Await returns R's zero value) unless it fails. next must be called
// at most once, and before the middleware returns. A panic in a middleware
// fails the run with its stack, as a handler's does.
//
// The worker's own metrics (run time, outcomes) are not a middleware: they
// are recorded by the worker around the whole chain, so bananas_job_run_seconds
// includes the middleware's time, and the outcome counted is the one the
// chain returned.
type Middleware func(ctx context.Context, job Job, next func(context.Context) error) error

// chain composes ms into one middleware, ms[0] outermost; nil when there are
// none, so a worker without middleware calls its handlers directly.
func chain(ms []Middleware) Middleware {
	switch len(ms) {
	case 0:
		return nil
	case 1:
		return ms[0]
	}
	outer, inner := ms[0], chain(ms[1:])
	return func(ctx context.Context, job Job, next func(context.Context) error) error {
		return outer(ctx, job, func(ctx context.Context) error { return inner(ctx, job, next) })
	}
}
