package tasks

import "context"

// OnDrained is called by the batched-drain scenario's handlers with the
// jobs each call ran.
var OnDrained = func(jobs int) {}

// singleNoop is batchedNoop one job at a time: the batched drain's
// baseline.
//
//bananas:task retries=0 route=single
func singleNoop(ctx context.Context, p Payload) error {
	OnDrained(1)
	return nil
}

// batchedNoop takes up to 100 jobs a call.
//
//bananas:task retries=0 route=batched batch=100 linger=5ms
func batchedNoop(ctx context.Context, ps []Payload) error {
	OnDrained(len(ps))
	return nil
}
