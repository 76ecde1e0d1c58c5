package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bananas-go/bananas/bananastype"

	"github.com/bananas-go/bananas/internal/faultproxy"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// progressOf is job id's progress as Client.Job reads it; nil when none.
func progressOf(t *testing.T, c *runtime.Client, id string) *bananastype.Progress {
	t.Helper()
	return jobInfo(t, c, id).Progress
}

// waitProgress waits until Client.Job shows job id at percent, with note
// unless note is "".
func waitProgress(t *testing.T, c *runtime.Client, id string, percent int, note string) {
	t.Helper()
	waitFor(t, 20*time.Second, fmt.Sprintf("job %s to show progress %d%% %q", id, percent, note), func() bool {
		p := progressOf(t, c, id)
		return p != nil && p.Percent == percent && (note == "" || p.Note == note)
	})
}

// A handler's progress is seen, while it runs, by Client.Job and by GET
// /api/v1/jobs/{id} (as the OpenAPI document describes it), each new value
// replacing the last; once the job ended, neither shows any.
func TestProgress_SeenByJobAndAPIWhileTheJobRuns(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		step, done := make(chan [2]any), make(chan struct{})
		r := newSpecRigWith(t, c, func(w *runtime.Worker) {
			runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
				for s := range step {
					if err := runtime.Progress(ctx, s[0].(int), s[1].(string)); err != nil {
						return testtasks.Reply{}, err
					}
				}
				<-done
				return testtasks.Reply{Text: m.Text}, nil
			})
		})
		id := r.submit(`{"name":"t_echo","args":{"Text":"slow"}}`)
		waitFor(t, 10*time.Second, "the job to run", func() bool { return jobStatus(t, c, id) == runtime.StatusProcessing })
		if p := progressOf(t, c, id); p != nil {
			t.Fatalf("progress before the handler said any = %+v; want none", p)
		}
		if job := r.conforms(http.StatusOK, "GET", "/api/v1/jobs/"+id, "").(map[string]any); job["progress"] != nil || job["note"] != nil || job["at"] != nil {
			t.Fatalf("GET job before any progress = %v; want no progress, note or at", job)
		}
		before := time.Now().Add(-time.Second)
		for _, want := range []struct {
			percent int
			note    string
		}{{40, "resizing"}, {85, "almost there: 17 of 20"}} {
			step <- [2]any{want.percent, want.note}
			waitFor(t, 5*time.Second, fmt.Sprintf("Job to show %d%%", want.percent), func() bool {
				p := progressOf(t, c, id)
				return p != nil && p.Percent == want.percent && p.Note == want.note && p.At.After(before) && p.At.Before(time.Now().Add(time.Second))
			})
			job := r.conforms(http.StatusOK, "GET", "/api/v1/jobs/"+id, "").(map[string]any)
			at, _ := job["at"].(string)
			if _, err := time.Parse(time.RFC3339, at); err != nil || job["progress"] != float64(want.percent) || job["note"] != want.note {
				t.Fatalf("GET job while it runs = progress %v note %v at %v; want %d, %q and an RFC 3339 time", job["progress"], job["note"], job["at"], want.percent, want.note)
			}
		}
		close(step)
		close(done)
		if _, err := testtasks.Echo.With(c).Await(ctx, id); err != nil {
			t.Fatal(err)
		}
		if p := progressOf(t, c, id); p != nil {
			t.Errorf("progress of the completed job = %+v; want none", p)
		}
		if job := r.conforms(http.StatusOK, "GET", "/api/v1/jobs/"+id, "").(map[string]any); job["progress"] != nil {
			t.Errorf("GET the completed job = %v; want no progress", job)
		}
	})
}

