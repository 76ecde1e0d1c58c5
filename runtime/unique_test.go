package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
)

type uniqueMail struct {
	To, Subject, Body string
	Meta              struct{ Tenant string }
}

var uniqueMailTask = runtime.NewTask[uniqueMail, runtime.None]("unique_mail")

// onEveryServer runs f on the embedded server, a real redis-server and a
// three-master Redis Cluster.
func onEveryServer(t *testing.T, f func(t *testing.T, c *runtime.Client)) {
	t.Helper()
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		f(t, connect(t, redistest.SharedCluster(t).URL()))
	})
	eachBackend(t, f)
}

// A unique key made of some fields of the args (dotted paths into nested
// structs allowed) refuses a second job of the same fields, whatever the
// other fields hold, while its holder lives: held until ended by default,
// it is free again once the job completed; held until started, it is free
// as soon as the job runs.
func TestUniqueBy_NamedFieldsHeldUntilEndedOrStarted(t *testing.T) {
	onEveryServer(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		task := uniqueMailTask.With(c)
		release, hold, running := make(chan struct{}), make(chan struct{}), make(chan string, 8)
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Concurrency: 4}))
		runtime.Handle(w, task, func(ctx context.Context, m uniqueMail) (runtime.None, error) {
			running <- m.Body
			if m.Body == "held" {
				<-hold
			}
			<-release
			return runtime.None{}, nil
		})
		defer close(hold)
		by := []runtime.Option{runtime.Unique(time.Minute), runtime.UniqueBy("To", "Meta.Tenant")}
		m := uniqueMail{To: "a@x", Subject: "one", Body: "1"}
		m.Meta.Tenant = "t1"
		first, err := task.Enqueue(ctx, m, by...)
		if err != nil {
			t.Fatal(err)
		}
		other := m
		other.Subject, other.Body = "two", "2"
		if id, err := task.Enqueue(ctx, other, by...); !errors.Is(err, runtime.ErrDuplicate) || id != first {
			t.Fatalf("same To and Meta.Tenant, other Subject = %q, %v; want %s and ErrDuplicate", id, err, first)
		} else if !strings.Contains(err.Error(), "To, Meta.Tenant") {
			t.Fatalf("duplicate error %q does not say what the key is made of", err)
		}
		other.Meta.Tenant = "t2"
		second, err := task.Enqueue(ctx, other, by...)
		if err != nil || second == first {
			t.Fatalf("other Meta.Tenant = %q, %v; want a job of its own", second, err)
		}
		startWorker(t, w)
		recv(t, running, 10*time.Second, "a job to start")
		recv(t, running, 10*time.Second, "a job to start")
		if id, err := task.Enqueue(ctx, m, by...); !errors.Is(err, runtime.ErrDuplicate) || id != first {
			t.Fatalf("while the holder runs = %q, %v; want %s and ErrDuplicate (held until ended)", id, err, first)
		}
		close(release)
		if _, err := task.Await(ctx, first); err != nil {
			t.Fatal(err)
		}
		third, err := task.Enqueue(ctx, m, by...)
		if err != nil || third == first {
			t.Fatalf("after the holder completed = %q, %v; want a new job", third, err)
		}
		if _, err := task.Await(ctx, third); err != nil {
			t.Fatal(err)
		}

		recv(t, running, 10*time.Second, "the third job to start")
		started := append(by, runtime.UniqueUntil(runtime.UntilStarted))
		m.Body = "held"
		a, err := task.Enqueue(ctx, m, started...)
		if err != nil {
			t.Fatal(err)
		}
		if got := recv(t, running, 10*time.Second, "the job held until started to start"); got != "held" {
			t.Fatalf("started %q; want the held job", got)
		}
		m.Body = "next"
		if id, err := task.Enqueue(ctx, m, started...); err != nil || id == a {
			t.Fatalf("while the job held until started runs = %q, %v; want a new job", id, err)
		}
	})
}

// Options that need a unique key are refused without one, and a UniqueBy
// path the args do not have is refused naming it.
func TestUnique_OptionsRefusedNamingWhatIsWrong(t *testing.T) {
	c := connect(t, "mem://")
	task := uniqueMailTask.With(c)
	ctx := ctxT(t)
	for _, tc := range []struct {
		opts []runtime.Option
		want string
	}{
		{[]runtime.Option{runtime.Debounce(time.Second)}, "runtime.Debounce needs a unique key"},
		{[]runtime.Option{runtime.UniqueBy("To")}, "runtime.UniqueBy needs runtime.Unique"},
		{[]runtime.Option{runtime.Unique(time.Minute), runtime.UniqueBy("Meta.Nope")}, "has no exported field Nope"},
		{[]runtime.Option{runtime.Unique(time.Minute), runtime.UniqueUntil("later")}, "runtime.UniqueUntil"},
	} {
		if _, err := task.Enqueue(ctx, uniqueMail{}, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Enqueue = %v; want an error saying %q", err, tc.want)
		}
	}
}
