package redisstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/bananas-go/bananas/queue"
)

// IDs is a page of the list of workflows whose record may still exist:
// n ids from the offset-th oldest. A workflow submitted or pruned while
// the pages are read may be missed or seen twice.
func (s *Store) IDs(ctx context.Context, offset, n int) ([]string, error) {
	ids, err := s.rdb.ZRange(ctx, queue.WorkflowList(s.ns), int64(offset), int64(offset+n-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("list workflows: %w", err)
	}
	return ids, nil
}

// Values reads the fields of workflow id's record that hold its user's
// values, as stored: x:k (a first step's args), o:k (a step's result) and
// sp:<signal id> (a kept signal's payload). None for a record gone.
func (s *Store) Values(ctx context.Context, id string) (map[string][]byte, error) {
	all, err := s.rdb.HGetAll(ctx, queue.WorkflowKey(s.ns, id)).Result()
	if err != nil && !isWrongType(err) {
		return nil, fmt.Errorf("read workflow %s: %w", id, err)
	}
	out := map[string][]byte{}
	for f, v := range all {
		if v != "" && (strings.HasPrefix(f, "x:") || strings.HasPrefix(f, "o:") || strings.HasPrefix(f, "sp:")) {
			out[f] = []byte(v)
		}
	}
	return out, nil
}

// SwapValues replaces fields of workflow id's record, all or none, only
// while each still holds the value read (queue.Queue.SwapFields): swapped
// is false when one changed meanwhile or the record is gone.
func (s *Store) SwapValues(ctx context.Context, id string, swaps []queue.FieldSwap) (bool, error) {
	return s.q.SwapFields(ctx, queue.WorkflowKey(s.ns, id), swaps...)
}
