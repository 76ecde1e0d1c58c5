package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

// onceEffect is a handler's side effect done through runtime.Once, keyed by
// its job's id: it counts itself in Redis (effects), so that a test sees the
// runs of every process, a killed worker's included.
func onceEffect(ctx context.Context, c *runtime.Client) (bool, error) {
	job, _ := runtime.CurrentJob(ctx)
	return runtime.Once(ctx, "effect of "+job.ID, func(ctx context.Context) error {
		return c.Redis().Incr(ctx, c.Namespace()+":test:effects").Err()
	})
}

func effects(t *testing.T, c *runtime.Client) int {
	t.Helper()
	n, err := c.Redis().Get(ctxT(t), c.Namespace()+":test:effects").Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return n
}

// counting returns an fn for Once that counts its calls in n.
func counting(n *atomic.Int32) func(context.Context) error {
	return func(context.Context) error { n.Add(1); return nil }
}

func TestOnce_SecondCallDoesNotRunFn(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		var n atomic.Int32
		if ran, err := c.Once(ctxT(t), "send {welcome} to ana", counting(&n)); !ran || err != nil {
			t.Fatalf("first Once = %v, %v; want ran", ran, err)
		}
		if ran, err := c.Once(ctxT(t), "send {welcome} to ana", counting(&n)); ran || err != nil {
			t.Fatalf("second Once = %v, %v; want not ran, no error", ran, err)
		}
		if ran, err := c.Once(ctxT(t), "send {welcome} to bob", counting(&n)); !ran || err != nil {
			t.Fatalf("Once of another key = %v, %v; want ran", ran, err)
		}
		if n.Load() != 2 {
			t.Fatalf("fn ran %d times; want once per key", n.Load())
		}
	})
}

// inFirstCall starts a Once call of key whose fn blocks until the returned
// finish is called with fn's error, and waits until fn runs; done yields the
// call's outcome.
func inFirstCall(t *testing.T, c *runtime.Client, key string) (finish func(error), done <-chan error) {
	t.Helper()
	started, result, out := make(chan struct{}), make(chan error), make(chan error, 1)
	go func() {
		ran, err := c.Once(ctxT(t), key, func(context.Context) error {
			close(started)
			return <-result
		})
		if !ran {
			err = fmt.Errorf("first Once did not run fn: %v", err)
		}
		out <- err
	}()
	recv(t, started, 10*time.Second, "the first caller's fn to start")
	return func(err error) { result <- err }, out
}

// waitingSecond starts a second Once call of key and waits until it listens
// on the key's channel: it found the claim held and waits for it.
func waitingSecond(t *testing.T, c *runtime.Client, key string, fn func(context.Context) error) <-chan [2]any {
	t.Helper()
	out := make(chan [2]any, 1)
	go func() {
		ran, err := c.Once(ctxT(t), key, fn)
		out <- [2]any{ran, err}
	}()
	channel := runtime.QueueOf(c).OnceKeys(key).Channel
	waitFor(t, 10*time.Second, "the second caller to wait on the key's channel", func() bool {
		n, err := c.Redis().PubSubNumSub(context.Background(), channel).Result()
		return err == nil && n[channel] > 0
	})
	return out
}

func TestOnce_ConcurrentCallerWaitsAndDoesNotRunFn(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		finish, first := inFirstCall(t, c, "charge order 7")
		var n atomic.Int32
		second := waitingSecond(t, c, "charge order 7", counting(&n))
		select {
		case got := <-second:
			t.Fatalf("the second caller returned %v while the first still ran fn", got)
		default:
		}
		finish(nil)
		if err := recv(t, first, 10*time.Second, "the first call"); err != nil {
			t.Fatal(err)
		}
		got := recv(t, second, 10*time.Second, "the second call")
		if got[0] != false || got[1] != nil || n.Load() != 0 {
			t.Fatalf("second Once = %v, fn ran %d times; want not ran, no error, fn not called", got, n.Load())
		}
	})
}

