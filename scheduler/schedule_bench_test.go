package scheduler_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// BenchmarkSchedules_TenThousandEverySecond runs one runner over 10,000
// schedules that all tick every second (six-field "* * * * * *") on a real
// redis-server of its own, for a few seconds, and reports the lateness of
// the ticks' enqueues (p50, p99: from the tick to its job enqueued) and the
// Redis CPU spent per second. Run: go test -run XXX -bench TenThousand
// -benchtime 1x ./scheduler/
func BenchmarkSchedules_TenThousandEverySecond(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	q, err := queue.New(rdb, "bench")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	s := &scheduler.Schedules{Queue: q}
	env, _ := queue.EncodeEnvelope(queue.Envelope{Args: []byte{0x90}})
	const n = 10_000
	for i := range n {
		d := scheduler.ScheduleDef{ID: fmt.Sprintf("s%05d", i), Name: "t", Route: fmt.Sprintf("r%d", i%8), Envelope: env, Spec: "* * * * * *", Overlap: "allow"}
		if _, err := s.Put(ctx, d, q.Now()); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		var mu sync.Mutex
		var late []time.Duration
		r := &scheduler.ScheduleRunner{Schedules: s, OnFire: func(_ scheduler.Schedule, tick time.Time, _ string) {
			d := q.Now().Sub(tick)
			mu.Lock()
			late = append(late, d)
			mu.Unlock()
		}}
		cpu0 := redisCPU(b, rdb)
		run, stop := context.WithTimeout(ctx, 5*time.Second)
		r.Run(run)
		stop()
		cpu := redisCPU(b, rdb) - cpu0
		slices.Sort(late)
		if len(late) == 0 {
			b.Fatal("no tick fired")
		}
		p := func(f float64) float64 { return float64(late[int(f*float64(len(late)-1))].Milliseconds()) }
		b.ReportMetric(p(0.5), "lateness_p50_ms")
		b.ReportMetric(p(0.99), "lateness_p99_ms")
		b.ReportMetric(float64(len(late))/5, "fires/s")
		b.ReportMetric(cpu/5, "redis_cpu_s/s")
	}
}

// redisCPU is the CPU seconds (user + sys) the server has used.
func redisCPU(b *testing.B, rdb *redis.Client) float64 {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	for _, l := range strings.Split(info, "\n") {
		for _, k := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), k); ok {
				f, _ := strconv.ParseFloat(v, 64)
				sum += f
			}
		}
	}
	return sum
}
