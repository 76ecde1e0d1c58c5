package runtime

import "github.com/bananas-go/bananas/queue"

// Priority orders jobs within a route: every high job is taken before any
// normal one, every normal before any low. It is queue's type: one
// vocabulary from the API down to the Redis model.
type Priority = queue.Priority

const (
	PriorityHigh   = queue.High
	PriorityNormal = queue.Normal
	PriorityLow    = queue.Low
)

// Status is where a job is in its life (Status.Finished: it will not run
// again by itself). It is queue's type.
type Status = queue.Status

const (
	StatusPending    = queue.StatusPending    // ready, waiting for a worker
	StatusScheduled  = queue.StatusScheduled  // delayed, or waiting for a retry
	StatusProcessing = queue.StatusProcessing // running under a worker's lease
	StatusCompleted  = queue.StatusCompleted  // succeeded; kept as long as its result
	StatusFailed     = queue.StatusFailed     // dead-lettered after its last attempt
	StatusCanceled   = queue.StatusCanceled   // canceled before or while it ran; not retried
	StatusExpired    = queue.StatusExpired    // not started before its expiry (ExpireIn, ExpireAt): never run
)
