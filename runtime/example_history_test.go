package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/admin"
)

// A client made WithHistory keeps every job that ends for good —
// completed, dead or canceled — in a task history, which its workers write
// to the store; Inspector.History searches it, newest end first. A
// deployment passes the PostgreSQL store of package history/postgres
// (postgres.Open(ctx, url)); this example searches rows in memory
// (newSearchStore, a history.Store of this package's tests), written as
// workers would have written them.
func ExampleInspector_History() {
	ctx := context.Background()
	store := newSearchStore()
	c, _ := runtime.Connect(ctx, "mem://", runtime.WithHistory(store))
	defer c.Close()

	now := time.Now()
	store.Write(ctx, []history.Row{
		{ID: "email~1", Attempt: 1, Task: "send_email", Route: "email", Status: history.Completed,
			Args: json.RawMessage(`{"To":"ann@x.test"}`), EndedAt: now.Add(-3 * time.Minute)},
		{ID: "email~2", Attempt: 3, Task: "send_email", Route: "email", Status: history.Failed,
			Args: json.RawMessage(`{"To":"nobody"}`), Error: `invalid recipient "nobody": no @`, EndedAt: now.Add(-2 * time.Minute)},
		{ID: "email~3", Attempt: 3, Task: "send_email", Route: "email", Status: history.Failed,
			Args: json.RawMessage(`{"To":"bob"}`), Error: `invalid recipient "bob": no @`, EndedAt: now.Add(-time.Minute)},
		{ID: "default~4", Attempt: 1, Task: "count_words", Route: "default", Status: history.Failed,
			Args: json.RawMessage(`{"Body":""}`), Error: "empty text", EndedAt: now},
	})

	// The failed emails of the last 7 days (the default window), newest first.
	page, err := runtime.NewInspector(c).History(ctx, admin.HistoryQuery{Task: "send_email", Status: "failed"})
	if err != nil {
		panic(err)
	}
	for _, r := range page.Jobs {
		fmt.Println(r.ID, r.Attempt, r.Error)
	}
	// Output:
	// email~3 3 invalid recipient "bob": no @
	// email~2 3 invalid recipient "nobody": no @
}
