package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
)

// fakeQueue hands out one job, then none, and answers its ack or failure
// as told: what the engine tells of a job's end must follow what its write
// to Redis did, which only a fake can make fail on cue.
type fakeQueue struct {
	mu      sync.Mutex
	job     *queue.Dispatch // fetched once
	ackOK   bool
	ackErr  error
	failOut queue.Ending
	failErr error
	writes  int // acks and failures answered
	// asked is a job of a lost fetch asked to cancel: HandBack ends it
	// canceled with the verdict the engine gives it.
	asked   *queue.Expired
	verdict queue.Verdict
}

func (q *fakeQueue) Now() time.Time   { return time.Now() }
func (q *fakeQueue) KeepsEnded() bool { return false }
func (q *fakeQueue) Fetch(context.Context, string, []queue.Priority, int, time.Time, time.Time) ([]*queue.Dispatch, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.job == nil {
		return nil, nil
	}
	d := q.job
	q.job = nil
	return []*queue.Dispatch{d}, nil
}
func (q *fakeQueue) FetchTypes(ctx context.Context, route string, p []queue.Priority, _ []string, n int, until, now time.Time) ([]*queue.Dispatch, error) {
	return q.Fetch(ctx, route, p, n, until, now)
}
func (q *fakeQueue) FetchOrWait(ctx context.Context, route string, p []queue.Priority, n int, until, now time.Time, _ queue.Waiter) ([]*queue.Dispatch, error) {
	return q.Fetch(ctx, route, p, n, until, now)
}
func (q *fakeQueue) WakeWaiters(context.Context, string, int) (int, error) { return 0, nil }
func (q *fakeQueue) StopWaiting(context.Context, []string, string) error   { return nil }
func (q *fakeQueue) Keys(route string) queue.Keys                          { return queue.RouteKeys("fake", route) }
func (q *fakeQueue) HandBack(_ context.Context, _ *queue.LostFetch, _ time.Time, canceled func(queue.Expired) queue.Verdict) (queue.LostHandBack, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.asked == nil {
		return queue.LostHandBack{}, nil
	}
	q.verdict = canceled(*q.asked)
	out := queue.LostHandBack{Back: 1, Canceled: []queue.CanceledJob{{Expired: *q.asked, Record: q.verdict.Record}}}
	q.asked = nil
	return out, nil
}
func (q *fakeQueue) Renew(_ context.Context, _ string, running []*queue.Dispatch, _ time.Time) ([]*queue.Dispatch, error) {
	return nil, nil
}
func (q *fakeQueue) CancelRequests(context.Context, string, []string) ([]string, error) {
	return nil, nil
}
func (q *fakeQueue) AckAsync(_ *queue.Dispatch, _ []byte, _ time.Duration, done func(bool, error)) {
	q.mu.Lock()
	ok, err := q.ackOK, q.ackErr
	q.writes++
	q.mu.Unlock()
	go done(ok, err) // as the committer does, on a goroutine of its own
}
func (q *fakeQueue) Fail(context.Context, *queue.Dispatch, queue.Failure, time.Time) (queue.Ending, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.writes++
	return q.failOut, q.failErr
}
func (q *fakeQueue) FinishCanceled(context.Context, *queue.Dispatch, []byte, time.Duration) (bool, error) {
	return true, nil
}
func (q *fakeQueue) Requeue(context.Context, *queue.Dispatch, []byte, time.Duration, time.Time) (queue.Ending, error) {
	return queue.EndHandedBack, nil
}
func (q *fakeQueue) Reap(context.Context, string, time.Time, func(queue.Expired) queue.Verdict) (map[string]queue.Ending, error) {
	return nil, nil
}
func (q *fakeQueue) Purge(context.Context, string, time.Time) (int, error)      { return 0, nil }
func (q *fakeQueue) SweepFlows(context.Context, string, time.Time) (int, error) { return 0, nil }
func (q *fakeQueue) PruneRoutes(context.Context, map[string]bool, time.Time) ([]string, error) {
	return nil, nil
}
func (q *fakeQueue) Beat(context.Context, string, []byte, time.Time, time.Duration) error { return nil }
func (q *fakeQueue) EndBeats(context.Context, string) error                               { return nil }
func (q *fakeQueue) WriteProgress(context.Context, []queue.ProgressWrite) ([]queue.ProgressWrite, error) {
	return nil, nil
}

