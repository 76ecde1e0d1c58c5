package bananastype_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
)

// A schedule's JSON has snake_case keys, durations in ms, unset times as
// null, and reads back as written.
func TestSchedule_JSONRoundTrips(t *testing.T) {
	t.Parallel()
	s := bananastype.Schedule{ID: "report:acme", Source: bananastype.SourceData, Name: "report", Route: "default", Priority: "normal",
		Args: json.RawMessage(`{"account":"acme"}`), Spec: "@every 1s", TZ: "Europe/Berlin", Jitter: 1500 * time.Millisecond,
		Overlap: bananastype.OverlapBufferOne, CatchUp: time.Hour, NextRun: time.UnixMilli(1_800_000_000_000).UTC(), LastJob: "j", RunCount: 3, Skipped: 1}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"cron":"@every 1s"`, `"jitter_ms":1500`, `"catch_up_ms":3600000`, `"overlap":"buffer_one"`, `"start":null`, `"last_run":null`, `"source":"data"`, `"next_run":"2027-01-15T08:00:00Z"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	var back bananastype.Schedule
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Fatalf("read back %+v\nwant        %+v", back, s)
	}
}
