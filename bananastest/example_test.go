package bananastest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/bananas-go/bananas/bananastest"
	"github.com/bananas-go/bananas/examples/quickstart/tasks"
)

// A test of code that sends emails: it enqueues through the generated stub,
// asserts the job is waiting with its typed args, runs what is pending with
// the package's handlers, and reads the job that died, typed.
func Example() {
	t := &testing.T{} // in a test, the *testing.T it is given
	ctx := context.Background()

	h := bananastest.New(t, tasks.Register) // the package's generated Register
	send := tasks.SendEmail.With(h.Client)
	_, _ = send.Enqueue(ctx, tasks.EmailArgs{To: "ana@example.com", Subject: "welcome"})
	_, _ = send.Enqueue(ctx, tasks.EmailArgs{To: "nobody", Subject: "lost"})

	job := bananastest.RequireEnqueued(t, h.Client, tasks.SendEmail, func(a tasks.EmailArgs) bool {
		return a.To == "ana@example.com"
	})
	fmt.Println("enqueued:", job.Args.Subject, job.Status)

	report := h.Drain(t) // send_email has retries=2: "nobody" runs three times
	fmt.Printf("ran: %d completed, %d retried, %d dead\n", report.Completed, report.Retried, report.Dead)

	dead := bananastest.RequireDead(t, h.Client, tasks.SendEmail, nil)
	fmt.Printf("dead: %s after %d attempts: %s\n", dead.Args.Subject, dead.Attempts, dead.Error)
	bananastest.RequireNotEnqueued(t, h.Client, tasks.SendEmail, nil)
	// Output:
	// enqueued: welcome pending
	// ran: 1 completed, 2 retried, 1 dead
	// dead: lost after 3 attempts: invalid recipient "nobody": no @
}
