package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/mpack"
	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
)

// The args of every shape bananagen accepts: a struct with slices of basic
// and struct elements, bytes, a string, a map, a nested struct, a pointer and
// an array; and, on their own, a slice, bytes, a string, a map, a pointer, an
// array, an int and None.
type (
	poisonItem struct {
		A, B int64
		S    string
	}
	poisonInner struct{ Vals []int64 }
	poisonArgs  struct {
		Tags   []string
		Items  []poisonItem
		Blob   []byte
		Name   string
		Counts map[string]int
		Inner  poisonInner
		Ptr    *poisonInner
		Grid   [4]int64
	}
)

var (
	poisonStruct = runtime.NewTask[poisonArgs, runtime.None]("t_poison_struct")
	poisonSlice  = runtime.NewTask[[]poisonItem, runtime.None]("t_poison_slice")
	poisonBytes  = runtime.NewTask[[]byte, runtime.None]("t_poison_bytes")
	poisonString = runtime.NewTask[string, runtime.None]("t_poison_string")
	poisonMap    = runtime.NewTask[map[int]string, runtime.None]("t_poison_map")
	poisonPtr    = runtime.NewTask[*poisonInner, runtime.None]("t_poison_ptr")
	poisonArray  = runtime.NewTask[[4]int64, runtime.None]("t_poison_array")
	poisonInt    = runtime.NewTask[int, runtime.None]("t_poison_int")
	poisonNone   = runtime.NewTask[runtime.None, runtime.None]("t_poison_none")
)

// The poison worker process: the test binary re-executed with these set runs
// a worker for the poison tasks until SIGTERM, then exits 0 (1 if Run fails).
const (
	poisonWorkerURLEnv = "BANANAS_TEST_POISON_WORKER_URL"
	poisonWorkerNSEnv  = "BANANAS_TEST_POISON_WORKER_NS"
)

func init() {
	if url := os.Getenv(poisonWorkerURLEnv); url != "" {
		os.Exit(runPoisonWorker(url, os.Getenv(poisonWorkerNSEnv)))
	}
}

func runPoisonWorker(url, ns string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	c, err := runtime.Connect(ctx, url, runtime.WithNamespace(ns))
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		return 1
	}
	logger := quiet()
	if os.Getenv("BANANAS_TEST_LOG") == "1" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	w := runtime.NewWorker(c, runtime.WorkerOptions{Concurrency: 4, Lease: 2 * time.Second, Logger: logger})
	runtime.Handle(w, poisonStruct, noop[poisonArgs])
	runtime.Handle(w, poisonSlice, noop[[]poisonItem])
	runtime.Handle(w, poisonBytes, noop[[]byte])
	runtime.Handle(w, poisonString, noop[string])
	runtime.Handle(w, poisonMap, noop[map[int]string])
	runtime.Handle(w, poisonPtr, noop[*poisonInner])
	runtime.Handle(w, poisonArray, noop[[4]int64])
	runtime.Handle(w, poisonInt, noop[int])
	runtime.Handle(w, poisonNone, noop[runtime.None])
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
		return 1
	}
	_ = c.Close()
	return 0
}

func noop[A any](context.Context, A) (runtime.None, error) { return runtime.None{}, nil }

// Headers claiming 2^32-1 (4 GiB less one) elements, entries or bytes, with
// only the bytes after them in the args to back the claim.
var (
	array32 = []byte{0xdd, 0xff, 0xff, 0xff, 0xff}
	map32   = []byte{0xdf, 0xff, 0xff, 0xff, 0xff}
	str32   = []byte{0xdb, 0xff, 0xff, 0xff, 0xff}
	bin32   = []byte{0xc6, 0xff, 0xff, 0xff, 0xff}
)

// poisonMaxRSS bounds the poison worker process's peak resident memory. It
// peaks near 20 MiB on these jobs (47 MiB under -race). A poison header that
// reached msgpack's decoder would have it allocate what the header claims:
// 2^32 elements of a []T (128 GiB for []poisonItem, a fatal error), 4 GiB
// for a bin32 []byte (resident once reused memory is zeroed for it), a map
// presized to a million entries for a map32. 256 MiB leaves room for the race
// detector and none for a claim; each job's error says it was refused by the
// check rather than decoded.
const poisonMaxRSS = 256 << 20

// poisonJob is a job enqueued raw, bypassing the typed encoder.
type poisonJob struct {
	what, task string
	args       []byte // msgpack args; nil when env is set
	env        []byte // a whole hand-built envelope
	want       string // in the job's error
}

