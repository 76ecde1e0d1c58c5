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

func TestRedisCPU_SumsSysAndUser(t *testing.T) {
	info := "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:9.000000\r\nused_cpu_user_children:9.000000\r\nused_cpu_sys_main_thread:1.000000\r\n"
	if got, want := RedisCPU(info), 3750*time.Millisecond; got != want {
		t.Fatalf("RedisCPU = %v, want %v (sys + user of the server, not its children or main thread alone)", got, want)
	}
	if got := RedisCPU("# CPU\r\n"); got != 0 {
		t.Fatalf("RedisCPU without the fields = %v, want 0", got)
	}
}

func TestProcessCPU_CountsWorkDone(t *testing.T) {
	before := ProcessCPU()
	deadline := time.Now().Add(5 * time.Second)
	x := 0
	for ProcessCPU()-before < 20*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("5 s of spinning added %v of CPU", ProcessCPU()-before)
		}
		for i := range 1_000_000 {
			x += i
		}
	}
	_ = x
}

func TestCPUSpan_PerJob(t *testing.T) {
	cpu := []string{"used_cpu_sys:1.0\r\nused_cpu_user:1.0", "used_cpu_sys:1.5\r\nused_cpu_user:1.5"}
	reads := 0
	s := StartCPU(func() string { reads++; return cpu[reads-1] })
	_, redisUS := s.PerJob(1000)
	if redisUS != 1000 {
		t.Fatalf("Redis µs per job = %v, want 1000 (1 s over 1,000 jobs)", redisUS)
	}
	if c, r := StartCPU(func() string { return "" }).PerJob(0); c != 0 || r != 0 {
		t.Fatalf("PerJob(0) = %v, %v, want 0, 0", c, r)
	}
}
