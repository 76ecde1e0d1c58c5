package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A plain job — a fresh id from NewID, ready at once, no unique key — can meet
// nothing in Redis that would refuse it: its id is new by construction and no
// lock applies. Its enqueue (scripts/push.lua) needs no per-job check, only
// the writes every ready job needs: its payload in the payloads hash and its
// id at the back of the ready list, with the enqueued counter. The caller
// builds the payloads, so the per-job work is spread over the producers'
// cores instead of Redis's one.
//
// The script, not a MULTI/EXEC, because a transaction cannot be made
// harmless to run twice: a client that resends it after a lost reply would
// push every id a second time and each job would run twice. push.lua looks
// for the call's last job first and writes nothing when it exists.

// plain reports whether every job of a chunk can take the plain path.
func plain(jobs []NewJob, now time.Time) bool {
	for i := range jobs {
		if !isPlain(&jobs[i], now) {
			return false
		}
	}
	return true
}

// A fresh job ready at once whose only extra is a unique key (no debounce,
// no expiry, no flow) is as light: its enqueue (scripts/push_unique.lua)
// takes the key with SET NX and writes the payload with the key in front
// (payloadOf with uniquePrefix), so the job needs no hash of its own and the
// script that ends it still finds the key to free. A chunk of plain jobs and
// such unique ones takes that path; a retry of the call is answered from the
// receipt it leaves.

// lightUnique reports whether every job of a chunk is plain or a light
// unique job (see above), and at least one is the latter.
func lightUnique(jobs []NewJob, now time.Time) bool {
	some := false
	for i := range jobs {
		switch {
		case isLightUnique(&jobs[i], now):
			some = true
		case !isPlain(&jobs[i], now):
			return false
		}
	}
	return some
}

// isLightUnique reports whether j is a light unique job (see above). A key
// holding '|' cannot go in front of a payload; it takes enqueue.lua.
func isLightUnique(j *NewJob, now time.Time) bool {
	return !j.ChosenID && !j.Keyed && j.UniqueTTL > 0 && j.UniqueKey != "" && strings.IndexByte(j.UniqueKey, '|') < 0 &&
		j.Debounce == 0 && j.OnBusy == OnBusyWait && !j.RunAt.After(now) && j.ExpireAt.IsZero()
}

// uniquePrefix is what a light unique job's payload starts with, as
// bn_payload_unique in scripts/_prelude.lua: its key's suffix, until when it
// is held and its ttl.
func uniquePrefix(j *NewJob) string {
	return "|" + j.UniqueKey + "|" + j.UniqueUntil.code() + "|" + strconv.FormatInt(max(1, durMS(j.UniqueTTL)), 10) + "|"
}

// enqueueLightUnique writes a chunk lightUnique accepted, in one
// push_unique.lua call, and wakes idle workers.
func (js Jobs) enqueueLightUnique(ctx context.Context, route string, priority Priority, jobs []NewJob, now time.Time) ([]string, error) {
	k, created, eager := js.q.Keys(route), ms(now), eagerWake(len(jobs))
	keys := make([]string, 0, 6+len(jobs))
	keys = append(keys, k.List(priority), k.Stats(), k.Payloads(), k.Receipt(callToken()), k.Series(HourOf(now)), k.Idle())
	args := make([]any, 0, 4+3*len(jobs))
	args = append(args, k.WakeChannel(), eager, created, durMS(receiptTTL))
	for i := range jobs {
		j := &jobs[i]
		unique := isLightUnique(j, now)
		p := j.payload
		if p == "" {
			p = payloadOf(j.Name, string(priority), j.MaxRetries, created, j.Envelope)
			if unique {
				p = uniquePrefix(j) + p
			}
		}
		var uttl int64
		if unique {
			keys = append(keys, k.Unique(j.UniqueKey))
			uttl = max(1, durMS(j.UniqueTTL))
		} else {
			keys = append(keys, k.Stats())
		}
		args = append(args, j.ID, p, uttl)
	}
	// Retry-safe: a second run of this call answers from its receipt.
	res, err := js.q.runWrite(ctx, js.q.s.pushUnique, keys, args...)
	if err != nil {
		return nil, fmt.Errorf("enqueue to route %s: %w", route, err)
	}
	return strs(res), nil
}

// isPlain reports whether j is a plain job (see above).
func isPlain(j *NewJob, now time.Time) bool {
	return !j.ChosenID && !j.Keyed && (j.UniqueTTL <= 0 || j.UniqueKey == "") && !j.RunAt.After(now) && j.ExpireAt.IsZero()
}

