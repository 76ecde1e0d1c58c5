package queue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// Concurrent single enqueues are coalesced, and each caller still gets its
// own answer: every job lands once, in a list, and a duplicate id is reported
// to the caller that sent it, with the holder's id.
func TestEnqueueOne_CoalescedCallsEachGetTheirAnswer(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		env := env(t)
		const n = 300
		ids := make([]string, n)
		holders := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			ids[i] = queue.NewID("r", time.Now())
			if i%50 == 49 {
				ids[i] = "dup" // six callers race for one id: one wins
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				holders[i], errs[i] = q.Jobs.EnqueueOne(ctx, "r", queue.Normal, queue.NewJob{ID: ids[i], Name: "t", Envelope: env, ChosenID: ids[i] == "dup"})
			}()
		}
		wg.Wait()
		won := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("caller %d: %v", i, errs[i])
			}
			switch {
			case ids[i] != "dup" && holders[i] != "":
				t.Fatalf("caller %d with a fresh id got holder %q", i, holders[i])
			case ids[i] == "dup" && holders[i] == "":
				won++
			case ids[i] == "dup" && holders[i] != "dup":
				t.Fatalf("a losing duplicate got holder %q, want dup", holders[i])
			}
		}
		if won != 1 {
			t.Fatalf("%d callers enqueued the duplicate id, want exactly 1", won)
		}
		d, _ := q.Ops.Depths(ctx, []string{"r"})
		if d[0].Normal != n-5 {
			t.Fatalf("%d jobs ready, want %d (each once)", d[0].Normal, n-5)
		}
	})
}
