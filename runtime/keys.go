package runtime

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
	"github.com/bananas-go/bananas/runtime/internal/engine"
	"github.com/bananas-go/bananas/scheduler"
)

// DefaultCompressOver is the size, in bytes, over which args, results and
// the other stored payloads are compressed (zstd) unless
// BANANAS_COMPRESS_OVER or CompressOver says otherwise.
const DefaultCompressOver = queue.DefaultCompressOver

// CompressOver compresses (zstd) every payload this client stores — args,
// results — that is longer than n bytes, in place of $BANANAS_COMPRESS_OVER
// (default 4 KiB); 0 or less compresses nothing. Handlers never see it: a
// compressed payload is inflated before it is decoded, by any process, and
// never past its MaxPayload (a compressed bomb is refused, not inflated).
func CompressOver(n int) ConnectOption {
	return func(c *connectConfig) { c.payloads.compressOver, c.payloads.compressSet = n, true }
}

// SealKey is a key payloads are sealed under: an id, written into every
// value it seals, and 32 bytes of secret for AES-256-GCM.
type SealKey = queue.Key

// ParseKeys reads keys written as BANANAS_KEYS is: "id2:base64key,id1:base64key",
// newest first, each key 32 bytes of base64. An error names the entry that
// is wrong, never its secret.
func ParseKeys(s string) ([]SealKey, error) { return queue.ParseKeys(s) }

// WithKeys seals the args, results and progress notes this client and its
// workers store, and the values workflows' records keep (AES-256-GCM under
// the first key, a fresh nonce per value, the key's id and the job's or
// the workflow's id bound to it) and opens what any of keys
// sealed, in place of $BANANAS_KEYS. Keys go newest first: to rotate, put a
// new key in front, deploy, then reseal what waits (`app keys rotate`,
// Client.RotateKeys) before the old key is dropped. WithKeys() with no key
// seals nothing even when BANANAS_KEYS is set. A key that is not 32 bytes,
// or an id used twice, fails Connect with an error naming it.
func WithKeys(keys ...SealKey) ConnectOption {
	return func(c *connectConfig) { c.payloads.keys, c.payloads.keysSet = keys, true }
}

// payloadConfig is what the options said of stored payloads; what they did
// not say comes from the environment.
type payloadConfig struct {
	compressOver int
	compressSet  bool
	keys         []SealKey
	keysSet      bool
}

// ParseCompressOver reads a BANANAS_COMPRESS_OVER value: a whole number of
// bytes, 0 or negative for never.
func ParseCompressOver(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("BANANAS_COMPRESS_OVER=%q is invalid: a whole number of bytes (0 or less: compress nothing)", s)
	}
	return n, nil
}

// make is the client's Payloads: limit is its payload limit, which no
// compressed payload may inflate past.
func (pc payloadConfig) make(limit int, getenv func(string) string) (*queue.Payloads, error) {
	p := &queue.Payloads{CompressOver: DefaultCompressOver, Limit: limit}
	switch {
	case pc.compressSet:
		p.CompressOver = pc.compressOver
	case getenv("BANANAS_COMPRESS_OVER") != "":
		n, err := ParseCompressOver(getenv("BANANAS_COMPRESS_OVER"))
		if err != nil {
			return nil, fmt.Errorf("bananas: %w", err)
		}
		p.CompressOver = n
	}
	keys := pc.keys
	if !pc.keysSet && getenv("BANANAS_KEYS") != "" {
		var err error
		if keys, err = queue.ParseKeys(getenv("BANANAS_KEYS")); err != nil {
			return nil, fmt.Errorf("bananas: BANANAS_KEYS: %w", err)
		}
	}
	if len(keys) > 0 {
		ring, err := queue.NewKeyring(keys)
		if err != nil {
			return nil, fmt.Errorf("bananas: WithKeys: %w", err)
		}
		p.Keys = ring
	}
	return p, nil
}

// packArgs is the stored form of a job's encoded args, raw, for job id of
// task. A schedule's envelope serves the job of every tick, each with an id
// of its own: its args are sealed for the schedules of the task
// (scheduleBinding), not for one job.
func (c *Client) packArgs(cfg jobConfig, task, id string, raw []byte) ([]byte, error) {
	if cfg.everyTick {
		return c.payloads.Pack(queue.PurposeSchedule, scheduleBinding(task), raw)
	}
	return c.payloads.Pack(queue.PurposeArgs, id, raw)
}

