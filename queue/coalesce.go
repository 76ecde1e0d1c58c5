package queue

import "context"

// Coalescer groups concurrent calls of one key into few flushes, one in
// flight per key at a time: the committer that enqueues and acks go out
// through (commit.go), for a package that runs scripts of its own on the
// Queue's client (the workflows' store coalesces the ends of one
// workflow's steps into one script run). A call that finds its key idle
// goes out at once, alone, under its caller's context; calls that come
// while one is in flight go out together next.
type Coalescer[K comparable, In, Out any] struct{ c *committer[K, In, Out] }

// NewCoalescer returns a Coalescer that sends each batch of a key's calls
// to flush, which answers every call of the batch, in order.
func NewCoalescer[K comparable, In, Out any](flush func(ctx context.Context, key K, ins []In) ([]Out, error)) *Coalescer[K, In, Out] {
	return &Coalescer[K, In, Out]{newCommitter(1, 0, flush)}
}

// Do adds in to key's next batch and waits for its answer, or for ctx to
// end: then the call may still take effect (the batch is on its way).
func (c *Coalescer[K, In, Out]) Do(ctx context.Context, key K, in In) (Out, error) {
	return c.c.do(ctx, key, in)
}
