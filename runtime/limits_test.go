package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
	kt "github.com/bananas-go/bananas/runtime/internal/keytasks"
)

type shopArgs struct {
	Shop  string
	Order int
}

func shopTask(name string) *runtime.Task[shopArgs, runtime.None] {
	return runtime.NewTask[shopArgs, runtime.None](name, runtime.Route("shops")).
		KeyBy(func(a shopArgs) string { return a.Shop })
}

// panicOf runs f and returns what it panicked with, "" when it did not.
func panicOf(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

func TestLimit_WrongLimitsPanicNamingTheTaskAndTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limits runtime.TaskLimits
		field  string
	}{
		{runtime.TaskLimits{Rate: "100/d"}, "Rate"},
		{runtime.TaskLimits{Rate: "0/s"}, "Rate"},
		{runtime.TaskLimits{MaxRunning: -1}, "MaxRunning"},
		{runtime.TaskLimits{MaxRunning: queue.LimitMax + 1}, "MaxRunning"},
		{runtime.TaskLimits{Burst: 5}, "Burst"},
		{runtime.TaskLimits{Rate: "10/s", Burst: -2}, "Burst"},
	} {
		msg := panicOf(func() {
			runtime.NewTask[shopArgs, runtime.None]("charge").Var("Charge").Limit(tc.limits)
		})
		if !strings.Contains(msg, "Charge.Limit") || !strings.Contains(msg, "task charge") || !strings.Contains(msg, tc.field) {
			t.Errorf("Limit(%+v) panicked with %q; want the variable, the task and the field %s named", tc.limits, msg, tc.field)
		}
	}
	if msg := panicOf(func() {
		runtime.NewTask[shopArgs, runtime.None]("charge").Limit(runtime.TaskLimits{MaxRunning: 2, Rate: "100/s", Burst: 10})
	}); msg != "" {
		t.Fatalf("good limits panicked: %s", msg)
	}
}

func TestKey_LongerThanTheMaxIsRefusedNamingItsSize(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		long := strings.Repeat("k", queue.MaxKeyLen+1)
		task := shopTask("long_keys").With(c)
		_, err := task.Enqueue(ctx, shopArgs{Shop: "ok"}, runtime.Key(long))
		if err == nil || !strings.Contains(err.Error(), "runtime.Key") || !strings.Contains(err.Error(), fmt.Sprint(len(long))) {
			t.Fatalf("Key of %d bytes: err %v; want it refused naming runtime.Key and the size", len(long), err)
		}
		_, err = task.EnqueueMany(ctx, []shopArgs{{Shop: "ok"}, {Shop: long}})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprint(len(long))) {
			t.Fatalf("a KeyBy key of %d bytes: err %v; want it refused naming the size", len(long), err)
		}
		if n, err := runtime.QueueOf(c).Client().LLen(ctx, runtime.QueueOf(c).Keys("shops").List(runtime.PriorityNormal)).Result(); err != nil || n != 0 {
			t.Fatalf("ready list holds %d jobs (%v) after refused enqueues; want none", n, err)
		}
		if _, err := task.Enqueue(ctx, shopArgs{Shop: strings.Repeat("k", queue.MaxKeyLen)}); err != nil {
			t.Fatalf("a key of exactly the max: %v", err)
		}
	})
}