// scheduleBinding is what the sealed args of a schedule of task are bound
// to (queue.TickBinding).
func scheduleBinding(task string) string { return queue.TickBinding(task) }

// openArgs is the args stored of job id of task: sealed for the job, or
// for the schedules of its task (a schedule's tick), tried in that order.
func openArgs(p *queue.Payloads, id, task string, stored []byte) ([]byte, error) {
	b, err := p.Unpack(queue.PurposeArgs, id, stored)
	if errors.Is(err, queue.ErrSealBroken) && task != "" {
		if tb, terr := p.Unpack(queue.PurposeSchedule, scheduleBinding(task), stored); terr == nil {
			return tb, nil
		}
	}
	return b, err
}

// sealScheduleJSON is the stored form of the JSON args of schedule id, as
// its listing shows them.
func (c *Client) sealScheduleJSON(id, args string) (string, error) {
	if c.payloads.Keys == nil || args == "" {
		return args, nil
	}
	b, err := c.payloads.Pack(queue.PurposeSchedule, "schedule:"+id, []byte(args))
	return string(b), err
}

// openSchedule opens the args of s, a schedule as stored: "encrypted"
// without the key.
func (c *Client) openSchedule(s *bananastype.Schedule) {
	if !queue.Framed(s.Args) {
		return
	}
	b, err := c.payloads.Unpack(queue.PurposeSchedule, "schedule:"+s.ID, s.Args)
	if err != nil || !json.Valid(b) {
		b = encryptedJSON
	}
	s.Args = b
}

// SealSchedule seals the args of d, a schedule the admin layer puts, as
// Task.Schedule does: its envelope's args (packed for one job by BatchJob)
// for every tick of the task, and its JSON for the listing.
func (in *inspector) SealSchedule(d *scheduler.ScheduleDef, job string) error {
	c := in.c
	if c.payloads.Keys == nil {
		return nil
	}
	env, err := queue.DecodeEnvelope(d.Envelope)
	if err != nil {
		return err
	}
	raw, err := c.payloads.Unpack(queue.PurposeArgs, job, env.Args)
	if err != nil {
		return err
	}
	if env.Args, err = c.payloads.Pack(queue.PurposeSchedule, scheduleBinding(d.Name), raw); err != nil {
		return err
	}
	if d.Envelope, err = queue.EncodeEnvelope(env); err != nil {
		return err
	}
	d.Args, err = c.sealScheduleJSON(d.ID, d.Args)
	return err
}

// OpenSchedule opens the args of a schedule as stored (openSchedule).
func (in *inspector) OpenSchedule(s *bananastype.Schedule) { in.c.openSchedule(s) }

// Seal is the stored form of plain, a payload of job id for purpose, as
// this client stores args and results: compressed when long, sealed under
// the newest key when it has keys. Features that keep payloads of their
// own (a job's checkpoints) store what Seal returns, and read it back with
// Open.
func (c *Client) Seal(purpose queue.Purpose, id string, plain []byte) ([]byte, error) {
	return c.payloads.Pack(purpose, id, plain)
}

// Open is the payload stored (what Seal returned for the same purpose and
// job id) is the stored form of. An error matching queue.ErrNoKey says the
// client does not hold the key it was sealed under; queue.ErrSealBroken,
// that it was tampered with or sealed for another job or purpose. A payload
// that was never sealed nor compressed is returned as it is.
func (c *Client) Open(purpose queue.Purpose, id string, stored []byte) ([]byte, error) {
	return c.payloads.Unpack(purpose, id, stored)
}

// encryptedJSON is what a process shows of a sealed payload it cannot open.
var encryptedJSON = json.RawMessage(`"encrypted"`)

// packResult is the stored form of the encoded result of d's run. A
// workflow step's result is stored as any job's: its workflow's record
// keeps it sealed for the workflow (Client.stepResult).
func (x *executor) packResult(d *queue.Dispatch, result []byte) ([]byte, error) {
	out, err := x.payloads.Pack(queue.PurposeResult, d.ID, result)
	if err != nil {
		return nil, fmt.Errorf("store the result of %s job %s: %w", d.Name, d.ID, err)
	}
	return out, nil
}

