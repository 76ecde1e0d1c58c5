package runtime

import (
	"testing"
	"time"
)

// Retries of jobs that failed together spread over the quarter of the delay
// above it (the draws for one attempt reach both ends of that band), and no
// delay passes MaxBackoff: not a doubled one, not one the jitter pushes past
// it, not one of an attempt so high that doubling would overflow.
func TestBackoff_JitterSpreadsRetriesOverAQuarterAndTheCapHolds(t *testing.T) {
	t.Parallel()
	const draws = 400
	for _, first := range []time.Duration{2 * time.Second, 3 * time.Second, 50 * time.Minute} {
		base := first
		for attempt := 1; attempt <= 200; attempt++ {
			if attempt > 1 && base < MaxBackoff {
				base *= 2
			}
			lo, hi := time.Duration(1<<62), time.Duration(0)
			for range draws {
				d := doubling(first, attempt)
				if first == 2*time.Second {
					d = DefaultBackoff(attempt)
				}
				lo, hi = min(lo, d), max(hi, d)
			}
			if base >= MaxBackoff {
				if lo != MaxBackoff || hi != MaxBackoff {
					t.Fatalf("backoff from %s, attempt %d: delays %s..%s, want the cap %s", first, attempt, lo, hi, MaxBackoff)
				}
				continue
			}
			top := min(base+base/4, MaxBackoff)
			if lo < base || hi > top {
				t.Fatalf("backoff from %s, attempt %d: delays %s..%s, want within [%s, %s]", first, attempt, lo, hi, base, top)
			}
			// 400 uniform draws all missing a sixteenth of the delay at one
			// end of the band: odds below 1e-40.
			if lo > base+base/16 || hi < min(base+base*3/16, MaxBackoff) {
				t.Fatalf("backoff from %s, attempt %d: delays %s..%s, want them spread over [%s, %s]", first, attempt, lo, hi, base, top)
			}
		}
	}
}
