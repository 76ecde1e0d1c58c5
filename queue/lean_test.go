package queue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// An ack with no TTL (queue.KeepNothing's jobs) completes the job and leaves
// nothing of it: no result key, no hash, no payload. Its end still reaches a
// subscriber of its channel and the ended list, and a kept ack of the same
// route beside it stores its record as usual.
func TestAck_KeepingNothingLeavesNoKeyButAnnouncesTheEnd(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		until := now.Add(time.Minute)
		q.Ended.Keep(true)
		ds := append(leaseLight(t, q, 2, now, until), leaseHeavy(t, q, 1, now, until)...)
		lean, kept := []*queue.Dispatch{ds[0], ds[2]}, ds[1]

		sub := q.Client().Subscribe(ctx, queue.ResultChannel(q.Namespace(), lean[0].ID))
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil { // the subscription confirmed
			t.Fatal(err)
		}
		for _, d := range lean {
			if ok, err := q.Jobs.Ack(ctx, d, []byte("lean "+d.ID), 0); !ok || err != nil {
				t.Fatalf("lean ack = %v, %v", ok, err)
			}
		}
		if ok, err := q.Jobs.Ack(ctx, kept, []byte("kept"), time.Minute); !ok || err != nil {
			t.Fatalf("kept ack = %v, %v", ok, err)
		}

		select {
		case m := <-sub.Channel():
			if m.Payload != "lean "+lean[0].ID {
				t.Fatalf("announced %q; want the lean job's record", m.Payload)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a subscriber of the lean job's channel heard nothing")
		}
		k := q.Keys("r")
		for _, key := range keysUnder(t, q) {
			for _, d := range lean {
				if strings.Contains(key, d.ID) {
					t.Errorf("key %s of the lean job %s left after its ack", key, d.ID)
				}
			}
		}
		if n, err := q.Client().HLen(ctx, k.Payloads()).Result(); err != nil || n != 0 {
			t.Fatalf("payloads = %d, %v; want none", n, err)
		}
		if got, err := q.Client().Get(ctx, k.Result(kept.ID)).Result(); err != nil || got != "kept" {
			t.Fatalf("the kept job's record = %q, %v", got, err)
		}
		if got := endedOf(t, q, "r"); len(got) != 3 || got[0] != "lean "+lean[0].ID || got[1] != "lean "+lean[1].ID || got[2] != "kept" {
			t.Fatalf("ended = %q; want both lean records and the kept one, for the task history", got)
		}
		if _, err := q.Jobs.Result(ctx, lean[0].ID); err == nil || !strings.Contains(err.Error(), queue.ErrNotFound.Error()) {
			t.Fatalf("result of a lean job after its ack: %v; want ErrNotFound", err)
		}
	})
}