// unopened is the outcome of a run of d whose stored args do not unpack
// (err). Sealed under a key this worker does not hold, the job is left to
// a worker that holds it: snoozed for noKeyRetry, no attempt counted, and
// logged once per job. Anything else — a tampered seal, a frame that does
// not read, a compressed bomb — no retry can fix: the job is dead-lettered
// with the reason.
func (x *executor) unopened(d *queue.Dispatch, err error) engine.Outcome {
	msg := fmt.Sprintf("args of %s job %s do not open: %v", d.Name, d.ID, err)
	if errors.Is(err, queue.ErrNoKey) {
		if x.refused.first(d.ID) && x.log != nil {
			x.log.Warn("a job is sealed under a key this worker does not hold: not run, left for a worker that holds it",
				"job", d.ID, "task", d.Name, "route", queue.ShardBase(d.Route), "error", err.Error(), "retry_in", noKeyRetry.String())
		}
		return engine.Outcome{Failed: true, Message: msg, Snooze: noKeyRetry}
	}
	return engine.Outcome{Failed: true, Final: true, Message: msg}
}

// noKeyRetry is how long a job sealed under a key its worker does not hold
// waits before a worker tries it again.
var noKeyRetry = 30 * time.Second

// refusedJobs remembers the jobs a worker refused for want of a key, so
// that it logs each once; it forgets them all past maxRefused.
type refusedJobs struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

const maxRefused = 10000

// first reports whether id is refused for the first time.
func (r *refusedJobs) first(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.ids[id]; seen {
		return false
	}
	if r.ids == nil || len(r.ids) >= maxRefused {
		r.ids = map[string]struct{}{}
	}
	r.ids[id] = struct{}{}
	return true
}

// historyRow is the task history's row of rec, a record of route: its args
// and result inflated first. A sealed one stays sealed: the row keeps the
// bytes Redis keeps, marked (sealedJSON, sealedText), so that PostgreSQL
// never holds what Redis keeps sealed, and a reader with the key opens
// them (openRow).
func (w *Worker) historyRow(route string, rec results.Record) bananastype.Job {
	p := w.c.payloads
	args, result, msg := rec.Args, rec.Value, rec.Error
	_, argsSealed := queue.Sealed(args)
	_, resultSealed := queue.Sealed(result)
	_, errorSealed := queue.Sealed([]byte(msg))
	rec.Args, rec.Value = nil, nil
	if b, err := openArgs(p, rec.ID, rec.Name, args); err == nil && !argsSealed {
		rec.Args = b
	}
	if b, err := p.Unpack(queue.PurposeResult, rec.ID, result); err == nil && !resultSealed {
		rec.Value = b
	}
	row := w.handlers.historyRow(route, rec)
	if argsSealed {
		row.Args = sealedJSON(args)
	}
	if resultSealed {
		row.ResultJSON = sealedJSON(result)
	}
	if errorSealed {
		row.Error = sealedTextMark + base64.StdEncoding.EncodeToString([]byte(msg))
	}
	return row
}

// sealedKey marks a history row's args or result that are sealed: the
// JSON object {"bananas_sealed": "<base64 of the bytes Redis kept>"}.
const sealedKey = "bananas_sealed"

// sealedTextMark starts a history row's error that is sealed, followed by
// the base64 of the bytes Redis kept.
const sealedTextMark = "bananas_sealed:"

func sealedJSON(stored []byte) json.RawMessage {
	b, _ := json.Marshal(map[string]string{sealedKey: base64.StdEncoding.EncodeToString(stored)})
	return b
}

