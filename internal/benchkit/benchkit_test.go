package benchkit

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func TestParallel_CallsEachIndexOnce(t *testing.T) {
	var mu sync.Mutex
	var seen []int
	Parallel(4, 100, func(i int) { mu.Lock(); seen = append(seen, i); mu.Unlock() })
	slices.Sort(seen)
	if len(seen) != 100 || seen[0] != 0 || seen[99] != 99 || len(slices.Compact(seen)) != 100 {
		t.Fatalf("calls %v, want 0 to 99 once each", seen)
	}
}

func TestQuantile_NearestRankBelow(t *testing.T) {
	d := []time.Duration{5, 1, 4, 2, 3}
	if got := Quantile(d, 0.5); got != 3 {
		t.Fatalf("median of 1..5 = %v, want 3", got)
	}
	if got := Quantile(d, 0.99); got != 4 {
		t.Fatalf("p99 of five = %v, want the 4th (nearest rank below)", got)
	}
	if got := Quantile(nil, 0.5); got != 0 {
		t.Fatalf("quantile of none = %v", got)
	}
	if !slices.Equal(d, []time.Duration{5, 1, 4, 2, 3}) {
		t.Fatalf("Quantile sorted its argument: %v", d)
	}
}

func TestUsedMemory_ReadsTheField(t *testing.T) {
	info := "# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\n"
	if got := UsedMemory(info); got != 1048576 {
		t.Fatalf("UsedMemory = %d, want 1048576", got)
	}
	if got := UsedMemory("# Memory\r\n"); got != 0 {
		t.Fatalf("UsedMemory without the field = %d, want 0", got)
	}
}
