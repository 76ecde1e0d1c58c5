package queue

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// Progress is how far one run of a running job has got, as its handler
// last said (runtime.Progress): stored under Keys.Progress by
// progress.lua, read back by Lookup.
type Progress struct {
	Attempt int    // the run's attempt (1 on the first run)
	Token   string // the run's lease token
	Percent int    // 0..100
	Note    string
	At      time.Time // when the handler said it
}

// MaxProgressNote bounds a progress note, in bytes.
const MaxProgressNote = 200

// Progress is the value of job id's progress (progress.lua), with a TTL: one
// STRING, so that a light job running keeps no hash of its own.
func (k Keys) Progress(id string) string { return k.base + "progress:" + id }

// progressVersion heads a stored progress value; another head reads as none.
const progressVersion = "1"

// sealedProgressVersion heads a stored progress value whose note is a
// sealed payload (Payloads.Pack), written in base64.
const sealedProgressVersion = "2"

// maxSealedNote bounds a sealed note, in bytes: a MaxProgressNote note,
// its frame head, nonce and tag.
const maxSealedNote = MaxProgressNote + 3 + MaxKeyID + nonceSize + 16

// value is p as stored: "1|attempt|token|percent|at ms|note", the note last
// as it may hold any byte; "2|...|base64 note" when the note is sealed.
func (p Progress) value() string {
	version, note := progressVersion, p.Note
	if Framed([]byte(note)) {
		version, note = sealedProgressVersion, base64.StdEncoding.EncodeToString([]byte(note))
	}
	return version + "|" + strconv.Itoa(p.Attempt) + "|" + p.Token + "|" + strconv.Itoa(p.Percent) + "|" +
		strconv.FormatInt(p.At.UnixMilli(), 10) + "|" + note
}

// ParseProgress reads a stored progress value; anything but what value
// writes (garbage, another version) reads as none (false), never an error.
func ParseProgress(s string) (Progress, bool) {
	f := strings.SplitN(s, "|", 6)
	if len(f) == 6 && f[0] == sealedProgressVersion {
		note, err := base64.StdEncoding.DecodeString(f[5])
		if err != nil || len(note) > maxSealedNote || !Framed(note) {
			return Progress{}, false
		}
		f[0], f[5] = progressVersion, string(note)
	} else if len(f) == 6 && (len(f[5]) > MaxProgressNote || !utf8.ValidString(f[5])) {
		return Progress{}, false
	}
	if len(f) != 6 || f[0] != progressVersion || f[2] == "" {
		return Progress{}, false
	}
	attempt, err1 := strconv.Atoi(f[1])
	percent, err2 := strconv.Atoi(f[3])
	at, err3 := strconv.ParseInt(f[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || attempt < 1 || percent < 0 || percent > 100 || at <= 0 {
		return Progress{}, false
	}
	return Progress{Attempt: attempt, Token: f[2], Percent: percent, Note: f[5], At: time.UnixMilli(at)}, true
}

// ProgressWrite is one run's progress to store.
type ProgressWrite struct {
	Route, ID string // the job's shard route and id
	Progress
	TTL time.Duration // how long the value may outlive the write
}

func (w *ProgressWrite) check() error {
	p := w.Progress
	switch {
	case w.ID == "" || w.Route == "":
		return errors.New("job id and route must not be empty")
	case w.Token == "" || strings.Contains(w.Token, "|"):
		return fmt.Errorf("lease token %q is empty or holds a |", w.Token)
	case p.Attempt < 1 || p.Percent < 0 || p.Percent > 100:
		return fmt.Errorf("attempt %d or percent %d out of range", p.Attempt, p.Percent)
	case Framed([]byte(p.Note)) && len(p.Note) > maxSealedNote: // sealed (Payloads.Pack)
		return fmt.Errorf("sealed note of %d bytes: over %d", len(p.Note), maxSealedNote)
	case !Framed([]byte(p.Note)) && (len(p.Note) > MaxProgressNote || !utf8.ValidString(p.Note)):
		return fmt.Errorf("note of %d bytes: over %d or not UTF-8", len(p.Note), MaxProgressNote)
	case w.TTL < time.Millisecond:
		return fmt.Errorf("ttl %s under a millisecond", w.TTL)
	}
	return nil
}

// WriteProgress stores each run's progress in one pipelined round trip
// (progress.lua per run, each on its job's slot), for runs that still hold
// their lease; a write for a run that no longer does is dropped. It returns
// the writes that did not reach Redis (to try again), and an error saying
// why; a write that is invalid is dropped with an error naming it.
func (js Jobs) WriteProgress(ctx context.Context, ws []ProgressWrite) (failed []ProgressWrite, err error) {
	var errs []error
	valid := make([]ProgressWrite, 0, len(ws))
	for _, w := range ws {
		if e := w.check(); e != nil {
			errs = append(errs, fmt.Errorf("progress of job %s: %w", w.ID, e))
			continue
		}
		valid = append(valid, w)
	}
	cmds := make([]*redis.Cmd, len(valid))
	pipe := js.q.rdb.Pipeline()
	for i, w := range valid {
		cmds[i] = js.q.s.progress.EvalSha(ctx, pipe, progressKeys(js.q.Keys(w.Route), w.ID), progressArgs(w)...)
	}
	if len(valid) > 0 {
		_, _ = pipe.Exec(ctx) // each command's own error is read below
	}
	for i, w := range valid {
		e := cmds[i].Err()
		if isNoScript(e) { // the script not loaded yet on this node: once, unpipelined
			e = js.q.s.progress.Run(ctx, js.q.rdb, progressKeys(js.q.Keys(w.Route), w.ID), progressArgs(w)...).Err()
		}
		if e != nil {
			failed = append(failed, w)
			errs = append(errs, fmt.Errorf("progress of job %s: %w", w.ID, e))
		}
	}
	return failed, errors.Join(errs...)
}

func progressKeys(k Keys, id string) []string { return []string{k.Progress(id), k.Leases()} }

func progressArgs(w ProgressWrite) []any {
	return []any{w.ID, w.Token, w.value(), max(w.TTL.Milliseconds(), 1)}
}

// progressOf is the progress of the run a lookup found leased under lease,
// attempt its attempt: nil unless the stored value names that run.
func progressOf(stored string, lease string, attempt int) *Progress {
	p, ok := ParseProgress(stored)
	if !ok || p.Token != lease || p.Attempt != attempt {
		return nil
	}
	return &p
}