// sealedOf is the stored bytes a marked history value holds.
func sealedOf(v json.RawMessage) ([]byte, bool) {
	if !bytes.HasPrefix(v, []byte(`{"`+sealedKey+`":`)) {
		return nil, false
	}
	var m map[string]string
	if json.Unmarshal(v, &m) != nil || len(m) != 1 {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(m[sealedKey])
	return b, err == nil
}

// openRow opens what a history row keeps sealed (historyRow) with the
// client's keys: its args and result as the JSON of their task's types
// (or of what the msgpack holds, for a task the program does not declare),
// its error as text; "encrypted" where a value does not open.
func (c *Client) openRow(j *bananastype.Job) {
	if stored, ok := sealedOf(j.Args); ok {
		j.Args = encryptedJSON
		if b, err := openArgs(c.payloads, j.ID, j.Name, stored); err == nil {
			j.Args = orJSON(declaredArgsJSON(j.Name, b), b)
		}
	}
	if stored, ok := sealedOf(j.ResultJSON); ok {
		j.ResultJSON = encryptedJSON
		if b, err := c.payloads.Unpack(queue.PurposeResult, j.ID, stored); err == nil {
			j.ResultJSON = orJSON(declaredResultJSON(j.Name, b), b)
		}
	}
	if rest, ok := strings.CutPrefix(j.Error, sealedTextMark); ok {
		j.Error = "encrypted"
		if b, err := base64.StdEncoding.DecodeString(rest); err == nil {
			j.Error = c.openError(j.ID, string(b))
		}
	}
}

// orJSON is declared, or else the JSON of what the msgpack b holds.
func orJSON(declared json.RawMessage, b []byte) json.RawMessage {
	if declared != nil {
		return declared
	}
	if out, err := jsonOf[any](b); err == nil {
		return out
	}
	return encryptedJSON
}

// OpenHistoryRow opens what a history row keeps sealed (openRow), for
// the admin layer's history search.
func (in *inspector) OpenHistoryRow(j *bananastype.Job) { in.c.openRow(j) }

// unpackJob opens and inflates the stored args and result of j, read from
// Redis; what does not open (sealed under a key c does not hold, or
// tampered with) shows as "encrypted".
func (c *Client) unpackJob(j *bananastype.Job) {
	if b, err := openArgs(c.payloads, j.ID, j.Name, j.ArgsMsgpack); err == nil {
		j.ArgsMsgpack = b
	} else {
		j.ArgsMsgpack, j.Args = nil, encryptedJSON
	}
	if b, err := c.payloads.Unpack(queue.PurposeResult, j.ID, j.Result); err == nil {
		j.Result = b
	} else {
		j.Result, j.ResultJSON = nil, encryptedJSON
	}
	j.Error = c.openError(j.ID, j.Error)
	for i := range j.Earlier {
		j.Earlier[i].Error = c.openError(j.ID, j.Earlier[i].Error)
	}
	if p := j.Progress; p != nil && p.Note != "" {
		if b, err := c.payloads.Unpack(queue.PurposeNote, j.ID, []byte(p.Note)); err == nil {
			p.Note = string(b)
		} else {
			p.Note = "encrypted"
		}
	}
}

// sealNote is the stored form of a progress note of job id.
func (c *Client) sealNote(id, note string) string {
	if c.payloads.Keys == nil || note == "" {
		return note
	}
	b, err := c.payloads.Pack(queue.PurposeNote, id, []byte(note))
	if err != nil {
		return ""
	}
	return string(b)
}

// openEnd is e as the work-end hooks (OnJobEnd, Client.AddHook) see it: its
// result opened and inflated, as the handler returned it. The engine's end
// carries the result as stored (sealed, compressed), which no hook could
// decode; one that does not open (it cannot: this process sealed it) is
// told as none.
func (c *Client) openEnd(e bananastype.JobEnd) bananastype.JobEnd {
	if !queue.Framed(e.Result) {
		return e
	}
	b, err := c.payloads.Unpack(queue.PurposeResult, e.ID, e.Result)
	if err != nil {
		b = nil
	}
	e.Result = b
	return e
}

// storedError is the form a failure message of job id takes in Redis (its
// hash, its result record, an earlier life kept by a replay): sealed when
// the client has keys, as the args it may quote are.
func (c *Client) storedError(id, msg string) string {
	if c.payloads.Keys == nil || msg == "" {
		return msg
	}
	b, err := c.payloads.Pack(queue.PurposeError, id, []byte(msg))
	if err != nil {
		return "encrypted" // no nonce to seal with: the message is not stored in the clear
	}
	return string(b)
}

// openError is the failure message stored (storedError's) of job id:
// "encrypted" when the client does not hold its key, or when it was cut
// (an earlier life keeps the first 1024 bytes of its error).
func (c *Client) openError(id, stored string) string {
	if !queue.Framed([]byte(stored)) {
		return stored
	}
	b, err := c.payloads.Unpack(queue.PurposeError, id, []byte(stored))
	if err != nil {
		return "encrypted"
	}
	return string(b)
}

// OpenError is the failure message stored of job id, for the admin layer's
// listings (the dead-letter queue's errors): "encrypted" when it does not
// open.
func (in *inspector) OpenError(id, stored string) string { return in.c.openError(id, stored) }
