package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// Batch is a task whose jobs its handler takes many at once
// (runtime.HandleBatch). The engine runs each of its jobs as any other — a
// slot, a lease, a timeout, an outcome recorded on its own — and does two
// things more for it: it fetches the jobs of one key together (FetchBatch),
// so that the batches the runtime gathers from them are of one key and
// full, and it lets each job's timeout run Linger longer, the longest the
// job may wait in a batch that is filling before its handler is called.
type Batch struct {
	Task   string
	Route  string // the task's route (its shards are fetched alike)
	Size   int
	Linger time.Duration
	// Keyed: the task's jobs wait in flows (key=, limits), which
	// FetchBatch takes one key at a time; the jobs of a task without flows
	// are in the ready lists, which any fetch takes in order.
	Keyed bool
}

// batchQueue is the part of the Queue a worker with batch tasks uses.
type batchQueue interface {
	FetchBatch(ctx context.Context, route string, priorities []queue.Priority, task string, per, n int, leaseUntil, now time.Time) ([]*queue.Dispatch, error)
}

func (r redisQueue) FetchBatch(ctx context.Context, route string, priorities []queue.Priority, task string, per, n int, leaseUntil, now time.Time) ([]*queue.Dispatch, error) {
	return r.q.Jobs.FetchBatch(ctx, route, priorities, task, per, n, leaseUntil, now)
}

// lingerOf is how long a job of task may wait for its batch to fill: 0 for
// a task that is not run in batches.
func (c *Config) lingerOf(task string) time.Duration {
	for _, b := range c.Batches {
		if b.Task == task {
			return b.Linger
		}
	}
	return 0
}