// A failed first call releases its claim at once: the waiting caller runs fn
// without waiting for the claim to run out (30 s).
func TestOnce_FailedFirstCallLetsTheWaitingCallerRunFn(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		finish, first := inFirstCall(t, c, "charge order 8")
		var n atomic.Int32
		second := waitingSecond(t, c, "charge order 8", counting(&n))
		boom := errors.New("card declined")
		finish(boom)
		if err := recv(t, first, 10*time.Second, "the first call"); !errors.Is(err, boom) {
			t.Fatalf("first Once err = %v; want fn's error as it is", err)
		}
		got := recv(t, second, 10*time.Second, "the second call")
		if got[0] != true || got[1] != nil || n.Load() != 1 {
			t.Fatalf("second Once = %v, fn ran %d times; want ran once", got, n.Load())
		}
	})
}

// fn that panics releases its claim, and the panic goes on to the caller.
func TestOnce_PanicInFnReleasesTheClaim(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		func() {
			defer func() {
				if p := recover(); p != "boom" {
					t.Fatalf("recovered %v; want fn's panic", p)
				}
			}()
			_, _ = c.Once(ctxT(t), "panics", func(context.Context) error { panic("boom") })
		}()
		var n atomic.Int32
		ctx, cancel := context.WithTimeout(ctxT(t), 5*time.Second)
		defer cancel()
		if ran, err := c.Once(ctx, "panics", counting(&n)); !ran || err != nil || n.Load() != 1 {
			t.Fatalf("Once after the panic = %v, %v; want fn run at once", ran, err)
		}
	})
}

// A claim whose holder died is never renewed: the next caller waits for it
// to run out, then runs fn.
func TestOnce_ClaimOfADeadHolderIsTakenOverAfterItsTTL(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		k := runtime.QueueOf(c).OnceKeys("dead holder")
		const ttl = 400 * time.Millisecond
		if err := c.Redis().Set(ctxT(t), k.Claim, "token-of-a-dead-process", ttl).Err(); err != nil {
			t.Fatal(err)
		}
		planted := time.Now()
		var n atomic.Int32
		ran, err := c.Once(ctxT(t), "dead holder", counting(&n))
		if !ran || err != nil || n.Load() != 1 {
			t.Fatalf("Once = %v, %v, fn ran %d times; want fn run once", ran, err, n.Load())
		}
		if waited := time.Since(planted); waited < ttl-50*time.Millisecond {
			t.Fatalf("fn ran %s after the dead holder's claim was written; want after its ttl (%s)", waited, ttl)
		}
	})
}

// A caller whose ctx ends while another holds the claim stops waiting, with
// ctx's error, and does not run fn.
func TestOnce_WaitEndsWithCtx(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		k := runtime.QueueOf(c).OnceKeys("held")
		if err := c.Redis().Set(ctxT(t), k.Claim, "another", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(ctxT(t), 200*time.Millisecond)
		defer cancel()
		var n atomic.Int32
		ran, err := c.Once(ctx, "held", counting(&n))
		if ran || !errors.Is(err, context.DeadlineExceeded) || n.Load() != 0 {
			t.Fatalf("Once = %v, %v; want not ran, the ctx's deadline", ran, err)
		}
	})
}

func TestOnce_MarkerExpiresAfterItsTTL(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		runtime.SetOnceTTLs(c, 10*time.Second, 300*time.Millisecond)
		var n atomic.Int32
		if ran, err := c.Once(ctxT(t), "expiring", counting(&n)); !ran || err != nil {
			t.Fatalf("first Once = %v, %v", ran, err)
		}
		if ran, err := c.Once(ctxT(t), "expiring", counting(&n)); ran || err != nil {
			t.Fatalf("Once within the marker's ttl = %v, %v; want not ran", ran, err)
		}
		marker := runtime.QueueOf(c).OnceKeys("expiring").Marker
		waitFor(t, 10*time.Second, "the marker to expire", func() bool {
			n, err := c.Redis().Exists(context.Background(), marker).Result()
			return err == nil && n == 0
		})
		if ran, err := c.Once(ctxT(t), "expiring", counting(&n)); !ran || err != nil || n.Load() != 2 {
			t.Fatalf("Once after the marker expired = %v, %v, fn ran %d times; want ran again", ran, err, n.Load())
		}
	})
}

