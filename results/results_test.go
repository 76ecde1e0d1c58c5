package results_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/results"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func eachBackend(t *testing.T, f func(t *testing.T, rdb *redis.Client, real bool)) {
	t.Helper()
	t.Parallel()
	for _, name := range []string{"embedded", "redis"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if name == "redis" {
				f(t, redistest.Start(t).Client(t), true)
				return
			}
			m := miniredis.RunT(t)
			rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
			t.Cleanup(func() { _ = rdb.Close() })
			f(t, rdb, false)
		})
	}
}

func rec(t *testing.T, id string) []byte {
	b, err := results.Encode(results.Record{ID: id, OK: true, Value: []byte(id), FinishedAt: 1})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func listener(t *testing.T, rdb *redis.Client) *results.Listener {
	l := results.NewListener(rdb)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// channel names the result channels of the tests' namespace, as
// queue.ResultChannel does.
func channel(id string) string { return "ns:result:{" + id + "}" }

func TestRecord_RoundTripAndGarbage(t *testing.T) {
	t.Parallel()
	for _, in := range []results.Record{
		{ID: "j1", OK: false, Error: "boom", Attempts: 3, FinishedAt: 42},
		{ID: "j2", OK: true, Value: []byte{0x81}, Error: "last", Attempts: 1, FinishedAt: 42, Name: "Thumb", Priority: "high",
			CreatedAt: 40, StartedAt: 41, Args: []byte{0x82, 0x01}, MaxRetries: 7, Timeout: 30000, Description: "from the test", Worker: "host-1-W1"},
		{ID: "j3", Error: "canceled", FinishedAt: 43, Canceled: true},
		{ID: "j4", Error: "third", Attempts: 3, FinishedAt: 1763942400000, FailedAt: []int64{1, 1763942399000, 1763942400000},
			FailedStartedAt: []int64{0, 1763942398000, 1763942399500}},
		{ID: "j5", Error: "many", FailedAt: make([]int64, 20)},
	} {
		b, err := results.Encode(in)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := results.Decode(b); err != nil || !reflect.DeepEqual(out, in) {
			t.Fatalf("round trip of %+v = %+v, %v", in, out, err)
		}
		var viaReflection results.Record // what msgpack.Unmarshal reads must agree
		if err := msgpack.Unmarshal(b, &viaReflection); err != nil || !reflect.DeepEqual(viaReflection, in) {
			t.Fatalf("msgpack.Unmarshal of %+v = %+v, %v", in, viaReflection, err)
		}
	}
	if _, err := results.Decode([]byte("\xc1garbage")); err == nil || !strings.Contains(err.Error(), "results: decode record") {
		t.Fatalf("Decode(garbage) err = %v", err)
	}
}

func TestWait_PublishedAfterSubscribe(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb *redis.Client, _ bool) {
		w := results.NewWaiter(listener(t, rdb), channel, time.Hour)
		looked := make(chan struct{})
		var once sync.Once
		lookup := func(context.Context, string) ([]byte, error) {
			once.Do(func() { close(looked) })
			return nil, nil
		}
		go func() {
			<-looked // subscribed and confirmed by now
			rdb.Publish(context.Background(), channel("j1"), rec(t, "j1"))
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := w.Wait(ctx, "j1", lookup)
		if err != nil || r.ID != "j1" || string(r.Value) != "j1" {
			t.Fatalf("Wait = %+v, %v", r, err)
		}
	})
}

func TestWait_StoredBeforeSubscribeIsFound(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb *redis.Client, _ bool) {
		w := results.NewWaiter(listener(t, rdb), channel, time.Hour)
		stored := rec(t, "early")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := w.Wait(ctx, "early", func(context.Context, string) ([]byte, error) { return stored, nil })
		if err != nil || r.ID != "early" {
			t.Fatalf("Wait = %+v, %v", r, err)
		}
	})
}

// A job that keeps no record can end, be announced and leave nothing
// between a waiter's subscription and its lookup: the lookup then finds no
// job, and the waiter still returns the end it was sent rather than the
// lookup's error.
func TestWait_AnEndAnnouncedBeforeALookupThatFindsNoJobIsReturned(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb *redis.Client, real bool) {
		if !real {
			t.Skip("the embedded server writes a pub/sub message from a goroutine of its own, so a pong can pass it: Flush orders only Redis's replies")
		}
		w := results.NewWaiter(listener(t, rdb), channel, time.Hour)
		gone := errors.New("job not found")
		lookup := func(ctx context.Context, id string) ([]byte, error) {
			// Redis has written the message to the listener's connection
			// when PUBLISH answers; the listener may not have read it yet.
			if err := rdb.Publish(ctx, channel(id), rec(t, id)).Err(); err != nil {
				return nil, err
			}
			return nil, gone
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := w.Wait(ctx, "fleeting", lookup)
		if err != nil || r.ID != "fleeting" {
			t.Fatalf("Wait = %+v, %v; want the announced end", r, err)
		}
		// With nothing announced, the lookup's answer stands.
		_, err = w.Wait(ctx, "never", func(context.Context, string) ([]byte, error) { return nil, gone })
		if !errors.Is(err, gone) {
			t.Fatalf("Wait of a job never announced = %v; want the lookup's error", err)
		}
	})
}

