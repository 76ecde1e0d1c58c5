package runtime

import (
	"time"

	"github.com/bananas-go/bananas/queue"
)

// QueueOf is the client's queue, for tests that plant or inspect Redis state
// below the runtime; applications use the Inspector.
func QueueOf(c *Client) *queue.Queue { return c.q }

// WithLocalClock makes the client read a host clock of its own: a skewed one
// stands for a host whose clock is off.
func WithLocalClock(now func() time.Time) ConnectOption {
	return func(c *connectConfig) { c.localClock = now }
}