// eagerWake is push.lua's and push_unique.lua's eager flag for a call of n
// jobs. At low load (a flush of one or two jobs) the wake-up goes in the
// same call whether or not the list was empty: it saves the round trip
// that would otherwise sit between the enqueue and the job's start, and a
// wake-up that finds the jobs already taken costs one empty fetch.
func eagerWake(n int) int {
	if n <= 2 {
		return 1
	}
	return 0
}

// enqueuePlain writes plain jobs (see plain), already checked by checkNewJob,
// in one script call and wakes idle workers.
func (js Jobs) enqueuePlain(ctx context.Context, route string, priority Priority, jobs []NewJob, now time.Time) ([]string, error) {
	k, created, eager := js.q.Keys(route), ms(now), eagerWake(len(jobs))
	args := make([]any, 0, 3+2*len(jobs))
	args = append(args, k.WakeChannel(), eager, created)
	for i := range jobs {
		j := &jobs[i]
		p := j.payload
		if p == "" {
			p = payloadOf(j.Name, string(priority), j.MaxRetries, created, j.Envelope)
		}
		args = append(args, j.ID, p)
	}
	last := jobs[len(jobs)-1].ID
	// Retry-safe: a second run of this call writes nothing (see push.lua).
	if _, err := js.q.runWrite(ctx, js.q.s.push, []string{k.List(priority), k.Stats(), k.Payloads(), k.Job(last), k.Result(last), k.Series(HourOf(now)), k.Idle()}, args...); err != nil {
		return nil, fmt.Errorf("enqueue to route %s: %w", route, err)
	}
	return make([]string, len(jobs)), nil
}

// checkNewJob refuses, with the script's words, what enqueue.lua would refuse,
// and a chosen id that names another route than the job's (CheckChosenID);
// Enqueue and EnqueueOne call it before anything is sent.
func checkNewJob(route string, j *NewJob) error {
	if j.ChosenID {
		if err := CheckChosenID(j.ID, route); err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
	}
	switch {
	case j.ID == "" || j.Name == "" || len(j.Envelope) == 0:
		return fmt.Errorf("enqueue: job needs an id, a name and an envelope")
	case strings.IndexByte(j.Name, '|') >= 0:
		return fmt.Errorf("enqueue: task name must not contain |")
	case j.MaxRetries < 0:
		return fmt.Errorf("enqueue: max retries must be >= 0")
	case j.Debounce < 0 || j.DebounceMax < 0:
		return fmt.Errorf("enqueue: debounce must be >= 0")
	case j.Debounce > 0 && (j.UniqueTTL <= 0 || j.UniqueKey == ""):
		return fmt.Errorf("enqueue: a debounce needs a unique key")
	}
	if j.UniqueTTL > 0 {
		u, err := ParseUntil(string(j.UniqueUntil))
		if err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
		j.UniqueUntil = u
	}
	if err := CheckKey(j.Key); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	if err := checkOnBusy(j); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	return nil
}

// payloadOf builds a light job's payload, as bn_payload in scripts/_prelude.lua.
// created is in Unix milliseconds. One allocation: the numbers are formatted
// on the stack.
func payloadOf(name, priority string, maxRetries int, created int64, env []byte) string {
	var num [20]byte
	var b strings.Builder
	b.Grow(len(name) + len(priority) + len(env) + 40)
	b.WriteString(name)
	b.WriteByte('|')
	b.WriteString(priority)
	b.WriteByte('|')
	b.Write(strconv.AppendInt(num[:0], int64(maxRetries), 10))
	b.WriteByte('|')
	b.Write(strconv.AppendInt(num[:0], created, 10))
	b.WriteByte('|')
	b.Write(env)
	return b.String()
}

// A keyed job's policy when its key is busy (NewJob.OnBusy).
const (
	OnBusyWait          = ""
	OnBusyCancelRunning = "cancel_running"
	OnBusyDrop          = "drop"
)

// BusyHolder is the holder Enqueue reports for a job refused because its
// key was busy (OnBusyDrop): no job id has a space.
const BusyHolder = " busy"

// checkOnBusy refuses a policy the scripts do not know, or one without the
// key and the cap it acts on.
func checkOnBusy(j *NewJob) error {
	switch j.OnBusy {
	case OnBusyWait:
		return nil
	case OnBusyCancelRunning, OnBusyDrop:
	default:
		return fmt.Errorf("on_busy %q: use wait, cancel_running or drop", j.OnBusy)
	}
	if !j.Keyed || j.BusyCap < 1 || j.BusyCap > LimitMax {
		return fmt.Errorf("on_busy=%s needs a keyed job and its task's max running (1 to %d), got %d", j.OnBusy, LimitMax, j.BusyCap)
	}
	return nil
}
