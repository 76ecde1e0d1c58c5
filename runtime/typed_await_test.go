package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// Await of a task's stub refuses the id of another task's job, naming both
// tasks — whether the job is still pending or has finished — instead of
// decoding its result as the wrong type (a zero value and no error).
func TestAwait_IDOfAnotherTasksJobIsRefusedNamingBoth(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		echo, note := testtasks.Echo.With(c), testtasks.Note.With(c)
		id, err := note.Enqueue(ctx, testtasks.Msg{Text: "x"})
		if err != nil {
			t.Fatal(err)
		}
		wantWrong := func(when string) {
			t.Helper()
			_, err := echo.Await(ctx, id)
			if !errors.Is(err, runtime.ErrWrongTask) || !strings.Contains(err.Error(), "t_note") || !strings.Contains(err.Error(), "t_echo") {
				t.Fatalf("Echo.Await(id of a t_note job %s) = %v; want ErrWrongTask naming t_note and t_echo", when, err)
			}
		}
		wantWrong("still pending")

		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		testtasks.Register(w)
		startWorker(t, w)
		if _, err := note.Await(ctx, id); err != nil {
			t.Fatalf("Note.Await of its own job: %v", err)
		}
		wantWrong("completed")
		if got, err := echo.Call(ctx, testtasks.Msg{Text: "own"}); err != nil || got.Text != "own" {
			t.Fatalf("Echo.Call = %+v, %v", got, err)
		}
	})
}

// A failed job's record names its task too: Await of another stub is
// refused rather than reporting the failure as its own.
func TestAwait_FailedJobOfAnotherTaskIsRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		echo, note := testtasks.Echo.With(c), testtasks.Note.With(c)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		runtime.Handle(w, testtasks.Note, func(ctx context.Context, m testtasks.Msg) (runtime.None, error) {
			return runtime.None{}, errors.New("no")
		})
		startWorker(t, w)
		id, err := note.Enqueue(ctx, testtasks.Msg{Text: "x"}, runtime.MaxRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		var je *runtime.JobError
		if _, err := note.Await(ctx, id); !errors.As(err, &je) {
			t.Fatalf("Note.Await = %v; want its JobError", err)
		}
		waitFor(t, 5*time.Second, "the job to be dead", func() bool { return jobStatus(t, c, id) == runtime.StatusFailed })
		if _, err := echo.Await(ctx, id); !errors.Is(err, runtime.ErrWrongTask) {
			t.Fatalf("Echo.Await(id of a failed t_note job) = %v; want ErrWrongTask", err)
		}
	})
}

// Without a client, a stub says which variable of the user's code has none,
// and how to give it one — not only the task's wire name.
func TestTask_WithoutAClientNamesTheStub(t *testing.T) {
	if runtime.Default() != nil {
		t.Skip("a default client was set in this test binary (Example)")
	}
	_, err := testtasks.Echo.Enqueue(context.Background(), testtasks.Msg{})
	if err == nil || !strings.Contains(err.Error(), "Echo (task t_echo) has no client") || !strings.Contains(err.Error(), "Echo.With(client)") {
		t.Fatalf("Enqueue without a client: %v; want it to name the stub Echo", err)
	}
}
