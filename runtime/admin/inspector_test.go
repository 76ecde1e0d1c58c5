package admin_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// tasksOnly is a Runtime that registered tasks and cron entries and runs no
// worker: the Inspector asks it what the tasks know, and does the rest over
// the queue. A call it does not answer here is one these tests make none of.
type tasksOnly struct {
	admin.Runtime
	tasks    []admin.Task
	enqueued map[string]int
}

func (r *tasksOnly) Tasks() []admin.Task { return r.tasks }

func (r *tasksOnly) Task(name string) (admin.RegisteredTask, bool) {
	for _, t := range r.tasks {
		if t.Name == name {
			return admin.RegisteredTask{Task: t}, true
		}
	}
	return admin.RegisteredTask{}, false
}

func (r *tasksOnly) RouteTakers(context.Context) (map[string]int, error) {
	return map[string]int{}, nil
}

func (r *tasksOnly) CronJob(name string, now time.Time) (admin.CronJob, error) {
	for _, t := range r.tasks {
		if t.Cron != nil && t.Name == name {
			env, err := queue.EncodeEnvelope(queue.Envelope{})
			if err != nil {
				return admin.CronJob{}, err
			}
			j := queue.NewJob{ID: queue.NewID(t.Route, now), Name: name, Envelope: env, MaxRetries: t.Retries}
			return admin.CronJob{Route: t.Route, Priority: t.Priority, Job: j}, nil
		}
	}
	return admin.CronJob{}, admin.ErrUnknownCron
}

func (r *tasksOnly) Enqueued(route string, p admin.Priority, task string, n int) {
	r.enqueued[task] += n
}

// inspect is an Inspector over a real redis-server, in a namespace of its
// own, for the tasks of rt.
func inspect(t *testing.T, rt admin.Runtime) (*admin.Inspector, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	q, err := queue.New(redistest.Shared(t).Client(t), redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.SyncClock(ctx); err != nil {
		t.Fatal(err)
	}
	return admin.NewInspector(q, rt), ctx
}

// The routes the Inspector knows include those its Runtime's tasks enqueue
// to, before any job was: such a route can be paused, a typo is refused
// naming the known routes, and Routes shows the paused route with zeros.
func TestInspector_KnowsTheRoutesOfItsRuntimesTasks(t *testing.T) {
	t.Parallel()
	rt := &tasksOnly{tasks: []admin.Task{{Name: "send_email", Route: "email", Priority: queue.Normal}}}
	in, ctx := inspect(t, rt)
	err := in.Pause(ctx, "emial")
	if !errors.Is(err, admin.ErrUnknownRoute) || !strings.Contains(err.Error(), "known routes: email") {
		t.Fatalf("Pause(emial) = %v; want ErrUnknownRoute naming the known route email", err)
	}
	if err := in.Pause(ctx, "email"); err != nil {
		t.Fatalf("Pause(email) = %v; want nil: a registered task enqueues to it", err)
	}
	routes, err := in.Routes(ctx)
	if err != nil || len(routes) != 1 || routes[0].Route != "email" || !routes[0].Paused || routes[0].Normal != 0 {
		t.Fatalf("Routes = %+v, %v; want email alone, paused, empty", routes, err)
	}
	if tasks := in.Tasks(); len(tasks) != 1 || tasks[0].Name != "send_email" {
		t.Fatalf("Tasks = %+v; want the Runtime's send_email", tasks)
	}
}

// RunCron enqueues the job the Runtime builds for the entry on the
// entry's route, counts it, and lists it; an entry the Runtime does not
// have is its refusal, and nothing is enqueued.
func TestInspector_RunCronEnqueuesTheRuntimesJobOnItsRoute(t *testing.T) {
	t.Parallel()
	rt := &tasksOnly{enqueued: map[string]int{}, tasks: []admin.Task{
		{Name: "nightly", Route: "reports", Priority: queue.Low, Retries: 2, Cron: &admin.CronSpec{Spec: "@daily"}},
	}}
	in, ctx := inspect(t, rt)
	if _, err := in.RunCron(ctx, "hourly"); !errors.Is(err, admin.ErrUnknownCron) {
		t.Fatalf("RunCron(hourly) = %v; want ErrUnknownCron", err)
	}
	id, err := in.RunCron(ctx, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	page, err := in.Jobs(ctx, admin.JobQuery{Route: "reports", State: queue.StatusPending})
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != id || page.Jobs[0].Priority != queue.Low || page.Jobs[0].MaxRetries != 2 {
		t.Fatalf("pending jobs of reports = %+v, %v; want job %s alone, low, 2 retries", page.Jobs, err, id)
	}
	if rt.enqueued["nightly"] != 1 {
		t.Fatalf("enqueued counted %v; want nightly 1", rt.enqueued)
	}
}
