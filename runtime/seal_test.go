package runtime_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// sealKey is a key for tests: 32 bytes of fill.
func sealKey(id string, fill byte) runtime.SealKey {
	return runtime.SealKey{ID: id, Secret: bytes.Repeat([]byte{fill}, 32)}
}

// sealKeysEnv is BANANAS_KEYS of keys.
func sealKeysEnv(keys ...runtime.SealKey) string {
	var parts []string
	for _, k := range keys {
		parts = append(parts, k.ID+":"+base64.StdEncoding.EncodeToString(k.Secret))
	}
	return strings.Join(parts, ",")
}

// logLines collects a logger's records.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

// sealEchoWorker starts a worker of c whose t_echo handler returns the text it
// got, counting its runs.
func sealEchoWorker(t *testing.T, c *runtime.Client, log *slog.Logger) (runs *atomic.Int32, stop func()) {
	t.Helper()
	runs = new(atomic.Int32)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Logger: log}))
	runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		runs.Add(1)
		if err := runtime.Progress(ctx, 50, "note "+m.Text); err != nil {
			return testtasks.Reply{}, err
		}
		return testtasks.Reply{Text: "result " + m.Text}, nil
	})
	return runs, startWorker(t, w)
}

// With keys, a job runs as any other: its handler, Await and Job see its
// args and result. A process without the key shows both as "encrypted",
// and its worker refuses the job with a clear error, once in its log,
// leaving it waiting, no attempt counted — until a worker with the key
// runs it. A worker with a newer key in front still opens what the older
// one sealed.
func TestSeal_AProcessWithoutTheKeyShowsEncryptedAndLeavesTheJob(t *testing.T) {
	t.Cleanup(runtime.SetNoKeyRetry(20 * time.Millisecond)) // after the parallel subtests
	eachServer(t, func(t *testing.T, url, ns string) {
		ctx := ctxT(t)
		k1, k2 := sealKey("k1", 1), sealKey("k2", 2)
		keyed := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(k1))
		bare := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys())
		id, err := testtasks.Echo.With(keyed).Enqueue(ctx, testtasks.Msg{Text: "marker-51ab"})
		if err != nil {
			t.Fatal(err)
		}
		if info := jobInfo(t, keyed, id); !bytes.Contains(info.Args, []byte("marker-51ab")) {
			t.Fatalf("Job by the keyed client: args %s; want the marker", info.Args)
		}
		if info := jobInfo(t, bare, id); string(info.Args) != `"encrypted"` {
			t.Fatalf("Job by a client without the key: args %s; want \"encrypted\"", info.Args)
		}

		var log logLines
		var snoozed atomic.Int32
		runs := new(atomic.Int32)
		w := runtime.NewWorker(bare, fastOpts(runtime.WorkerOptions{Logger: slog.New(slog.NewTextHandler(&log, nil)), OnJobEnd: func(e bananastype.JobEnd) {
			if e.ID == id && e.Ending == queue.EndSnoozed {
				snoozed.Add(1)
			}
		}}))
		runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			runs.Add(1)
			return testtasks.Reply{}, nil
		})
		stop := startWorker(t, w)
		waitFor(t, 20*time.Second, "the keyless worker to refuse the job three times", func() bool { return snoozed.Load() >= 3 })
		stop()
		info := jobInfo(t, keyed, id)
		if runs.Load() != 0 || (info.Status != runtime.StatusScheduled && info.Status != runtime.StatusPending) || info.Attempts != 0 {
			t.Fatalf("after a keyless worker took it: %d runs, status %s, %d attempts; want it not run, still waiting, no attempt counted", runs.Load(), info.Status, info.Attempts)
		}
		if n := log.count("sealed under a key this worker does not hold"); n != 1 || log.count(`key \"k1\"`) != 1 || log.count("job="+id+` task=t_echo route=default error="sealed under a key`) != 1 {
			t.Fatalf("the keyless worker logged the refusal %d times; want once per job, naming the job and the key:\n%s", n, log.buf.String())
		}

		rotated := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(k2, k1))
		runs, _ = sealEchoWorker(t, rotated, quiet())
		res, err := testtasks.Echo.With(keyed).Await(ctx, id)
		if err != nil && !strings.Contains(err.Error(), `key "k2"`) {
			t.Fatalf("Await by a client holding only the older key: %v", err)
		}
		if res, err = testtasks.Echo.With(rotated).Await(ctx, id); err != nil || res.Text != "result marker-51ab" || runs.Load() != 1 {
			t.Fatalf("Await = %+v, %v after %d runs; want the result of one run", res, err, runs.Load())
		}
		if info := jobInfo(t, bare, id); string(info.ResultJSON) != `"encrypted"` || string(info.Args) != `"encrypted"` {
			t.Fatalf("Job of the completed job by a client without keys: args %s result %s; want both \"encrypted\"", info.Args, info.ResultJSON)
		}
		if info := jobInfo(t, keyed, id); !bytes.Contains(info.Args, []byte("marker-51ab")) || string(info.ResultJSON) != `"encrypted"` {
			t.Fatalf("Job by a client with the older key only: args %s result %s; want the args (sealed under k1) and the result \"encrypted\" (sealed under k2)", info.Args, info.ResultJSON)
		}
	})
}

