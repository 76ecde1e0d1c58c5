package queue_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
)

// redisUsec is the CPU time the Redis server has used so far, in µs (INFO cpu:
// user + system): scripts, commands and the network I/O around them. Command
// stats would count a command run by a script twice (under EVALSHA and under
// its own name) and leave out reading requests and writing replies.
func redisUsec(b *testing.B, rdb *redis.Client) float64 {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(info, "\r\n") {
		for _, key := range []string{"used_cpu_user:", "used_cpu_sys:"} {
			if v, ok := strings.CutPrefix(line, key); ok {
				f, _ := strconv.ParseFloat(v, 64)
				total += f * 1e6
			}
		}
	}
	return total
}

func benchQueue(b *testing.B) (*queue.Queue, *redis.Client) {
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	q, err := queue.New(rdb, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return q, rdb
}

// BenchmarkEnqueueBatch measures Enqueue of 1,000 jobs a call: plain jobs
// (fresh ids, ready now: one MULTI/EXEC, no script) and jobs with chosen ids
// (enqueue.lua, which checks each id is free).
func BenchmarkEnqueueBatch(b *testing.B) {
	for _, chosen := range []bool{false, true} {
		name := "plain"
		if chosen {
			name = "script"
		}
		b.Run(name, func(b *testing.B) {
			q, rdb := benchQueue(b)
			ctx := context.Background()
			env, _ := queue.EncodeEnvelope(queue.Envelope{Args: make([]byte, 80)})
			jobs := make([]queue.NewJob, 1000)
			before := redisUsec(b, rdb)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				now := time.Now()
				for j := range jobs {
					jobs[j] = queue.NewJob{ID: queue.NewID("r", now), Name: "t", Envelope: env, MaxRetries: 3, ChosenID: chosen}
				}
				if _, err := q.Enqueue(ctx, "r", queue.Normal, jobs, now); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric((redisUsec(b, rdb)-before)/float64(b.N*len(jobs)), "redis-us/job")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(jobs)), "ns/job")
		})
	}
}

// BenchmarkFetchAck measures fetch.lua (64 jobs a call) and ack.lua (64 acks
// a call) on pending jobs.
func BenchmarkFetchAck(b *testing.B) {
	q, rdb := benchQueue(b)
	ctx := context.Background()
	env, _ := queue.EncodeEnvelope(queue.Envelope{Args: make([]byte, 80)})
	jobs := make([]queue.NewJob, 64)
	var usec float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		now := time.Now()
		for j := range jobs {
			jobs[j] = queue.NewJob{ID: queue.NewID("r", now), Name: "t", Envelope: env, MaxRetries: 3}
		}
		if _, err := q.Enqueue(ctx, "r", queue.Normal, jobs, now); err != nil {
			b.Fatal(err)
		}
		before := redisUsec(b, rdb)
		b.StartTimer()
		ds, err := q.Fetch(ctx, "r", queue.Priorities, 64, now.Add(time.Minute), now)
		if err != nil || len(ds) != 64 {
			b.Fatalf("fetch: %d, %v", len(ds), err)
		}
		done := make(chan struct{}, len(ds))
		for _, d := range ds {
			go func() {
				if _, err := q.Ack(ctx, d, []byte("result record"), time.Hour, now); err != nil {
					b.Error(err)
				}
				done <- struct{}{}
			}()
		}
		for range ds {
			<-done
		}
		b.StopTimer()
		usec += redisUsec(b, rdb) - before
		b.StartTimer()
	}
	b.ReportMetric(usec/float64(b.N*64), "redis-us/job")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/job")
}
