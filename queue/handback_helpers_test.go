package queue_test

import (
	"context"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
)

// canceledVerdict is the end a test gives a handed-back job that was asked
// to cancel: a canceled record of what the job was, as the worker engine
// builds one.
func canceledVerdict(e queue.Expired) queue.Verdict {
	rec, err := results.Encode(results.Record{ID: e.ID, Name: e.Name, Priority: string(e.Priority), Canceled: true,
		Error: "canceled before it ran", FinishedAt: time.Now().UnixMilli()})
	if err != nil {
		panic(err)
	}
	return queue.Verdict{Record: rec, TTL: time.Hour}
}

// handBack hands back the jobs of lost and returns how many went back.
func handBack(ctx context.Context, q *queue.Queue, lost *queue.LostFetch) (int, error) {
	out, err := q.Jobs.HandBack(ctx, lost, time.Now(), canceledVerdict)
	return out.Back, err
}
