// A signal declared with payload type Approval, sent with a string. It
// must not compile.
package main

import (
	"context"

	"github.com/bananas-go/bananas/runtime"
)

type Approval struct{ By string }

var approved = runtime.NewSignal[Approval]("approval")

func main() {
	_ = approved.Send(context.Background(), "id", "ana")
}
