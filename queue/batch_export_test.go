package queue

import (
	"context"
	"time"
)

// ResendBatchFetch runs FetchBatch's script again under token, as go-redis
// resends a command whose reply was lost.
func (js Jobs) ResendBatchFetch(ctx context.Context, route string, priorities []Priority, task string, per, n int, token string, now time.Time) ([]*Dispatch, error) {
	return js.fetchBatch(ctx, route, js.fetchKeys(route, priorities), priorities, task, per, n, token, now.Add(time.Minute), now)
}

// AckWithBuckets runs ack.lua for a completion of d, with the stats series
// bucket pairs given in place of those ackCall sums: a guard's test.
func (js Jobs) AckWithBuckets(ctx context.Context, d *Dispatch, buckets ...any) error {
	keys, args := js.ackCall(d.Route, []ackReq{{d: d, record: []byte("record"), ttl: time.Hour, finished: js.q.Now()}})
	return js.q.s.ack.Run(ctx, js.q.rdb, keys, withBuckets(args, 3, buckets)...).Err()
}

// SettleBatchWithBuckets is AckWithBuckets for batch_ack.lua, d's run failed.
func (js Jobs) SettleBatchWithBuckets(ctx context.Context, d *Dispatch, buckets ...any) error {
	now := js.q.Now()
	f := &Failure{Message: "boom", RetryAt: now.Add(time.Hour), Record: []byte("record"), TTL: time.Hour}
	keys, args := js.batchAckCall(d.Route, []BatchEnd{{D: d, Failure: f, Finished: now}}, now)
	return batchAck.Run(ctx, js.q.rdb, keys, withBuckets(args, 4, buckets)...).Err()
}

// withBuckets is args with the bucket pairs after their count at index at
// replaced by buckets.
func withBuckets(args []any, at int, buckets []any) []any {
	n := 0
	switch v := args[at].(type) {
	case int:
		n = v
	case int64:
		n = int(v)
	}
	out := append(append([]any{}, args[:at]...), len(buckets)/2)
	out = append(out, buckets...)
	return append(out, args[at+1+2*n:]...)
}
