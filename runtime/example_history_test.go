package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
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
	store.Write(ctx, []bananastype.Job{
		{ID: "email~1", Attempts: 1, Name: "send_email", Route: "email", Status: queue.StatusCompleted,
			Args: json.RawMessage(`{"To":"ann@x.test"}`), FinishedAt: now.Add(-3 * time.Minute)},
		{ID: "email~2", Attempts: 3, Name: "send_email", Route: "email", Status: queue.StatusFailed,
			Args: json.RawMessage(`{"To":"nobody"}`), Error: `invalid recipient "nobody": no @`, FinishedAt: now.Add(-2 * time.Minute)},
		{ID: "email~3", Attempts: 3, Name: "send_email", Route: "email", Status: queue.StatusFailed,
			Args: json.RawMessage(`{"To":"bob"}`), Error: `invalid recipient "bob": no @`, FinishedAt: now.Add(-time.Minute)},
		{ID: "default~4", Attempts: 1, Name: "count_words", Route: "default", Status: queue.StatusFailed,
			Args: json.RawMessage(`{"Body":""}`), Error: "empty text", FinishedAt: now},
	})

	// The failed emails of the last 7 days (the default window), newest first.
	page, err := runtime.NewInspector(c).History(ctx, admin.HistoryQuery{Task: "send_email", Status: "failed"})
	if err != nil {
		panic(err)
	}
	for _, r := range page.Jobs {
		fmt.Println(r.ID, r.Attempts, r.Error)
	}
	// Output:
	// email~3 3 invalid recipient "bob": no @
	// email~2 3 invalid recipient "nobody": no @
}
