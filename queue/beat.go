package queue

import (
	"math/rand/v2"
	"time"
)

// A process makes its periodic calls to Redis — an idle worker's safety
// poll and heartbeat, a standby's try of a keeper lock, the clock sync — on
// its beat: instants Beat apart, from a phase drawn at random when the
// process starts. A call that reaches an otherwise idle Redis alone costs
// Redis far more than the call itself (waking it: ≈100 µs against 15 µs a
// call at 2,000 calls a second, docs/PERFORMANCE.md), and the calls a
// process makes in the same instant share one wake-up; the random phase
// keeps processes from all calling in the same instant.

// Beat is the spacing of a process's beats.
const Beat = 5 * time.Second

// beatSlack is how early a beat may be taken for one asked at a later
// instant: a timer set for a beat fires a little after it, and the next
// period measured from there must not skip the beat it aims at.
const beatSlack = 50 * time.Millisecond

var beatPhase = time.Duration(rand.Int64N(int64(Beat)))

// NextBeat returns the first beat of the process at or after at (less
// beatSlack).
func NextBeat(at time.Time) time.Time {
	t := at.Add(-beatSlack).UnixNano() - int64(beatPhase)
	n := t / int64(Beat)
	if t > n*int64(Beat) {
		n++
	}
	return time.Unix(0, n*int64(Beat)+int64(beatPhase))
}

// UntilBeat returns how long to wait from now to call about d from now, on
// a beat: d itself when it is shorter than a Beat (a period that short is
// not an idle process's: tests, a worker polling each second).
func UntilBeat(d time.Duration) time.Duration {
	if d < Beat {
		return d
	}
	now := time.Now()
	return max(NextBeat(now.Add(d)).Sub(now), 0)
}
