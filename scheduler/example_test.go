package scheduler_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/scheduler"
)

// A Lock guards work that cannot be one script; only its holder can release
// or extend it.
func ExampleLock() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	a := scheduler.NewLock(rdb, "reports:lock")
	b := scheduler.NewLock(rdb, "reports:lock")
	ok, _ := a.TryAcquire(ctx, 30*time.Second)
	fmt.Println("a acquired:", ok)
	ok, _ = b.TryAcquire(ctx, 30*time.Second)
	fmt.Println("b acquired:", ok)
	fmt.Println("b releases a's lock:", b.Release(ctx))
	fmt.Println("a releases:", a.Release(ctx))
	// Output:
	// a acquired: true
	// b acquired: false
	// b releases a's lock: scheduler: lock not held
	// a releases: <nil>
}

// NextRun computes a schedule's next tick in its time zone.
func ExampleNextRun() {
	from := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	next, _ := scheduler.NextRun("0 3 * * *", "Europe/Berlin", from)
	fmt.Println(next.UTC())
	// Output: 2026-11-23 02:00:00 +0000 UTC
}
