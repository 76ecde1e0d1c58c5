package runtime_test

import (
	"context"
	"fmt"

	"github.com/bananas-go/bananas/runtime"
)

type ExportArgs struct {
	Customer string
	Report   string
}

// Export is declared by hand here as bananagen declares it from
//
//	//bananas:task route=exports key=Customer max_running=1 rate=10/m
//
// each customer's exports run one at a time and start at most ten a minute,
// and the customers are served in turn, so that one customer's thousand
// exports do not hold back the others.
var Export = runtime.NewTask[ExportArgs, runtime.None]("export", runtime.Route("exports")).
	Limit(runtime.TaskLimits{MaxRunning: 1, Rate: "10/m"}).
	KeyBy(func(a ExportArgs) string { return a.Customer })

// A keyed task's jobs join the flow of their key; Key puts one job in
// another flow.
func ExampleTask_KeyBy() {
	ctx := context.Background()
	c, _ := runtime.Connect(ctx, "mem://")
	defer c.Close()

	if _, err := Export.With(c).Enqueue(ctx, ExportArgs{Customer: "acme", Report: "sales"}); err != nil {
		panic(err)
	}
	if _, err := Export.With(c).Enqueue(ctx, ExportArgs{Customer: "acme", Report: "audit"}, runtime.Key("acme-audit")); err != nil {
		panic(err)
	}
	info := Export.Info()
	fmt.Println(info.MaxRunning, info.Rate)
	// Output: 1 10/m
}