// fetchBatches takes, before the route's ordinary fetch, up to n jobs of
// the keyed batch tasks of route, each key's in one piece of up to its
// batch size, and starts them (their slots were reserved by Run). It
// returns how many it started. A worker that takes only some tasks fetches
// only theirs.
func (f *fetcher) fetchBatches(ctx context.Context, route string, n int) (int, error) {
	bq, ok := f.cfg.Queue.(batchQueue)
	if !ok {
		return 0, nil
	}
	got := 0
	for _, b := range f.cfg.Batches {
		if got >= n {
			break
		}
		if !b.Keyed || queue.ShardBase(route) != b.Route ||
			(len(f.cfg.JobTypes) > 0 && !slices.Contains(f.cfg.JobTypes, b.Task)) {
			continue
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
		now := f.cfg.Queue.Now()
		ds, err := bq.FetchBatch(rctx, route, f.cfg.Priorities, b.Task, b.Size, n-got, now.Add(f.cfg.Lease), now)
		cancel()
		f.exec.startAll(ds)
		got += len(ds)
		var lost *queue.LostFetch
		if errors.As(err, &lost) {
			f.handBacks.add(lost)
		}
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

// batchSettler is the part of the Queue that records a batch's outcomes in
// one call. A Queue without it records each run of a batch on its own.
type batchSettler interface {
	SettleBatch(ctx context.Context, ends []queue.BatchEnd, now time.Time) ([]queue.Ending, error)
}

func (r redisQueue) SettleBatch(ctx context.Context, ends []queue.BatchEnd, now time.Time) ([]queue.Ending, error) {
	return r.q.Jobs.SettleBatch(ctx, ends, now)
}

// Together gathers the outcomes of the runs of one batch (a batch
// handler's call on n jobs), which the engine records in one Redis call
// once each of the n runs has returned from Exec with it in its Outcome.
// A run whose outcome is not the batch's to record (it timed out or was
// canceled while the batch ran, it was handed back at shutdown) leaves the
// batch instead; the others are recorded without waiting for it. Runs
// still out togetherWait after the first returned (a middleware that holds
// a run past its handler) are not waited for: those that joined are
// recorded then, and each late one on its own.
type Together struct {
	mu     sync.Mutex
	left   int // runs of the batch not yet returned
	joined []joined
	timer  *time.Timer // armed by the first return
	late   bool        // togetherWait passed: a run records its own outcome
}

// togetherWait bounds how long a batch's record waits for its last runs.
const togetherWait = time.Second

// joined is one run's outcome, waiting for its batch's record.
type joined struct {
	r       *run
	end     queue.BatchEnd
	result  []byte // a success's result, for its end
	message string // a failure's message as the handler gave it (end.Failure holds it as stored)
}

// NewTogether returns the Together of a batch of n runs.
func NewTogether(n int) *Together { return &Together{left: n} }

// arrive counts a run of t back from Exec, joining it with j when join, and
// returns the outcomes x is to record now: the batch's when it was the
// last, or its own when it came late.
func (t *Together) arrive(x *executor, j joined, join bool) []joined {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.left--
	switch {
	case t.late && join:
		return []joined{j}
	case t.late:
		return nil
	case join:
		t.joined = append(t.joined, j)
	}
	if t.left > 0 {
		if t.timer == nil {
			t.timer = time.AfterFunc(togetherWait, func() { t.giveUp(x) })
		}
		return nil
	}
	if t.timer != nil {
		t.timer.Stop()
	}
	t.late = true // all returned: nothing more to wait for
	out := t.joined
	t.joined = nil
	return out
}

// giveUp records what joined t by togetherWait after its first return.
func (t *Together) giveUp(x *executor) {
	t.mu.Lock()
	if t.late {
		t.mu.Unlock()
		return
	}
	t.late = true
	js := t.joined
	t.joined = nil
	t.mu.Unlock()
	if len(js) > 0 {
		x.settle(js)
	}
}

// settles reports whether the engine records batches together: its Queue
// can, and o is a batch's.
func (x *executor) settles(o Outcome) bool {
	if o.Together == nil {
		return false
	}
	_, ok := x.cfg.Queue.(batchSettler)
	return ok
}

// leave counts a run of batch t back from Exec with an outcome recorded
// elsewhere (or dropped), recording the batch's when it was the last.
func (x *executor) leave(t *Together) {
	if js := t.arrive(x, joined{}, false); len(js) > 0 {
		x.settle(js)
	}
}

// together records r's outcome o with those of its batch: it joins the
// batch, and the last run of the batch to return records them all (settle).
// It reports whether r's end is still to come, as ack: settle ends r.
func (x *executor) together(r *run, o Outcome) (pending bool) {
	d := r.d
	if !r.recording.CompareAndSwap(false, true) {
		jobLog{x.cfg.Logger, d}.Info("bananas: job result dropped", "why", errHandedBack)
		x.leave(o.Together)
		return false
	}
	now := x.cfg.Queue.Now() // a retry's run-at is judged on Redis's clock
	j := joined{r: r, end: queue.BatchEnd{D: d, Finished: now}}
	if o.Failed {
		f := x.failure(d, o.Message, o.Final, o.Snooze, now)
		j.end.Failure, j.message = &f, o.Message
	} else {
		encoded, err := x.completion(d, o.Result, now)
		if err != nil {
			jobLog{x.cfg.Logger, d}.Warn("bananas: encode result record", "err", err)
			x.runs.untrack(r)
			x.leave(o.Together)
			return false
		}
		r.trail = o.Trail
		j.result, j.end.Record, j.end.TTL = o.Result, encoded, successTTL(d.Envelope.ResultTTL, x.cfg.ResultTTL)
	}
	if js := o.Together.arrive(x, j, true); len(js) > 0 {
		x.settle(js)
	}
	return true
}

// settle records the outcomes of a batch's runs in one call and tells and
// ends each run, as ack and fail do one by one.
func (x *executor) settle(js []joined) {
	ends := make([]queue.BatchEnd, len(js))
	for i, j := range js {
		ends[i] = j.end
	}
	now := x.cfg.Queue.Now()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	outs, err := x.cfg.Queue.(batchSettler).SettleBatch(ctx, ends, now)
	cancel()
	for i, j := range js {
		d, out := j.r.d, queue.EndStale
		if i < len(outs) {
			out = outs[i]
		}
		if f := j.end.Failure; f != nil {
			x.failed(d, j.message, *f, out, err, j.end.Finished)
		} else {
			log := jobLog{x.cfg.Logger, d}
			switch {
			case err != nil:
				log.Warn("bananas: ack's outcome unknown (the Redis call failed); if it did not land, the job runs again when its lease expires", "err", err)
			case out != queue.EndCompleted:
				log.Warn("bananas: job finished but no longer leased to this run (its lease was lost, or a resent ack completed it already); this result not written")
			default:
				end := x.cfg.completedEnd(d, j.result, j.end.Record, j.end.Finished)
				end.Trail = j.r.trail
				x.cfg.tell(end)
			}
		}
		x.runs.untrack(j.r)
		x.end(j.r)
	}
}
