package queue

import (
	"context"
	"testing"
	"time"
)

// Single enqueues keep to one shard for a window (so that they coalesce),
// and the windows go to the shards sent the fewest jobs: uneven windows
// still give the shards even counts.
func TestShardNow_OneShardPerWindowAndEvenCounts(t *testing.T) {
	var clock time.Duration
	q := &Queue{mono: func() time.Duration { return clock }}
	c := q.shardCountOf("hot")
	c.n.Store(4)
	c.readAt.Store(1)
	got := map[string]int{}
	for w := range 40 {
		// Windows of 1 to 20 enqueues, 0.1 ms apart.
		k := 1 + (w*7)%20
		first := q.ShardNow(context.Background(), "hot")
		got[first]++
		for range k - 1 {
			clock += 100 * time.Microsecond
			if s := q.ShardNow(context.Background(), "hot"); s != first {
				t.Fatalf("window %d: an enqueue went to %s, its window's shard is %s", w, s, first)
			}
			got[first]++
		}
		clock += shardWindow
	}
	total := 0
	for _, n := range got {
		total += n
	}
	for _, s := range ShardNames("hot", 4) {
		if d := got[s] - total/4; d < -20 || d > 20 {
			t.Fatalf("jobs by shard %v: %s is off the even %d by more than a window", got, s, total/4)
		}
	}
}
