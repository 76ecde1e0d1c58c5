// A signal declared with its payload type, sent with a payload of that
// type, and waited for by a step whose next step takes it. It compiles.
package main

import (
	"context"
	"time"

	"github.com/bananas-go/bananas/runtime"
)

type Approval struct{ By string }

var (
	approved = runtime.NewSignal[Approval]("approval")
	ship     = runtime.NewTask[Approval, string]("ship")
)

func main() {
	ctx := context.Background()
	last := runtime.Then(approved.Wait(time.Hour), ship)
	id, _ := last.Enqueue(ctx)
	_ = approved.Send(ctx, id, Approval{By: "ana"})
}
