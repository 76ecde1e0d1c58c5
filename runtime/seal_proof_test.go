package runtime_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// rdbDump saves srv's dataset uncompressed and returns the file's bytes.
func rdbDump(t *testing.T, rdb *redis.Client) []byte {
	t.Helper()
	ctx := context.Background()
	if err := rdb.ConfigSet(ctx, "rdbcompression", "no").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	dir := rdb.ConfigGet(ctx, "dir").Val()["dir"]
	name := rdb.ConfigGet(ctx, "dbfilename").Val()["dbfilename"]
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// With keys set, a marker in args, results and progress notes never
// appears in Redis: not in any key of the namespace (read by type and by
// DUMP), not in an uncompressed RDB dump — whether the job waits, is
// scheduled, runs or completed, small or compressed. The same reads find
// the marker of a client without keys, so they would see a leak.
func TestSeal_AMarkerNeverAppearsInRedis(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := ctxT(t)
	const marker = "MARKER-9c0ffee-4242"
	c := connect(t, srv.URL(), runtime.WithKeys(sealKey("k2", 2), sealKey("k1", 1)), runtime.MaxPayload(2<<20))
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
	runtime.Handle(w, testtasks.Echo, func(ctx context.Context, m testtasks.Msg) (testtasks.Reply, error) {
		if m.N == 1 { // runs until the test ends, its progress note stored
			if err := runtime.Progress(ctx, 10, "note "+marker); err != nil {
				return testtasks.Reply{}, err
			}
			<-release
		}
		return testtasks.Reply{Text: "result " + m.Text}, nil
	})
	startWorker(t, w)
	echo := testtasks.Echo.With(c)
	big := compressibleText(64<<10) + marker
	for _, text := range []string{marker, big} {
		id, err := echo.Enqueue(ctx, testtasks.Msg{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := echo.Await(ctx, id); err != nil || res.Text != "result "+text {
			t.Fatalf("Await = %d bytes, %v", len(res.Text), err)
		}
	}
	running, err := echo.Enqueue(ctx, testtasks.Msg{Text: marker, N: 1})
	if err != nil {
		t.Fatal(err)
	}
	waitProgress(t, c, running, 10, "note "+marker)
	if _, err := echo.Enqueue(ctx, testtasks.Msg{Text: marker}, runtime.Delay(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := echo.Enqueue(ctx, testtasks.Msg{Text: big}, runtime.Route("nobody")); err != nil {
		t.Fatal(err)
	}
	if found := scanHolds(t, rdb, c.Namespace(), marker); len(found) > 0 {
		t.Fatalf("with keys, the marker is in the clear in %v", found)
	}
	if dump := rdbDump(t, rdb); bytes.Contains(dump, []byte(marker)) || !bytes.Contains(dump, []byte(c.Namespace())) {
		t.Fatalf("with keys, the uncompressed RDB dump (%d bytes) holds the marker, or does not hold the namespace's keys", len(dump))
	}

	// The control: the same reads see a marker stored without keys.
	plain := connect(t, srv.URL(), runtime.WithKeys())
	const control = "CONTROL-5eed-1234"
	if _, err := testtasks.Echo.With(plain).Enqueue(ctx, testtasks.Msg{Text: control}, runtime.Route("nobody")); err != nil {
		t.Fatal(err)
	}
	if found := scanHolds(t, rdb, plain.Namespace(), control); len(found) == 0 {
		t.Fatal("the reads do not find a marker stored without keys: they would miss a leak")
	}
	if !bytes.Contains(rdbDump(t, rdb), []byte(control)) {
		t.Fatal("the RDB dump does not hold a marker stored without keys: reading it would miss a leak")
	}
}