// What the runtime hands the queue: keyed jobs with their key, by KeyBy,
// the Key option, or the limits alone.
func TestKeyBy_JobsAreHandedToTheQueueKeyed(t *testing.T) {
	t.Parallel()
	c := connect(t, "mem://")
	type want struct {
		keyed bool
		key   string
	}
	limited := runtime.NewTask[shopArgs, runtime.None]("limited").Limit(runtime.TaskLimits{MaxRunning: 1})
	plain := runtime.NewTask[shopArgs, runtime.None]("plain")
	for _, tc := range []struct {
		name string
		jobs func() ([]queue.NewJob, []string, error)
		want []want
	}{
		{"KeyBy", func() ([]queue.NewJob, []string, error) {
			return runtime.BuiltJobs(shopTask("keyed"), c, []shopArgs{{Shop: "a"}, {Shop: "b"}})
		}, []want{{true, "a"}, {true, "b"}}},
		{"Key overrides KeyBy", func() ([]queue.NewJob, []string, error) {
			return runtime.BuiltJobs(shopTask("keyed"), c, []shopArgs{{Shop: "a"}}, runtime.Key("z"))
		}, []want{{true, "z"}}},
		{"limits without a key", func() ([]queue.NewJob, []string, error) {
			return runtime.BuiltJobs(limited, c, []shopArgs{{Shop: "a"}})
		}, []want{{true, ""}}},
		{"Key on a task without limits", func() ([]queue.NewJob, []string, error) {
			return runtime.BuiltJobs(plain, c, []shopArgs{{Shop: "a"}}, runtime.Key("fair"))
		}, []want{{true, "fair"}}},
		{"neither", func() ([]queue.NewJob, []string, error) {
			return runtime.BuiltJobs(plain, c, []shopArgs{{Shop: "a"}})
		}, []want{{false, ""}}},
	} {
		jobs, _, err := tc.jobs()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i, j := range jobs {
			if j.Keyed != tc.want[i].keyed || j.Key != tc.want[i].key {
				t.Errorf("%s: job %d is Keyed %v, Key %q; want %v, %q", tc.name, i, j.Keyed, j.Key, tc.want[i].keyed, tc.want[i].key)
			}
		}
	}
}

// On a sharded route the jobs of one key all go to one shard, single
// enqueues and batches alike, whatever shard unkeyed jobs go to at the
// moment; and a batch of many keys is written over their shards.
func TestKeyBy_AKeysJobsAllGoToOneShard(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		if err := runtime.QueueOf(c).SetShards(ctx, "shops", 8); err != nil {
			t.Fatal(err)
		}
		task := shopTask("sharded").With(c)
		shardOfKey := map[string]string{}
		check := func(key, id string) {
			t.Helper()
			shard, ok := queue.RouteOf(id)
			if !ok {
				t.Fatalf("id %s names no shard", id)
			}
			if prev, seen := shardOfKey[key]; seen && prev != shard {
				t.Fatalf("key %s has jobs on shards %s and %s", key, prev, shard)
			}
			shardOfKey[key] = shard
			if _, err := c.Job(ctx, id); err != nil {
				t.Fatalf("job %s of key %s is not in Redis: %v", id, key, err)
			}
		}
		deadline := time.Now().Add(20 * time.Millisecond) // several windows of the shard of the moment
		for n := 0; n < 20 || time.Now().Before(deadline); n++ {
			id, err := task.Enqueue(ctx, shopArgs{Shop: "one", Order: n})
			if err != nil {
				t.Fatal(err)
			}
			check("one", id)
		}
		var batch []shopArgs
		for n := range 64 {
			batch = append(batch, shopArgs{Shop: fmt.Sprintf("shop-%d", n%16), Order: n})
		}
		batch = append(batch, shopArgs{Shop: "one"})
		ids, err := task.EnqueueMany(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			check(batch[i].Shop, id)
		}
		shards := map[string]bool{}
		for _, s := range shardOfKey {
			shards[s] = true
		}
		if len(shards) < 2 {
			t.Fatalf("17 keys all went to one shard of 8: %v", shards)
		}
	})
}

