package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/engine"
)

// executor runs a worker's jobs: its registered tasks through its
// middleware (nil when none), their results held to the client's payload
// limit, their retries after the worker's backoff or the job's own.
type executor struct {
	tasks      handlers
	mw         Middleware
	maxPayload int
	backoff    func(attempt int) time.Duration
	payloads   *queue.Payloads // the client's: args unpacked, results packed (keys.go)
	log        *slog.Logger
	refused    refusedJobs // jobs refused for want of their key, logged once each
}

// exec is the engine's Config.Exec: it runs the job's handler through the
// worker's middleware and says what the run came to — a failure's message
// with its stack, whether a retry can help (a decode error, SkipRetry, a
// result over the payload limit cannot), or a snooze (RetryAfter).
func (x *executor) exec(ctx context.Context, d *queue.Dispatch) (out engine.Outcome) {
	h := x.tasks[d.Name] // the engine runs only the tasks it was given (Config.Tasks)
	// ctx holds the run's jobValue (handlerValue, the engine's Config.JobValue):
	// its Job is the one middleware is given, and its trail what LeaveTrail set.
	v, _ := ctx.Value(jobKey{}).(jobValue)
	if h.batch != nil {
		var br *batchRun
		ctx, br = withBatchRun(ctx, d, v.job)
		// The batch the run was part of, if it was called: the engine
		// records the outcomes of a batch's runs together.
		defer func() { out.Together = br.together }()
	}
	args, err := openArgs(x.payloads, d.ID, d.Name, d.Envelope.Args)
	if err != nil {
		return x.unopened(d, err)
	}
	// A run that checkpointed writes its last value before its end is recorded.
	defer func() { endCheckpoint(v, !out.Failed) }()
	o := runHandler(ctx, h, args, x.mw, v.job)
	var trail string // only a workflow step's run has a place for one
	if v.trail != nil {
		trail = *v.trail
	}
	if o.err != nil {
		var de *decodeError
		var ra *retryAfter
		if errors.As(o.err, &ra) {
			return engine.Outcome{Failed: true, Message: errorText(o.err), Snooze: max(ra.d, time.Millisecond)}
		}
		return engine.Outcome{Failed: true, Message: errorText(o.err), Final: errors.As(o.err, &de) || errors.Is(o.err, SkipRetry)}
	}
	if err := checkPayload("result of ", d.Name, len(o.result), x.maxPayload); err != nil {
		return engine.Outcome{Failed: true, Message: err.Error(), Final: true}
	}
	result, err := x.packResult(d, o.result)
	if err != nil {
		return engine.Outcome{Failed: true, Message: err.Error(), Final: true}
	}
	return engine.Outcome{Result: result, Trail: trail}
}

// outcome is what a handler returned.
type outcome struct {
	result []byte
	err    error
}

// runHandler calls the handler through the worker's middleware, turning a
// panic into a failure with its stack.
func runHandler(ctx context.Context, h *handler, args []byte, mw Middleware, job Job) (o outcome) {
	defer func() {
		if p := recover(); p != nil {
			o = outcome{err: fmt.Errorf("panic: %v\n%s", p, debug.Stack())}
		}
	}()
	return callHandler(ctx, h, args, mw, job)
}

// maxErrorText bounds the error a failed run records: its message and stack
// are for a person to read, and a job's hash keeps it until the job ends.
const maxErrorText = 16 << 10

// errorText is what a failed run records: the error's message, with what
// its %+v adds after it when that starts with the message — the stack trace
// that errors made by github.com/pkg/errors, cockroachdb/errors or
// go-errors/errors print — at most maxErrorText bytes of it.
func errorText(err error) string {
	msg := err.Error()
	if detail := fmt.Sprintf("%+v", err); len(detail) > len(msg) && strings.HasPrefix(detail, msg) {
		msg = detail
	}
	if len(msg) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = fmt.Sprintf("%s\n… (%d more bytes)", msg[:cut], len(msg)-cut)
	}
	return msg
}

// retryDelay is the delay before retry number attempt of a job: its task's
// own backoff (RetryBackoff, backoff=) when it has one, else the worker's.
func (x *executor) retryDelay(env queue.Envelope, attempt int) time.Duration {
	if env.Backoff > 0 {
		return doubling(time.Duration(env.Backoff)*time.Millisecond, attempt)
	}
	return x.backoff(attempt)
}

// callHandler runs h on args through mw (when there is one).
func callHandler(ctx context.Context, h *handler, args []byte, mw Middleware, job Job) outcome {
	if mw == nil {
		res, err := h.run(ctx, args)
		return outcome{res, err}
	}
	return callThrough(ctx, h, args, mw, job)
}

// callThrough is callHandler with middleware, apart so that the variables
// its closure captures do not move to the heap for every job of a worker
// without any.
func callThrough(ctx context.Context, h *handler, args []byte, mw Middleware, job Job) outcome {
	var res []byte
	err := mw(ctx, job, func(ctx context.Context) error {
		var err error
		res, err = h.run(ctx, args)
		return err
	})
	if err != nil {
		res = nil
	}
	return outcome{res, err}
}