func poisonJobs() []poisonJob {
	// field is a struct args map holding a valid Name and the field key with
	// the poison value, so the bad header sits past a good field.
	field := func(key string, value ...[]byte) []byte {
		b := mpack.String(mpack.String(mpack.MapHeader(nil, 2), "Name"), "fine")
		return append(mpack.String(b, key), bytes.Join(value, nil)...)
	}
	tail := []byte{1, 2, 3} // a few bytes after each header: far short of its claim
	claim := func(h []byte) []byte { return append(append([]byte(nil), h...), tail...) }
	elems := "array32 header claims 4294967295 elements, only 3 bytes left"
	entries := "map32 header claims 4294967295 entries, only 3 bytes left"
	strs := "str32 header claims 4294967295 bytes, only 3 left"
	bins := "bin32 header claims 4294967295 bytes, only 3 left"
	args := func(task string) string { return "decode args of " + task + ": " }
	s, st := poisonStruct.Name(), args(poisonStruct.Name())
	return []poisonJob{
		{"struct []string", s, field("Tags", claim(array32)), nil, st + `field "Tags": ` + elems},
		{"struct []string element", s, field("Tags", []byte{0x92}, mpack.String(nil, "ok"), claim(str32)), nil, st + `field "Tags[1]": ` + strs},
		{"struct []struct", s, field("Items", claim(array32)), nil, st + `field "Items": ` + elems},
		{"struct []struct element field", s, field("Items", []byte{0x91, 0x81}, mpack.String(nil, "S"), claim(str32)), nil, st + `field "Items[0].S": ` + strs},
		{"struct []byte", s, field("Blob", claim(bin32)), nil, st + `field "Blob": ` + bins},
		{"struct string", s, field("Name", claim(str32)), nil, st + `field "Name": ` + strs},
		{"struct map", s, field("Counts", claim(map32)), nil, st + `field "Counts": ` + entries},
		{"struct nested struct", s, field("Inner", []byte{0x81}, mpack.String(nil, "Vals"), claim(array32)), nil, st + `field "Inner.Vals": ` + elems},
		{"struct pointer", s, field("Ptr", []byte{0x81}, mpack.String(nil, "Vals"), claim(array32)), nil, st + `field "Ptr.Vals": ` + elems},
		{"struct array", s, field("Grid", claim(array32)), nil, st + `field "Grid": ` + elems},
		{"struct itself", s, claim(map32), nil, st + entries},
		{"[]struct", poisonSlice.Name(), claim(array32), nil, args(poisonSlice.Name()) + elems},
		{"[]byte", poisonBytes.Name(), claim(bin32), nil, args(poisonBytes.Name()) + bins},
		{"string", poisonString.Name(), claim(str32), nil, args(poisonString.Name()) + strs},
		{"map", poisonMap.Name(), claim(map32), nil, args(poisonMap.Name()) + entries},
		{"map value", poisonMap.Name(), append([]byte{0x81, 0x07}, claim(str32)...), nil, args(poisonMap.Name()) + `field "[7]": ` + strs},
		{"pointer", poisonPtr.Name(), append(append([]byte{0x81}, mpack.String(nil, "Vals")...), claim(array32)...), nil, args(poisonPtr.Name()) + `field "Vals": ` + elems},
		{"array", poisonArray.Name(), claim(array32), nil, args(poisonArray.Name()) + elems},
		{"int", poisonInt.Name(), claim(array32), nil, args(poisonInt.Name()) + elems},
		{"None", poisonNone.Name(), claim(map32), nil, args(poisonNone.Name()) + entries},
		{"envelope args", s, nil, append(append(mpack.String(mpack.MapHeader(nil, 1), "a"), bin32...), tail...),
			`cannot decode job: decode envelope: field "a": ` + bins},
		{"arrays nested 10,000 deep", poisonSlice.Name(), nested(10000), nil, args(poisonSlice.Name()) + deep},
		{"envelope nested 10,000 deep", s, nil, nested(10000), "cannot decode job: decode envelope: " + deep},
	}
}

// deep is the error of a value nested past mpack.MaxDepth: the path down to
// where it stops, shortened, and why.
var deep = `field "[0][0][0][0][0][0]…[0][0][0][0][0][0]": nested deeper than ` + strconv.Itoa(mpack.MaxDepth) + " levels"

// nested is depth one-element arrays, one inside the other, around a nil.
func nested(depth int) []byte {
	return append(bytes.Repeat([]byte{0x91}, depth), 0xc0)
}

