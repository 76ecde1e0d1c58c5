package queue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

func progressWrite(d *queue.Dispatch, token string, percent int, note string) queue.ProgressWrite {
	return queue.ProgressWrite{Route: d.Route, ID: d.ID, TTL: time.Minute,
		Progress: queue.Progress{Attempt: d.Attempts + 1, Token: token, Percent: percent, Note: note, At: time.Now()}}
}

// Progress is stored only for the run that holds the job's lease: Lookup
// shows it while that run holds it; a write under another token (a run
// reaped and started again, a late flush) stores nothing; once the job was
// acked a write stores nothing and Lookup shows none. The value lives with
// a TTL, so it does not outlive the run by more than it.
func TestWriteProgress_OnlyTheRunHoldingTheLeaseWrites(t *testing.T) {
	for _, lease := range []struct {
		name string
		of   func(*testing.T, *queue.Queue, int, time.Time, time.Time) []*queue.Dispatch
	}{{"light", leaseLight}, {"heavy", leaseHeavy}} {
		t.Run(lease.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, q *queue.Queue) {
				ctx := context.Background()
				now := time.Now()
				d := lease.of(t, q, 1, now, now.Add(time.Minute))[0]
				if _, err := q.Jobs.WriteProgress(ctx, []queue.ProgressWrite{progressWrite(d, d.Token, 30, "thirty | with a bar")}); err != nil {
					t.Fatal(err)
				}
				s, err := q.Jobs.Lookup(ctx, d.ID)
				if err != nil || s.Progress == nil || s.Progress.Percent != 30 || s.Progress.Note != "thirty | with a bar" || s.Progress.Token != d.Token {
					t.Fatalf("Lookup after a write of the leased run = %+v, %v; want its progress", s, err)
				}
				if ttl, err := q.Client().PTTL(ctx, q.Keys(d.Route).Progress(d.ID)).Result(); err != nil || ttl <= 0 || ttl > time.Minute {
					t.Fatalf("progress key TTL = %s, %v; want at most the write's minute", ttl, err)
				}
				if _, err := q.Jobs.WriteProgress(ctx, []queue.ProgressWrite{progressWrite(d, "0-another", 90, "stale")}); err != nil {
					t.Fatal(err)
				}
				if s, _ := q.Jobs.Lookup(ctx, d.ID); s == nil || s.Progress == nil || s.Progress.Percent != 30 {
					t.Fatalf("Lookup after a write under another token = %+v; want the leased run's 30%%", s)
				}
				if ok, err := q.Jobs.Ack(ctx, d, []byte("rec"), time.Minute); err != nil || !ok {
					t.Fatalf("ack = %v, %v", ok, err)
				}
				if _, err := q.Jobs.WriteProgress(ctx, []queue.ProgressWrite{progressWrite(d, d.Token, 100, "late")}); err != nil {
					t.Fatal(err)
				}
				v, _ := q.Client().Get(ctx, q.Keys(d.Route).Progress(d.ID)).Result()
				if p, _ := queue.ParseProgress(v); p.Percent != 30 {
					t.Fatalf("progress stored after the ack = %q; want the last value of the run, untouched", v)
				}
				if s, _ := q.Jobs.Lookup(ctx, d.ID); s == nil || s.Progress != nil {
					t.Fatalf("Lookup of the acked job = %+v; want no progress", s)
				}
			})
		})
	}
}

// A write that is not valid is refused before Redis is asked, naming what
// is wrong; the valid writes of the same call are stored.
func TestWriteProgress_InvalidWritesAreRefusedOthersStored(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		d := leaseLight(t, q, 1, now, now.Add(time.Minute))[0]
		bad := []queue.ProgressWrite{
			progressWrite(d, d.Token, 101, ""), progressWrite(d, "a|b", 5, ""),
			progressWrite(d, d.Token, 5, strings.Repeat("x", queue.MaxProgressNote+1)), progressWrite(d, d.Token, 5, "\xff"),
		}
		noTTL := progressWrite(d, d.Token, 5, "")
		noTTL.TTL = 0
		bad = append(bad, noTTL)
		failed, err := q.Jobs.WriteProgress(ctx, append(bad, progressWrite(d, d.Token, 7, "ok")))
		if err == nil || len(failed) != 0 {
			t.Fatalf("WriteProgress with invalid writes = %v, %v; want an error and nothing to try again", failed, err)
		}
		for _, want := range []string{"percent 101", `"a|b"`, "note of 201 bytes", "note of 1 bytes", "ttl 0s"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
		}
		if s, _ := q.Jobs.Lookup(ctx, d.ID); s == nil || s.Progress == nil || s.Progress.Percent != 7 {
			t.Fatalf("Lookup = %+v; want the valid write's 7%%", s)
		}
	})
}

// Whatever a stored progress holds, parsing it never fails the reader: it
// is a progress that writes back as itself, or none.
func FuzzParseProgress(f *testing.F) {
	f.Add("1|1|tok|50|1700000000000|resizing")
	f.Add("1|2|t|100|1|a|b|c")
	f.Add("\xff|1|t")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := queue.ParseProgress(s)
		if !ok {
			return
		}
		if p.Percent < 0 || p.Percent > 100 || p.Attempt < 1 || p.Token == "" || len(p.Note) > queue.MaxProgressNote {
			t.Fatalf("ParseProgress(%q) = %+v; out of its bounds", s, p)
		}
	})
}
