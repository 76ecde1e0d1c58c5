package runtime

import "github.com/bananas-go/bananas/queue"

// QueueOf is the client's queue, for tests that plant or inspect Redis state
// below the runtime; applications use the Inspector.
func QueueOf(c *Client) *queue.Queue { return c.q }
