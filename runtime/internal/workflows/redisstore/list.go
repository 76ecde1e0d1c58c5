package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

// WorkflowList is the zset of every workflow whose record may still exist:
// id -> when it was submitted (ms). wf_submit.lua adds to it (on a cluster,
// where the list lives on another node than the record, Workflows.Submit
// does, just before); Workflows.List and Workflows.PruneList drop the entries
// whose record is gone (expired: a day after a workflow completed, a week
// after it failed or was canceled), so it holds about as many entries as
// there are records.
func WorkflowList(ns string) string { return ns + ":workflows:all" }

// listGrace is how long an entry of the list may go without its record
// before it is dropped: on a cluster the entry is written just before the
// record.
const listGrace = time.Minute

// listBatch is how many entries of the list one read takes.
const listBatch = 100

// List pages through the workflows (queue.WorkflowList), newest first:
// up to limit of them that keep accepts (nil: all), from cursor ("" the
// newest; else a page's next), and the cursor of the next page ("" at the
// end). keep may change the summary it is given (the status it shows). A page reads at
// most 10 batches of the list, so a filter that few workflows pass returns
// a short page (even an empty one) with a next cursor. Entries whose record
// is gone are dropped from the list as they are met.
func (s *Store) List(ctx context.Context, cursor string, limit int, keep func(*record.Summary) (bool, error)) ([]record.Summary, string, error) {
	if limit < 1 {
		return nil, "", fmt.Errorf("limit %d: at least 1", limit)
	}
	top, after, err := readWorkflowCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	key := queue.WorkflowList(s.ns)
	max, off := "+inf", int64(0)
	if cursor != "" {
		max = strconv.FormatInt(top, 10)
	}
	var out []record.Summary
	last := ""
	for batch := 0; batch < 10; batch++ {
		zs, err := s.rdb.ZRevRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Max: max, Min: "-inf", Offset: off, Count: listBatch}).Result()
		if err != nil {
			return nil, "", fmt.Errorf("list workflows: %w", err)
		}
		var ids []string
		var created []int64
		for _, z := range zs {
			id, _ := z.Member.(string)
			ms := int64(z.Score)
			if cursor != "" && ms == top && id >= after {
				continue // on the page before
			}
			ids, created = append(ids, id), append(created, ms)
		}
		sums, err := s.summaries(ctx, ids, created)
		if err != nil {
			return nil, "", err
		}
		for i, s := range sums {
			last = workflowCursor(created[i], ids[i])
			if s == nil {
				continue
			}
			ok := true
			if keep != nil {
				if ok, err = keep(s); err != nil {
					return nil, "", err
				}
			}
			if ok {
				out = append(out, *s)
				if len(out) == limit {
					return out, last, nil
				}
			}
		}
		if len(zs) < listBatch {
			return out, "", nil
		}
		// The next batch starts after the last entry read: after the
		// entries of its score already read, when that score goes on.
		end := zs[len(zs)-1].Score
		if strconv.FormatInt(int64(end), 10) == max {
			off += int64(len(zs))
		} else {
			max, off = strconv.FormatInt(int64(end), 10), 0
			for _, z := range zs {
				if z.Score == end {
					off++
				}
			}
		}
	}
	return out, last, nil
}

