package runtime_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// holdAck delays the worker's ack call (the script given the result channel
// prefix, which only ack.lua takes) by hold, once armed, and says when it
// started holding one.
type holdAck struct {
	hold    time.Duration
	armed   atomic.Bool
	holding chan struct{}
}

func (h *holdAck) isAck(args []any) bool {
	for _, a := range args {
		if s, ok := a.(string); ok && strings.HasSuffix(s, ":result:{") {
			return true
		}
	}
	return false
}

func (h *holdAck) wait(args []any) {
	if h.armed.Load() && h.isAck(args) {
		select {
		case h.holding <- struct{}{}:
		default:
		}
		time.Sleep(h.hold) // the ack in flight: the fault this test is about
	}
}

func (h *holdAck) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *holdAck) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.wait(cmd.Args())
		return next(ctx, cmd)
	}
}
func (h *holdAck) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.wait(c.Args())
		}
		return next(ctx, cmds)
	}
}

// A job whose handler succeeded and whose ack is on its way when the
// shutdown grace period ends must not be handed back: the hand-back could
// land before the ack, and a job that succeeded would run again. The worker
// waits for the ack instead.
func TestShutdown_RunWhoseAckIsInFlightIsNotHandedBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		hold := &holdAck{hold: 600 * time.Millisecond, holding: make(chan struct{}, 1)}
		c.Redis().AddHook(hold)
		task := testtasks.Echo.With(c)
		ctx := ctxT(t)
		var runs atomic.Int32
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{ShutdownTimeout: 50 * time.Millisecond}))
		runtime.Handle(w, task, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			runs.Add(1)
			return testtasks.Reply{Text: m.Text}, nil
		})
		stop := startWorker(t, w)
		hold.armed.Store(true)
		id, err := task.Enqueue(ctx, testtasks.Msg{Text: "once"})
		if err != nil {
			t.Fatal(err)
		}
		recv(t, hold.holding, 10*time.Second, "the job's ack to be sent")
		stop() // the grace period (50 ms) ends while the ack is held (600 ms)
		hold.armed.Store(false)

		if s := jobStatus(t, c, id); s != runtime.StatusCompleted {
			t.Fatalf("status after shutdown = %s, want completed: the ack in flight must land, not a hand-back", s)
		}
		depth, err := c.Redis().LLen(ctx, runtime.QueueOf(c).Keys("default").List("normal")).Result()
		if err != nil || depth != 0 || runs.Load() != 1 {
			t.Fatalf("after shutdown: %d jobs ready (%v), %d runs; want the job run once and nothing handed back", depth, err, runs.Load())
		}
	})
}
