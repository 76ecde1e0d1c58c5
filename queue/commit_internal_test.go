package queue

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// The committer's batching rules, seen through the batches it hands to flush.
// (Its use against Redis is covered by the EnqueueOne and ack tests.)

// recorder is a flush that records batch sizes and answers each call with
// its own input after rtt, standing in for the round trip (without one, the
// caller that flushes is answered at once and runs ahead of the others).
type recorder struct {
	rtt   time.Duration
	mu    sync.Mutex
	sizes []int
}

func (r *recorder) flush(_ context.Context, _ string, ins []int) ([]int, error) {
	r.mu.Lock()
	r.sizes = append(r.sizes, len(ins))
	r.mu.Unlock()
	time.Sleep(r.rtt)
	return ins, nil
}

func (r *recorder) batches() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.sizes...)
}

// within fails the test if f has not returned by the deadline: a batch that
// waits for callers who never come would hang here.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still waiting after %v: a batch waits for callers who never come", d)
	}
}

// A lone caller goes out at once however long the linger: low load gets no
// added latency.
func TestCommitter_LoneCallerNeverLingers(t *testing.T) {
	r := &recorder{}
	c := newCommitter(1, time.Hour, r.flush)
	within(t, 10*time.Second, func() {
		for i := range 50 {
			out, err := c.do(context.Background(), "g", i)
			if err != nil || out != i {
				t.Errorf("call %d: got %d, %v", i, out, err)
			}
		}
	})
	for i, n := range r.batches() {
		if n != 1 {
			t.Fatalf("batch %d held %d calls, want 1 (one caller)", i, n)
		}
	}
}

// Closed-loop producers — each enqueues again as soon as it is answered —
// share one flush per round once the committer has seen them all, instead of
// two (the first caller back alone, then the rest). The linger is long, so
// only the expectation, not the deadline, can keep the rounds whole.
func TestCommitter_ClosedLoopProducersShareOneFlushPerRound(t *testing.T) {
	const producers, rounds = 8, 60
	r := &recorder{rtt: 300 * time.Microsecond}
	c := newCommitter(1, 100*time.Millisecond, r.flush)
	within(t, 60*time.Second, func() {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for p := range producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := range rounds {
					in := p*rounds + i
					if out, err := c.do(context.Background(), "g", in); err != nil || out != in {
						t.Errorf("producer %d call %d: got %d, %v", p, i, out, err)
					}
				}
			}()
		}
		close(start)
		wg.Wait()
	})
	sizes := r.batches()
	total := 0
	for _, n := range sizes {
		total += n
	}
	if total != producers*rounds {
		t.Fatalf("flushed %d calls, want %d", total, producers*rounds)
	}
	// A few flushes to gather everyone at the start, and at the end the ones
	// whose producers got ahead then; none in between.
	if len(sizes) > rounds+6 {
		t.Fatalf("%d flushes for %d rounds of %d producers, want about one per round (batches %v)", len(sizes), rounds, producers, sizes)
	}
}

// When a producer stops, the batch that expected it goes out after the
// linger, and the expectation drops to what came.
func TestCommitter_LingerEndsWhenCallersDoNotComeBack(t *testing.T) {
	const producers = 4
	r := &recorder{rtt: 300 * time.Microsecond}
	c := newCommitter(1, 2*time.Millisecond, r.flush)
	within(t, 30*time.Second, func() {
		var wg sync.WaitGroup
		for p := range producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				calls := 30
				if p == 0 {
					calls = 5 // stops early: the others must not wait for it for ever
				}
				for i := range calls {
					if _, err := c.do(context.Background(), "g", i); err != nil {
						t.Errorf("producer %d: %v", p, err)
					}
				}
			}()
		}
		wg.Wait()
	})
	sizes := r.batches()
	total := 0
	for _, n := range sizes {
		total += n
	}
	if want := 5 + 3*30; total != want {
		t.Fatalf("flushed %d calls, want %d (batches %v)", total, want, sizes)
	}
}

// Without linger (acks), a batch goes out whenever a slot is free, and
// calls arriving during a flush go together in the next.
func TestCommitter_NoLingerFlushesWheneverASlotIsFree(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	flush := func(_ context.Context, _ string, ins []int) ([]int, error) {
		mu.Lock()
		sizes = append(sizes, len(ins))
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			<-release // hold the first flush so the others gather
		}
		return ins, nil
	}
	c := newCommitter(1, 0, flush)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = c.do(context.Background(), "g", 0) }()
	waitUntil(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 1 })
	for i := 1; i <= 5; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = c.do(context.Background(), "g", i) }()
	}
	waitUntil(t, func() bool { return nextHolds(c, "g", 5) })
	close(release)
	within(t, 10*time.Second, wg.Wait)
	mu.Lock()
	defer mu.Unlock()
	if len(sizes) != 2 || sizes[1] != 5 {
		t.Fatalf("batches %v, want [1 5]", sizes)
	}
}

