package redistest

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Twice is a go-redis hook that sends every command, and every pipeline, a
// second time right after the first has been answered, and keeps the second
// answer: what happens when a reply is lost after the server ran the command
// and the client resends it (go-redis does on timeouts, cut connections,
// failovers). Add it with rdb.AddHook(&redistest.Twice{}). Only runs counts
// the commands it sent twice.
type Twice struct {
	// Only, when set, chooses the commands to send twice (by their name,
	// lower case, e.g. "evalsha"); nil sends every command twice.
	Only func(name string) bool
	runs atomic.Int64
}

// Runs is how many commands were sent a second time.
func (h *Twice) Runs() int64 { return h.runs.Load() }

func (h *Twice) want(cmd redis.Cmder) bool { return h.Only == nil || h.Only(cmd.Name()) }

func (h *Twice) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *Twice) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := next(ctx, cmd); err != nil || !h.want(cmd) {
			return err
		}
		h.runs.Add(1)
		return next(ctx, cmd)
	}
}

func (h *Twice) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := next(ctx, cmds); err != nil {
			return err
		}
		for _, c := range cmds {
			if h.want(c) {
				h.runs.Add(1)
				return next(ctx, cmds)
			}
		}
		return nil
	}
}

var _ redis.Hook = (*Twice)(nil)
