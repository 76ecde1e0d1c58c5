package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bananas-go/bananas/queue"
)

// MaxProgressNote is the most bytes of a progress note that are kept: a
// longer note is cut at a rune boundary (Progress).
const MaxProgressNote = queue.MaxProgressNote

// ProgressEvery is how often a worker writes its running jobs' progress to
// Redis: each job's last value of the period, at most one write per job.
const ProgressEvery = 250 * time.Millisecond

// Progress tells how far the job whose handler received ctx has got:
// percent, 0 to 100, and a short note for a person ("resizing 3 of 8").
// Client.Job, `job ID`, the HTTP API and the dashboard show the last value
// of the job's current run while it runs; a retry starts with none.
//
// Progress only records the value in the worker's memory and returns: it
// never waits for Redis, and however often it is called, the worker writes
// a job's progress at most once per ProgressEvery (the last value, the
// final one of a run included). So it may be called in a tight loop. What
// is shown may lag what was said by up to ProgressEvery and a round trip.
//
// A note over MaxProgressNote bytes is cut to fit at a rune boundary, and
// invalid UTF-8 in it is replaced. Progress returns an error, storing
// nothing, when percent is outside 0..100 or when ctx is not a handler's
// context (the one a handler received, or one derived from it).
func Progress(ctx context.Context, percent int, note string) error {
	v, ok := ctx.Value(jobKey{}).(jobValue)
	if !ok || v.progress.to == nil {
		return errors.New("bananas: Progress: ctx is not a handler's context (call it with the context the handler received, or one derived from it)")
	}
	if percent < 0 || percent > 100 {
		return fmt.Errorf("bananas: Progress: percent %d is outside 0..100", percent)
	}
	r := v.progress
	ttl := progressTTL
	if dl, ok := ctx.Deadline(); ok {
		// The run cannot outlast its deadline; its value need not either.
		ttl = min(max(time.Until(dl), 0)+progressTTLMargin, progressTTL)
	}
	r.to.Set(queue.ProgressWrite{
		Route: r.route, ID: v.job.ID, TTL: ttl,
		Progress: queue.Progress{Attempt: v.job.Attempt, Token: r.token, Percent: percent, Note: v.c.sealNote(v.job.ID, cutNote(note)), At: r.to.Now()},
	})
	return nil
}

const (
	// progressTTL bounds how long a stored progress value lives: the run's
	// deadline and progressTTLMargin, at most this.
	progressTTL       = 24 * time.Hour
	progressTTLMargin = time.Minute
)

// cutNote is note valid UTF-8 and at most MaxProgressNote bytes, cut at a
// rune boundary.
func cutNote(note string) string {
	note = strings.ToValidUTF8(note, "\uFFFD")
	if len(note) <= MaxProgressNote {
		return note
	}
	cut := MaxProgressNote
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut]
}
