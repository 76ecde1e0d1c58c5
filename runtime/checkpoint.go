package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/checkpoint"
)

// CheckpointEvery is how often, at most, a running job's checkpoint is
// written to Redis: the last value said in each period, one write.
const CheckpointEvery = 250 * time.Millisecond

// CheckpointTTL is how long a job's checkpoint is kept after its last
// write when nothing removes it: as long as a dead job is kept
// (queue.DeadRetention), so that a replay of the dead job reads it too.
const CheckpointTTL = queue.DeadRetention

// Checkpoint saves v as the point the job whose handler received ctx has
// reached, for a later run of the same job to go on from
// (LastCheckpoint): the run after a crash (its worker killed, its lease
// lost), after a graceful shutdown handed the job back, and the retry after
// a failed run. Any job may checkpoint, a workflow step or not.
//
// Checkpoint keeps v (encoded now) in the worker's memory and returns
// without waiting for Redis: however often it is called, the job's
// checkpoint is written at most once per CheckpointEvery, with the last
// value said in the period. A run that fails (or is stopped by a
// shutdown) writes its last value before its end is recorded, so the
// retry reads it; a run that completes writes nothing more, since the
// checkpoint goes with it. Only the run that holds the job's lease
// writes: a run that lost its lease (reaped, its job started again
// elsewhere) changes nothing.
//
// The checkpoint is removed when the job completes or is canceled. A dead
// job's is kept for CheckpointTTL, so that a replay of it goes on from
// there too. An error: ctx is not a handler's, v does not encode, or it is
// over the payload limit.
func Checkpoint(ctx context.Context, v any) error {
	jv, ok := ctx.Value(jobKey{}).(jobValue)
	if !ok || jv.c == nil || jv.progress.token == "" {
		return errors.New("bananas: Checkpoint: ctx is not a handler's context (call it with the context the handler received, or one derived from it)")
	}
	b, err := encodeCheckpoint(v)
	if err != nil {
		return fmt.Errorf("bananas: Checkpoint: encode %T: %w", v, err)
	}
	if err := checkPayload("checkpoint of ", jv.job.Name, len(b), jv.c.maxPayload); err != nil {
		return fmt.Errorf("bananas: Checkpoint: %w", err)
	}
	r := checkpointRunOf(jv)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return errors.New("bananas: Checkpoint: the run has ended (called after its handler returned)")
	}
	r.latest, r.known, r.pending = b, true, true
	r.schedule()
	return nil
}

// LastCheckpoint returns the last checkpoint of the job whose handler
// received ctx, decoded as T: the value this run said last, or else the one
// an earlier run of the job saved. false when there is none (the job's
// first run, or no run checkpointed), when it does not decode as T, or when
// ctx is not a handler's. The first call of a run reads Redis once; a
// read that fails is tried three times in all, then reads as none.
func LastCheckpoint[T any](ctx context.Context) (T, bool) {
	var zero T
	jv, ok := ctx.Value(jobKey{}).(jobValue)
	if !ok || jv.c == nil || jv.progress.token == "" {
		return zero, false
	}
	r := checkpointRunOf(jv)
	r.mu.Lock()
	read := r.known || r.read
	r.mu.Unlock()
	if !read {
		b, found, err := r.readStored(ctx)
		r.mu.Lock()
		if err == nil {
			r.read = true
			if !r.known && found {
				r.latest, r.known = b, true
			}
		}
		r.mu.Unlock()
		if err != nil {
			r.log().Warn("bananas: LastCheckpoint: read the job's checkpoint", "job", r.id, "err", err)
		}
	}
	r.mu.Lock()
	b, known := r.latest, r.known
	r.mu.Unlock()
	if !known {
		return zero, false
	}
	var out T
	if err := decodeCheckpoint(b, &out); err != nil {
		r.log().Warn("bananas: LastCheckpoint: the job's checkpoint does not decode", "job", r.id, "type", fmt.Sprintf("%T", out), "err", err)
		return zero, false
	}
	return out, true
}

// checkpointRun is what one run of a job has said and written of its
// checkpoint. Runs that never call Checkpoint or LastCheckpoint have none.
type checkpointRun struct {
	st               checkpoint.Store
	c                *Client
	route, id, token string

	mu        sync.Mutex
	idle      sync.Cond // signalled when a write ends
	latest    []byte    // the job's latest checkpoint as this run knows it
	known     bool      // latest holds one: said by this run, or read
	read      bool      // Redis was read (LastCheckpoint)
	pending   bool      // latest is not written yet
	writing   bool      // a write is under way
	lost      bool      // the run lost its lease: nothing more is written
	ended     bool      // the handler returned
	lastWrite time.Time // when the last write started
	timer     *time.Timer
}

// checkpointRuns holds the runs of this process that checkpointed or read
// a checkpoint, by job id and lease token, until their handlers return.
var checkpointRuns sync.Map // checkpointRunKey -> *checkpointRun

type checkpointRunKey struct{ id, token string }

// checkpointedJobs holds, by job id, the shard route of each job of this
// process whose run ended knowing the job has a checkpoint, until the
// job's end is recorded: a job that completes or is canceled has it
// removed (dropCheckpoint).
var checkpointedJobs sync.Map // job id -> shard route

// checkpointWriteHook, when set (tests), is told of each write, by job id.
var checkpointWriteHook atomic.Pointer[func(job string)]