// A retry starts with no progress: the failed attempt's last value is not
// shown for the next one, which shows nothing until it reports.
func TestProgress_RetryShowsNoneOfTheFailedAttempt(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		fail, second, report := make(chan struct{}), make(chan struct{}), make(chan struct{})
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			job, _ := runtime.CurrentJob(ctx)
			if job.Attempt == 1 {
				if err := runtime.Progress(ctx, 60, "first attempt"); err != nil {
					return testtasks.Reply{}, err
				}
				<-fail
				return testtasks.Reply{}, errors.New("boom")
			}
			second <- struct{}{}
			<-report
			if err := runtime.Progress(ctx, 10, "second attempt"); err != nil {
				return testtasks.Reply{}, err
			}
			<-ctx.Done()
			return testtasks.Reply{}, nil
		})
		startWorker(t, w)
		id, err := testtasks.Echo.With(c).Enqueue(ctx, testtasks.Msg{Text: "retry"}, runtime.MaxRetries(3))
		if err != nil {
			t.Fatal(err)
		}
		waitProgress(t, c, id, 60, "")
		close(fail)
		recv(t, second, 10*time.Second, "the second attempt to start")
		info := jobInfo(t, c, id)
		if info.Status != runtime.StatusProcessing || info.Attempts != 2 || info.Progress != nil {
			t.Fatalf("the retry before it reports: status %s, attempts %d, progress %+v; want processing, 2, none", info.Status, info.Attempts, info.Progress)
		}
		// Redis still holds the first attempt's value: it is the reading
		// that leaves it out.
		route, _ := queue.RouteOf(id)
		q := runtime.QueueOf(c)
		stored, err := q.Client().Get(ctx, q.Keys(route).Progress(id)).Result()
		if p, ok := queue.ParseProgress(stored); err != nil || !ok || p.Attempt != 1 || p.Percent != 60 {
			t.Fatalf("stored progress during the retry = %q, %v; want the first attempt's", stored, err)
		}
		close(report)
		waitProgress(t, c, id, 10, "second attempt")
		if _, err := w.Inspector().Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
	})
}

// A note is kept to MaxProgressNote bytes, cut at a rune boundary, and a
// percent outside 0..100 is refused, naming it.
func TestProgress_LongNoteIsCutAndBadPercentRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		errs := make(chan []error, 1)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			errs <- []error{runtime.Progress(ctx, 101, "x"), runtime.Progress(ctx, -1, "x"), runtime.Progress(ctx, 50, strings.Repeat("é", 150))}
			<-ctx.Done()
			return testtasks.Reply{}, nil
		})
		startWorker(t, w)
		id, err := testtasks.Echo.With(c).Enqueue(ctx, testtasks.Msg{})
		if err != nil {
			t.Fatal(err)
		}
		got := recv(t, errs, 10*time.Second, "the handler's calls")
		for i, percent := range []string{"101", "-1"} {
			if got[i] == nil || !strings.Contains(got[i].Error(), "percent "+percent) {
				t.Errorf("Progress(ctx, %s, ...) = %v; want an error naming the percent", percent, got[i])
			}
		}
		if got[2] != nil {
			t.Fatalf("Progress with a long note = %v; want it cut, no error", got[2])
		}
		waitFor(t, 5*time.Second, "the progress with the long note", func() bool { return progressOf(t, c, id) != nil })
		note := progressOf(t, c, id).Note
		if len(note) != runtime.MaxProgressNote || !utf8.ValidString(note) || note != strings.Repeat("é", runtime.MaxProgressNote/2) {
			t.Errorf("stored note of %d bytes (valid UTF-8: %v); want the first %d bytes of the note", len(note), utf8.ValidString(note), runtime.MaxProgressNote)
		}
		if _, err := w.Inspector().Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
	})
}

// Progress called with a context that is not a handler's is an error that
// says so, and stores nothing.
func TestProgress_OutsideAHandlerIsAnError(t *testing.T) {
	type otherKey struct{}
	for _, ctx := range []context.Context{context.Background(), context.WithValue(context.Background(), otherKey{}, 1)} {
		err := runtime.Progress(ctx, 50, "x")
		if err == nil || !strings.Contains(err.Error(), "not a handler's context") {
			t.Errorf("Progress(%v) = %v; want an error saying ctx is not a handler's", ctx, err)
		}
	}
}

