package scheduler_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// On a three-master cluster, 1,000 schedules spread their records and
// their indexes over every master (counted by scanning each master's
// keys), not one slot.
func TestSchedules_ThousandSpreadTheirKeysOverEveryMaster(t *testing.T) {
	cl := redistest.SharedCluster(t)
	rdb := cl.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := redistest.Namespace(t)
	q, err := queue.New(rdb, ns)
	if err != nil {
		t.Fatal(err)
	}
	s := &scheduler.Schedules{Queue: q}
	const n = 1000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			d := def(t, fmt.Sprintf("k%04d", i), "r")
			d.Spec = "0 0 1 1 *"
			if _, err := s.Put(ctx, d, q.Now()); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var mu sync.Mutex
	records, indexes := map[string]int{}, map[string]int{}
	err = rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		for _, c := range []struct {
			match string
			into  map[string]int
		}{{ns + ":schedule:*", records}, {ns + ":schedules:*", indexes}} {
			iter := m.Scan(ctx, 0, c.match, 1000).Iterator()
			k := 0
			for iter.Next(ctx) {
				k++
			}
			if err := iter.Err(); err != nil {
				return err
			}
			mu.Lock()
			c.into[m.Options().Addr] += k
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, k := range records {
		total += k
	}
	if total != n {
		t.Fatalf("%d schedule records over the masters %v; want %d", total, records, n)
	}
	if len(records) != 3 {
		t.Fatalf("masters %v; want the three", records)
	}
	for addr, k := range records {
		if k < n/10 || k > n*6/10 {
			t.Errorf("master %s holds %d of %d schedule records (%v); want them spread", addr, k, n, records)
		}
		if indexes[addr] == 0 {
			t.Errorf("master %s holds no schedules index (%v); want the indexes spread too", addr, indexes)
		}
	}
}
