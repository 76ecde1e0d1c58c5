// Package tasks is the tracing example's one task: charging an order at a
// payment gateway that refuses the first two tries.
package tasks

//go:generate go tool bananagen

import (
	"context"
	"fmt"

	"github.com/bananas-go/bananas/runtime"
)

// Order is what the checkout asks to charge.
type Order struct {
	ID    string
	Cents int
}

// Receipt is a charged order, with the attempt that got through.
type Receipt struct {
	OrderID string
	Attempt int
}

// charge charges an order. The gateway refuses the first two attempts of
// every job, so that each of its traces shows two failed runs and a retry
// that completes.
//
//bananas:task route=payments retries=3
func charge(ctx context.Context, o Order) (Receipt, error) {
	job, _ := runtime.CurrentJob(ctx)
	if job.Attempt <= 2 {
		return Receipt{}, fmt.Errorf("gateway: card declined, try again (attempt %d)", job.Attempt)
	}
	return Receipt{OrderID: o.ID, Attempt: job.Attempt}, nil
}
