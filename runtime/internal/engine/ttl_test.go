package engine

import (
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// A success's record lives for the envelope's ResultTTL, the worker's
// default when it sets none, and not at all for queue.KeepNothing (an ack
// with no TTL writes no record).
func TestSuccessTTL_KeepNothingWritesNoRecord(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		ms   int64
		want time.Duration
	}{{0, time.Hour}, {5000, 5 * time.Second}, {queue.KeepNothing, 0}} {
		if got := successTTL(c.ms, time.Hour); got != c.want {
			t.Errorf("successTTL(%d, 1h) = %s; want %s", c.ms, got, c.want)
		}
	}
}