func TestOnce_GarbageInTheMarkerKeyIsAClearError(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		marker := runtime.QueueOf(c).OnceKeys("garbage").Marker
		if err := c.Redis().HSet(ctxT(t), marker, "x", "y").Err(); err != nil {
			t.Fatal(err)
		}
		var n atomic.Int32
		ran, err := c.Once(ctxT(t), "garbage", counting(&n))
		if ran || err == nil || n.Load() != 0 || !strings.Contains(err.Error(), "once marker") || !strings.Contains(err.Error(), "not a string") {
			t.Fatalf("Once = %v, %v, fn ran %d times; want an error naming the marker key's type, fn not called", ran, err, n.Load())
		}
	})
}

func TestOnce_OutsideAHandlerAsksForTheClient(t *testing.T) {
	ran, err := runtime.Once(context.Background(), "k", func(context.Context) error {
		t.Error("fn called")
		return nil
	})
	if ran || !errors.Is(err, runtime.ErrOnceNoClient) || !strings.Contains(err.Error(), "Client.Once") {
		t.Fatalf("Once = %v, %v; want ErrOnceNoClient pointing at Client.Once", ran, err)
	}
}

// A handler that did its effect and then failed is retried: the retry finds
// the effect done (runtime.Once takes the worker's client from its ctx).
func TestOnce_InAHandlerTheRetrySkipsTheEffect(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		task := crashy.With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		var mu sync.Mutex
		var ranOn []string
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
			ran, err := onceEffect(ctx, c)
			if err != nil {
				return Reply{}, err
			}
			mu.Lock()
			defer mu.Unlock()
			ranOn = append(ranOn, fmt.Sprint(ran))
			if len(ranOn) == 1 {
				return Reply{}, errors.New("the mail server hung up after sending")
			}
			return Reply{Text: strings.Join(ranOn, ",")}, nil
		})
		startWorker(t, w)
		got, err := task.Call(ctxT(t), Msg{Text: "x"}, runtime.MaxRetries(2))
		if err != nil || got.Text != "true,false" || effects(t, c) != 1 {
			t.Fatalf("Call = %+v, %v, effects %d; want the effect on the first run only", got, err, effects(t, c))
		}
	})
}

// A worker process is killed (SIGKILL) after its handler's effect succeeded
// and before the job's ack: the job's rerun, by another worker once the
// lease ran out, finds the effect done.
func TestOnce_RerunOfAKilledWorkersJobSkipsTheEffect(t *testing.T) {
	t.Parallel()
	srv := redistest.Shared(t)
	ns := redistest.Namespace(t)
	c := connect(t, srv.URL(), runtime.WithNamespace(ns))
	task := crashy.With(c)
	id, err := task.Enqueue(ctxT(t), Msg{Text: "payload"})
	if err != nil {
		t.Fatal(err)
	}
	killWorkerMidJob(t, srv, ns, "BANANAS_TEST_WORKER_ONCE=1")
	if n, s := effects(t, c), jobStatus(t, c, id); n != 1 || s != runtime.StatusProcessing {
		t.Fatalf("after the kill: %d effects, job %s; want the killed run's effect, the job leased still", n, s)
	}

	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) {
		ran, err := onceEffect(ctx, c)
		return Reply{Text: fmt.Sprint("ran=", ran)}, err
	})
	startWorker(t, w)
	got, err := task.Await(ctxT(t), id)
	if err != nil || got.Text != "ran=false" || effects(t, c) != 1 {
		t.Fatalf("rerun = %+v, %v, effects %d; want ran=false and the one effect", got, err, effects(t, c))
	}
	if info := jobInfo(t, c, id); info.Attempts != 2 {
		t.Fatalf("job = %+v; want two attempts: the killed run and the rerun", info)
	}
}

