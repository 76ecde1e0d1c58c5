package scheduler

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The layout schedules had before their buckets: one index of every
// schedule, ns:schedules, and each record hash-tagged by its own id.
func (s *Schedules) legacyIndexKey() string { return s.Queue.Namespace() + ":schedules" }
func (s *Schedules) legacyKey(id string) string {
	return s.Queue.Namespace() + ":schedule:{" + id + "}"
}

// migratePage is how many old records Migrate moves per round trip of reads.
const migratePage = 500

// Migrate moves the schedules recorded under the single index that
// schedules had before their buckets into their buckets, and returns how
// many it moved. Each record is read in its old slot, taken in by its
// bucket (sched_adopt.lua: kept as it is when the bucket holds it already)
// and then removed from the old index (sched_forget.lua: unless it changed
// since it was read), so it is harmless to run twice or from several
// processes at once, and a process that dies part-way leaves every record
// in one place or both (the next run finishes it). A runner migrates when it
// starts (ScheduleRunner.Run).
func (s *Schedules) Migrate(ctx context.Context) (int, error) {
	rdb := s.Queue.Client()
	moved := 0
	var skip int64 // old entries left (changed while read), not read again this run
	for {
		ids, err := rdb.ZRange(ctx, s.legacyIndexKey(), skip, skip+migratePage-1).Result()
		if err != nil {
			return moved, fmt.Errorf("read the old schedules index: %w", err)
		}
		if len(ids) == 0 {
			return moved, nil
		}
		pipe := rdb.Pipeline()
		cmds := make([]*redis.MapStringStringCmd, len(ids))
		for i, id := range ids {
			cmds[i] = pipe.HGetAll(ctx, s.legacyKey(id))
		}
		_, _ = pipe.Exec(ctx) // each read's error is its own, below
		for i, id := range ids {
			m, err := cmds[i].Result()
			if err != nil {
				return moved, fmt.Errorf("read the old record of schedule %s: %w", id, err)
			}
			if len(m) > 0 {
				if err := CheckScheduleID(id); err != nil {
					return moved, fmt.Errorf("old schedule record %q: %w", id, err)
				}
				args := make([]any, 0, 2+2*len(m))
				args = append(args, ms(s.Queue.Now()), id)
				for f, v := range m {
					args = append(args, f, v)
				}
				// Retry-safe: a second run finds the record in its bucket.
				n, err := lua().adopt.Run(ctx, rdb, []string{s.Key(id), s.indexOf(id)}, args...).Int()
				if err != nil {
					return moved, fmt.Errorf("move schedule %s into its bucket: %w", id, err)
				}
				moved += n
			}
			// Retry-safe: a second run finds nothing to remove. The old index
			// is in another slot than the record (on a cluster), so its entry
			// goes after, on its own: a process that dies in between leaves
			// an entry without a record, which the next run drops.
			gone, err := lua().forget.Run(ctx, rdb, []string{s.legacyKey(id)}, m["updated"], m["next"]).Int()
			if err != nil {
				return moved, fmt.Errorf("remove the old record of schedule %s: %w", id, err)
			}
			if gone == 0 {
				skip++
				continue
			}
			if err := rdb.ZRem(ctx, s.legacyIndexKey(), id).Err(); err != nil {
				return moved, fmt.Errorf("remove schedule %s from the old index: %w", id, err)
			}
		}
	}
}