// Jobs whose args (or envelope) carry array32, map32, str32 and bin32 headers
// claiming 4 GiB, in args of every shape bananagen accepts, are dead-lettered
// at their first run with an error naming the field, by a worker process that
// never comes near allocating what they claim and goes on to run good jobs.
func TestWorker_PoisonArgsAreDeadLetteredWithoutExhaustingMemory(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"embedded", "redis"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ns := redistest.Namespace(t)
			url := "mem://"
			if backend == "redis" {
				url = redistest.Shared(t).URL()
			}
			c := connect(t, url, runtime.WithNamespace(ns))
			if backend == "embedded" {
				url = c.EmbeddedURL() // the worker process shares this process's server
			}
			ctx := ctxT(t)

			jobs := poisonJobs()
			ids := enqueuePoison(ctx, t, c, jobs)
			// Good jobs behind the poison: the worker that met it goes on.
			good := enqueueGoodBehindPoison(ctx, t, c)

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), poisonWorkerURLEnv+"="+url, poisonWorkerNSEnv+"="+ns)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
			waitPoisonSettled(ctx, t, c, cmd, exited, &stderr, ids, good)

			// The high-water mark of the worker's own memory since its exec,
			// read while it still runs. Not rusage's Maxrss: Linux carries the
			// forking test process's resident size across exec into it.
			rss := vmHWM(t, cmd.Process.Pid)
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("the worker process did not exit 30s after SIGTERM")
			}
			if !cmd.ProcessState.Success() {
				t.Fatalf("the worker process ended %v; stderr:\n%s", cmd.ProcessState, lastLines(stderr.String(), 15))
			}
			t.Logf("worker process peak RSS: %.1f MiB", float64(rss)/(1<<20))
			if rss > poisonMaxRSS {
				t.Errorf("the worker process peaked at %d MiB resident, over %d MiB: a poison header reached the decoder", rss>>20, poisonMaxRSS>>20)
			}

			for i, j := range jobs {
				info, err := c.Job(ctx, ids[i])
				if err != nil {
					t.Fatalf("%s: Job: %v", j.what, err)
				}
				if info.Status != runtime.StatusFailed || info.Attempts != 1 || !strings.Contains(info.Error, j.want) {
					t.Errorf("%s: job is %s after %d attempts with error %q; want failed (dead-lettered) after 1 attempt, error containing %q",
						j.what, info.Status, info.Attempts, info.Error, j.want)
				}
			}
		})
	}
}

// enqueuePoison writes each poison job to the default route as it is, with
// 5 retries, and returns their ids.
func enqueuePoison(ctx context.Context, t *testing.T, c *runtime.Client, jobs []poisonJob) []string {
	t.Helper()
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		env := j.env
		if env == nil {
			var err error
			if env, err = queue.EncodeEnvelope(queue.Envelope{Args: j.args}); err != nil {
				t.Fatal(err)
			}
		}
		ids[i] = queue.NewID("default", time.Now())
		if _, err := runtime.QueueOf(c).Jobs.EnqueueOne(ctx, "default", "normal", queue.NewJob{ID: ids[i], Name: j.task, Envelope: env, MaxRetries: 5}); err != nil {
			t.Fatalf("enqueue %s: %v", j.what, err)
		}
	}
	return ids
}

// enqueueGoodBehindPoison enqueues a good job of three of the shapes and
// returns their ids.
func enqueueGoodBehindPoison(ctx context.Context, t *testing.T, c *runtime.Client) []string {
	t.Helper()
	var good []string
	for _, enq := range []func() (string, error){
		func() (string, error) {
			return poisonStruct.With(c).Enqueue(ctx, poisonArgs{Tags: []string{"a"}, Items: []poisonItem{{S: "s"}}, Ptr: &poisonInner{}})
		},
		func() (string, error) { return poisonBytes.With(c).Enqueue(ctx, []byte("raw")) },
		func() (string, error) { return poisonNone.With(c).Enqueue(ctx, runtime.None{}) },
	} {
		id, err := enq()
		if err != nil {
			t.Fatal(err)
		}
		good = append(good, id)
	}
	return good
}

// waitPoisonSettled waits, up to 60s, until every poison job is
// dead-lettered and every good one completed, failing the test if the worker
// process exits first.
func waitPoisonSettled(ctx context.Context, t *testing.T, c *runtime.Client, cmd *exec.Cmd, exited chan struct{}, stderr *bytes.Buffer, ids, good []string) {
	t.Helper()
	maxRSS := func() int64 { return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 } // KiB on Linux

	dead := runtime.QueueOf(c).Keys("default").Dead()
	settled := func() bool {
		for _, id := range ids {
			if c.Redis().ZScore(ctx, dead, id).Err() != nil {
				return false
			}
		}
		for _, id := range good {
			if info, err := c.Job(ctx, id); err != nil || info.Status != runtime.StatusCompleted {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(60 * time.Second)
	for !settled() {
		select {
		case <-exited:
			t.Fatalf("the worker process exited (%v, peak RSS %d MiB) before every poison job was dead-lettered; its stderr:\n%s",
				cmd.ProcessState, maxRSS()>>20, crashLines(stderr.String()))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the poison jobs to be dead-lettered and the good ones to complete; worker stderr:\n%s", lastLines(stderr.String(), 15))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// crashLines is what matters of a crashed process's stderr: from its fatal
// error or panic through the first goroutine's stack, or else its last lines.
func crashLines(s string) string {
	for _, mark := range []string{"fatal error:", "panic:"} {
		if i := strings.Index(s, mark); i >= 0 {
			lines := strings.SplitN(s[i:], "\n", 30)
			return strings.Join(lines[:min(len(lines), 29)], "\n")
		}
	}
	return lastLines(s, 15)
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// vmHWM is the peak resident size in bytes of the running process pid since
// it was exec'd (VmHWM in /proc/<pid>/status).
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read the worker's peak memory: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM line %q: %v", line, err)
			}
			return kib << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
