package results_test

import (
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/results"
)

// A record read as a job says how the job ended (completed, canceled,
// failed) and what it was, its times in UTC, its lives before a replay
// parsed; its args and result are left to the caller.
func TestRecordJob_IsWhatTheJobWasAndHowItEnded(t *testing.T) {
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	life := queue.EarlierLife{FirstRun: 1, Attempts: 2, Died: at, Replayed: at.Add(time.Second), Error: "boom"}
	rec := results.Record{ID: "j1", Name: "send", Priority: "high", Attempts: 3, MaxRetries: 2, Error: "stop", Canceled: true,
		CreatedAt: at.UnixMilli(), StartedAt: at.Add(time.Second).UnixMilli(), FinishedAt: at.Add(2 * time.Second).UnixMilli(),
		Timeout: 1500, Description: "d", Worker: "w1", Workflow: "wf", Args: []byte{0x90}, Value: []byte{0xc0},
		FailedAt: []int64{at.UnixMilli()}, FailedStartedAt: []int64{0}, Earlier: []string{life.String()}}
	j := rec.Job("email")
	if j.ID != "j1" || j.Name != "send" || j.Route != "email" || j.Priority != queue.High || j.Status != queue.StatusCanceled ||
		j.Attempts != 3 || j.MaxRetries != 2 || j.Error != "stop" || j.Timeout != 1500*time.Millisecond || j.Description != "d" ||
		j.Worker != "w1" || j.Workflow != "wf" || j.Life != 1 {
		t.Fatalf("job = %+v", j)
	}
	if !j.CreatedAt.Equal(at) || j.CreatedAt.Location() != time.UTC || !j.FinishedAt.Equal(at.Add(2*time.Second)) ||
		len(j.FailedAt) != 1 || len(j.FailedStartedAt) != 1 || len(j.Earlier) != 1 || j.Earlier[0].Error != "boom" {
		t.Fatalf("job times and lives = %+v", j)
	}
	if j.ArgsMsgpack != nil || j.Result != nil || j.Args != nil || j.ResultJSON != nil {
		t.Fatalf("job carries args or result: %+v", j)
	}
	for rec, want := range map[*results.Record]queue.Status{{OK: true}: queue.StatusCompleted, {}: queue.StatusFailed, {Canceled: true}: queue.StatusCanceled} {
		if got := rec.Job("r").Status; got != want {
			t.Errorf("status of %+v = %s; want %s", *rec, got, want)
		}
	}
}