// nextHolds reports whether group's next batch holds n calls.
func nextHolds[In, Out any](c *committer[string, In, Out], group string, n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	return g != nil && g.next != nil && len(g.next.ins) == n
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// Rounds of fewer than lingerMin calls never wait: a few independent
// requests that happen to overlap do not pay the linger when they do not
// come back. With a linger of an hour, waiting would hang here.
func TestCommitter_SmallRoundsNeverLinger(t *testing.T) {
	r := &recorder{rtt: 300 * time.Microsecond}
	c := newCommitter(1, time.Hour, r.flush)
	within(t, 30*time.Second, func() {
		var wg sync.WaitGroup
		for p := range lingerMin - 1 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 20 + 7*p { // uneven: some producers stop first
					if _, err := c.do(context.Background(), "g", i); err != nil {
						t.Errorf("producer %d: %v", p, err)
					}
				}
			}()
		}
		wg.Wait()
	})
}

var errBoom = errors.New("boom")

// Callers that do not wait (doAsync) are answered by the flush that carries
// them, each with its own outcome, exactly once, alongside callers that wait;
// a failed flush gives each of them the error. One that finds a free slot
// flushes itself and has its answer when doAsync returns.
func TestCommitter_AsyncCallersGetTheirOwnAnswers(t *testing.T) {
	release := make(chan struct{})
	var flushes sync.Mutex
	n := 0
	flush := func(_ context.Context, _ string, ins []int) ([]int, error) {
		flushes.Lock()
		n++
		k := n
		flushes.Unlock()
		switch k {
		case 1:
			<-release // hold the first flush so the others gather
		case 3:
			return nil, errBoom
		}
		outs := make([]int, len(ins))
		for i, in := range ins {
			outs[i] = 10 * in
		}
		return outs, nil
	}
	c := newCommitter(1, 0, flush)

	type answer struct {
		out int
		err error
	}
	var mu sync.Mutex
	answers := map[int][]answer{}
	cb := func(in int) func(int, error) {
		return func(out int, err error) {
			mu.Lock()
			answers[in] = append(answers[in], answer{out, err})
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = c.do(context.Background(), "g", 0) }()
	waitUntil(t, func() bool { flushes.Lock(); defer flushes.Unlock(); return n == 1 })
	for i := 1; i <= 4; i++ {
		c.doAsync("g", i, cb(i)) // gathers behind the held flush: returns at once
	}
	var syncOut int
	var syncErr error
	wg.Add(1)
	go func() { defer wg.Done(); syncOut, syncErr = c.do(context.Background(), "g", 5) }()
	waitUntil(t, func() bool { return nextHolds(c, "g", 5) })
	close(release)
	within(t, 10*time.Second, wg.Wait)
	if syncOut != 50 || syncErr != nil {
		t.Errorf("waiting caller got %d, %v; want 50, nil", syncOut, syncErr)
	}
	// The callbacks run after the waiting callers are released, on the
	// goroutine that flushed their batch.
	waitUntil(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(answers) == 4 })
	c.doAsync("g", 6, cb(6)) // a free slot: flushed here, and failed
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i <= 4; i++ {
		if a := answers[i]; len(a) != 1 || a[0].out != 10*i || a[0].err != nil {
			t.Errorf("async caller %d answered %v, want once with %d", i, a, 10*i)
		}
	}
	if a := answers[6]; len(a) != 1 || a[0].err != errBoom {
		t.Errorf("async caller of a failed flush answered %v, want once with errBoom", a)
	}
}

// gated is a flush that blocks each call until the test lets it through.
type gated struct{ gate chan struct{} }

func (g gated) flush(_ context.Context, _ string, ins []int) ([]int, error) {
	<-g.gate
	return ins, nil
}

// The caller whose arrival completes a batch of several callers, and who
// therefore sends it, still returns when its own context ends, while the
// call goes on for the others: no caller outlasts its context.
func TestCommitter_TheCallerThatSendsABatchOfManyReturnsWhenItsContextEnds(t *testing.T) {
	g := gated{gate: make(chan struct{})}
	c := newCommitter(1, time.Hour, g.flush)
	first := make(chan error, 1)
	go func() { _, err := c.do(context.Background(), "g", 0); first <- err }()
	waitUntil(t, func() bool { return inflight(c, "g") == 1 })
	// Four callers gather behind the call in flight; when it returns the
	// next batch expects one more (the first caller, coming back).
	others := make(chan error, 4)
	for i := 1; i <= 4; i++ {
		go func() { _, err := c.do(context.Background(), "g", i); others <- err }()
	}
	waitUntil(t, func() bool { return nextHolds(c, "g", 4) })
	g.gate <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// The first caller comes back with a short context: its arrival
	// completes the batch of five, which goes out and blocks.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	back := make(chan error, 1)
	go func() { _, err := c.do(ctx, "g", 5); back <- err }()
	select {
	case err := <-back:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the caller that sent a blocked batch of five returned %v; want its context's end", err)
		}
	case <-time.After(2 * time.Second):
		g.gate <- struct{}{} // let the batch and its caller go
		t.Fatal("the caller that sent a blocked batch of five was still in it 2s after its 50ms context ended")
	}
	g.gate <- struct{}{}
	for range 4 {
		if err := <-others; err != nil {
			t.Fatalf("a caller of the batch: %v", err)
		}
	}
}

func inflight(c *committer[string, int, int], group string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.groups[group]; g != nil {
		return g.inflight
	}
	return 0
}