func checkpointRunOf(jv jobValue) *checkpointRun {
	k := checkpointRunKey{jv.job.ID, jv.progress.token}
	if r, ok := checkpointRuns.Load(k); ok {
		return r.(*checkpointRun)
	}
	r := &checkpointRun{st: checkpoint.New(jv.c.q), c: jv.c, route: jv.progress.route, id: jv.job.ID, token: jv.progress.token}
	r.idle.L = &r.mu
	got, _ := checkpointRuns.LoadOrStore(k, r)
	return got.(*checkpointRun)
}

func (r *checkpointRun) log() *slog.Logger { return slog.Default() }

// schedule has the pending value written at once when the last write is a
// period old, else when it will be. r.mu is held.
func (r *checkpointRun) schedule() {
	if r.timer != nil || r.writing || r.lost || r.ended {
		return // the timer, or the write under way, takes the value
	}
	wait := time.Until(r.lastWrite.Add(CheckpointEvery))
	r.timer = time.AfterFunc(max(wait, 0), r.flush)
}

// flush writes the pending value (a timer's).
func (r *checkpointRun) flush() {
	r.mu.Lock()
	r.timer = nil
	if !r.pending || r.ended || r.lost || r.writing {
		r.mu.Unlock()
		return
	}
	r.writeLocked(context.Background())
	if r.pending && !r.lost && !r.ended {
		r.schedule()
	}
	r.mu.Unlock()
}

// writeLocked writes the pending value, r.mu held and released during the
// write. A write that fails leaves the value pending (the next period
// tries again, or the run's end); one refused (the lease lost) stops the
// run's writes.
func (r *checkpointRun) writeLocked(ctx context.Context) {
	b, serr := r.c.Seal(queue.PurposeCheckpoint, r.id, r.latest) // sealed for the job when the client has keys
	if serr != nil {
		r.log().Warn("bananas: Checkpoint: seal the job's checkpoint (tried again)", "job", r.id, "err", serr)
		return
	}
	r.pending, r.writing, r.lastWrite = false, true, time.Now()
	r.mu.Unlock()
	if f := checkpointWriteHook.Load(); f != nil && *f != nil {
		(*f)(r.id)
	}
	call, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	stored, err := r.st.Write(call, r.route, r.id, r.token, b, CheckpointTTL)
	cancel()
	r.mu.Lock()
	r.writing = false
	r.idle.Broadcast()
	switch {
	case err != nil:
		r.pending = true
		r.log().Warn("bananas: Checkpoint: write the job's checkpoint (tried again)", "job", r.id, "err", err)
	case !stored:
		r.lost = true
	}
}

// readStored reads the job's checkpoint from Redis, three tries.
func (r *checkpointRun) readStored(ctx context.Context) (b []byte, found bool, err error) {
	for try := 0; try < 3; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return nil, false, ctx.Err()
			case <-time.After(time.Duration(try) * 100 * time.Millisecond):
			}
		}
		call, cancel := context.WithTimeout(ctx, 5*time.Second)
		b, found, err = r.st.Read(call, r.route, r.id)
		cancel()
		if err == nil && found {
			if b, err = r.c.Open(queue.PurposeCheckpoint, r.id, b); err != nil {
				return nil, false, err // sealed under a key this client does not hold, or broken: no retry opens it
			}
		}
		if err == nil {
			return b, found, nil
		}
	}
	return nil, false, err
}

// endCheckpoint is told that the handler of the run whose context holds jv
// returned, before the run's end is recorded: completed says whether it
// succeeded. A run that did not succeed writes its last value, waiting out
// the period of its last write so that the job writes at most once per
// period; one that succeeded writes nothing more. Runs that never
// checkpointed cost one map look-up.
func endCheckpoint(jv jobValue, completed bool) {
	v, ok := checkpointRuns.LoadAndDelete(checkpointRunKey{jv.job.ID, jv.progress.token})
	if !ok {
		return
	}
	r := v.(*checkpointRun)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	for r.writing {
		r.idle.Wait()
	}
	if r.pending && !r.lost && !completed {
		if wait := time.Until(r.lastWrite.Add(CheckpointEvery)); wait > 0 {
			r.mu.Unlock()
			time.Sleep(wait)
			r.mu.Lock()
		}
		r.writeLocked(context.Background())
	}
	if r.known {
		checkpointedJobs.Store(r.id, r.route)
	}
}

// dropCheckpoint removes the checkpoint of e's job when the job completed
// or was canceled, if this process knows it has one; it never blocks (the
// engine's sinks must not).
func dropCheckpoint(c *Client, e bananastype.JobEnd) {
	v, ok := checkpointedJobs.LoadAndDelete(e.ID)
	if !ok || (e.Ending != queue.EndCompleted && e.Ending != queue.EndCanceled) {
		return
	}
	route := v.(string)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := checkpoint.New(c.q).Delete(ctx, route, e.ID); err != nil {
			slog.Default().Warn("bananas: remove a completed job's checkpoint (it expires)", "job", e.ID, "err", err)
		}
	}()
}

// encodeCheckpoint and decodeCheckpoint are a checkpoint's bytes as the job
// keeps them: the one place each way, so that sealing can wrap them.
func encodeCheckpoint(v any) ([]byte, error) { return encode(v) }

func decodeCheckpoint(b []byte, out any) error { return decode(b, out) }
