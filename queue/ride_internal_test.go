package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
)

// Acks that wait while another ack flush is in flight go out with the next
// fetch of their route, in its round trip: each gets its own fenced answer,
// and their results are stored before the flush ahead of them has even
// returned. With the scripts dropped from the server's cache first, the
// pipelined calls come back NOSCRIPT and are run again on their own.
func TestFetch_CarriesWaitingAcks(t *testing.T) {
	for _, flushScripts := range []bool{false, true} {
		t.Run(fmt.Sprintf("noscript=%v", flushScripts), func(t *testing.T) { testRide(t, flushScripts) })
	}
}

func testRide(t *testing.T, flushScripts bool) {
	backends := redistest.EachBackend
	if flushScripts {
		// SCRIPT FLUSH empties the script cache of every test sharing the
		// server, in the middle of their calls (a test counting its
		// commands or round trips would see the reloads): this run gets
		// servers of its own.
		backends = eachPrivateBackend
	}
	backends(t, func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		q, gate, held := holdFirstAckFlush(t, rdb)
		env, _ := EncodeEnvelope(Envelope{Args: []byte{0x90}})
		now := time.Now()
		jobs := make([]NewJob, 6)
		for i := range jobs {
			jobs[i] = NewJob{ID: NewID("r", now), Name: "t", Envelope: env}
		}
		if _, err := q.Jobs.Enqueue(ctx, "r", Normal, jobs, now); err != nil {
			t.Fatal(err)
		}
		ds, err := q.Jobs.Fetch(ctx, "r", Priorities, 3, now.Add(time.Minute), now)
		if err != nil || len(ds) != 3 {
			t.Fatalf("Fetch = %d jobs, %v; want 3", len(ds), err)
		}
		ack := func(d *Dispatch) chan answer {
			ch := make(chan answer, 1)
			go func() {
				ok, err := q.Jobs.Ack(ctx, d, []byte("rec "+d.ID), time.Hour)
				ch <- answer{ok, err}
			}()
			return ch
		}
		first := ack(ds[0])
		<-held
		stale := *ds[2]
		stale.Token = "not-its-token"
		second, third := ack(ds[1]), ack(&stale)
		waitQueued(t, q, "r", 2)
		if flushScripts {
			if err := rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		more, err := q.Jobs.Fetch(ctx, "r", Priorities, 10, now.Add(time.Minute), now)
		if err != nil || len(more) != 3 {
			t.Fatalf("second Fetch = %d jobs, %v; want the 3 left", len(more), err)
		}
		if a := answerOf(t, second); !a.ok || a.err != nil {
			t.Fatalf("riding ack = %v, %v; want completed", a.ok, a.err)
		}
		if a := answerOf(t, third); a.ok || a.err != nil {
			t.Fatalf("riding ack with a stale token = %v, %v; want not completed, no error", a.ok, a.err)
		}
		if got, _ := rdb.Get(ctx, q.Keys("r").Result(ds[1].ID)).Result(); got != "rec "+ds[1].ID {
			t.Fatalf("result of the riding ack = %q, want its record (stored while the first flush is still held)", got)
		}
		if n, _ := rdb.Exists(ctx, q.Keys("r").Result(ds[0].ID)).Result(); n != 0 {
			t.Fatalf("the held ack's result exists before its flush ran")
		}
		close(gate)
		if a := answerOf(t, first); !a.ok || a.err != nil {
			t.Fatalf("held ack = %v, %v; want completed", a.ok, a.err)
		}
		if leased, _ := rdb.HLen(ctx, q.Keys("r").Leases()).Result(); leased != 4 {
			t.Fatalf("%d leases left, want 4 (ds[2] and the three fetched after)", leased)
		}
	})
}

// holdFirstAckFlush returns a queue whose first ack flush closes held and
// then waits until gate closes; later flushes run at once.
func holdFirstAckFlush(t *testing.T, rdb *redis.Client) (q *Queue, gate, held chan struct{}) {
	t.Helper()
	q, err := New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	gate, held = make(chan struct{}), make(chan struct{})
	flushes := 0
	q.acks = newCommitter(1, 0, func(ctx context.Context, route string, reqs []ackReq) ([]bool, error) {
		if flushes++; flushes == 1 {
			close(held)
			<-gate
		}
		return q.Jobs.ackMany(ctx, route, reqs)
	})
	return q, gate, held
}

type answer struct {
	ok  bool
	err error
}

// answerOf waits 10s at most for an ack's answer.
func answerOf(t *testing.T, ch chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to an ack within 10s")
		return answer{}
	}
}

// waitQueued waits until n acks of route wait for their turn.
func waitQueued(t *testing.T, q *Queue, route string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		q.acks.mu.Lock()
		got := 0
		if g := q.acks.groups[route]; g != nil && g.next != nil {
			got = len(g.next.ins)
		}
		q.acks.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d acks waiting after 10s, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// eachPrivateBackend is redistest.EachBackend with a redis-server of the
// test's own in place of the shared one.
func eachPrivateBackend(t *testing.T, f func(t *testing.T, rdb *redis.Client)) {
	t.Helper()
	t.Parallel()
	for _, name := range []string{"embedded", "redis"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if name == "redis" {
				f(t, redistest.Start(t).Client(t))
				return
			}
			m := miniredis.RunT(t)
			m.ClockTTL(true)
			rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
			t.Cleanup(func() { _ = rdb.Close() })
			f(t, rdb)
		})
	}
}
