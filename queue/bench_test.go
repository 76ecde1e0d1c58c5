package queue_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
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
				if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs, now); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric((redisUsec(b, rdb)-before)/float64(b.N*len(jobs)), "redis-us/job")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(jobs)), "ns/job")
		})
	}
}

// fetchFresh enqueues n jobs with the timer stopped, then fetches them
// with it running: it returns the jobs and the Redis CPU used before the
// fetch (redisUsec).
func fetchFresh(b *testing.B, q *queue.Queue, rdb *redis.Client, n int) ([]*queue.Dispatch, float64) {
	b.StopTimer()
	ctx := context.Background()
	env, _ := queue.EncodeEnvelope(queue.Envelope{Args: make([]byte, 80)})
	jobs := make([]queue.NewJob, n)
	now := time.Now()
	for j := range jobs {
		jobs[j] = queue.NewJob{ID: queue.NewID("r", now), Name: "t", Envelope: env, MaxRetries: 3}
	}
	if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs, now); err != nil {
		b.Fatal(err)
	}
	before := redisUsec(b, rdb)
	b.StartTimer()
	ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, n, now.Add(time.Minute), now)
	if err != nil || len(ds) != n {
		b.Fatalf("fetch: %d, %v", len(ds), err)
	}
	return ds, before
}

