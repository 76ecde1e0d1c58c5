package bananastype_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
)

// A route's JSON carries its pending count (the sum of its priorities), its
// oldest pending job's time and age in whole milliseconds, and leaves out
// the flow-control counts while they are 0; it reads back into the same
// route.
func TestRoute_JSONIsTheOneShapeAndReadsBack(t *testing.T) {
	oldest := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	r := bananastype.Route{Route: "email", High: 1, Normal: 2, Low: 3, Scheduled: 4, Active: 5, Dead: 6, Paused: true,
		OldestPending: oldest, OldestPendingAge: 1500*time.Millisecond + 7, Workers: 2, Throttled: 9}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	m := decodeJSON(t, b)
	for key, want := range map[string]any{"route": "email", "pending": 6.0, "paused": true, "oldest_pending_at": "2026-11-27T03:00:00Z",
		"oldest_pending_age_ms": 1500.0, "workers": 2.0, "throttled": 9.0, "held_keys": nil, "history_backlog": nil} {
		if !reflect.DeepEqual(m[key], want) {
			t.Errorf("%s = %#v; want %#v (in %s)", key, m[key], want, b)
		}
	}
	var back bananastype.Route
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	r.OldestPendingAge = 1500 * time.Millisecond // JSON keeps whole milliseconds
	back.OldestPending = back.OldestPending.UTC()
	if !reflect.DeepEqual(back, r) {
		t.Fatalf("read back %+v; want %+v", back, r)
	}

	// An empty route has no oldest pending job: its time is null and its age 0.
	if m := decodeJSON(t, mustJSON(t, bananastype.Route{Route: "idle", OldestPendingAge: time.Hour})); m["oldest_pending_at"] != nil || m["oldest_pending_age_ms"] != 0.0 {
		t.Fatalf("empty route = %v; want oldest_pending_at null and age 0", m)
	}
}

// A cron entry of the code is a Schedule (Source code) in the one JSON
// shape of a schedule: times null until the entry ran (or is due), no tz
// for the default zone, its spec under "cron", its last error; it reads
// back into the same schedule.
func TestSchedule_ACronEntryOfTheCodeIsTheOneShapeAndReadsBack(t *testing.T) {
	next := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	c := bananastype.Schedule{ID: "nightly", Source: bananastype.SourceCode, Name: "nightly", Route: "reports", Priority: queue.Low,
		Spec: "@daily", Overlap: bananastype.OverlapAllow, NextRun: next, RunCount: 3, LastJob: "J1.reports", LastError: "boom"}
	b := mustJSON(t, c)
	m := decodeJSON(t, b)
	for key, want := range map[string]any{"id": "nightly", "source": "code", "name": "nightly", "priority": "low", "cron": "@daily",
		"last_run": nil, "next_run": "2026-11-28T00:00:00Z", "run_count": 3.0, "last_job": "J1.reports", "last_error": "boom", "tz": nil} {
		if !reflect.DeepEqual(m[key], want) {
			t.Errorf("%s = %#v; want %#v (in %s)", key, m[key], want, b)
		}
	}
	var back bananastype.Schedule
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	back.NextRun = back.NextRun.UTC()
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("read back %+v; want %+v", back, c)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
