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
