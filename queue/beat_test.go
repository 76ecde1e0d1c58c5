package queue

import (
	"testing"
	"time"
)

func TestNextBeat_IsOnTheGridAndNotBeforeTheInstantLessTheSlack(t *testing.T) {
	start := time.Now()
	for i := range 1000 {
		at := start.Add(time.Duration(i) * 7919 * time.Microsecond)
		b := NextBeat(at)
		if off := (b.UnixNano() - int64(beatPhase)) % int64(Beat); off != 0 {
			t.Fatalf("NextBeat(%v) = %v, %v off the grid", at, b, time.Duration(off))
		}
		if b.Before(at.Add(-beatSlack)) || !b.Before(at.Add(Beat)) {
			t.Fatalf("NextBeat(%v) = %v, want within [at-%v, at+%v)", at, b, beatSlack, Beat)
		}
	}
}

func TestUntilBeat_LeavesShortPeriodsAndLandsLongOnesOnABeat(t *testing.T) {
	if d := UntilBeat(20 * time.Millisecond); d != 20*time.Millisecond {
		t.Fatalf("UntilBeat(20ms) = %v, want 20ms unchanged", d)
	}
	for _, d := range []time.Duration{Beat, 15 * time.Second, 30 * time.Second} {
		now := time.Now()
		w := UntilBeat(d)
		if w < d-beatSlack-time.Millisecond || w >= d+Beat {
			t.Fatalf("UntilBeat(%v) = %v, want within [d-slack, d+Beat)", d, w)
		}
		if off := (now.Add(w).UnixNano() - int64(beatPhase)) % int64(Beat); off > int64(time.Millisecond) && off < int64(Beat-time.Millisecond) {
			t.Fatalf("UntilBeat(%v) lands %v off a beat", d, time.Duration(off))
		}
	}
}
