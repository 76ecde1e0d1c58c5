package queue

import (
	"context"
	"fmt"
	"time"
)

// batchFetch is scripts/batch_fetch.lua (FetchBatch).
var batchFetch = newScript("batch_fetch")

// FetchBatch takes up to n waiting keyed jobs of task on route for a batch
// handler (runtime.HandleBatch): up to per jobs of each of the task's flows
// in one piece, flows in their ring's order, priorities strictly in the
// order given, each flow's own limits and the route's honoured as by Fetch.
// A flow cut short by n keeps its turn, so the next call goes on with its
// key. Each Dispatch's Flow names its flow. It takes only keyed jobs: a
// batch task without key= has its jobs in the ready lists, which Fetch
// takes. A call that finds nothing registers no waiter: the caller fetches
// with FetchOrWait next.
//
// When the call's outcome is unknown the error is a *LostFetch, as Fetch's.
func (js Jobs) FetchBatch(ctx context.Context, route string, priorities []Priority, task string, per, n int, leaseUntil, now time.Time) ([]*Dispatch, error) {
	keys := js.fetchKeys(route, priorities)
	if keys == nil || n < 1 || per < 1 {
		return nil, nil
	}
	return js.fetchBatch(ctx, route, keys, priorities, task, per, n, fetchToken(now), leaseUntil, now)
}

// fetchBatch is FetchBatch's call under token.
func (js Jobs) fetchBatch(ctx context.Context, route string, keys []string, priorities []Priority, task string, per, n int, token string, leaseUntil, now time.Time) ([]*Dispatch, error) {
	// Retry-safe: batch_fetch.lua answers a second run of one token with the
	// jobs the first leased.
	res, err := batchFetch.Run(ctx, js.q.rdb, keys, n, ms(leaseUntil), token, per, priorityDigits(priorities), ms(now), task).Result()
	if err != nil {
		return nil, lostOr(fmt.Errorf("batch fetch from route %s: %w", route, err), route, token, leaseUntil)
	}
	triples := strs(res)
	if len(triples) < 4 {
		return nil, nil
	}
	pairs := make([]string, 1, 1+2*(len(triples)-1)/3)
	pairs[0] = triples[0]
	flows := make(map[string]string, (len(triples)-1)/3)
	for i := 1; i+2 < len(triples); i += 3 {
		pairs = append(pairs, triples[i], triples[i+1])
		if triples[i] != "" {
			flows[triples[i]] = triples[i+2]
		}
	}
	ds, err := js.load(ctx, route, pairs, leaseUntil, now)
	for _, d := range ds {
		d.Flow = flows[d.ID]
	}
	return ds, err
}