// summaries reads the summaries of workflows ids, in two pipelined
// round trips (the records' own fields, then each one's final step's
// template and its failed step's label); nil for a record gone, whose entry
// is dropped once it is older than listGrace.
func (s *Store) summaries(ctx context.Context, ids []string, created []int64) ([]*record.Summary, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	heads := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		heads[i] = pipe.HMGet(ctx, queue.WorkflowKey(s.ns, id), "st", "n", "fin", "why", "c", "f", "left")
	}
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	out := make([]*record.Summary, len(ids))
	var gone []any
	old := s.q.Now().Add(-listGrace).UnixMilli()
	pipe = s.rdb.Pipeline()
	tails := make([]*redis.SliceCmd, len(ids))
	for i, h := range heads {
		v, err := h.Result()
		if err != nil && !isWrongType(err) {
			return nil, fmt.Errorf("list workflows: %w", err)
		}
		f := map[string]string{}
		for k, name := range []string{"st", "n", "fin", "why", "c", "f", "left"} {
			if k < len(v) {
				f[name], _ = v[k].(string)
			}
		}
		w, err := workflowHead(ids[i], f)
		if errors.Is(err, record.ErrNotFound) {
			if f["st"] == "" && created[i] < old {
				gone = append(gone, ids[i])
			}
			continue
		}
		sum := &record.Summary{ID: ids[i], Status: w.Status, Steps: len(w.Steps), CreatedAt: w.CreatedAt, EndedAt: w.EndedAt}
		sum.Left, _ = strconv.Atoi(f["left"])
		fin, why := strconv.Itoa(w.Final), "-"
		if w.Why >= 0 {
			why = strconv.Itoa(w.Why)
		}
		tails[i] = pipe.HMGet(ctx, queue.WorkflowKey(s.ns, ids[i]), "t:"+fin, "v:"+fin, "l:"+why)
		out[i] = sum
	}
	if len(gone) > 0 {
		pipe.ZRem(ctx, queue.WorkflowList(s.ns), gone...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
		return nil, fmt.Errorf("list workflows: %w", err)
	}
	for i, t := range tails {
		if t == nil {
			continue
		}
		v := t.Val()
		if len(v) == 3 {
			if tpl, ok := v[0].(string); ok && v[1] != "1" {
				out[i].Template = []byte(tpl)
			}
			out[i].FailedStep, _ = v[2].(string)
		}
	}
	return out, nil
}

// PruneList drops from the list the entries, submitted before
// before, whose record is gone, looking at n of them from the offset-th
// oldest; it returns how many of those it looked at it kept (their
// workflows live on: the next call's offset grows by as many) and whether
// it reached the end of those entries. Run twice, the second call finds
// nothing more to drop.
func (s *Store) PruneList(ctx context.Context, before time.Time, offset, n int) (kept int, end bool, err error) {
	key := queue.WorkflowList(s.ns)
	ids, err := s.rdb.ZRangeByScore(ctx, key, &redis.ZRangeBy{Min: "-inf", Max: "(" + strconv.FormatInt(before.UnixMilli(), 10), Offset: int64(offset), Count: int64(n)}).Result()
	if err != nil || len(ids) == 0 {
		return 0, true, err
	}
	pipe := s.rdb.Pipeline()
	exists := make([]*redis.IntCmd, len(ids))
	for i, id := range ids {
		exists[i] = pipe.Exists(ctx, queue.WorkflowKey(s.ns, id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, false, fmt.Errorf("prune the workflow list: %w", err)
	}
	var gone []any
	for i, e := range exists {
		if e.Val() == 0 {
			gone = append(gone, ids[i])
		}
	}
	if len(gone) > 0 {
		if err := s.rdb.ZRem(ctx, key, gone...).Err(); err != nil {
			return 0, false, fmt.Errorf("prune the workflow list: %w", err)
		}
	}
	return len(ids) - len(gone), len(ids) < n, nil
}

// workflowCursor is the cursor of a page that ends with workflow id,
// submitted at ms: "<ms>:<id>".
func workflowCursor(ms int64, id string) string { return strconv.FormatInt(ms, 10) + ":" + id }

func readWorkflowCursor(c string) (int64, string, error) {
	if c == "" {
		return 0, "", nil
	}
	ms, id, ok := strings.Cut(c, ":")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || n < 0 || record.CheckID(id) != nil {
		return 0, "", fmt.Errorf("%w %q: use the next cursor of a page of workflows", record.ErrBadCursor, c)
	}
	return n, id, nil
}
