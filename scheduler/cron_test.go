package scheduler_test

import (
	"context"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// server is a Redis server a test stops and starts again on the same address.
type server interface {
	addr() string
	stop()
	start()
}

type embedded struct {
	t *testing.T
	m *miniredis.Miniredis
}

func (s *embedded) addr() string { return s.m.Addr() }
func (s *embedded) stop()        { s.m.Close() }
func (s *embedded) start() {
	if err := s.m.Restart(); err != nil {
		s.t.Error(err)
	}
}

// process is a redis-server process of this test on a fixed port.
type process struct {
	t    *testing.T
	port int
	dir  string
	mu   sync.Mutex
	cmd  *exec.Cmd
}

func (s *process) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *process) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", s.dir, "--protected-mode", "no", "--logfile", "")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Errorf("start redis-server: %v", err)
		return
	}
	s.cmd = cmd
	c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			s.t.Errorf("redis-server on %s did not answer within 10s", s.addr())
			return
		}
		time.Sleep(10 * time.Millisecond) // readiness wait, bounded by the deadline
	}
}

func (s *process) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}

// freePort is a port for a redis-server this test starts (see
// redistest.FreePort).
func freePort(t *testing.T) int {
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// eachRestartable runs f against the embedded server and a redis-server
// process, each of which f can stop and start again.
func eachRestartable(t *testing.T, f func(t *testing.T, s server)) {
	t.Parallel()
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		f(t, &embedded{t: t, m: miniredis.RunT(t)})
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		if _, err := exec.LookPath("redis-server"); err != nil {
			t.Fatal("redis-server is not on PATH")
		}
		s := &process{t: t, port: freePort(t), dir: t.TempDir()}
		s.start()
		t.Cleanup(s.stop)
		f(t, s)
	})
}

// The only scheduler of an entry meets Redis down at a tick: the tick is
// fired once Redis is back (before the next tick), not dropped.
func TestCron_TickMissedWhileRedisIsDownFiresWhenItIsBack(t *testing.T) {
	eachRestartable(t, func(t *testing.T, s server) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		rdb := redis.NewClient(&redis.Options{Addr: s.addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		q, err := queue.New(rdb, redistest.Namespace(t))
		if err != nil {
			t.Fatal(err)
		}
		env, _ := queue.EncodeEnvelope(queue.Envelope{Args: []byte{0x90}})
		if err := rdb.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		s.stop()

		var mu sync.Mutex
		var asked []time.Time // the ticks a job was built for
		failed := make(chan struct{}, 1)
		fired := make(chan time.Time, 8)
		c := &scheduler.Cron{
			Queue: q,
			Entries: []scheduler.CronEntry{{
				Name: "e", Route: "r", Priority: queue.Normal, Spec: "@every 4s",
				Job: func(tick time.Time) (queue.NewJob, error) {
					mu.Lock()
					asked = append(asked, tick)
					mu.Unlock()
					return queue.NewJob{ID: queue.NewID("r", tick), Name: "e", Envelope: env}, nil
				},
			}},
			OnFire: func(_ scheduler.CronEntry, tick time.Time, _ string) { fired <- tick },
			OnError: func(scheduler.CronEntry, error) {
				select {
				case failed <- struct{}{}:
				default:
				}
			},
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = c.Run(ctx) }()
		defer func() { cancel(); <-done }()

		select {
		case <-failed:
		case <-ctx.Done():
			t.Fatal("no fire failed while Redis was down")
		}
		s.start()
		var tick time.Time
		select {
		case tick = <-fired:
		case <-ctx.Done():
			t.Fatal("no tick fired after Redis came back")
		}
		mu.Lock()
		first := asked[0]
		mu.Unlock()
		if !tick.Equal(first) {
			t.Fatalf("the first tick fired is %v, want %v, the one that met Redis down", tick, first)
		}
		got, err := rdb.HGet(ctx, q.Keys("r").Cron("e"), "tick").Result()
		if err != nil || got != strconv.FormatInt(first.UnixMilli(), 10) {
			t.Fatalf("cron state tick = %q, %v; want %d", got, err, first.UnixMilli())
		}
		if d, err := q.Ops.Depths(ctx, []string{"r"}); err != nil || d[0].Normal != 1 {
			t.Fatalf("depths = %+v, %v; want the tick's job ready", d, err)
		}
	})
}