// BenchmarkFetchAck measures fetch.lua (64 jobs a call) and ack.lua (64 acks
// a call) on pending jobs.
func BenchmarkFetchAck(b *testing.B) {
	q, rdb := benchQueue(b)
	ctx := context.Background()
	var usec float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ds, before := fetchFresh(b, q, rdb, 64)
		done := make(chan struct{}, len(ds))
		for _, d := range ds {
			go func() {
				if _, err := q.Jobs.Ack(ctx, d, []byte("result record"), time.Hour); err != nil {
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

// benchDepth is how many pending jobs BenchmarkListJobs lists from:
// BANANAS_BENCH_DEPTH, default 10,000 so that go test -bench stays quick.
func benchDepth(b *testing.B) int {
	n := 10_000
	if s := os.Getenv("BANANAS_BENCH_DEPTH"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("BANANAS_BENCH_DEPTH=%q: want a positive count", s)
		}
		n = v
	}
	return n
}

// fillPending writes n light jobs to route r's normal list in pipelined
// batches, as push.lua leaves them; one in 100 is of task "rare", the rest
// of task "bulk".
func fillPending(b *testing.B, q *queue.Queue, rdb *redis.Client, n int) {
	ctx := context.Background()
	k := q.Keys("r")
	env, _ := queue.EncodeEnvelope(queue.Envelope{Args: make([]byte, 80), Description: "bench job"})
	now := time.Now()
	for done := 0; done < n; {
		batch := min(10_000, n-done)
		ids := make([]any, batch)
		fields := make([]any, 0, 2*batch)
		for i := range ids {
			name := "bulk"
			if (done+i)%100 == 99 {
				name = "rare"
			}
			id := queue.NewID("r", now)
			ids[i] = id
			fields = append(fields, id, name+"|normal|3|"+strconv.FormatInt(now.UnixMilli(), 10)+"|"+string(env))
		}
		pipe := rdb.Pipeline()
		pipe.HSet(ctx, k.Payloads(), fields...)
		pipe.RPush(ctx, k.List(queue.Normal), ids...)
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		done += batch
	}
}

// BenchmarkListJobs measures a page of 50 pending jobs, unfiltered and
// filtered by a task one job in 100 has (the page then goes through 1,000
// entries), at the head of the route and half way down it.
func BenchmarkListJobs(b *testing.B) {
	q, rdb := benchQueue(b)
	ctx := context.Background()
	n := benchDepth(b)
	fillPending(b, q, rdb, n)
	// A cursor half way down: page there with a filter nothing matches,
	// 1,000 entries a call.
	deep := queue.ListQuery{Route: "r", State: queue.ListPending, Task: "none"}
	for gone := 0; gone < n/2; gone += 1000 {
		p, err := q.Ops.ListJobs(ctx, deep)
		if err != nil {
			b.Fatal(err)
		}
		deep.Cursor = p.Next
	}
	b.Logf("%d pending jobs", n)
	for _, at := range []struct {
		name   string
		cursor string
	}{{"first", ""}, {"deep", deep.Cursor}} {
		for _, task := range []string{"", "rare"} {
			name := at.name + "/all"
			if task != "" {
				name = at.name + "/task"
			}
			b.Run(name, func(b *testing.B) {
				lq := queue.ListQuery{Route: "r", State: queue.ListPending, Task: task, Cursor: at.cursor}
				before := redisUsec(b, rdb)
				for i := 0; i < b.N; i++ {
					p, err := q.Ops.ListJobs(ctx, lq)
					if err != nil || len(p.Jobs) == 0 || p.Next == "" {
						b.Fatalf("page = %d jobs, next %q, %v", len(p.Jobs), p.Next, err)
					}
				}
				b.ReportMetric((redisUsec(b, rdb)-before)/float64(b.N), "redis-us/page")
			})
		}
	}
}

// BenchmarkDepths measures Depths over 50 routes, each with jobs waiting.
func BenchmarkDepths(b *testing.B) {
	q, _ := benchQueue(b)
	ctx := context.Background()
	env, _ := queue.EncodeEnvelope(queue.Envelope{Args: make([]byte, 80)})
	routes := make([]string, 50)
	now := time.Now()
	for i := range routes {
		routes[i] = "r" + strconv.Itoa(i)
		jobs := make([]queue.NewJob, 10)
		for j := range jobs {
			jobs[j] = queue.NewJob{ID: queue.NewID(routes[i], now), Name: "t", Envelope: env}
		}
		if _, err := q.Jobs.Enqueue(ctx, routes[i], queue.Priorities[i%3], jobs, now); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ds, err := q.Ops.Depths(ctx, routes)
		if err != nil || len(ds) != 50 || ds[0].OldestPending.IsZero() {
			b.Fatalf("depths = %v, %v", ds, err)
		}
	}
}

// BenchmarkFetchAckKeyed drains jobs by fetches of 64 and their acks, and reports
// the Redis CPU time per job: unkeyed jobs, and keyed jobs over 1,000 keys
// capped at one running job each (flow.go).
func BenchmarkFetchAckKeyed(b *testing.B) {
	for _, keyed := range []bool{false, true} {
		name := "unkeyed"
		if keyed {
			name = "keyed1000cap1"
		}
		b.Run(name, func(b *testing.B) {
			q, rdb := benchQueue(b)
			ctx := context.Background()
			env, _ := queue.EncodeEnvelope(queue.Envelope{Args: make([]byte, 80)})
			if err := q.Flows.SetTaskLimits(ctx, "r", "t", queue.Limits{MaxRunning: 1}); err != nil {
				b.Fatal(err)
			}
			jobs := make([]queue.NewJob, b.N)
			for i := range jobs {
				jobs[i] = queue.NewJob{ID: queue.NewID("r", time.Now()), Name: "t", Envelope: env, Keyed: keyed, Key: strconv.Itoa(i % 1000)}
			}
			if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs, q.Now()); err != nil {
				b.Fatal(err)
			}
			before := redisUsec(b, rdb)
			b.ResetTimer()
			for done := 0; done < b.N; {
				now := q.Now()
				ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 64, now.Add(time.Minute), now)
				if err != nil || len(ds) == 0 {
					b.Fatalf("fetch: %d, %v", len(ds), err)
				}
				var wg sync.WaitGroup
				for _, d := range ds {
					wg.Add(1)
					go func() { // concurrent acks share calls, as a worker's do
						defer wg.Done()
						if _, err := q.Jobs.Ack(ctx, d, []byte("ok"), time.Minute); err != nil {
							b.Error(err)
						}
					}()
				}
				wg.Wait()
				done += len(ds)
			}
			b.StopTimer()
			b.ReportMetric((redisUsec(b, rdb)-before)/float64(b.N), "redis-µs/job")
		})
	}
}

// BenchmarkFetchSettleBatch measures fetch.lua (100 jobs a call) and
// batch_ack.lua (the 100 completions in one call): a batch handler's Redis
// work per job, beside BenchmarkFetchAck's, with each job's result record
// kept for an hour (the default) and with none kept.
func BenchmarkFetchSettleBatch(b *testing.B) {
	for _, ttl := range []time.Duration{time.Hour, 0} {
		name := "records"
		if ttl == 0 {
			name = "no-records"
		}
		b.Run(name, func(b *testing.B) { benchFetchSettleBatch(b, ttl) })
	}
}

func benchFetchSettleBatch(b *testing.B, ttl time.Duration) {
	q, rdb := benchQueue(b)
	ctx := context.Background()
	var usec, fetchUsec float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ds, before := fetchFresh(b, q, rdb, 100)
		now := time.Now()
		b.StopTimer()
		fetched := redisUsec(b, rdb)
		fetchUsec += fetched - before
		b.StartTimer()
		ends := make([]queue.BatchEnd, len(ds))
		for j, d := range ds {
			ends[j] = queue.BatchEnd{D: d, Record: []byte("result record"), TTL: ttl, Finished: now}
		}
		if _, err := q.Jobs.SettleBatch(ctx, ends, now); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		usec += redisUsec(b, rdb) - before
		b.StartTimer()
	}
	b.ReportMetric(usec/float64(b.N*100), "redis-us/job")
	b.ReportMetric(fetchUsec/float64(b.N*100), "fetch-redis-us/job")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/job")
}