// Whatever bytes the progress key of a running job holds — garbage, another
// version, another run's token, a value of another type — Client.Job reads
// them as no progress, without an error.
func TestProgress_GarbageStoredReadsAsNone(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		started := make(chan struct{}, 1)
		runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			started <- struct{}{}
			<-ctx.Done()
			return testtasks.Reply{}, nil
		})
		startWorker(t, w)
		id, err := testtasks.Echo.With(c).Enqueue(ctx, testtasks.Msg{})
		if err != nil {
			t.Fatal(err)
		}
		recv(t, started, 10*time.Second, "the job to start")
		q := runtime.QueueOf(c)
		route, _ := queue.RouteOf(id)
		key := q.Keys(route).Progress(id)
		rdb := q.Client()
		now := time.Now().UnixMilli()
		for _, v := range []string{
			"", "\xff\xfe garbage", "1|", "1|1|tok|50", "2|1|tok|50|1|x", "1|x|tok|50|1|x", "1|1||50|1|x",
			"1|1|tok|101|1|x", "1|1|tok|-1|1|x", "1|0|tok|5|1|x", "1|1|tok|5|0|x", "1|1|tok|5|1|\xff",
			fmt.Sprintf("1|1|not-the-lease|50|%d|another run's", now),
			fmt.Sprintf("1|2|x|50|%d|%s", now, strings.Repeat("n", 500)),
		} {
			if err := rdb.Set(ctx, key, v, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			info, err := c.Job(ctx, id)
			if err != nil || info.Progress != nil || info.Status != runtime.StatusProcessing {
				t.Fatalf("Job with %q stored as progress = %+v, %v; want processing, no progress, no error", v, info, err)
			}
		}
		if err := rdb.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.HSet(ctx, key, "f", "v").Err(); err != nil {
			t.Fatal(err)
		}
		if info, err := c.Job(ctx, id); err != nil || info.Progress != nil {
			t.Fatalf("Job with a hash for its progress = %+v, %v; want no progress, no error", info, err)
		}
		if _, err := w.Inspector().Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
	})
}

// However often a handler calls Progress (here 1,000+ times in about a
// second), its job costs Redis at most one write per ProgressEvery: the
// SETs of its progress key, counted by keyspace notifications on a Redis of
// the test's own, are at most ceil(run/ProgressEvery)+1.
func TestProgress_ManyCallsCostAtMostOneWritePerPeriod(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := ctxT(t)
	if err := rdb.ConfigSet(ctx, "notify-keyspace-events", "K$").Err(); err != nil {
		t.Fatal(err)
	}
	c := connect(t, srv.URL())
	sub := rdb.PSubscribe(ctx, "__keyspace@0__:*:progress:*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	type run struct {
		calls      int
		start, end time.Time
		last       int
	}
	ran := make(chan run, 1)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		r := run{start: time.Now()}
		for time.Since(r.start) < time.Second || r.calls < 1000 {
			r.last = r.calls % 101
			if err := runtime.Progress(ctx, r.last, fmt.Sprintf("call %d", r.calls)); err != nil {
				return testtasks.Reply{}, err
			}
			r.calls++
			if r.calls%4 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		r.end = time.Now()
		ran <- r
		return testtasks.Reply{}, nil
	})
	stop := startWorker(t, w)
	id, err := testtasks.Echo.With(c).Enqueue(ctx, testtasks.Msg{})
	if err != nil {
		t.Fatal(err)
	}
	r := recv(t, ran, 20*time.Second, "the handler's calls")
	if _, err := testtasks.Echo.With(c).Await(ctx, id); err != nil {
		t.Fatal(err)
	}
	stop() // its last flush done
	// A write of the test's own (an APPEND, which the worker never does)
	// after every write of the worker: notifications come in order, so once
	// its own came, every earlier one has.
	route, _ := queue.RouteOf(id)
	key := runtime.QueueOf(c).Keys(route).Progress(id)
	if err := rdb.Append(ctx, key, "|end").Err(); err != nil {
		t.Fatal(err)
	}
	writes := 0
	for {
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatalf("keyspace notifications: %v (after %d writes)", err, writes)
		}
		if !strings.HasSuffix(msg.Channel, ":progress:"+id) {
			continue
		}
		if msg.Payload == "append" {
			break
		}
		if msg.Payload == "set" {
			writes++
		}
	}
	d := r.end.Sub(r.start)
	limit := int((d+runtime.ProgressEvery-1)/runtime.ProgressEvery) + 1
	t.Logf("%d Progress calls over %s: %d writes (at most %d)", r.calls, d.Round(time.Millisecond), writes, limit)
	if r.calls < 1000 || writes < 1 || writes > limit {
		t.Fatalf("%d Progress calls over %s cost %d writes of the progress key; want 1 to %d", r.calls, d, writes, limit)
	}
}