// eachServer runs f against the embedded server and a real redis-server,
// with a namespace that every client f connects with WithNamespace(ns) shares.
func eachServer(t *testing.T, f func(t *testing.T, url, ns string)) {
	t.Helper()
	redistest.EachURL(t, func(t *testing.T, url string) {
		ns := redistest.Namespace(t)
		if strings.HasPrefix(url, "mem://") { // one embedded server for every client
			url = connect(t, url, runtime.WithNamespace(ns)).EmbeddedURL()
		}
		f(t, url, ns)
	})
}

// A job whose sealed args were tampered with in Redis fails for good with
// an error that says so: no crash, no run, no endless retry.
func TestSeal_TamperedArgsFailWithAClearError(t *testing.T) {
	eachServer(t, func(t *testing.T, url, ns string) {
		ctx := ctxT(t)
		c := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(sealKey("k1", 1)))
		id, err := testtasks.Echo.With(c).Enqueue(ctx, testtasks.Msg{Text: "marker"})
		if err != nil {
			t.Fatal(err)
		}
		payloads := queue.RouteKeys(ns, "default").Payloads()
		stored, err := c.Redis().HGet(ctx, payloads, id).Result()
		if err != nil {
			t.Fatalf("HGET %s %s: %v", payloads, id, err)
		}
		b := []byte(stored)
		b[len(b)-1] ^= 1
		if err := c.Redis().HSet(ctx, payloads, id, b).Err(); err != nil {
			t.Fatal(err)
		}
		runs, _ := sealEchoWorker(t, c, quiet())
		waitFor(t, 10*time.Second, "the tampered job to fail", func() bool { return jobStatus(t, c, id) == runtime.StatusFailed })
		if info := jobInfo(t, c, id); !strings.Contains(info.Error, `sealed payload does not open under key "k1": tampered with`) || runs.Load() != 0 || info.Attempts != 1 {
			t.Fatalf("tampered job: error %q, %d runs, %d attempts; want one attempt, no run, an error saying it was tampered with", info.Error, runs.Load(), info.Attempts)
		}
	})
}

// A progress note is sealed: a client with the key reads it, one without
// reads "encrypted".
func TestSeal_ProgressNotesAreSealed(t *testing.T) {
	eachServer(t, func(t *testing.T, url, ns string) {
		ctx := ctxT(t)
		c := connect(t, url, runtime.WithNamespace(ns), runtime.WithKeys(sealKey("k1", 1)))
		bare := connect(t, url, runtime.WithNamespace(ns))
		release := make(chan struct{})
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			if err := runtime.Progress(ctx, 40, "note marker-77d2"); err != nil {
				return testtasks.Reply{}, err
			}
			<-release
			return testtasks.Reply{}, nil
		})
		startWorker(t, w)
		defer close(release)
		id, err := testtasks.Echo.With(c).Enqueue(ctx, testtasks.Msg{Text: "x"})
		if err != nil {
			t.Fatal(err)
		}
		waitProgress(t, c, id, 40, "note marker-77d2")
		p := progressOf(t, bare, id)
		if p == nil || p.Percent != 40 || p.Note != "encrypted" {
			t.Fatalf("progress read without the key = %+v; want 40%% and the note \"encrypted\"", p)
		}
		raw, err := json.Marshal(p)
		if err != nil || bytes.Contains(raw, []byte("marker")) {
			t.Fatalf("progress without the key shows the note: %s", raw)
		}
	})
}

// A bad BANANAS_KEYS stops the program at start, exit 2, naming the
// variable and the entry (never its secret); a bad BANANAS_COMPRESS_OVER
// too. Connect refuses the same from the environment.
func TestSeal_BadKeysAreAStartupErrorNamingTheEntry(t *testing.T) {
	good := sealKeysEnv(sealKey("k2", 2))
	short := base64.StdEncoding.EncodeToString([]byte("only sixteen b!!"))
	for env, want := range map[[2]string]string{
		{"BANANAS_KEYS", good + ",k1:" + short}: `BANANAS_KEYS is invalid: entry 2 (key id "k1"): the key is 16 bytes; AES-256 needs 32`,
		{"BANANAS_KEYS", "k1"}:                  "BANANAS_KEYS is invalid: entry 1: want id:base64key",
		{"BANANAS_COMPRESS_OVER", "4k"}:         `BANANAS_COMPRESS_OVER="4k" is invalid: a whole number of bytes`,
	} {
		code, out, errOut := newApp(t).with(env[0], env[1]).run("queues")
		if code != 2 || !strings.Contains(errOut, want) || strings.Contains(out+errOut, short) {
			t.Errorf("%s=%s: exit %d, %s%s; want exit 2 saying %q", env[0], env[1], code, out, errOut, want)
		}
	}
	t.Setenv("BANANAS_KEYS", "k1:"+short)
	if _, err := runtime.Connect(ctxT(t), "mem://"); err == nil || !strings.Contains(err.Error(), `BANANAS_KEYS: entry 1 (key id "k1"): the key is 16 bytes`) {
		t.Fatalf("Connect with a bad BANANAS_KEYS = %v; want an error naming it", err)
	}
	if _, err := runtime.Connect(ctxT(t), "mem://", runtime.WithKeys(sealKey("a", 1), sealKey("a", 2))); err == nil || !strings.Contains(err.Error(), `WithKeys: entry 2: key id "a" appears twice`) {
		t.Fatalf("Connect with a repeated key id = %v; want an error naming it", err)
	}
}
