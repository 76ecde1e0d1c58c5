package engine

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// A fetcher that says how many free slots it wants, counts them and parks
// is always woken once that many are free, with releases racing it from
// four goroutines for 20,000 rounds: the fetcher never sleeps while enough
// slots are free.
func TestSlots_FetcherIsWokenWheneverEnoughSlotsAreFree(t *testing.T) {
	const size, rounds = 8, 20000
	s := newSlots(size)
	var wg sync.WaitGroup
	held := make(chan struct{}, size)
	// Holders release their slot after a moment, as handlers return.
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range held {
				if rand.IntN(4) == 0 {
					time.Sleep(time.Duration(rand.IntN(20)) * time.Microsecond)
				}
				s.release()
			}
		}()
	}
	for i := range rounds {
		want := int32(1 + rand.IntN(size))
		s.wantFree(want)
		if s.free() < int(want) {
			select {
			case <-s.freed:
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: %d slots free, want %d: the fetcher was never woken", i, s.free(), want)
			}
		}
		// Take every free slot, as a fetch that fills them all.
		n := s.free()
		s.reserve(n)
		for range n {
			held <- struct{}{}
		}
	}
	close(held)
	wg.Wait()
	if s.free() != size {
		t.Fatalf("%d slots free after every holder released; want %d", s.free(), size)
	}
}

// A run hands its slot on when a record token is free, and keeps it when
// every token is taken: at most size outcomes are recorded after their slot
// was handed on.
func TestSlots_HandOnIsBoundedByTheTokens(t *testing.T) {
	s := newSlots(2)
	s.reserve(2)
	//lint:ignore SA4000 each call hands one slot on: the second call is the point
	if !s.handOn() || !s.handOn() {
		t.Fatal("the first two runs could not hand their slot on")
	}
	if s.free() != 2 {
		t.Fatalf("free = %d after two hand-ons; want 2", s.free())
	}
	s.reserve(1)
	if s.handOn() {
		t.Fatal("a third run handed its slot on while both tokens were taken")
	}
	if s.free() != 1 {
		t.Fatalf("free = %d; want 1 (the third run keeps its slot)", s.free())
	}
	s.returnToken()
	s.reserve(1)
	if !s.handOn() {
		t.Fatal("a returned token was not taken")
	}
}

// unreserve gives back what a fetch did not fill and wakes the fetcher.
func TestSlots_UnreserveWakesTheFetcher(t *testing.T) {
	s := newSlots(4)
	s.reserve(4)
	s.wantFree(noWakeUp)
	s.unreserve(3)
	select {
	case <-s.freed:
	default:
		t.Fatal("no wake-up after a fetch gave back 3 slots")
	}
	if s.free() != 3 {
		t.Fatalf("free = %d; want 3", s.free())
	}
}
