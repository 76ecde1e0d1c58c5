package results_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/results"
)

// While its Redis is down the listener retries its connection after a pause
// that grows to a second, not in a hot loop that would burn a core of every
// client and worker for the outage's length; once Redis is back, results
// are delivered again.
func TestListener_RedisDownIsRetriedWithAGrowingPauseNotAHotLoop(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var dials atomic.Int64
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}})
	t.Cleanup(func() { _ = rdb.Close() })
	l := results.NewListener(rdb)
	t.Cleanup(func() { _ = l.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sub, err := l.Subscribe(ctx, "ch")
	if err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	before := dials.Load()
	time.Sleep(2 * time.Second) // the outage: what the listener does in it is counted
	if n := dials.Load() - before; n > 30 {
		t.Fatalf("%d connection attempts in 2 s of outage; want a pause growing to 1 s between them (about 10)", n)
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	pub := srv.Client(t)
	for {
		pub.Publish(ctx, "ch", "back")
		select {
		case p := <-sub.C:
			if string(p) != "back" {
				t.Fatalf("got %q after the outage", p)
			}
			return
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("no message delivered after Redis came back")
		}
	}
}