func (q *fakeQueue) answered() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.writes
}

// fakeMetrics measures nothing: the engine's ends are its sinks' to count.
type fakeMetrics struct{}

func (m *fakeMetrics) For(string, string, string) RunMetrics { return m }
func (m *fakeMetrics) Overran(string)                        {}
func (m *fakeMetrics) Ran(time.Duration)                     {}
func (m *fakeMetrics) Waited(time.Duration)                  {}

type sinkFunc func(bananastype.JobEnd)

func (f sinkFunc) JobEnded(e bananastype.JobEnd) { f(e) }

// runOne runs an engine over q until the job q holds has been run and its
// outcome answered and settled, and returns the ends it told.
func runOne(t *testing.T, q *fakeQueue, o Outcome) []bananastype.JobEnd {
	t.Helper()
	var mu sync.Mutex
	var ends []bananastype.JobEnd
	m := &fakeMetrics{}
	e := New(Config{
		Queue: q, Metrics: m, Logger: slog.New(slog.DiscardHandler), ID: "w1",
		Sinks:  []JobEndSink{sinkFunc(func(e bananastype.JobEnd) { mu.Lock(); ends = append(ends, e); mu.Unlock() })},
		Routes: []string{"r"}, Priorities: []queue.Priority{queue.Normal}, Tasks: []string{"t"},
		FetchJobs: true, Concurrency: 1, Lease: time.Minute, ShutdownTimeout: time.Second, JobTimeout: time.Minute,
		ResultTTL: time.Hour, FailureTTL: time.Hour, SafetyPoll: 5 * time.Millisecond,
		RetryDelay: func(queue.Envelope, int) time.Duration { return time.Second },
		Exec:       func(context.Context, *queue.Dispatch) Outcome { return o },
		JobKey:     struct{}{}, JobValue: func(*queue.Dispatch) any { return nil },
		State: func(int) []byte { return nil },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for q.answered() == 0 || e.InFlight() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the job's outcome was not written and settled within 10s")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	return ends
}

func job() *queue.Dispatch {
	return &queue.Dispatch{ID: "j1", Route: "r", Name: "t", Priority: queue.Normal, Attempts: 1, MaxRetries: 3}
}

// A failure recorded as a retry is told once, after the write: its attempt,
// error and retry time.
func TestEnds_AFailureRecordedAsARetryIsToldOnce(t *testing.T) {
	ends := runOne(t, &fakeQueue{job: job(), failOut: queue.EndRetrying}, Outcome{Failed: true, Message: "boom"})
	if len(ends) != 1 {
		t.Fatalf("ends %+v; want one", ends)
	}
	e := ends[0]
	if e.Ending != queue.EndRetrying || e.ID != "j1" || e.Attempt != 2 || e.Error != "boom" || e.Worker != "w1" || e.RetryAt.IsZero() || e.Record != nil {
		t.Fatalf("end %+v: want j1 retrying after attempt 2 with its error and retry time, no record", e)
	}
}

// A failure that was the job's last is told dead, with the record stored.
func TestEnds_AFailureRecordedAsDeadIsToldWithItsRecord(t *testing.T) {
	ends := runOne(t, &fakeQueue{job: job(), failOut: queue.EndDead}, Outcome{Failed: true, Message: "boom", Final: true})
	if len(ends) != 1 || ends[0].Ending != queue.EndDead || len(ends[0].Record) == 0 || !ends[0].RetryAt.IsZero() {
		t.Fatalf("ends %+v; want one, dead, with its record and no retry time", ends)
	}
}

// A failure whose write failed, or that changed nothing (its lease was
// lost), is not told: the reaper that records the lost lease as a failed
// attempt tells that end (and the metrics count it once, there).
func TestEnds_AFailureNotRecordedIsNotTold(t *testing.T) {
	for name, q := range map[string]*fakeQueue{
		"write failed": {job: job(), failErr: errors.New("redis down")},
		"lease lost":   {job: job(), failOut: queue.EndStale},
	} {
		t.Run(name, func(t *testing.T) {
			if ends := runOne(t, q, Outcome{Failed: true, Message: "boom"}); len(ends) != 0 {
				t.Fatalf("ends %+v; want none told", ends)
			}
		})
	}
}

// A success is told completed with its result and record once the ack
// landed; an ack that failed or changed nothing is not told.
func TestEnds_ASuccessIsToldOnlyIfItsAckLanded(t *testing.T) {
	ends := runOne(t, &fakeQueue{job: job(), ackOK: true}, Outcome{Result: []byte("r")})
	if len(ends) != 1 || ends[0].Ending != queue.EndCompleted || string(ends[0].Result) != "r" || len(ends[0].Record) == 0 {
		t.Fatalf("ends %+v; want one, completed, with its result and record", ends)
	}
	for name, q := range map[string]*fakeQueue{
		"ack failed": {job: job(), ackErr: errors.New("redis down")},
		"lease lost": {job: job(), ackOK: false},
	} {
		t.Run(name, func(t *testing.T) {
			if ends := runOne(t, q, Outcome{Result: []byte("r")}); len(ends) != 0 {
				t.Fatalf("ends %+v; want none", ends)
			}
		})
	}
}

// A job of a lost fetch that was asked to cancel meanwhile ends canceled on
// its hand-back with the engine's record and the worker's failure TTL, and
// that end is told once, like every other.
func TestHandBack_AJobAskedToCancelIsToldCanceledWithTheEnginesRecord(t *testing.T) {
	e := queue.Expired{ID: "j1.r", Name: "t", Priority: queue.High, Attempts: 1, MaxRetries: 3}
	q := &fakeQueue{asked: &e}
	var ends []bananastype.JobEnd
	cfg := &Config{ID: "w1", FailureTTL: 3 * time.Hour, Sinks: []JobEndSink{sinkFunc(func(end bananastype.JobEnd) { ends = append(ends, end) })}}
	h := &handBacks{q: q, cfg: cfg, log: slog.New(slog.DiscardHandler), kick: make(chan struct{}, 1)}
	h.add(&queue.LostFetch{Route: "r", Token: "tok"})
	for try := 1; try <= 2; try++ { // the second finds nothing to do
		if !h.try(context.Background()) {
			t.Fatalf("try %d left hand-backs pending; want none", try)
		}
	}
	if len(ends) != 1 {
		t.Fatalf("ends told = %+v; want one", ends)
	}
	end := ends[0]
	if end.Ending != queue.EndCanceled || end.ID != e.ID || end.Route != "r" || end.Priority != queue.High || end.Error != canceledBeforeRun || end.Worker != "w1" || end.Attempt != 2 {
		t.Fatalf("end = %+v; want job %s canceled before it ran, on route r, by w1, in attempt 2 (the run the fetch leased)", end, e.ID)
	}
	rec, err := results.Decode(q.verdict.Record)
	if err != nil || !rec.Canceled || rec.ID != e.ID || rec.Priority != "high" || rec.Attempts != 2 || string(end.Record) != string(q.verdict.Record) {
		t.Fatalf("record %+v, %v; want the canceled record of attempt 2 told and stored", rec, err)
	}
	if q.verdict.TTL != 3*time.Hour {
		t.Fatalf("record ttl = %s; want the worker's failure TTL (the envelope sets none)", q.verdict.TTL)
	}
}