// A worker stores the limits of the tasks it registers on their route and
// each of its shards when it starts, and removes those of a task that has
// none left in the code; a shard the route gains later gets them as the
// worker comes to serve it.
func TestWorker_StoresTheLimitsOfItsTasksAtStart(t *testing.T) {
	t.Parallel()
	c := connect(t, redistest.Shared(t).URL())
	ctx := ctxT(t)
	q := runtime.QueueOf(c)
	if err := q.SetShards(ctx, "limits", 2); err != nil {
		t.Fatal(err)
	}
	shards := queue.ShardNames("limits", 2)
	stale := queue.Limits{MaxRunning: 3}
	for _, s := range shards {
		if err := q.Flows.SetTaskLimits(ctx, s, "unlimited", stale); err != nil {
			t.Fatal(err)
		}
	}
	limited := runtime.NewTask[shopArgs, runtime.None]("limited", runtime.Route("limits")).
		Limit(runtime.TaskLimits{MaxRunning: 2, Rate: "50/m", Burst: 5})
	unlimited := runtime.NewTask[shopArgs, runtime.None]("unlimited", runtime.Route("limits"))
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"limits"}}))
	noop := func(context.Context, shopArgs) (runtime.None, error) { return runtime.None{}, nil }
	runtime.Handle(w, limited, noop)
	runtime.Handle(w, unlimited, noop)
	startWorker(t, w)

	want := queue.Limits{MaxRunning: 2, Rate: 50, Per: time.Minute, Burst: 5}
	for _, s := range shards {
		waitFor(t, 10*time.Second, "the limits stored on shard "+s, func() bool {
			got, err := q.Flows.TaskLimits(ctx, s)
			return err == nil && len(got) == 1 && got["limited"] == want
		})
	}

	// The shards a route gains while the worker runs get the limits too.
	if err := runtime.NewInspector(c).SetShards(ctx, "limits", 5); err != nil {
		t.Fatal(err)
	}
	for _, s := range queue.ShardNames("limits", 5) {
		waitFor(t, 10*time.Second, "the limits stored on new shard "+s, func() bool {
			got, err := q.Flows.TaskLimits(ctx, s)
			return err == nil && got["limited"] == want
		})
	}
}

func TestTaskInfo_CarriesTheKeyAndTheLimits(t *testing.T) {
	t.Parallel()
	task := runtime.NewTask[shopArgs, runtime.None]("described").
		Limit(runtime.TaskLimits{MaxRunning: 1, Rate: "100/s", Burst: 10}).
		KeyBy(func(a shopArgs) string { return a.Shop }).DescribeKey("Shop")
	b, err := json.Marshal(task.Info())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"key": "Shop", "max_running": 1.0, "rate": "100/s", "burst": 10.0} {
		if got[k] != v {
			t.Errorf("%s = %v; want %v (in %s)", k, got[k], v, b)
		}
	}
	if key := shopTask("unnamed").Info().Key; key != "func" {
		t.Errorf("a KeyBy that names no path is described as key %q; want \"func\"", key)
	}
	b, _ = json.Marshal(runtime.NewTask[shopArgs, runtime.None]("plain").Info())
	for _, k := range []string{`"key"`, `"max_running"`, `"rate"`, `"burst"`} {
		if strings.Contains(string(b), k) {
			t.Errorf("a task without a key or limits describes %s: %s", k, b)
		}
	}
}

