package dashboard

import (
	"strings"
	"testing"
	"time"
)

// A job's timeline is in the order of its life even when its events share a
// millisecond: a run starts before it fails, and a dead job's end comes
// after its last failure.
func TestTimeline_EventsOfOneMillisecondKeepTheOrderOfAJobsLife(t *testing.T) {
	t0 := time.UnixMilli(1763942400000)
	t1 := t0.Add(time.Millisecond)
	dead := &Job{Status: "failed", Attempts: 2, Created: t0, Failed: []time.Time{t1, t1}, Started: t1, Finished: t1}
	var got []string
	for _, e := range timeline(dead) {
		got = append(got, e.What)
	}
	want := "Created, Run 1 failed, Run 2 started, Run 2 failed, Finished"
	if strings.Join(got, ", ") != want {
		t.Fatalf("timeline = %s; want %s", strings.Join(got, ", "), want)
	}
	retrying := &Job{Status: "scheduled", Attempts: 1, Created: t0, Failed: []time.Time{t1}, Started: t0, Scheduled: t1}
	got = got[:0]
	for _, e := range timeline(retrying) {
		got = append(got, e.What)
	}
	if want := "Created, Run 1 started, Run 1 failed, Retry 1 at"; strings.Join(got, ", ") != want {
		t.Fatalf("timeline = %s; want %s", strings.Join(got, ", "), want)
	}
}
