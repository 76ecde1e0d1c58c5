package runtime_test

import (
	"bytes"
	"context"
	rt "runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// runners counts the goroutines parked in or running (*Worker).runner.
func runners() int { return goroutinesIn("engine.(*executor).runner(") }

// goroutinesIn counts the goroutines with fn on their stack.
func goroutinesIn(fn string) int {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	return strings.Count(buf.String(), fn)
}

// A worker reuses its handler goroutines (runners) from job to job, and its
// fetchers from fetch to fetch; they must neither pile up while it runs nor
// outlive Run, except a runner still inside a handler that ignored its
// context past the shutdown timeout, which exits when that handler returns. Not parallel: it counts goroutines of the process.
func TestWorker_RunnersAreBoundedAndExitWithRun(t *testing.T) {
	for _, url := range []string{"mem://", redistest.Shared(t).URL()} {
		c := connect(t, url)
		task := testtasks.Note.With(c)
		const conc = 4
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: conc, ShutdownTimeout: 50 * time.Millisecond}))
		var done atomic.Int64
		most := 0
		release, stuck := make(chan struct{}), make(chan struct{})
		runtime.Handle(w, task, func(ctx context.Context, m Msg) (runtime.None, error) {
			if m.Text == "stuck" {
				close(stuck)
				<-release // ignores ctx: still running when Run returns
			}
			done.Add(1)
			return runtime.None{}, nil
		})
		stop := startWorker(t, w)
		const n = 300
		if _, err := task.EnqueueMany(ctxT(t), make([]Msg, n)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "300 jobs to run", func() bool {
			most = max(most, runners())
			return done.Load() == n
		})
		// One per job running or recording its outcome (2×conc), plus
		// runners between two jobs: 4×conc at most, not one per job.
		if most > 4*conc {
			t.Errorf("%s: %d runners at once for concurrency %d; want at most %d", url, most, conc, 4*conc)
		}
		if _, err := task.Enqueue(ctxT(t), Msg{Text: "stuck"}); err != nil {
			t.Fatal(err)
		}
		recv(t, stuck, 10*time.Second, "the stuck job to start")
		stop()
		waitFor(t, 10*time.Second, "idle runners to exit after Run returned, the stuck one left", func() bool { return runners() == 1 })
		waitFor(t, 10*time.Second, "the fetchers to exit after Run returned", func() bool { return goroutinesIn("engine.(*fetcher).fetchEach") == 0 })
		close(release)
		waitFor(t, 10*time.Second, "the last runner to exit", func() bool { rt.Gosched(); return runners() == 0 })
	}
}
