package runtime_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
)

type debounced struct {
	Doc  string
	Rev  int
	Seen time.Time
}

var debouncedTask = runtime.NewTask[debounced, runtime.None]("debounced_save")

// debouncedWorker starts a worker of debouncedTask on c whose runs arrive,
// each stamped with when it ran, on the channel returned.
func debouncedWorker(t *testing.T, c *runtime.Client) (*runtime.Task[debounced, runtime.None], chan debounced) {
	task := debouncedTask.With(c)
	ran := make(chan debounced, 10)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(w, task, func(ctx context.Context, a debounced) (runtime.None, error) {
		a.Seen = time.Now()
		ran <- a
		return runtime.None{}, nil
	})
	startWorker(t, w)
	return task, ran
}

// Ten enqueues of one key over 3 s with a debounce of 2 s run once, with
// the last args, about 2 s after the last enqueue: each enqueue while the
// job waits gives it its args and moves its start, returning the same id
// and ErrDebounced (which matches ErrDuplicate).
func TestDebounce_TenEnqueuesRunOnceWithTheLastArgsAfterTheLast(t *testing.T) {
	onEveryServer(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task, ran := debouncedWorker(t, c)
		opts := []runtime.Option{runtime.Unique(time.Minute), runtime.UniqueBy("Doc"), runtime.Debounce(2 * time.Second)}
		var first string
		var last time.Time
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for i := range 10 {
			if i > 0 {
				<-tick.C // the enqueues' pace is the scenario: ten over about 3 s
			}
			id, err := task.Enqueue(ctx, debounced{Doc: "d", Rev: i}, opts...)
			last = time.Now()
			switch {
			case i == 0 && err != nil:
				t.Fatal(err)
			case i == 0:
				first = id
			case !errors.Is(err, runtime.ErrDebounced) || !errors.Is(err, runtime.ErrDuplicate) || id != first:
				t.Fatalf("enqueue %d = %q, %v; want %s and ErrDebounced", i, id, err, first)
			}
			select {
			case a := <-ran:
				t.Fatalf("the job ran (rev %d) while enqueues kept coming", a.Rev)
			default:
			}
		}
		got := recv(t, ran, 10*time.Second, "the debounced job to run")
		if got.Rev != 9 {
			t.Fatalf("ran with rev %d; want the last args (9)", got.Rev)
		}
		if after := got.Seen.Sub(last); after < 1900*time.Millisecond || after > 4*time.Second {
			t.Fatalf("ran %s after the last enqueue; want about 2s", after)
		}
		if _, err := task.Await(ctx, first); err != nil {
			t.Fatal(err)
		}
		st, err := runtime.QueueOf(c).Ops.Stats(ctx, "default")
		if err != nil || st["processed"] != 1 || st["enqueued"] != 1 || st["debounced"] != 9 {
			t.Fatalf("stats %v, %v; want one job enqueued and processed, nine debounced", st, err)
		}
	})
}

// DebounceMax caps how far enqueues push the job back: it runs at the
// latest the cap after the enqueue that created it, though enqueues go on.
func TestDebounceMax_CapsHowLongEnqueuesPushTheJobBack(t *testing.T) {
	onEveryServer(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task, ran := debouncedWorker(t, c)
		opts := []runtime.Option{runtime.Unique(time.Minute), runtime.UniqueBy("Doc"),
			runtime.Debounce(time.Second), runtime.DebounceMax(1500 * time.Millisecond)}
		start := time.Now()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		var got debounced
	loop:
		for i := 0; ; i++ {
			if _, err := task.Enqueue(ctx, debounced{Doc: "capped", Rev: i}, opts...); err != nil && !errors.Is(err, runtime.ErrDuplicate) {
				t.Fatal(err)
			}
			select {
			case got = <-ran:
				break loop
			case <-tick.C:
			}
			if time.Since(start) > 10*time.Second {
				t.Fatal("the job never ran while enqueues went on: " + strconv.Itoa(i) + " enqueues")
			}
		}
		if after := got.Seen.Sub(start); after < 1400*time.Millisecond || after > 3500*time.Millisecond {
			t.Fatalf("ran %s after the first enqueue; want about the cap, 1.5s", after)
		}
	})
}