func TestWait_ManyWaitersShareOneConnection(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb *redis.Client, real bool) {
		w := results.NewWaiter(listener(t, rdb), channel, time.Hour)
		const n = 200
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("job-%d", i)
		}
		var subscribed sync.WaitGroup
		subscribed.Add(n)
		var mu sync.Mutex
		seen := map[string]bool{}
		lookup := func(_ context.Context, id string) ([]byte, error) {
			mu.Lock()
			defer mu.Unlock()
			if !seen[id] {
				seen[id] = true
				subscribed.Done()
			}
			return nil, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done := make(chan error, 1)
		var got []results.Record
		go func() {
			var err error
			got, err = w.WaitMany(ctx, ids, lookup)
			done <- err
		}()
		subscribed.Wait()
		if real {
			clients, err := rdb.ClientList(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			subConns := 0
			for _, line := range strings.Split(clients, "\n") {
				if strings.Contains(line, " sub=") && !strings.Contains(line, " sub=0 ") {
					subConns++
				}
			}
			if subConns != 1 {
				t.Fatalf("%d connections hold subscriptions, want 1:\n%s", subConns, clients)
			}
		}
		for _, id := range ids {
			rdb.Publish(ctx, channel(id), rec(t, id))
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		for i, r := range got {
			if r.ID != ids[i] {
				t.Fatalf("record %d is %s, want %s (in the order of ids)", i, r.ID, ids[i])
			}
		}
	})
}

func TestWait_TwoWaitersOneJob(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb *redis.Client, _ bool) {
		l := listener(t, rdb)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a, err := l.Subscribe(ctx, "ch")
		if err != nil {
			t.Fatal(err)
		}
		b, err := l.Subscribe(ctx, "ch")
		if err != nil {
			t.Fatal(err)
		}
		rdb.Publish(ctx, "ch", "one")
		for _, s := range []*results.Subscription{a, b} {
			select {
			case p := <-s.C:
				if string(p) != "one" {
					t.Fatalf("got %q", p)
				}
			case <-ctx.Done():
				t.Fatal("a subscriber of a shared channel got nothing")
			}
		}
		a.Close()
		a.Close() // idempotent
		rdb.Publish(ctx, "ch", "two")
		select {
		case p := <-b.C:
			if string(p) != "two" {
				t.Fatalf("got %q", p)
			}
		case <-ctx.Done():
			t.Fatal("closing one subscriber broke the other")
		}
	})
}

func TestWait_ContextEndsAndLookupErrors(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb *redis.Client, _ bool) {
		w := results.NewWaiter(listener(t, rdb), channel, time.Hour)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := w.Wait(ctx, "never", func(context.Context, string) ([]byte, error) { return nil, nil }); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait past its context = %v", err)
		}
		gone := errors.New("no such job")
		if _, err := w.Wait(context.Background(), "x", func(context.Context, string) ([]byte, error) { return nil, gone }); err != gone {
			t.Fatalf("Wait with a failing lookup = %v, want the lookup's error as is", err)
		}
	})
}

// A SubscribeFunc callback sees every payload published after it returns, in
// order, beside a channel subscriber of the same channel; after Close it is
// not called again.
func TestSubscribeFunc_CalledPerPayloadUntilClosed(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb *redis.Client, _ bool) {
		l := listener(t, rdb)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got := make(chan string, 10)
		f, err := l.SubscribeFunc(ctx, "ch", func(p []byte) { got <- string(p) })
		if err != nil {
			t.Fatal(err)
		}
		c, err := l.Subscribe(ctx, "ch")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"one", "two"} {
			rdb.Publish(ctx, "ch", p)
		}
		for _, want := range []string{"one", "two"} {
			select {
			case p := <-got:
				if p != want {
					t.Fatalf("callback got %q, want %q", p, want)
				}
			case <-ctx.Done():
				t.Fatalf("callback never got %q", want)
			}
		}
		f.Close()
		rdb.Publish(ctx, "ch", "three")
		rdb.Publish(ctx, "ch", "four")
		for _, want := range []string{"one", "two", "three", "four"} {
			select {
			case p := <-c.C:
				if string(p) != want {
					t.Fatalf("channel subscriber got %q, want %q", p, want)
				}
			case <-ctx.Done():
				t.Fatalf("channel subscriber never got %q", want)
			}
		}
		// "four" reached the channel subscriber, so the delivery of "three"
		// (one at a time, on the receive goroutine) is over: a callback still
		// registered would have run in it.
		select {
		case p := <-got:
			t.Fatalf("callback called after Close with %q", p)
		default:
		}
	})
}
