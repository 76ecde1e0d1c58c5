// Package tasks is the outbox example's one task: the receipt of an order,
// sent once the order is committed.
package tasks

//go:generate go tool bananagen

import (
	"context"
	"fmt"
	"io"
	"os"
)

// Receipt is what the receipt task needs: the order and where to send it.
type Receipt struct {
	OrderID int64
	Email   string
	Cents   int
}

// Out is where sendReceipt writes the receipts it "sends".
var Out io.Writer = os.Stdout

// sendReceipt sends the receipt of an order; it runs only for an order whose
// transaction committed.
//
//bananas:task route=mail retries=5
func sendReceipt(ctx context.Context, r Receipt) error {
	_, err := fmt.Fprintf(Out, "receipt of order %d (%d cents) sent to %s\n", r.OrderID, r.Cents, r.Email)
	return err
}
