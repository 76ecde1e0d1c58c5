package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

// MaxSignalName bounds a signal's name: it is part of a field name of the
// record.
const MaxSignalName = 200

// CheckSignalName says what is wrong with name as a signal's name, or nil:
// 1 to MaxSignalName bytes of printable ASCII without spaces or commas.
func CheckSignalName(name string) error {
	if name == "" || len(name) > MaxSignalName {
		return fmt.Errorf("signal name of %d bytes: 1 to %d", len(name), MaxSignalName)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' || c == ',' {
			return fmt.Errorf("signal name %q holds byte %#x: printable ASCII without spaces or commas", name, c)
		}
	}
	return nil
}

// checkWait refuses a wait step the scripts cannot hold.
func checkWait(k int, s record.NewStep) error {
	switch {
	case s.Kind != record.KindTimer && s.Kind != record.KindSignal:
		return fmt.Errorf("step %d (%s) of kind %q", k, s.Label, s.Kind)
	case s.Wait < 0:
		return fmt.Errorf("step %d (%s) waits %s: not negative", k, s.Label, s.Wait)
	case s.Kind == record.KindTimer && len(s.After) != 1:
		return fmt.Errorf("step %d (%s): a timer comes after one step", k, s.Label)
	case s.Kind == record.KindSignal:
		return CheckSignalName(s.Signal)
	}
	return nil
}

// Fire fires the waits of workflow id whose due time has come
// (wf_fire.lua): timers complete, signal waits time out. It returns the
// steps to make now.
func (s *Store) Fire(ctx context.Context, id string, keep record.TTLs) (record.Advance, error) {
	res, err := lua().fire.Run(ctx, s.rdb, []string{queue.WorkflowKey(s.ns, id)},
		s.q.Now().UnixMilli(), keep.Completed.Milliseconds(), keep.Failed.Milliseconds(), queue.WorkflowChannel(s.ns, id)).Slice()
	if err != nil {
		return record.Advance{}, fmt.Errorf("fire waits of workflow %s: %w", id, err)
	}
	if len(res) == 1 {
		return record.Advance{}, fmt.Errorf("workflow %s: %w", id, record.ErrNotFound)
	}
	a := record.Advance{Status: str(res[0]), Why: -1, Due: dueOf(res[3])}
	if w, err := strconv.Atoi(str(res[1])); err == nil {
		a.Why = w
	}
	a.Ready, err = readySteps(res, 4)
	return a, err
}

// Signal gives workflow id the signal name, of id sig (a resend with the
// same id is no second signal), with payload, of Go type gotype ("" not
// checked). A refusal is an error matching record.ErrNotFound,
// ErrNoSuchWait, ErrWorkflowEnded, ErrSignalsReceived or ErrSignalType.
//
// watch (zero: none) is when the keeper is to look at the workflow at the
// latest, should the signal make steps whose jobs the caller then dies
// before making: the workflow's entry in the index is moved to it in the
// same round trip as the script, so that the jobs are made one round trip
// after the signal is sent (the latency a signal's next step waits for).
// Only an entry there is moved (XX): a workflow that waits has one, and a
// signal refused creates none. A failed move is not the signal's failure:
// a workflow that waits is looked at within the keeper's park period
// anyway.
func (s *Store) Signal(ctx context.Context, id, name, sig string, payload []byte, gotype string, keep record.TTLs, watch time.Time) (record.Signaled, error) {
	if err := CheckSignalName(name); err != nil {
		return record.Signaled{}, fmt.Errorf("%w: %v", record.ErrNoSuchWait, err)
	}
	if err := record.CheckID(id); err != nil {
		return record.Signaled{}, fmt.Errorf("%w: %v", record.ErrNotFound, err)
	}
	if sig == "" || strings.ContainsRune(sig, ',') || len(sig) > 200 {
		return record.Signaled{}, fmt.Errorf("signal id %q: 1 to 200 bytes without commas", sig)
	}
	keys := []string{queue.WorkflowKey(s.ns, id)}
	args := []any{s.q.Now().UnixMilli(), keep.Completed.Milliseconds(), queue.WorkflowChannel(s.ns, id), name, sig, payload, gotype}
	var res []any
	var err error
	if watch.IsZero() {
		res, err = lua().signal.Run(ctx, s.rdb, keys, args...).Slice()
	} else {
		pipe := s.rdb.Pipeline()
		pipe.ZAddArgs(ctx, queue.WorkflowIndex(s.ns), redis.ZAddArgs{XX: true, LT: true, Members: []redis.Z{{Score: float64(watch.UnixMilli()), Member: id}}})
		cmd := lua().signal.EvalSha(ctx, pipe, keys, args...)
		_, _ = pipe.Exec(ctx) // each command's error is its own: the script's is read below
		res, err = cmd.Slice()
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			res, err = lua().signal.Run(ctx, s.rdb, keys, args...).Slice()
		}
	}
	if err != nil {
		return record.Signaled{}, fmt.Errorf("signal %s to workflow %s: %w", name, id, err)
	}
	switch str(res[0]) {
	case "missing":
		return record.Signaled{}, fmt.Errorf("workflow %s: %w", id, record.ErrNotFound)
	case "nowait":
		return record.Signaled{}, fmt.Errorf("workflow %s: signal %s: %w", id, name, record.ErrNoSuchWait)
	case "ended":
		return record.Signaled{}, fmt.Errorf("workflow %s is %s: %w", id, str(res[1]), record.ErrWorkflowEnded)
	case "received":
		return record.Signaled{}, fmt.Errorf("workflow %s: signal %s: %w", id, name, record.ErrSignalsReceived)
	case "badtype":
		return record.Signaled{}, fmt.Errorf("workflow %s: signal %s: %w (%s)", id, name, record.ErrSignalType, str(res[1]))
	case "dup":
		return record.Signaled{Duplicate: true, Advance: record.Advance{Why: -1}}, nil
	case "kept":
		return record.Signaled{Kept: true, Advance: record.Advance{Status: record.Running, Why: -1}}, nil
	}
	a := record.Advance{Status: str(res[1]), Why: -1, Due: dueOf(res[4])}
	if w, err := strconv.Atoi(str(res[2])); err == nil {
		a.Why = w
	}
	a.Ready, err = readySteps(res, 5)
	return record.Signaled{Advance: a}, err
}

// dueOf reads a script's due time (ms; 0 none).
func dueOf(v any) time.Time {
	switch x := v.(type) {
	case int64:
		if x > 0 {
			return time.UnixMilli(x)
		}
	case string:
		return parseMS(x)
	}
	return time.Time{}
}

// Park has the keeper look at workflow id next at at, if that is later
// than the time it has in the index (and it has one).
func (s *Store) Park(ctx context.Context, id string, at time.Time) error {
	return s.rdb.ZAddArgs(ctx, queue.WorkflowIndex(s.ns), redis.ZAddArgs{XX: true, GT: true, Members: []redis.Z{{Score: float64(at.UnixMilli()), Member: id}}}).Err()
}
