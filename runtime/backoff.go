package runtime

import (
	"math/rand/v2"
	"time"
)

// MaxBackoff caps the delay between retries.
const MaxBackoff = time.Hour

// DefaultBackoff is the delay before retry number attempt (1 for the first
// retry): 2^attempt seconds, plus up to 25% random jitter so that jobs failing
// together do not retry together, capped at MaxBackoff.
func DefaultBackoff(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if attempt > 20 {
		return MaxBackoff
	}
	base := time.Duration(1<<attempt) * time.Second
	jitter := time.Duration(rand.Int64N(int64(base)/4 + 1))
	return min(base+jitter, MaxBackoff)
}
