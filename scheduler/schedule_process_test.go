package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/proctest"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// runSchedulerProcess is the child process of the scheduler crash tests: a
// ScheduleRunner on namespace ns of the server at addr, printing "fired
// <schedule> <tick ms>" for each tick it enqueued, until it is killed.
func runSchedulerProcess(addr, ns string) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	q, err := queue.New(rdb, ns)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	var mu sync.Mutex // OnFire is called from the runner's parallel calls
	fmt.Println("ready")
	r := &scheduler.ScheduleRunner{Schedules: &scheduler.Schedules{Queue: q}, Safety: 100 * time.Millisecond,
		OnFire: func(sc scheduler.Schedule, tick time.Time, _ string) {
			mu.Lock()
			fmt.Printf("fired %s %d\n", sc.ID, tick.UnixMilli())
			mu.Unlock()
		},
		OnError: func(id string, err error) { fmt.Fprintf(os.Stderr, "schedule %s: %v\n", id, err) }}
	r.Run(context.Background())
	os.Exit(0)
}

// schedulerProcess starts a scheduler process on ns of the server at addr
// and returns the lines it prints; the process is killed at the end of the
// test.
func schedulerProcess(t *testing.T, addr, ns string) (*exec.Cmd, <-chan string) {
	t.Helper()
	p := proctest.Start(t, "BANANAS_TEST_SCHEDULER_ADDR="+addr, "BANANAS_TEST_SCHEDULER_NS="+ns)
	return p.Cmd, p.Lines
}

// catchUpSchedules puts n schedules k00, k01, … (of routes r00, r01, …),
// each catching up the ticks of the last minute, on namespace ns of srv,
// and returns them with a context that bounds the test.
func catchUpSchedules(t *testing.T, srv *redistest.Server, ns string, n int) (context.Context, *queue.Queue, *scheduler.Schedules) {
	t.Helper()
	q, err := queue.New(srv.Client(t), ns)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	t.Cleanup(cancel)
	s := &scheduler.Schedules{Queue: q}
	for i := range n {
		d := def(t, fmt.Sprintf("k%02d", i), fmt.Sprintf("r%02d", i))
		d.CatchUp = time.Minute
		if _, err := s.Put(ctx, d, q.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return ctx, q, s
}

// killAndCheckEveryTickOnce SIGKILLs the scheduler processes cmds, which
// may leave claims behind, finishes those claims with a step of each of the
// n schedules of catchUpSchedules, and then checks that each enqueued every
// tick once (checkEveryTickOnce).
func killAndCheckEveryTickOnce(t *testing.T, ctx context.Context, q *queue.Queue, s *scheduler.Schedules, n int, cmds ...*exec.Cmd) {
	t.Helper()
	for _, cmd := range cmds {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	r := &scheduler.ScheduleRunner{Schedules: s}
	for i := range n {
		if err := r.Step(ctx, fmt.Sprintf("k%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		checkEveryTickOnce(t, q, s, fmt.Sprintf("k%02d", i), fmt.Sprintf("r%02d", i))
	}
}

// checkEveryTickOnce fails unless the jobs on route are the jobs of
// consecutive ticks of schedule id, one each (catch-up runs the ticks a
// takeover missed), as many as the schedule counts fired.
func checkEveryTickOnce(t *testing.T, q *queue.Queue, s *scheduler.Schedules, id, route string) {
	t.Helper()
	ids := checkOnePerTick(t, q, s, id, route)
	if len(ids) < 2 {
		t.Fatalf("%s: %d jobs", id, len(ids))
	}
	first, err := q.Jobs.Lookup(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	// The first job's tick: a whole second at most a minute before it was made.
	var tick time.Time
	for k := 0; k <= 120 && tick.IsZero(); k++ {
		c := first.CreatedAt.Truncate(time.Second).Add(time.Duration(k-60) * time.Second)
		if scheduler.TickJobID(id, route, c) == ids[0] {
			tick = c
		}
	}
	for i, j := range ids {
		if want := scheduler.TickJobID(id, route, tick.Add(time.Duration(i)*time.Second)); j != want {
			t.Fatalf("%s: job %d is not of the tick %v: a tick is missing or out of order: %v", id, i, tick.Add(time.Duration(i)*time.Second), ids)
		}
	}
}

// A scheduler process SIGKILLed while it fires ticks leaves claims behind;
// another scheduler takes over, finishes them, and runs the ticks missed
// meanwhile (inside catch_up): every tick is enqueued once, none twice,
// none lost.
func TestSchedules_ASchedulerProcessKilledMidRunIsTakenOverEveryTickOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Shared(t)
	ns := redistest.Namespace(t)
	const n = 20
	ctx, q, s := catchUpSchedules(t, srv, ns, n)
	cmd, first := schedulerProcess(t, srv.Addr(), ns)
	fired := 0
	for fired < 2*n+n/2 { // kill it in the middle of a tick's batch
		line := recvLine(t, ctx, first)
		if strings.HasPrefix(line, "fired ") {
			fired++
		} else {
			t.Logf("scheduler process: %s", line)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killedAt := q.Now()
	cmd2, lines := schedulerProcess(t, srv.Addr(), ns)
	drain(lines)
	for i := range n {
		id := fmt.Sprintf("k%02d", i)
		waitUntil(t, ctx, id+" fired after the takeover", func() bool {
			sc := get(t, s, id)
			return sc.LastTick.After(killedAt.Add(time.Second))
		})
	}
	// Stop the second process too (SIGKILL: it may leave claims as well),
	// finish what it left, then count.
	killAndCheckEveryTickOnce(t, ctx, q, s, n, cmd2)
}

func recvLine(t *testing.T, ctx context.Context, lines <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("the scheduler process ended")
		}
		return l
	case <-ctx.Done():
		t.Fatalf("timed out waiting for the scheduler process")
	}
	return ""
}

func drain(lines <-chan string) {
	go func() {
		for range lines {
		}
	}()
}

// Two scheduler processes run while their redis-server (appendfsync
// always) is killed and restarted on the same port: every tick of every
// schedule is enqueued once, in order, the ticks that fell due during the
// restart run by catch_up, none twice.
func TestSchedules_SchedulerProcessesThroughARedisRestartEveryTickOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.StartPersistent(t)
	ns := redistest.Namespace(t)
	const n = 6
	ctx, q, s := catchUpSchedules(t, srv, ns, n)
	var cmds []*exec.Cmd
	for range 2 {
		cmd, lines := schedulerProcess(t, srv.Addr(), ns)
		drain(lines)
		cmds = append(cmds, cmd)
	}
	fired := func(id string) int64 {
		sc, err := s.Get(ctx, id)
		if err != nil {
			return -1
		}
		return sc.Fired
	}
	for i := range n {
		id := fmt.Sprintf("k%02d", i)
		waitUntil(t, ctx, id+" fired twice before the restart", func() bool { return fired(id) >= 2 })
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted := q.Now()
	for i := range n {
		id := fmt.Sprintf("k%02d", i)
		waitUntil(t, ctx, id+" fired after the restart", func() bool {
			sc, err := s.Get(ctx, id)
			return err == nil && sc.LastTick.After(restarted.Add(time.Second))
		})
	}
	killAndCheckEveryTickOnce(t, ctx, q, s, n, cmds...)
}
