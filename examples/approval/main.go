// Command approval shows a workflow that waits without holding a worker:
//
//	go run ./examples/approval
//
// An order is placed; shipping waits for a person's approval (a signal, up
// to 48 hours), and a reminder goes out a second after the order (a
// timer). Neither wait holds a worker slot or a goroutine: both are due
// times and records in Redis. The packing step saves its progress with
// runtime.Checkpoint, so a rerun after a crash goes on from the last
// packed item. It runs on the embedded server (or $REDIS_URL), sends the
// approval as `app workflow signal ID approval '{"by":"ana"}'` would, and
// prints the workflow's result.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/bananas-go/bananas/runtime"
)

// Order is what the workflow starts from.
type Order struct {
	ID    string   `json:"id"`
	Items []string `json:"items"`
}

// Approval is the signal's payload: who approved.
type Approval struct {
	By string `json:"by"`
}

// packed is the packing step's checkpoint: how many items are packed.
type packed struct{ Items int }

var (
	// Pack packs an order's items, one at a time, checkpointing each.
	Pack = runtime.NewTask[Order, Order]("pack")
	// Ship ships once approved.
	Ship = runtime.NewTask[Approval, string]("ship")
	// Remind reminds the customer, given the packed order.
	Remind = runtime.NewTask[Order, string]("remind")
	// Approved is the signal a person sends: its payload must be an
	// Approval, or the program does not compile.
	Approved = runtime.NewSignal[Approval]("approval")
)

func main() {
	ctx := context.Background()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = "mem://"
	}
	c, err := runtime.Connect(ctx, url)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: 1})
	runtime.Handle(w, Pack, func(ctx context.Context, o Order) (Order, error) {
		done, _ := runtime.LastCheckpoint[packed](ctx) // a rerun goes on from here
		for i := done.Items; i < len(o.Items); i++ {
			fmt.Printf("packing %s\n", o.Items[i])
			if err := runtime.Checkpoint(ctx, packed{Items: i + 1}); err != nil {
				return Order{}, err
			}
		}
		return o, nil
	})
	runtime.Handle(w, Ship, func(_ context.Context, a Approval) (string, error) {
		return "shipped, approved by " + a.By, nil
	})
	runtime.Handle(w, Remind, func(_ context.Context, o Order) (string, error) {
		return fmt.Sprintf("reminded about order %s", o.ID), nil
	})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()

	ok := Approved.Wait(48 * time.Hour) // runtime.WaitSignal[Approval]("approval", 48*time.Hour)
	shipped := runtime.Then(ok, Ship.With(c))
	reminded := runtime.Then(runtime.Sleep(Pack.With(c).Step(Order{ID: "o-1", Items: []string{"tea", "cups"}}), time.Second), Remind.With(c))
	wf := runtime.Gather(shipped, reminded)
	id, err := wf.Enqueue(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("workflow %s: waiting for approval; the worker (concurrency 1) is free meanwhile\n", id)
	if err := Approved.With(c).Send(ctx, id, Approval{By: "ana"}); err != nil {
		log.Fatal(err)
	}
	res, err := wf.Await(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res[0])
	fmt.Println(res[1])
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
}
