package bananastype_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
)

// A job's JSON is the API's and --json's shape — snake_case keys, unset
// times null, durations in _ms keys, args and result as JSON, null when
// unknown — and reads back into the same job.
func TestJob_JSONIsTheOneShapeAndReadsBack(t *testing.T) {
	created := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	j := bananastype.Job{ID: "01J.default", Name: "send_email", Route: "default", Priority: queue.High, Status: queue.StatusFailed,
		Attempts: 3, MaxRetries: 2, Error: "boom", Timeout: 1500 * time.Millisecond, CreatedAt: created,
		FailedAt: []time.Time{created.Add(time.Second)}, Args: json.RawMessage(`{"To":"a@b"}`)}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{"task": "send_email", "status": "failed", "retries": 2.0, "timeout_ms": 1500.0,
		"created_at": "2026-11-26T10:00:00Z", "started_at": nil, "result": nil, "lease_deadline": nil} {
		if !reflect.DeepEqual(m[key], want) {
			t.Errorf("%s = %#v; want %#v (in %s)", key, m[key], want, b)
		}
	}
	var back bananastype.Job
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.ID != j.ID || back.Name != j.Name || back.Timeout != j.Timeout || !back.CreatedAt.Equal(created) || !back.StartedAt.IsZero() ||
		len(back.FailedAt) != 1 || string(back.Args) != string(j.Args) || back.ResultJSON != nil {
		t.Fatalf("read back %+v; want %+v", back, j)
	}
}

// A page lists its jobs without their args and result, and an empty page
// lists [] (not null).
func TestJobPage_ListsSummaries(t *testing.T) {
	b, _ := json.Marshal(bananastype.JobPage{Jobs: []bananastype.Job{{ID: "x", Args: json.RawMessage(`{}`)}}})
	if s := string(b); strings.Contains(s, "args") || !strings.Contains(s, `"next":""`) {
		t.Fatalf("page = %s; want summaries without args and an empty next", s)
	}
	if b, _ := json.Marshal(bananastype.JobPage{Jobs: []bananastype.Job{}}); !strings.Contains(string(b), `"jobs":[]`) {
		t.Fatalf("empty page = %s; want jobs []", b)
	}
}

// A step's job names its workflow in "workflow", left out for a job of none.
func TestJob_JSONNamesItsWorkflow(t *testing.T) {
	b, _ := json.Marshal(bananastype.Job{ID: "J1", Workflow: "W1"})
	if decodeJSON(t, b)["workflow"] != "W1" {
		t.Fatalf("job = %s; want workflow W1", b)
	}
	var back bananastype.Job
	if err := json.Unmarshal(b, &back); err != nil || back.Workflow != "W1" {
		t.Fatalf("read back %+v, %v", back, err)
	}
	if b, _ := json.Marshal(bananastype.Job{ID: "J2"}); decodeJSON(t, b)["workflow"] != nil {
		t.Fatalf("job of no workflow = %s; want no workflow key", b)
	}
}

func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A row of the task history is a Job: a page of the history writes each as
// a row (life, attempt, enqueued_at, ended_at, worker; no listing fields)
// and reads it back into the same Job.
func TestHistoryPage_WritesEachJobAsARowAndReadsItBack(t *testing.T) {
	enq := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	j := bananastype.Job{ID: "h1", Life: 1, Attempts: 3, Name: "send_email", Route: "email", Priority: queue.High,
		Status: queue.StatusFailed, Args: json.RawMessage(`{"To":"a@b"}`), Error: "boom", CreatedAt: enq,
		StartedAt: enq.Add(time.Second), FinishedAt: enq.Add(2 * time.Second), Worker: "w1", Sanitized: "nul"}
	b, err := json.Marshal(bananastype.HistoryPage{Jobs: []bananastype.Job{j}, Next: "c"})
	if err != nil {
		t.Fatal(err)
	}
	var w struct{ Jobs []map[string]any }
	if err := json.Unmarshal(b, &w); err != nil || len(w.Jobs) != 1 {
		t.Fatalf("page = %s, %v", b, err)
	}
	row := w.Jobs[0]
	for key, want := range map[string]any{"id": "h1", "life": 1.0, "attempt": 3.0, "task": "send_email", "status": "failed",
		"enqueued_at": "2026-11-26T10:00:00Z", "ended_at": "2026-11-26T10:00:02Z", "worker": "w1", "result": nil, "sanitized": "nul"} {
		if !reflect.DeepEqual(row[key], want) {
			t.Errorf("%s = %#v; want %#v (in %s)", key, row[key], want, b)
		}
	}
	for _, key := range []string{"attempts", "created_at", "finished_at", "max_retries"} {
		if _, ok := row[key]; ok {
			t.Errorf("row has %q, a job's key, not a row's (in %s)", key, b)
		}
	}
	var back bananastype.HistoryPage
	if err := json.Unmarshal(b, &back); err != nil || len(back.Jobs) != 1 {
		t.Fatalf("read back %+v, %v", back, err)
	}
	if got := back.Jobs[0]; !reflect.DeepEqual(got, j) {
		t.Fatalf("read back %+v; want %+v", got, j)
	}
}

// A job's end says where it left the job, from how the run ended alone.
func TestJobEnd_StatusIsWhereItsEndingLeftTheJob(t *testing.T) {
	for how, want := range map[queue.Ending]queue.Status{
		queue.EndCompleted: queue.StatusCompleted, queue.EndRetrying: queue.StatusScheduled, queue.EndSnoozed: queue.StatusScheduled,
		queue.EndDead: queue.StatusFailed, queue.EndCanceled: queue.StatusCanceled, queue.EndHandedBack: queue.StatusPending,
	} {
		if got := (bananastype.JobEnd{Ending: how}).Status(); got != want {
			t.Errorf("end %s: status %q; want %q", how, got, want)
		}
	}
	for _, how := range []queue.Ending{queue.EndStale, queue.EndOrphan, queue.EndCorrupt} {
		if got := how.Status(); got != "" {
			t.Errorf("%s, which ends no run, has status %q", how, got)
		}
	}
}
