package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// compressibleText is n bytes of rows that repeat with small changes, as a
// batch of customer records does.
func compressibleText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"customer":%d,"name":"Ada Lovelace","plan":"pro","seats":%d},`, i%500, i%7)
	}
	return b.String()[:n]
}

// namespaceBytes is what the keys of namespace ns cost Redis (MEMORY
// USAGE of each, every element counted), and the largest key.
func namespaceBytes(t *testing.T, rdb redis.UniversalClient, ns string) (total int64, largest string) {
	t.Helper()
	ctx := context.Background()
	var most int64
	iter := rdb.Scan(ctx, 0, ns+":*", 1000).Iterator()
	for iter.Next(ctx) {
		n, err := rdb.MemoryUsage(ctx, iter.Val(), 0).Result()
		if err != nil {
			t.Fatalf("MEMORY USAGE %s: %v", iter.Val(), err)
		}
		total += n
		if n > most {
			most, largest = n, fmt.Sprintf("%s (%d bytes)", iter.Val(), n)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return total, largest
}

// A 1 MiB compressible payload costs Redis at most 64 KiB, as args while
// the job waits and as a result once it completed, and handlers, Await and
// Job see it whole: compression is transparent. A client that compresses
// nothing itself still reads it.
func TestCompress_AMiBPayloadCostsRedisAtMost64KiB(t *testing.T) {
	srv := redistest.Shared(t)
	c := connect(t, srv.URL(), runtime.MaxPayload(2<<20))
	ctx := ctxT(t)
	text := compressibleText(1 << 20)
	id, err := testtasks.Echo.With(c).Enqueue(ctx, testtasks.Msg{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	if total, largest := namespaceBytes(t, c.Redis(), c.Namespace()); total > 64<<10 {
		t.Fatalf("a waiting job with 1 MiB of compressible args costs Redis %d bytes (largest key %s); want at most 64 KiB", total, largest)
	}
	var sawWhole atomic.Bool
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		sawWhole.Store(m.Text == text)
		return testtasks.Reply{Text: m.Text}, nil
	})
	startWorker(t, w)
	res, err := testtasks.Echo.With(c).Await(ctx, id)
	if err != nil || res.Text != text {
		t.Fatalf("Await = %d bytes, %v; want the 1 MiB text back", len(res.Text), err)
	}
	if !sawWhole.Load() {
		t.Fatal("the handler did not get the 1 MiB text whole")
	}
	if total, largest := namespaceBytes(t, c.Redis(), c.Namespace()); total > 64<<10 {
		t.Fatalf("a completed job with 1 MiB of compressible args and result costs Redis %d bytes (largest key %s); want at most 64 KiB", total, largest)
	}
	plain := connect(t, srv.URL(), runtime.WithNamespace(c.Namespace()), runtime.CompressOver(0), runtime.MaxPayload(2<<20))
	info := jobInfo(t, plain, id)
	var args testtasks.Msg
	if err := json.Unmarshal(info.Args, &args); err != nil || args.Text != text || !bytes.Contains(info.Result, []byte(text[:4096])) {
		t.Fatalf("Job by a client that compresses nothing: args %d bytes (%v), result %d bytes; want the text in both", len(info.Args), err, len(info.Result))
	}
}

// A job whose stored args are a compressed bomb — a few KiB that would
// inflate to 64 MiB, past the payload limit — is never inflated nor run:
// it fails for good with an error that says why.
func TestCompress_BombArgsFailWithAClearErrorNotInflated(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		e, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		frame := append([]byte{0xc1, 0x01}, e.EncodeAll(make([]byte, 64<<20), nil)...)
		env, err := queue.EncodeEnvelope(queue.Envelope{Args: frame})
		if err != nil {
			t.Fatal(err)
		}
		q, err := queue.New(c.Redis(), c.Namespace())
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		id := queue.NewID("default", now)
		if _, err := q.Jobs.Enqueue(ctx, "default", queue.Normal, []queue.NewJob{{ID: id, Name: testtasks.Echo.Name(), Envelope: env}}, now); err != nil {
			t.Fatal(err)
		}
		var ran atomic.Bool
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
			ran.Store(true)
			return testtasks.Reply{}, nil
		})
		startWorker(t, w)
		waitFor(t, 10*time.Second, "the bomb's job to fail", func() bool { return jobStatus(t, c, id) == runtime.StatusFailed })
		if info := jobInfo(t, c, id); !strings.Contains(info.Error, "would inflate to 67108864 bytes, over the limit of 1048576 bytes") || info.Attempts != 1 {
			t.Fatalf("the bomb's job: error %q after %d attempts; want one attempt and an error saying it would inflate past the limit", info.Error, info.Attempts)
		}
		if ran.Load() {
			t.Fatal("the handler ran the bomb's job")
		}
	})
}
