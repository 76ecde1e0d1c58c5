package runtime_test

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
	"github.com/bananas-go/bananas/scheduler"
)

// tickRecorder is a slog handler that keeps the tick of every "cron fired" line.
type tickRecorder struct {
	mu    *sync.Mutex
	ticks *[]string
}

func (h tickRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h tickRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h tickRecorder) WithGroup(string) slog.Handler            { return h }
func (h tickRecorder) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "bananas: cron fired" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "tick" {
			h.mu.Lock()
			*h.ticks = append(*h.ticks, a.Value.String())
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

// Three schedulers (separate clients, as separate processes would be) run one
// @every 1s entry on one real Redis: every tick is fired exactly once.
func TestCron_ThreeSchedulersFireEachTickOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Shared(t)
	ns := redistest.Namespace(t)
	var mu sync.Mutex
	var ticks []string
	entry := testtasks.Tick
	var stops []func()
	var probe *runtime.Client
	for range 3 {
		c := connect(t, srv.URL(), runtime.WithNamespace(ns))
		probe = c
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{SchedulerOnly: true, Logger: slog.New(tickRecorder{&mu, &ticks})}))
		runtime.Schedule(w, entry, "@every 1s", "")
		stops = append(stops, startWorker(t, w))
	}
	ctx := ctxT(t)
	waitFor(t, 15*time.Second, "five ticks", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ticks) >= 5
	})
	for _, stop := range stops {
		stop()
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Strings(ticks)
	for i := 1; i < len(ticks); i++ {
		if ticks[i] == ticks[i-1] {
			t.Fatalf("tick %s fired twice: %v", ticks[i], ticks)
		}
		a, _ := time.Parse(time.RFC3339, ticks[i-1])
		b, _ := time.Parse(time.RFC3339, ticks[i])
		if b.Sub(a) != time.Second {
			t.Fatalf("ticks %s and %s are not one second apart (a tick was skipped): %v", a, b, ticks)
		}
	}
	depth, err := runtime.QueueOf(probe).Ops.Depths(ctx, []string{"default"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := runtime.QueueOf(probe).CronState(ctx, "default", "t_tick")
	if err != nil {
		t.Fatal(err)
	}
	if int(depth[0].Normal) != len(ticks) || int(st.RunCount) != len(ticks) {
		t.Fatalf("%d ticks fired, %d jobs queued, run_count %d: want all equal", len(ticks), depth[0].Normal, st.RunCount)
	}
	if st.LastRun.IsZero() || !st.NextRun.After(st.LastRun) {
		t.Fatalf("cron state = %+v; want last_run and a later next_run", st)
	}
}

func TestCron_TimeZoneNextRun(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	next, err := scheduler.NextRun("0 3 * * *", "Europe/Berlin", from)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC); !next.Equal(want) {
		t.Fatalf("next 03:00 Berlin after %s = %s, want %s (CET is UTC+1)", from, next.UTC(), want)
	}
	summer := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	next, _ = scheduler.NextRun("0 3 * * *", "Europe/Berlin", summer)
	if want := time.Date(2026, 7, 2, 1, 0, 0, 0, time.UTC); !next.Equal(want) {
		t.Fatalf("next 03:00 Berlin in summer = %s, want %s (CEST is UTC+2)", next.UTC(), want)
	}
	if _, err := scheduler.NextRun("0 3 * * *", "Mars/Olympus", from); err == nil {
		t.Fatal("an unknown zone was accepted")
	}
}

// A cron entry's jobs run like any job, and its state is readable.
func TestCron_EntryJobsRunAndStateIsListed(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		entry := testtasks.Tick
		ran := make(chan struct{}, 10)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, entry, func(ctx context.Context, _ runtime.None) (runtime.None, error) {
			ran <- struct{}{}
			return runtime.None{}, nil
		})
		runtime.Schedule(w, entry, "@every 1s", "UTC")
		startWorker(t, w)
		recv(t, ran, 10*time.Second, "the cron entry's job to run")
		sts, err := w.CronStatus(ctxT(t))
		if err != nil || len(sts) != 1 || sts[0].RunCount < 1 || sts[0].Spec != "@every 1s" || sts[0].LastRun.IsZero() {
			t.Fatalf("CronStatus = %+v, %v", sts, err)
		}
	})
}

func TestCron_BadSpecIsAnErrorOfRun(t *testing.T) {
	t.Parallel()
	c := connect(t, "mem://")
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Schedule(w, testtasks.Tick, "every minute", "")
	if err := w.Run(ctxT(t)); err == nil {
		t.Fatal("Run accepted a bad cron spec")
	}
}
