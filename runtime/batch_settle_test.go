package runtime_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
)

// settledTask is a batch task whose batches end half completed, half failed.
var settledTask = runtime.NewTask[Ev, int]("t_batch_settle", runtime.Route("batchs"), runtime.MaxRetries(3))

// batchScriptCalls reads how many scripts the server has run.
func batchScriptCalls(t *testing.T, c *runtime.Client) int64 {
	t.Helper()
	info, err := c.Redis().Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok || (name != "evalsha" && name != "eval") {
			continue
		}
		calls, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		n += calls
	}
	return n
}

// The outcomes of a batch — completions with their records, failures
// retried — are recorded in one Redis call, not one per job: from the
// batch's call to the last of its jobs' ends the worker runs at most the
// one script that settles them, the fetches its freed slots make and its
// other calls meanwhile.
func TestBatch_ABatchsOutcomesAreRecordedInOneRoundTrip(t *testing.T) {
	c := connect(t, redistest.Start(t).URL())
	ctx := ctxT(t)
	task := settledTask.With(c)
	var mu sync.Mutex
	var ends []bananastype.JobEnd
	allEnded := make(chan struct{})
	var before int64
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"batchs"}, Concurrency: 40, Backoff: func(int) time.Duration { return time.Hour },
		OnJobEnd: func(e bananastype.JobEnd) {
			mu.Lock()
			defer mu.Unlock()
			if ends = append(ends, e); len(ends) == 40 {
				close(allEnded)
			}
		}}))
	runtime.HandleBatch(w, task, runtime.Batch{Size: 40, Linger: time.Minute}, func(ctx context.Context, evs []Ev) ([]int, []error, error) {
		before = batchScriptCalls(t, c)
		out, errs := make([]int, len(evs)), make([]error, len(evs))
		for i, e := range evs {
			out[i] = e.N
			if e.N%2 == 0 {
				errs[i] = errors.New("even")
			}
		}
		return out, errs, nil
	})
	ids := enqueueEvs(t, ctx, task, 40, nil)
	startWorker(t, w)
	select {
	case <-allEnded:
	case <-ctx.Done():
		t.Fatal("the batch's 40 ends were not all told")
	}
	calls := batchScriptCalls(t, c) - before
	mu.Lock()
	for _, e := range ends {
		if want := map[bool]queue.Ending{false: queue.EndCompleted, true: queue.EndRetrying}[e.Attempt == 1 && strings.Contains(e.Error, "even")]; e.Ending != want {
			t.Errorf("job %s ended %v (%q), want %v", e.ID, e.Ending, e.Error, want)
		}
	}
	mu.Unlock()
	for i, id := range ids {
		if want := map[bool]runtime.Status{false: runtime.StatusCompleted, true: runtime.StatusScheduled}[i%2 == 0]; jobStatus(t, c, id) != want {
			t.Errorf("job %d is %s, want %s", i, jobStatus(t, c, id), want)
		}
	}
	// One settle, up to two fetches in flight for the freed slots, and
	// room for the worker's other calls meanwhile (the promoter woken by
	// the retries' announcements, renewals, heartbeat); a call per job
	// would be 20 failures and at least one ack, and those others.
	if calls > 10 {
		t.Fatalf("recording a batch of 40 jobs took %d script calls, want at most 10 (one for the batch, two fetches, the worker's other calls)", calls)
	}
}