// Progress never waits on Redis: while the worker's connections hang,
// 1,000 calls return at once, and once Redis answers again the last value
// said is written and shown.
func TestProgress_CallsNeverWaitOnRedisAndTheLastValueGoesOutAfter(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	px, err := faultproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	ns := redistest.Namespace(t)
	direct := connect(t, srv.URL(), runtime.WithNamespace(ns))
	viaProxy := connect(t, "redis://"+px.Addr()+"/0", runtime.WithNamespace(ns))
	logs := &logCount{n: map[string]int{}}
	w := runtime.NewWorker(viaProxy, fastOpts(runtime.WorkerOptions{Lease: 30 * time.Second, Logger: slog.New(logs)}))
	started, calls, took := make(chan struct{}), make(chan struct{}), make(chan time.Duration, 1)
	runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		close(started)
		<-calls
		begin := time.Now()
		for i := range 1000 {
			if err := runtime.Progress(ctx, i/10, fmt.Sprintf("call %d", i)); err != nil {
				return testtasks.Reply{}, err
			}
		}
		took <- time.Since(begin)
		<-ctx.Done()
		return testtasks.Reply{}, nil
	})
	startWorker(t, w)
	ctx := ctxT(t)
	id, err := testtasks.Echo.With(direct).Enqueue(ctx, testtasks.Msg{})
	if err != nil {
		t.Fatal(err)
	}
	recv(t, started, 10*time.Second, "the job to start")
	px.Hang()
	close(calls)
	if d := recv(t, took, 5*time.Second, "1,000 Progress calls while Redis hangs"); d > time.Second {
		t.Fatalf("1,000 Progress calls took %s while Redis hung; want them to return at once", d)
	}
	waitFor(t, 20*time.Second, "the worker to log that writing progress failed", func() bool {
		return logs.containing("outage: progress") > 0
	})
	px.Resume()
	waitProgress(t, direct, id, 99, "call 999")
	if _, err := w.Inspector().Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// On a Redis Cluster the progress of jobs of several routes, on the masters
// their slots fall on, goes out in one flush and each is read back from its
// job's slot.
func TestProgress_OnAClusterEachJobsProgressIsReadFromItsSlot(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.SharedCluster(t).URL())
	ctx := ctxT(t)
	routes := []string{"images", "email", "default", "reports"}
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: routes, Concurrency: len(routes)}))
	runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		if err := runtime.Progress(ctx, m.N, m.Text); err != nil {
			return testtasks.Reply{}, err
		}
		<-ctx.Done()
		return testtasks.Reply{}, nil
	})
	startWorker(t, w)
	ids := make([]string, len(routes))
	for i, r := range routes {
		var err error
		if ids[i], err = testtasks.Echo.With(c).Enqueue(ctx, testtasks.Msg{Text: "on " + r, N: 10 * (i + 1)}, runtime.Route(r)); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range ids {
		waitProgress(t, c, id, 10*(i+1), "on "+routes[i])
		if _, err := w.Inspector().Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
}
