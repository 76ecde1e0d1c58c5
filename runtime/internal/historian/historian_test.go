package historian_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/history"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/internal/historian"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// downStore refuses every write.
type downStore struct{ history.Store }

func (downStore) Write(context.Context, []history.Row) error  { return errors.New("down") }
func (downStore) DropBefore(context.Context, time.Time) error { return nil }

func TestWriter_AShardedRoutesBacklogIsTheSumOfItsShards(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, rdb *redis.Client) {
		q, err := queue.New(rdb, redistest.Namespace(t))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shards := queue.ShardNames("r", 2)
		for i, s := range shards {
			for j := range 3 + i {
				rec, _ := results.Encode(results.Record{ID: s + "-" + string(rune('a'+j)), OK: true, FinishedAt: 1})
				if err := rdb.RPush(ctx, q.Keys(s).Ended(), rec).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
		var mu sync.Mutex
		seen := map[string]int64{}
		w := &historian.Writer{
			Queue: q, Store: downStore{}, Routes: func() []string { return shards },
			Row:     func(route string, rec results.Record) history.Row { return historian.RowOf(route, rec, nil, nil) },
			Backlog: func(route string, n int64) { mu.Lock(); seen[route] = n; mu.Unlock() },
		}
		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); w.Run(wctx) }()
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			got := seen["r"]
			mu.Unlock()
			if got == 7 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("backlog of r = %d; want 7 (3 + 4 over its two shards)", got)
			}
			time.Sleep(10 * time.Millisecond)
		}
		stop()
		<-done
		// Nothing was dropped: the store refused every write.
		for i, s := range shards {
			if n, err := rdb.LLen(ctx, q.Keys(s).Ended()).Result(); err != nil || n != int64(3+i) {
				t.Fatalf("%s holds %d, %v; want %d", s, n, err, 3+i)
			}
		}
	})
}
