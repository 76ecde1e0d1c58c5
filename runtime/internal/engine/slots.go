package engine

import (
	"math"
	"sync/atomic"
)

// slots counts the handler slots of a worker. The fetcher reserves slots
// before a fetch goes out and gives back those the fetch did not fill; a run
// releases its slot when its Exec returns (handOn) or, when no record token
// is free, once its outcome is recorded.
//
// Only the fetcher reserves, so the free slots it counts cannot shrink under
// it. It says how many free slots are worth a wake-up (want) before it
// counts them and parks on freed; release gives a slot back, then loads
// want. Both are atomics, so one of the two sees the other: no wake-up is
// lost (TestSlots_FetcherIsWokenWheneverEnoughSlotsAreFree races them).
type slots struct {
	size  int32
	held  atomic.Int32  // slots reserved or in use, at most size
	want  atomic.Int32  // free slots the fetcher waits for: fewer do not wake it
	freed chan struct{} // 1-buffered: signaled when as many slots as wanted are free
	// tokens is one token per run whose outcome is being recorded after its
	// slot was handed on: at most size of them, so a worker holds at most
	// 2×size leases.
	tokens chan struct{}
}

func newSlots(size int) *slots {
	return &slots{size: int32(size), freed: make(chan struct{}, 1), tokens: make(chan struct{}, size)}
}

// free is the number of slots neither reserved nor in use.
func (s *slots) free() int { return int(s.size - s.held.Load()) }

// wantFree says how many free slots are worth a wake-up (noWakeUp: none;
// only a fetch's return lets the fetcher go on).
func (s *slots) wantFree(n int32) { s.want.Store(n) }

// noWakeUp is the want of a fetcher that no freed slot can unblock.
const noWakeUp = math.MaxInt32

// reserve takes n slots for a fetch going out. Only the fetcher calls it.
func (s *slots) reserve(n int) { s.held.Add(int32(n)) }

// unreserve gives back n slots a fetch did not fill.
func (s *slots) unreserve(n int) {
	if n > 0 {
		s.held.Add(-int32(n))
		notify(s.freed)
	}
}

// release gives back one slot, waking the fetcher if it waits for as many
// free slots as there are now: with fast handlers a wake-up per job, each
// only to count the slots and wait again, would be a park and a wake-up per
// job.
func (s *slots) release() {
	if s.size-s.held.Add(-1) >= s.want.Load() {
		notify(s.freed)
	}
}

// handOn trades a run's slot for a record token, so the next fetch does not
// wait for the run's outcome to reach Redis: with fast handlers the ack's
// round trip, not the handler, would otherwise bound a worker's throughput.
// It reports false, the run keeping its slot until its outcome is
// recorded, when every token is taken.
func (s *slots) handOn() bool {
	select {
	case s.tokens <- struct{}{}:
	default:
		return false
	}
	s.release()
	return true
}

// returnToken gives back the record token of a run whose outcome is
// recorded.
func (s *slots) returnToken() { <-s.tokens }

// notify does a non-blocking send on a 1-buffered channel: a pending signal
// is enough.
func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
