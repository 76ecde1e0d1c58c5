package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// A replay keeps the life it ends for the job's timeline: the job looked up
// (and the dispatch a worker fetches, whose result record carries them on)
// holds each earlier life with its runs, failure times, end and error, its
// runs numbered after the lives before it.
func TestReplay_KeepsTheEarlierLivesOfTheJob(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		id := deadJob(t, q, now)
		if err := q.Ops.Replay(ctx, id); err != nil {
			t.Fatal(err)
		}
		s, err := q.Jobs.Lookup(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != queue.StatusPending || s.Attempts != 0 || len(s.Earlier) != 1 {
			t.Fatalf("after a replay: status %s, attempts %d, earlier %q; want pending, 0 and the life that ended", s.Status, s.Attempts, s.Earlier)
		}
		l, ok := queue.ParseEarlierLife(s.Earlier[0])
		if !ok || l.FirstRun != 1 || l.Attempts != 1 || len(l.FailedAt) != 1 || l.Error != "boom" || l.Died.IsZero() || l.Replayed.IsZero() {
			t.Fatalf("earlier life %q = %+v, %v; want run 1 failed with boom, its death and its replay", s.Earlier[0], l, ok)
		}

		// It dies again after two failed runs, and is replayed again.
		ds := fetchAll(t, q, 1, now, now.Add(time.Minute))
		if got := len(ds[0].Earlier); got != 1 {
			t.Fatalf("the fetched dispatch carries %d earlier lives; want 1", got)
		}
		if out, err := q.Jobs.Fail(ctx, ds[0], queue.Failure{Message: "again", RetryAt: now, Record: []byte("rec"), TTL: time.Minute}, now); err != nil || out != queue.EndRetrying {
			t.Fatalf("fail = %v, %v; want a retry", out, err)
		}
		if _, err := q.Jobs.Promote(ctx, "r", now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		ds = fetchAll(t, q, 1, now, now.Add(time.Minute))
		if out, err := q.Jobs.Fail(ctx, ds[0], queue.Failure{Message: "for good", Final: true, Record: []byte("rec"), TTL: time.Minute}, now); err != nil || out != queue.EndDead {
			t.Fatalf("fail = %v, %v; want dead", out, err)
		}
		if err := q.Ops.Replay(ctx, id); err != nil {
			t.Fatal(err)
		}
		// Run twice, the second replay finds the job out of the
		// dead-letter queue and keeps nothing more.
		if err := q.Ops.Replay(ctx, id); err == nil {
			t.Fatal("a second replay of the same death succeeded")
		}
		if s, err = q.Jobs.Lookup(ctx, id); err != nil || len(s.Earlier) != 2 {
			t.Fatalf("after the second replay: %v, earlier %q; want two lives", err, s.Earlier)
		}
		l, ok = queue.ParseEarlierLife(s.Earlier[1])
		if !ok || l.FirstRun != 2 || l.Attempts != 2 || len(l.FailedAt) != 2 || l.Error != "for good" {
			t.Fatalf("second life %q = %+v, %v; want runs 2 and 3, failed for good", s.Earlier[1], l, ok)
		}
	})
}

// An earlier life reads back as it was written, and a field that is not
// one (written by hand, cut short) is refused, not misread.
func TestEarlierLife_ReadsBackAndRefusesGarbage(t *testing.T) {
	at := time.UnixMilli(1763942400000)
	l := queue.EarlierLife{FirstRun: 3, Attempts: 2, FailedAt: []time.Time{at, at.Add(time.Second)}, Started: at, Died: at.Add(time.Second),
		Replayed: at.Add(time.Minute), Error: "boom\nstack line"}
	got, ok := queue.ParseEarlierLife(l.String())
	if !ok || got.String() != l.String() || got.Error != l.Error || !got.Replayed.Equal(l.Replayed) {
		t.Fatalf("ParseEarlierLife(%q) = %+v, %v; want %+v", l.String(), got, ok, l)
	}
	for _, bad := range []string{"", "1 2 3", "1 2 0 0 0 x,1\nerr", "1 -2 0 0 0 -\nerr", "a b c d e f", "1 1 0 0 0 5,\n"} {
		if l, ok := queue.ParseEarlierLife(bad); ok {
			t.Errorf("ParseEarlierLife(%q) = %+v; want it refused", bad, l)
		}
	}
}
