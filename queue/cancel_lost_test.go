package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
)

// The jobs of a fetch whose reply was lost go back to their list, but one
// asked to cancel meanwhile (it was leased: the request waits for its
// worker, which never heard of it) ends canceled: its record stored, in no
// list, its request gone. Handed back twice, nothing more changes.
func TestHandBack_AJobAskedToCancelEndsCanceledNotBackInItsList(t *testing.T) {
	t.Parallel()
	for _, lease := range []struct {
		name string
		of   func(*testing.T, *queue.Queue, int, time.Time, time.Time) []*queue.Dispatch
	}{{"light", leaseLight}, {"heavy", leaseHeavy}} {
		t.Run(lease.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, q *queue.Queue) {
				ctx := context.Background()
				now := time.Now()
				ds := lease.of(t, q, 2, now, now.Add(time.Minute))
				asked, other := ds[0], ds[1]
				k := q.Keys("r")
				if err := q.Client().SAdd(ctx, k.Cancels(), asked.ID).Err(); err != nil {
					t.Fatal(err)
				}
				lost := &queue.LostFetch{Route: "r", Token: asked.Token, Until: now.Add(time.Minute)}
				for run := 1; run <= 2; run++ {
					out, err := q.Jobs.HandBack(ctx, lost, time.Now(), canceledVerdict)
					if want := 2 - run; err != nil || out.Back != want {
						t.Fatalf("hand back #%d = %d, %v; want %d handed back (the other job, the first time)", run, out.Back, err, want)
					}
					if ended := len(out.Canceled); run == 1 && (ended != 1 || out.Canceled[0].ID != asked.ID || out.Canceled[0].Name != asked.Name) ||
						run == 2 && ended != 0 {
						t.Fatalf("hand back #%d says %+v ended canceled; want job %s the first time, none the second", run, out.Canceled, asked.ID)
					}
					wantPlace(t, q, "r", asked.ID, "")
					wantPlace(t, q, "r", other.ID, queue.Normal)
				}
				raw, err := q.Client().Get(ctx, k.Result(asked.ID)).Bytes()
				if err != nil {
					t.Fatalf("result of the job asked to cancel: %v", err)
				}
				rec, err := results.Decode(raw)
				if err != nil || !rec.Canceled || rec.OK || rec.Name != asked.Name {
					t.Fatalf("record %+v, %v; want a canceled record of task %s", rec, err, asked.Name)
				}
				if n, err := q.Client().SCard(ctx, k.Cancels()).Result(); err != nil || n != 0 {
					t.Fatalf("cancels set holds %d, %v; want the request gone", n, err)
				}
			})
		})
	}
}

// A hand-back whose reply is lost after the script ran (a timeout, a cut
// connection) ended its job asked to cancel, stored its record and removed
// its request: the retry, with the same lost fetch, reports that job ended
// canceled with the record stored, so that its end is told, and the next
// hand-back reports nothing.
func TestHandBack_ARetryAfterALostReplyReportsTheJobsTheFirstRunCanceled(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		ds := leaseLight(t, q, 2, now, now.Add(time.Minute))
		asked := ds[0]
		k := q.Keys("r")
		if err := q.Client().SAdd(ctx, k.Cancels(), asked.ID).Err(); err != nil {
			t.Fatal(err)
		}
		lost := &queue.LostFetch{Route: "r", Token: asked.Token, Until: now.Add(time.Minute)}
		lose := &loseReply{match: func(c redis.Cmder) bool { return c.Name() == "evalsha" || c.Name() == "eval" }}
		q.Client().AddHook(lose)
		lose.armed.Store(true)
		_, err := q.Jobs.HandBack(ctx, lost, now, canceledVerdict)
		lose.armed.Store(false)
		if !errors.Is(err, errReplyLost) {
			t.Fatalf("hand back with its reply lost = %v; want the lost reply's error", err)
		}
		stored, err := q.Client().Get(ctx, k.Result(asked.ID)).Bytes()
		if err != nil {
			t.Fatalf("the lost run stored no record: %v", err)
		}
		out, err := q.Jobs.HandBack(ctx, lost, now, func(e queue.Expired) queue.Verdict {
			t.Errorf("the retry built a new verdict for job %s; want the first run's record offered again", e.ID)
			return canceledVerdict(e)
		})
		if err != nil || out.Back != 0 || len(out.Canceled) != 1 || out.Canceled[0].ID != asked.ID ||
			out.Canceled[0].Name != asked.Name || string(out.Canceled[0].Record) != string(stored) {
			t.Fatalf("retry = %+v, %v; want job %s reported ended canceled with the stored record, nothing handed back", out, err, asked.ID)
		}
		if out, err := q.Jobs.HandBack(ctx, lost, now, canceledVerdict); err != nil || out.Back != 0 || len(out.Canceled) != 0 {
			t.Fatalf("hand back after the retry = %+v, %v; want nothing", out, err)
		}
	})
}

// A cancel asked as a run failed, before its worker acted on it, stands for
// that run only: the job's retry, leased under the same id, is not asked to
// stop (CancelRequests) and a hand-back at shutdown gives it back instead of
// ending it canceled.
func TestFail_ACancelAskedAsTheRunFailedDoesNotCancelTheRetry(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		first := leaseLight(t, q, 1, now, now.Add(time.Minute))[0]
		if out, err := q.Jobs.Cancel(ctx, first.ID, []byte("canceled"), time.Minute); out != queue.CancelRequested || err != nil {
			t.Fatalf("cancel of the running job = %v, %v; want it asked of its worker", out, err)
		}
		if out, err := q.Jobs.Fail(ctx, first, queue.Failure{Message: "boom", RetryAt: now, TTL: time.Minute}, now); out != queue.EndRetrying || err != nil {
			t.Fatalf("fail = %v, %v; want a retry", out, err)
		}
		if _, err := q.Jobs.Promote(ctx, "r", now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		retry := fetchAll(t, q, 1, now, now.Add(time.Minute))[0]
		if retry.ID != first.ID {
			t.Fatalf("fetched %s; want the retry of %s", retry.ID, first.ID)
		}
		if asked, err := q.Jobs.CancelRequests(ctx, "r", []string{retry.ID}); err != nil || len(asked) != 0 {
			t.Fatalf("cancel requests of the retry = %v, %v; want none (the request was the failed run's)", asked, err)
		}
		if out, err := q.Jobs.Requeue(ctx, retry, []byte("canceled"), time.Minute, now); out != queue.EndHandedBack || err != nil {
			t.Fatalf("hand back of the retry at shutdown = %v, %v; want it handed back, not canceled", out, err)
		}
	})
}