// On a Redis Cluster, keys with braces of their own work, and a waiting
// caller hears the first one finish whichever node its key lives on.
func TestOnce_OnACluster(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.SharedCluster(t).URL())
	for _, key := range []string{"{a}", "b}{", "plain", "another"} {
		finish, first := inFirstCall(t, c, key)
		var n atomic.Int32
		second := waitingSecond(t, c, key, counting(&n))
		finish(nil)
		if err := recv(t, first, 10*time.Second, "the first call"); err != nil {
			t.Fatal(err)
		}
		// Within the claim's ttl (30 s): the announcement reached the waiter.
		got := recv(t, second, 10*time.Second, "the second call")
		if got[0] != false || got[1] != nil || n.Load() != 0 {
			t.Fatalf("second Once of %q = %v, fn ran %d times; want not ran", key, got, n.Load())
		}
	}
}

// A claim is renewed while fn runs: a second caller keeps waiting through
// many of the claim's ttls, and finds the effect done at the end. (The ttl
// is twice the embedded server's 250-ms expiry tick.)
func TestOnce_ClaimIsRenewedWhileFnRuns(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		const ttl = 500 * time.Millisecond
		runtime.SetOnceTTLs(c, ttl, time.Hour)
		finish, first := inFirstCall(t, c, "long effect")
		var n atomic.Int32
		second := waitingSecond(t, c, "long effect", counting(&n))
		began := time.Now()
		waitFor(t, 10*time.Second, "four claim ttls to pass with the first caller still in fn", func() bool {
			select {
			case got := <-second:
				t.Fatalf("the second caller returned %v after %s while the first still ran fn", got, time.Since(began))
			default:
			}
			return time.Since(began) > 4*ttl
		})
		finish(nil)
		if err := recv(t, first, 10*time.Second, "the first call"); err != nil {
			t.Fatal(err)
		}
		if got := recv(t, second, 10*time.Second, "the second call"); got[0] != false || got[1] != nil || n.Load() != 0 {
			t.Fatalf("second Once = %v, fn ran %d times; want not ran", got, n.Load())
		}
	})
}

// A caller whose claim was taken by another (it went unrenewed past its
// ttl) has fn's context canceled with ErrOnceClaimLost.
func TestOnce_ClaimTakenByAnotherCancelsFn(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		runtime.SetOnceTTLs(c, 150*time.Millisecond, time.Hour)
		claim := runtime.QueueOf(c).OnceKeys("stolen").Claim
		ran, err := c.Once(ctxT(t), "stolen", func(ctx context.Context) error {
			if err := c.Redis().Set(ctx, claim, "another caller", time.Minute).Err(); err != nil {
				return err
			}
			<-ctx.Done()
			return context.Cause(ctx)
		})
		if !ran || !errors.Is(err, runtime.ErrOnceClaimLost) {
			t.Fatalf("Once = %v, %v; want fn's context canceled with ErrOnceClaimLost", ran, err)
		}
		if got, _ := c.Redis().Get(ctxT(t), claim).Result(); got != "another caller" {
			t.Fatalf("claim after the run = %q; want the other caller's left alone", got)
		}
	})
}

// The marker's write gets its time when fn returns: an fn that runs longer
// than a write may take still leaves its marker, and is not run again.
func TestOnce_AnFnLongerThanTheWriteTimeoutStillLeavesItsMarker(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		runtime.SetOnceWriteTimeout(c, 50*time.Millisecond)
		var n atomic.Int32
		slow := func(context.Context) error { n.Add(1); time.Sleep(200 * time.Millisecond); return nil }
		if ran, err := c.Once(ctxT(t), "slow effect", slow); !ran || err != nil {
			t.Fatalf("first Once = %v, %v; want ran", ran, err)
		}
		if ran, err := c.Once(ctxT(t), "slow effect", slow); ran || err != nil || n.Load() != 1 {
			t.Fatalf("second Once = %v, %v, fn ran %d times; want not ran, once", ran, err, n.Load())
		}
	})
}
