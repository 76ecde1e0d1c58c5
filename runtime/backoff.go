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
	return doubling(2*time.Second, attempt)
}

// doubling is first before retry 1, doubled for each retry after, plus up to
// 25% jitter, capped at MaxBackoff.
func doubling(first time.Duration, attempt int) time.Duration {
	base := first
	for i := 1; i < attempt && base < MaxBackoff; i++ {
		base *= 2
	}
	if base >= MaxBackoff {
		return MaxBackoff
	}
	jitter := time.Duration(rand.Int64N(int64(base)/4 + 1))
	return min(base+jitter, MaxBackoff)
}
