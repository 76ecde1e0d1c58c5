package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// twiceCase sets a route up for one script and runs its transition, the
// script calls inside h.during so each is sent twice and compared.
type twiceCase struct {
	name string
	run  func(t *testing.T, q *queue.Queue, h *twice)
}

// transitionTwiceCases names each transition script with the state it meets,
// good jobs and garbage alike, and the calls that run it inside h.during.
var transitionTwiceCases = []twiceCase{
	{"fail: retry, dead, garbage attempts", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		light := leaseLight(t, q, 2, now, now.Add(time.Minute))
		heavy := leaseHeavy(t, q, 1, now, now.Add(time.Minute))
		hset("a", "x")(t, q, heavy[0])
		h.during(func() {
			for i, d := range append(light, heavy...) {
				f := queue.Failure{Message: "boom", RetryAt: now, Final: i == 1, Record: []byte("rec"), TTL: time.Minute}
				if _, err := q.Jobs.Fail(ctx, d, f, now); err != nil {
					t.Fatal(err)
				}
			}
		})
	}},
	{"fail: snoozed, light and heavy", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		ds := append(leaseLight(t, q, 1, now, now.Add(time.Minute)), leaseHeavy(t, q, 1, now, now.Add(time.Minute))...)
		h.during(func() {
			for _, d := range ds {
				f := queue.Failure{Message: "later", RetryAt: now.Add(time.Second), Snooze: true, Record: []byte("rec"), TTL: time.Minute}
				if out, err := q.Jobs.Fail(ctx, d, f, now); out != queue.EndSnoozed || err != nil {
					t.Fatalf("snooze = %v, %v", out, err)
				}
			}
		})
	}},
	{"reap: light, heavy, garbage fields, job key of another type, empty id, empty group", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		until := now.Add(time.Minute)
		ds := append(leaseLight(t, q, 2, now, until), leaseHeavy(t, q, 4, now, until)...)
		jobKeyHolds("string")(t, q, ds[1])
		hset("a", "x")(t, q, ds[3])
		hdel("m")(t, q, ds[4])
		emptyIDLeased(t, q, ds[5])
		k := q.Keys("r")
		q.Client().ZAdd(ctx, k.Active(), redisZ(until, "empty-group"))
		q.Client().HSet(ctx, k.Groups(), "empty-group", 2)
		h.during(func() {
			if _, err := q.Jobs.Reap(ctx, "r", until, verdict(until)); err != nil {
				t.Fatal(err)
			}
		})
	}},
	{"reap, requeue and hand back of jobs with a cancel request: light, heavy, garbage attempts, job key of another type", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		until := now.Add(time.Minute)
		reaped := append(leaseLight(t, q, 2, now, until), leaseHeavy(t, q, 2, now, until)...)
		jobKeyHolds("string")(t, q, reaped[1])
		hset("a", "x")(t, q, reaped[3])
		requeued := append(leaseLight(t, q, 1, now, until.Add(time.Hour)), leaseHeavy(t, q, 1, now, until.Add(time.Hour))...)
		handed := leaseLight(t, q, 2, now, until.Add(time.Hour))
		k := q.Keys("r")
		for _, d := range append(append(reaped, requeued...), handed[0]) {
			q.Client().SAdd(ctx, k.Cancels(), d.ID)
		}
		h.during(func() {
			got, err := q.Jobs.Reap(ctx, "r", until, verdict(until))
			for _, d := range reaped {
				if err != nil || got[d.ID] != queue.EndCanceled {
					t.Fatalf("reap = %v, %v; want every job ended canceled", got, err)
				}
			}
			for _, d := range requeued {
				if out, err := q.Jobs.Requeue(ctx, d, []byte("canceled"), time.Minute, time.Now()); out != queue.EndCanceled || err != nil {
					t.Fatalf("requeue = %v, %v; want ended canceled", out, err)
				}
			}
			if n, err := handBack(ctx, q, &queue.LostFetch{Route: "r", Token: handed[0].Token, Until: until}); n != 1 || err != nil {
				t.Fatalf("hand back = %d, %v; want the job without a request handed back", n, err)
			}
		})
	}},
	{"promote: good, garbage priority, job key of another type, no job", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		jobs := []queue.NewJob{job(t, "r"), job(t, "r"), job(t, "r"), job(t, "r")}
		for i := range jobs {
			jobs[i].RunAt = now.Add(time.Millisecond)
		}
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.High, jobs, now); err != nil {
			t.Fatal(err)
		}
		k := q.Keys("r")
		q.Client().HSet(ctx, k.Job(jobs[1].ID), "p", "urgent")
		q.Client().Del(ctx, k.Job(jobs[2].ID))
		q.Client().Set(ctx, k.Job(jobs[2].ID), "junk", 0)
		q.Client().Del(ctx, k.Job(jobs[3].ID))
		h.during(func() {
			if _, err := q.Jobs.Promote(ctx, "r", now.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
		})
	}},
	{"requeue: light and heavy", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		ds := append(leaseLight(t, q, 1, now, now.Add(time.Minute)), leaseHeavy(t, q, 1, now, now.Add(time.Minute))...)
		h.during(func() {
			for _, d := range ds {
				if out, err := q.Jobs.Requeue(ctx, d, []byte("canceled"), time.Minute, time.Now()); out != queue.EndHandedBack || err != nil {
					t.Fatalf("requeue = %v, %v", out, err)
				}
			}
		})
	}},
	{"replay: one job, then all with one left dead and one without a job", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		k := q.Keys("r")
		one, noPrio, orphan, good := deadJob(t, q, now), deadJob(t, q, now), deadJob(t, q, now), deadJob(t, q, now)
		q.Client().HDel(ctx, k.Job(noPrio), "p")
		q.Client().Del(ctx, k.Job(orphan))
		h.during(func() {
			if err := q.Ops.Replay(ctx, one); err != nil {
				t.Fatal(err)
			}
			if n, err := q.Ops.ReplayAll(ctx, "r"); n != 1 || err != nil {
				t.Fatalf("replay all = %d, %v", n, err)
			}
		})
		wantPlace(t, q, "r", good, queue.Normal)
	}},
	{"purge: dead jobs, one set aside as garbage", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		deadJob(t, q, now)
		d := leaseHeavy(t, q, 1, now, now.Add(time.Minute))[0]
		jobKeyHolds("string")(t, q, d)
		if _, err := q.Jobs.Reap(ctx, "r", now.Add(time.Minute), verdict(now)); err != nil {
			t.Fatal(err)
		}
		h.during(func() {
			if n, err := q.Ops.Purge(ctx, "r", now.Add(time.Hour)); n != 2 || err != nil {
				t.Fatalf("purge = %d, %v", n, err)
			}
		})
	}},
	{"pause, a fetch of the paused route, resume", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, []queue.NewJob{job(t, "r")}, now); err != nil {
			t.Fatal(err)
		}
		h.during(func() {
			if err := q.Ops.Pause(ctx, "r"); err != nil {
				t.Fatal(err)
			}
			if ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 10, now.Add(time.Minute), now); len(ds) != 0 || err != nil {
				t.Fatalf("fetch = %d, %v", len(ds), err)
			}
			if ds, err := q.Jobs.FetchTypes(ctx, "r", queue.Priorities, []string{"t"}, 10, now.Add(time.Minute), now); len(ds) != 0 || err != nil {
				t.Fatalf("typed fetch = %d, %v", len(ds), err)
			}
			if err := q.Ops.Resume(ctx, "r"); err != nil {
				t.Fatal(err)
			}
		})
	}},
	{"delete: light and heavy pending, scheduled", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		light, heavy, scheduled := waiting(t, q, time.Now())
		h.during(func() {
			for _, id := range []string{light, heavy, scheduled} {
				if err := q.Jobs.Delete(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
		})
	}},
	{"cancel: light and heavy pending, scheduled, running", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		light, heavy, scheduled := waiting(t, q, now)
		running := fetchAll(t, q, 2, now, now.Add(time.Minute))
		h.during(func() {
			for _, id := range []string{light, heavy, scheduled, running[0].ID, running[1].ID} {
				if _, err := q.Jobs.Cancel(ctx, id, []byte("canceled "+id), time.Minute); err != nil {
					t.Fatal(err)
				}
			}
		})
	}},
	{"finish canceled, light and heavy; cancel requests, one of a run that ended", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		ds := append(leaseLight(t, q, 2, now, now.Add(time.Minute)), leaseHeavy(t, q, 1, now, now.Add(time.Minute))...)
		for _, d := range ds {
			if _, err := q.Jobs.Cancel(ctx, d.ID, []byte("unused"), time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if ok, err := q.Jobs.Ack(ctx, ds[1], []byte("ok"), time.Minute); !ok || err != nil {
			t.Fatalf("ack = %v, %v", ok, err)
		}
		h.during(func() {
			if got, err := q.Jobs.CancelRequests(ctx, "r", []string{ds[0].ID, ds[2].ID}); len(got) != 2 || err != nil {
				t.Fatalf("cancel requests = %v, %v", got, err)
			}
			for _, d := range []*queue.Dispatch{ds[0], ds[2]} {
				if ok, err := q.Jobs.FinishCanceled(ctx, d, []byte("canceled"), time.Minute); !ok || err != nil {
					t.Fatalf("finish canceled = %v, %v", ok, err)
				}
			}
		})
	}},
	{"ack: records kept and not (result ttl 0), light and heavy", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		q.Ended.Keep(true)
		ds := append(leaseLight(t, q, 2, now, now.Add(time.Minute)), leaseHeavy(t, q, 2, now, now.Add(time.Minute))...)
		h.during(func() {
			for i, d := range ds {
				ttl := time.Duration(i%2) * time.Minute // 0: keeps nothing
				if ok, err := q.Jobs.Ack(ctx, d, []byte("ok"), ttl); !ok || err != nil {
					t.Fatalf("ack = %v, %v", ok, err)
				}
			}
		})
	}},
	{"replay dead and purge dead of one task", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		now := time.Now()
		deadOf(t, q, "a", now)
		deadOf(t, q, "b", now)
		deadOf(t, q, "c", now)
		h.during(func() {
			if n, err := q.Ops.ReplayDead(ctx, "r", "a"); n != 1 || err != nil {
				t.Fatalf("replay dead = %d, %v", n, err)
			}
			if n, err := q.Ops.PurgeDead(ctx, "r", "b", now.Add(time.Hour)); n != 1 || err != nil {
				t.Fatalf("purge dead = %d, %v", n, err)
			}
		})
	}},
	{"cron: a tick fired", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		tick := time.UnixMilli(time.Now().UnixMilli())
		h.during(func() {
			if fired, err := q.FireCron(ctx, cronFire(t, tick), tick); !fired || err != nil {
				t.Fatalf("fire = %v, %v", fired, err)
			}
		})
	}},
}

// Every script may run twice with the same arguments: a client that lost the
// reply retries. The second run must leave every key of the namespace as the
// first left it. Each case sets a route up with what its script meets (good
// jobs and garbage alike), then runs the transition with every script call
// repeated and compared (see twice).
func TestScripts_SecondRunWithSameArgumentsChangesNothing(t *testing.T) {
	runTwiceCases(t, transitionTwiceCases)
}

// runTwiceCases runs each case on every backend with its script calls sent
// twice.
func runTwiceCases(t *testing.T, cases []twiceCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, q *queue.Queue) {
				c.run(t, q, hookTwice(t, q))
			})
		})
	}
}
