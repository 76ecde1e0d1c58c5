package queue

import (
	"context"
	"slices"
	"sync"
	"testing"
)

// Calls of one key that come while its flush is in flight go out together
// in the next flush, each answered with its own output; a call of another
// key is not held behind them.
func TestCoalescer_CallsThatComeWhileOneIsInFlightGoOutTogether(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	var mu sync.Mutex
	var batches [][]int
	c := NewCoalescer(func(_ context.Context, key string, ins []int) ([]int, error) {
		mu.Lock()
		batches = append(batches, slices.Clone(ins))
		mu.Unlock()
		if key == "wf" && ins[0] == 1 {
			<-release
		}
		out := make([]int, len(ins))
		for i, v := range ins {
			out[i] = v * 10
		}
		return out, nil
	})
	type answer struct{ in, out int }
	answers := make(chan answer, 3)
	do := func(in int) {
		out, err := c.Do(ctx, "wf", in)
		if err != nil {
			t.Error(err)
		}
		answers <- answer{in, out}
	}
	go do(1)
	waitUntil(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(batches) == 1 })
	go do(2)
	go do(3)
	waitUntil(t, func() bool {
		c.c.mu.Lock()
		defer c.c.mu.Unlock()
		g := c.c.groups["wf"]
		return g.next != nil && len(g.next.ins) == 2
	})
	if out, err := c.Do(ctx, "other", 4); err != nil || out != 40 {
		t.Fatalf("a call of another key = %d, %v; want 40 while wf's flush is in flight", out, err)
	}
	close(release)
	for range 3 {
		a := <-answers
		if a.out != a.in*10 {
			t.Fatalf("call %d answered %d, want %d", a.in, a.out, a.in*10)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(batches) != 3 || len(batches[2]) != 2 {
		t.Fatalf("flushes %v; want [1], [4], then 2 and 3 together", batches)
	}
}
