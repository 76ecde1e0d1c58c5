package queue

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// AuditCap is how many entries the audit log keeps in Redis, the newest:
// enough for the recent past an operator looks into; the task history's
// audit table (HISTORY_URL) keeps them all.
const AuditCap = 10000

var auditScript = newScript("audit")

// AddAudit adds entry, the JSON of one audit entry holding its own unique
// id, to the audit log at when (unix microseconds), and trims the log to
// AuditCap. Sent twice, it is one entry.
func (q *Queue) AddAudit(ctx context.Context, when int64, entry []byte) error {
	return auditScript.Run(ctx, q.rdb, []string{AuditLog(q.ns)}, when, entry, AuditCap).Err()
}

// Audit reads up to limit entries of the audit log, newest first, those
// written before before (unix microseconds; 0: from the newest), with the
// time of each.
func (q *Queue) Audit(ctx context.Context, before int64, limit int) ([]redis.Z, error) {
	max := "+inf"
	if before > 0 {
		max = "(" + strconv.FormatInt(before, 10)
	}
	return q.rdb.ZRevRangeByScoreWithScores(ctx, AuditLog(q.ns), &redis.ZRangeBy{Min: "-inf", Max: max, Count: int64(limit)}).Result()
}