// A keyed job with a chosen id of the generated shape must name its flow's
// shard: the id decides where it is written.
func TestKeyBy_ChosenIDOnAnotherShardIsRefused(t *testing.T) {
	t.Parallel()
	c := connect(t, "mem://")
	ctx := ctxT(t)
	if err := runtime.QueueOf(c).SetShards(ctx, "shops", 4); err != nil {
		t.Fatal(err)
	}
	task := shopTask("chosen").With(c)
	jobs, shards, err := runtime.BuiltJobs(task, c, []shopArgs{{Shop: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	flow := shards[0]
	var other string
	for _, s := range queue.ShardNames("shops", 4) {
		if s != flow {
			other = s
		}
	}
	base, _, _ := strings.Cut(jobs[0].ID, ".")
	if _, err := task.Enqueue(ctx, shopArgs{Shop: "s"}, runtime.WithID(base+"."+other)); err == nil || !strings.Contains(err.Error(), flow) {
		t.Fatalf("a chosen id on shard %s for a key on %s: err %v; want it refused naming %s", other, flow, err, flow)
	}
	if id, err := task.Enqueue(ctx, shopArgs{Shop: "s"}, runtime.WithID(base+"."+flow)); err != nil || id != base+"."+flow {
		t.Fatalf("a chosen id on the flow's shard: %s, %v", id, err)
	}
	if _, err := task.Enqueue(ctx, shopArgs{Shop: "s"}, runtime.WithID("order-1")); err != nil {
		t.Fatalf("a chosen id of another shape: %v", err)
	}
	if _, err := task.Enqueue(ctx, shopArgs{Shop: "s"}, runtime.WithID("order-1")); !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("the same chosen id again: %v; want ErrDuplicate", err)
	}
}

// The key functions bananagen writes (runtime/internal/keytasks) read a
// field, a path through pointers ("" where one is nil), integers, unsigned
// integers, bools and defined types.
func TestKeyBy_GeneratedKeyFuncsReadTheirPath(t *testing.T) {
	t.Parallel()
	c := connect(t, "mem://")
	full := kt.Order{Customer: "ann", Seq: -42, Total: 18446744073709551615, Paid: true,
		Shop: &kt.Shop{ID: "s1", Owner: &kt.Owner{Account: -7, VIP: true, Tier: 3}}, Home: kt.Shop{ID: "home"}}
	noOwner := kt.Order{Shop: &kt.Shop{ID: "s2"}}
	keyOf := func(jobs []queue.NewJob, _ []string, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, j := range jobs {
			if !j.Keyed {
				t.Fatalf("job of %s is not keyed", j.Name)
			}
			out = append(out, j.Key)
		}
		return out
	}
	for _, tc := range []struct {
		task string
		got  []string
		want []string
	}{
		{"customer", keyOf(runtime.BuiltJobs(kt.ByCustomer, c, []kt.Order{full, {}})), []string{"ann", ""}},
		{"account", keyOf(runtime.BuiltJobs(kt.ByAccount, c, []*kt.Order{&full, &noOwner, {}, nil})), []string{"-7", "", "", ""}},
		{"home", keyOf(runtime.BuiltJobs(kt.ByHome, c, []kt.Order{full})), []string{"home"}},
		{"tier", keyOf(runtime.BuiltJobs(kt.ByTier, c, []kt.Order{full, noOwner})), []string{"3", ""}},
		{"vip", keyOf(runtime.BuiltJobs(kt.ByVIP, c, []kt.Order{full, noOwner})), []string{"true", ""}},
		{"seq", keyOf(runtime.BuiltJobs(kt.BySeq, c, []kt.Order{full})), []string{"-42"}},
		{"total", keyOf(runtime.BuiltJobs(kt.ByTotal, c, []kt.Order{full})), []string{"18446744073709551615"}},
		{"limited", keyOf(runtime.BuiltJobs(kt.Limited, c, []runtime.None{{}})), []string{""}},
	} {
		if strings.Join(tc.got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: keys %q; want %q", tc.task, tc.got, tc.want)
		}
	}
	info := kt.ByCustomer.Info()
	if info.Key != "Customer" || info.MaxRunning != 2 || info.Rate != "100/s" || info.Burst != 10 {
		t.Fatalf("generated task describes key %q, limits %d %q %d; want Customer, 2 100/s 10", info.Key, info.MaxRunning, info.Rate, info.Burst)
	}
}

// A worker that cannot store its tasks' limits does not start: it would run
// jobs under limits the code no longer has.
func TestWorker_RunFailsWhenTheLimitsCannotBeStored(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		ctx := ctxT(t)
		q := runtime.QueueOf(c)
		if err := c.Redis().Set(ctx, q.Keys("wronglimits").Limits(), "not a hash", 0).Err(); err != nil {
			t.Fatal(err)
		}
		task := runtime.NewTask[shopArgs, runtime.None]("stuck", runtime.Route("wronglimits")).Limit(runtime.TaskLimits{MaxRunning: 1})
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"wronglimits"}}))
		runtime.Handle(w, task, func(context.Context, shopArgs) (runtime.None, error) { return runtime.None{}, nil })
		runCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err := w.Run(runCtx)
		if err == nil || !strings.Contains(err.Error(), "limits of task stuck on route wronglimits") {
			t.Fatalf("Run: %v; want it to fail naming the task whose limits it could not store", err)
		}
	})
}
