package queue

import (
	"strconv"
	"strings"
	"time"
)

// EarlierLife is a life of a job that ended in the dead-letter queue and was
// replayed (replay.lua keeps it in field ph<k> of the job's hash): the runs
// it had, and how it ended.
type EarlierLife struct {
	FirstRun int         // the number of its first run, counting every life's runs
	Attempts int         // its failed runs
	FailedAt []time.Time // when its last failed runs ended, oldest first (see FailuresKept)
	Started  time.Time   // its last run's start
	Died     time.Time   // when it was dead-lettered
	Replayed time.Time   // when it was replayed, which ended it
	Error    string      // its last failure, cut to 1024 bytes
}

// LivesKept is how many earlier lives a job keeps (fields ph<k>).
const LivesKept = 10

// earlierLives reads the kept earlier lives of a job's hash f, oldest
// first; a field that does not parse is left out.
func earlierLives(f map[string]string) []string {
	n := atoi(f["pn"])
	var out []string
	for k := max(1, n-LivesKept+1); k <= n; k++ {
		if v, ok := f["ph"+strconv.Itoa(k)]; ok {
			if _, ok := ParseEarlierLife(v); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// ParseEarlierLife reads an earlier life as replay.lua writes it:
// "first attempts started died replayed fa1,fa2|-", a newline, the error.
func ParseEarlierLife(s string) (EarlierLife, bool) {
	head, errText, _ := strings.Cut(s, "\n")
	f := strings.Fields(head)
	if len(f) != 6 {
		return EarlierLife{}, false
	}
	var n [5]int64
	for i := range n {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil || v < 0 {
			return EarlierLife{}, false
		}
		n[i] = v
	}
	l := EarlierLife{FirstRun: int(n[0]), Attempts: int(n[1]), Started: parseMS(f[2]), Died: parseMS(f[3]), Replayed: parseMS(f[4]),
		Error: strings.ToValidUTF8(errText, "")}
	if f[5] != "-" {
		for _, t := range strings.Split(f[5], ",") {
			v, err := strconv.ParseInt(t, 10, 64)
			if err != nil || v <= 0 {
				return EarlierLife{}, false
			}
			l.FailedAt = append(l.FailedAt, time.UnixMilli(v))
		}
	}
	return l, true
}

// String is l as replay.lua writes it, which ParseEarlierLife reads: how a
// record built from a parsed job (engine.CanceledRecord) keeps its lives.
func (l EarlierLife) String() string {
	failed := "-"
	if len(l.FailedAt) > 0 {
		ts := make([]string, len(l.FailedAt))
		for i, t := range l.FailedAt {
			ts[i] = strconv.FormatInt(ms(t), 10)
		}
		failed = strings.Join(ts, ",")
	}
	times := make([]string, 3)
	for i, t := range []time.Time{l.Started, l.Died, l.Replayed} {
		times[i] = strconv.FormatInt(msOrZero(t), 10)
	}
	return strconv.Itoa(l.FirstRun) + " " + strconv.Itoa(l.Attempts) + " " + strings.Join(times, " ") + " " + failed + "\n" + l.Error
}
