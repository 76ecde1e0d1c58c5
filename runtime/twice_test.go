package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// Every command and pipeline this client sends reaches Redis twice, as when a
// reply is lost and go-redis resends: single and batched enqueues, delayed,
// chosen-id and unique jobs, fetches (with acks riding on them), acks, a
// failure and its retry. Each job must still run exactly once per attempt,
// each enqueue answer "written" (never ErrDuplicate for its own job), and the
// counters count each job once.
func TestEveryCallSentTwice_EachJobRunsOncePerAttempt(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		want, k := runEveryWaySentTwice(t, c, testtasks.Echo)
		ctx := ctxT(t)
		stats, err := c.Redis().HGetAll(ctx, k.Stats()).Result()
		if err != nil {
			t.Fatal(err)
		}
		total := strconv.Itoa(want)
		if stats["enqueued"] != total || stats["processed"] != total {
			t.Errorf("stats = %v, want enqueued and processed %s", stats, total)
		}
		for _, key := range []string{k.List(queue.High), k.List(queue.Normal), k.List(queue.Low), k.Active(), k.Leases(), k.Groups(), k.Payloads(), k.Scheduled()} {
			if n, _ := c.Redis().Exists(ctx, key).Result(); n != 0 {
				t.Errorf("%s still exists after every job finished", key)
			}
		}
	})
}

// runEveryWaySentTwice sends every command of a worker of task and of its
// producer twice, enqueues jobs every way (enqueueEveryWay), waits for them
// all and checks each ran once per attempt; it returns how many jobs it
// enqueued and the keys of their route.
func runEveryWaySentTwice(t *testing.T, c *runtime.Client, of *runtime.Task[testtasks.Msg, testtasks.Reply]) (int, queue.Keys) {
	t.Helper()
	twice := &redistest.Twice{}
	c.Redis().AddHook(twice)
	task := of.With(c)
	ctx := ctxT(t)
	mu, runs := startOnceFailer(t, c, task)
	want := enqueueEveryWay(ctx, t, task)
	for id := range want {
		if _, err := task.Await(ctx, id); err != nil {
			t.Fatalf("Await(%s): %v", id, err)
		}
	}
	mu.Lock()
	for id, n := range want {
		if runs[id] != n {
			t.Errorf("job %s ran %d times, want %d", id, runs[id], n)
		}
	}
	mu.Unlock()
	if twice.Runs() == 0 {
		t.Fatal("no command was sent twice")
	}
	return len(want), queue.RouteKeys(c.Namespace(), "default")
}

// startOnceFailer starts a worker that counts each job's runs and fails the
// first run of a job whose N is 1.
func startOnceFailer(t *testing.T, c *runtime.Client, task *runtime.Task[testtasks.Msg, testtasks.Reply]) (*sync.Mutex, map[string]int) {
	mu := &sync.Mutex{}
	runs := map[string]int{}
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 8, Lease: 10 * time.Second}))
	runtime.Handle(w, task, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		j, _ := runtime.CurrentJob(ctx)
		mu.Lock()
		runs[j.ID]++
		n := runs[j.ID]
		mu.Unlock()
		if m.N == 1 && n == 1 {
			return testtasks.Reply{}, errors.New("fails once")
		}
		return testtasks.Reply{Text: m.Text}, nil
	})
	startWorker(t, w)
	return mu, runs
}

// enqueueEveryWay enqueues jobs singly from 8 goroutines (one of each
// failing once), in a batch, delayed, with a chosen id and unique, and
// returns the runs each id should get.
func enqueueEveryWay(ctx context.Context, t *testing.T, task *runtime.Task[testtasks.Msg, testtasks.Reply]) map[string]int {
	want := map[string]int{} // id -> runs expected
	var wmu sync.Mutex
	add := func(id string, failsOnce bool) {
		wmu.Lock()
		defer wmu.Unlock()
		if _, dup := want[id]; dup {
			t.Errorf("id %s answered twice", id)
		}
		want[id] = 1
		if failsOnce {
			want[id] = 2
		}
	}
	var wg sync.WaitGroup
	for g := range 8 { // single enqueues, coalesced into flushes
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				fails := i == 0
				id, err := task.Enqueue(ctx, testtasks.Msg{Text: fmt.Sprint(g, i), N: map[bool]int{true: 1}[fails]})
				if err != nil {
					t.Errorf("Enqueue: %v", err)
					return
				}
				add(id, fails)
			}
		}()
	}
	wg.Wait()
	batch := make([]testtasks.Msg, 40)
	for i := range batch {
		batch[i] = testtasks.Msg{Text: "batch" + strconv.Itoa(i)}
	}
	ids, err := task.EnqueueMany(ctx, batch)
	if err != nil {
		t.Fatalf("EnqueueMany: %v", err)
	}
	for _, id := range ids {
		add(id, false)
	}
	for i := range 5 {
		id, err := task.Enqueue(ctx, testtasks.Msg{Text: "later"}, runtime.Delay(50*time.Millisecond))
		if err != nil {
			t.Fatalf("Enqueue with Delay: %v", err)
		}
		add(id, false)
		id, err = task.Enqueue(ctx, testtasks.Msg{Text: "chosen"}, runtime.WithID("chosen-"+strconv.Itoa(i)))
		if err != nil {
			t.Fatalf("Enqueue WithID, sent twice: %v; want its own job answered as written", err)
		}
		add(id, false)
		id, err = task.Enqueue(ctx, testtasks.Msg{Text: "unique" + strconv.Itoa(i)}, runtime.Unique(time.Minute))
		if err != nil {
			t.Fatalf("Enqueue Unique, sent twice: %v; want its own job answered as written", err)
		}
		add(id, false)
	}

	return want
}

// twiceCapped is a keyed task with a cap of two running jobs per key.
var twiceCapped = runtime.NewTask[testtasks.Msg, testtasks.Reply]("t_twice_capped").
	Limit(runtime.TaskLimits{MaxRunning: 2}).
	KeyBy(func(m testtasks.Msg) string { return strconv.Itoa(len(m.Text) % 3) })

// The same with flow control: every command sent twice, each keyed job runs
// once per attempt, and once all finished no slot, flow or keyed entry is
// left: a release run twice frees its slot once.
func TestEveryCallSentTwice_KeyedJobsRunOncePerAttemptAndLeaveNoSlot(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		_, k := runEveryWaySentTwice(t, c, twiceCapped)
		ctx := ctxT(t)
		for _, key := range append(k.FlowKeys()[:9], k.Leases(), k.Payloads()) {
			if n, _ := c.Redis().Exists(ctx, key).Result(); n != 0 && key != k.Flows() {
				t.Errorf("%s still exists after every job finished", key)
			}
		}
		// The flows hash keeps only its order counter.
		if f, _ := c.Redis().HGetAll(ctx, k.Flows()).Result(); len(f) > 1 {
			t.Errorf("flows hash holds %v after every job finished, want no flow", f)
		}
	})
}
