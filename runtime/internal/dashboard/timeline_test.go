package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
)

// A job's timeline is in the order of its life even when its events share a
// millisecond: a run starts before it fails, and a dead job's end comes
// after its last failure.
func TestTimeline_EventsOfOneMillisecondKeepTheOrderOfAJobsLife(t *testing.T) {
	t0 := time.UnixMilli(1763942400000)
	t1 := t0.Add(time.Millisecond)
	dead := &bananastype.Job{Status: "failed", Attempts: 2, CreatedAt: t0, FailedAt: []time.Time{t1, t1}, StartedAt: t1, FinishedAt: t1}
	var got []string
	for _, e := range timeline(dead) {
		got = append(got, e.What)
	}
	want := "Created, Run 1 failed, Run 2 started, Run 2 failed, Finished"
	if strings.Join(got, ", ") != want {
		t.Fatalf("timeline = %s; want %s", strings.Join(got, ", "), want)
	}
	retrying := &bananastype.Job{Status: "scheduled", Attempts: 1, CreatedAt: t0, FailedAt: []time.Time{t1}, StartedAt: t0, ScheduledAt: t1}
	got = got[:0]
	for _, e := range timeline(retrying) {
		got = append(got, e.What)
	}
	if want := "Created, Run 1 started, Run 1 failed, Retry 1 at"; strings.Join(got, ", ") != want {
		t.Fatalf("timeline = %s; want %s", strings.Join(got, ", "), want)
	}
}

// A job replayed from the dead-letter queue keeps its earlier life on the
// timeline: its failed runs (the last with its error), its end and its
// replay, then the new life's runs numbered after them.
func TestTimeline_AReplayedJobShowsItsEarlierRunsThenTheNewOne(t *testing.T) {
	t0 := time.UnixMilli(1763942400000)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	done := &bananastype.Job{Status: "completed", Attempts: 0, CreatedAt: at(0), StartedAt: at(10), FinishedAt: at(11),
		Earlier: []admin.EarlierLife{{FirstRun: 1, Attempts: 2, FailedAt: []time.Time{at(1), at(3)}, Started: at(2), Died: at(3), Replayed: at(9), Error: "smtp: mailbox unavailable"}}}
	var got []string
	for _, e := range timeline(done) {
		what := e.What
		if e.Err != "" {
			what += " (" + e.Err + ")"
		}
		got = append(got, what)
	}
	want := "Created, Run 1 failed, Run 2 started, Run 2 failed (smtp: mailbox unavailable), Failed for good, Replayed, Run 3 started, Finished"
	if strings.Join(got, ", ") != want {
		t.Fatalf("timeline = %s; want %s", strings.Join(got, ", "), want)
	}
	// A worker's clock a millisecond behind the enqueuer's does not put a
	// run before the job's creation.
	done.CreatedAt = at(2).Add(time.Millisecond)
	if first := timeline(done)[0].What; first != "Created" {
		t.Fatalf("the timeline starts with %s; want Created", first)
	}
}
