package queue

import "context"

// ResealRaw runs reseal.lua on one job of route with the old and new stored
// bytes given: kind "p" for a light job's whole payload, "h" for a job
// hash's envelope. For tests of its compare-and-set; it returns how many
// were resealed and how many left alone.
func (q *Queue) ResealRaw(ctx context.Context, route, kind, id string, old, new []byte) (done, left int, err error) {
	k := q.Keys(route)
	return q.resealBatch(ctx, k, []resealEntry{{kind: kind, id: id, key: k.Job(id), old: old, new: new}})
}

// StoredEnvelope is job id's stored envelope on route and what reseal.lua
// compares: "p" and its whole payload for a light job, "h" and the envelope
// for a job hash; "" when the job has neither.
func (q *Queue) StoredEnvelope(ctx context.Context, route, id string) (env []byte, kind string, old []byte) {
	k := q.Keys(route)
	if p, err := q.rdb.HGet(ctx, k.Payloads(), id).Result(); err == nil {
		pl, _ := splitPayload(p)
		return []byte(pl.envelope), "p", []byte(p)
	}
	f, _ := q.rdb.HGetAll(ctx, k.Job(id)).Result()
	if raw, ok := storedEnvelope(f); ok {
		return raw, "h", raw
	}
	return nil, "", nil
}
