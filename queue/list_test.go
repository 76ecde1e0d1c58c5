package queue_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/queue"
)

// enqueueN enqueues n ready jobs of task name on route r at priority p and
// returns their ids in enqueue order.
func enqueueN(t *testing.T, q *queue.Queue, p queue.Priority, name string, n int, now time.Time) []string {
	t.Helper()
	jobs := make([]queue.NewJob, n)
	ids := make([]string, n)
	for i := range jobs {
		jobs[i] = job(t, "r")
		jobs[i].Name = name
		ids[i] = jobs[i].ID
	}
	if _, err := q.Jobs.Enqueue(context.Background(), "r", p, jobs, now); err != nil {
		t.Fatal(err)
	}
	return ids
}

func list(t *testing.T, q *queue.Queue, lq queue.ListQuery) queue.ListPage {
	t.Helper()
	lq.Route = "r"
	page, err := q.Ops.ListJobs(context.Background(), lq)
	if err != nil {
		t.Fatalf("list %+v: %v", lq, err)
	}
	return page
}

// pageAll follows Next from the first page to the end, calling between
// before each page but the first, and returns every id shown in order.
func pageAll(t *testing.T, q *queue.Queue, lq queue.ListQuery, between func()) []string {
	t.Helper()
	var shown []string
	for calls := 0; ; calls++ {
		if calls > 10000 {
			t.Fatal("the listing never ends")
		}
		page := list(t, q, lq)
		for _, j := range page.Jobs {
			shown = append(shown, j.ID)
		}
		if page.Next == "" {
			return shown
		}
		lq.Cursor = page.Next
		if between != nil {
			between()
		}
	}
}

// checkOnce fails when an id is shown twice, or a job that stayed (never
// taken from its list) is not shown.
func checkOnce(t *testing.T, shown []string, stayed func(id string) bool, all []string) {
	t.Helper()
	seen := map[string]int{}
	for _, id := range shown {
		seen[id]++
		if seen[id] > 1 {
			t.Fatalf("job %s shown twice", id)
		}
	}
	for _, id := range all {
		if stayed(id) && seen[id] == 0 {
			t.Fatalf("job %s stayed in its list and was skipped", id)
		}
	}
}

// Between pages workers fetch (from the head, sometimes more than the page
// is deep, taking the cursor's own job), producers append, and the list
// drifts by more than the window the cursor is looked for in.
func TestListJobs_CursorPagesNeitherSkipNorRepeatWhileJobsArePopped(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		for _, newest := range []bool{false, true} {
			t.Run(fmt.Sprintf("newest=%v", newest), func(t *testing.T) {
				k := q.Keys("r")
				for _, p := range queue.Priorities {
					q.Client().Del(ctx, k.List(p))
				}
				all := enqueueN(t, q, queue.High, "t", 300, now)
				all = append(all, enqueueN(t, q, queue.Normal, "t", 900, now)...)
				// Jobs appended meanwhile land ahead of a newest-first
				// cursor, where the listing has been: only the first ones
				// must show.
				first := len(all)
				taken := map[string]bool{}
				rng := rand.New(rand.NewSource(1))
				between := func() {
					if n := []int{0, 3, 40, 300}[rng.Intn(4)]; n > 0 {
						ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, n, now.Add(time.Hour), now)
						if err != nil {
							t.Fatal(err)
						}
						for _, d := range ds {
							taken[d.ID] = true
						}
					}
					all = append(all, enqueueN(t, q, queue.Normal, "t", rng.Intn(20), now)...)
				}
				shown := pageAll(t, q, queue.ListQuery{State: queue.ListPending, Limit: 37, Newest: newest}, between)
				if newest {
					all = all[:first]
				}
				checkOnce(t, shown, func(id string) bool { return !taken[id] }, all)
				if !newest && len(shown) < 200 {
					t.Fatalf("shown %d jobs; the pages lost their place", len(shown))
				}
			})
		}
	})
}

// A task-filtered fetch takes the cursor's job from the middle of the list:
// the next page starts at the job that followed it.
func TestListJobs_CursorJobClaimedFromTheMiddleResumesAtTheNext(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		ids := enqueueN(t, q, queue.Normal, "t", 5, now)
		ids = append(ids, enqueueN(t, q, queue.Normal, "other", 1, now)...)
		ids = append(ids, enqueueN(t, q, queue.Normal, "t", 5, now)...)
		page := list(t, q, queue.ListQuery{State: queue.ListPending, Limit: 6})
		if len(page.Jobs) != 6 || page.Jobs[5].Name != "other" || page.Next == "" {
			t.Fatalf("first page = %+v", page)
		}
		if ds, err := q.Jobs.FetchTypes(ctx, "r", queue.Priorities, []string{"other"}, 1, now.Add(time.Hour), now); err != nil || len(ds) != 1 {
			t.Fatalf("claim = %v, %v", ds, err)
		}
		rest := list(t, q, queue.ListQuery{State: queue.ListPending, Limit: 50, Cursor: page.Next})
		var got []string
		for _, j := range rest.Jobs {
			got = append(got, j.ID)
		}
		if strings.Join(got, ",") != strings.Join(ids[6:], ",") || rest.Next != "" {
			t.Fatalf("next page = %v (next %q), want the 5 jobs after the claimed one", got, rest.Next)
		}
	})
}

// Scheduled jobs taken out of the set between pages (promoted) move no one
// else: every job still scheduled shows once, by run-at then id, equal
// run-ats included.
func TestListJobs_ScheduledPagesByRunAtThenID(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		var jobs []queue.NewJob
		for i := 0; i < 60; i++ {
			j := job(t, "r")
			j.RunAt = now.Add(time.Duration(1+i/10) * time.Hour) // ten share each run-at
			jobs = append(jobs, j)
		}
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Normal, jobs, now); err != nil {
			t.Fatal(err)
		}
		var all []string
		for _, j := range jobs {
			all = append(all, j.ID)
		}
		page := list(t, q, queue.ListQuery{State: queue.ListScheduled, Limit: 500, Newest: true})
		if len(page.Jobs) != 60 {
			t.Fatalf("newest first = %d jobs, want 60", len(page.Jobs))
		}
		for i := 1; i < len(page.Jobs); i++ {
			a, b := page.Jobs[i-1], page.Jobs[i]
			if b.RunAt.After(a.RunAt) || b.RunAt.Equal(a.RunAt) && b.ID > a.ID {
				t.Fatalf("newest first: %s (%v) after %s (%v)", b.ID, b.RunAt, a.ID, a.RunAt)
			}
		}
		promoted := map[string]bool{}
		hour := 0
		between := func() {
			hour++
			due := now.Add(time.Duration(hour)*time.Hour + time.Minute)
			before, _ := q.Client().ZRangeByScore(ctx, q.Keys("r").Scheduled(), &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(due.UnixMilli(), 10)}).Result()
			if _, err := q.Jobs.Promote(ctx, "r", due); err != nil {
				t.Fatal(err)
			}
			for _, id := range before {
				promoted[id] = true
			}
		}
		shown := pageAll(t, q, queue.ListQuery{State: queue.ListScheduled, Limit: 7}, between)
		checkOnce(t, shown, func(id string) bool { return !promoted[id] }, all)
	})
}

func TestListJobs_FiltersByTaskAndErrorText(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		msgs := []string{"Disk FULL on host a", "timeout", "disk full on host b"}
		var dead []string
		for i, m := range msgs {
			d := leaseHeavy(t, q, 1, now, now.Add(time.Minute))[0]
			if i == 2 {
				// The third is another task's.
				if err := q.Client().HSet(ctx, q.Keys("r").Job(d.ID), "n", "resize").Err(); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := q.Jobs.Fail(ctx, d, queue.Failure{Message: m, Final: true, Record: []byte("rec"), TTL: time.Minute}, now); err != nil {
				t.Fatal(err)
			}
			dead = append(dead, d.ID)
		}
		ids := func(p queue.ListPage) string {
			var out []string
			for _, j := range p.Jobs {
				out = append(out, j.ID)
			}
			return strings.Join(out, ",")
		}
		if got := ids(list(t, q, queue.ListQuery{State: queue.ListDead, Text: "disk full"})); got != dead[0]+","+dead[2] {
			t.Fatalf("text 'disk full' = %s, want the two disk errors in either case", got)
		}
		if got := ids(list(t, q, queue.ListQuery{State: queue.ListDead, Text: "DISK", Task: "t"})); got != dead[0] {
			t.Fatalf("text and task = %s, want the first only", got)
		}
		if got := ids(list(t, q, queue.ListQuery{State: queue.ListDead, Text: strings.ToLower(dead[1][18:26])})); got != dead[1] {
			t.Fatalf("text from an id = %s, want that job", got)
		}
		if got := ids(list(t, q, queue.ListQuery{State: queue.ListDead, Newest: true})); got != dead[2]+","+dead[1]+","+dead[0] {
			t.Fatalf("newest first = %s", got)
		}
		p := list(t, q, queue.ListQuery{State: queue.ListDead, Task: "resize"})
		if len(p.Jobs) != 1 || p.Jobs[0].Error != msgs[2] || p.Jobs[0].Attempts != 1 || p.Jobs[0].DiedAt.IsZero() {
			t.Fatalf("dead job = %+v", p.Jobs)
		}
	})
}

// A filter that matches nothing for thousands of entries still answers at
// once: an empty page with a Next, and the match on a later page.
func TestListJobs_FilterThatMatchesLittleGivesShortPagesWithNext(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		now := time.Now()
		enqueueN(t, q, queue.Normal, "bulk", 2500, now)
		want := enqueueN(t, q, queue.Normal, "rare", 1, now)[0]
		lq := queue.ListQuery{State: queue.ListPending, Task: "rare"}
		first := list(t, q, lq)
		if len(first.Jobs) != 0 || first.Next == "" {
			t.Fatalf("first page = %d jobs, next %q; want none yet and a Next", len(first.Jobs), first.Next)
		}
		var found []queue.ListedJob
		pages := 1
		for lq.Cursor = first.Next; lq.Cursor != ""; pages++ {
			p := list(t, q, lq)
			found = append(found, p.Jobs...)
			lq.Cursor = p.Next
		}
		if len(found) != 1 || found[0].ID != want || pages != 3 {
			t.Fatalf("found %+v in %d pages; want the rare job, 1000 entries a page", found, pages)
		}
	})
}

// Each state fills what it holds: description and created time of a pending
// job, run-at of a scheduled one, lease deadline of an active one.
func TestListJobs_EachStateShowsItsFields(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		e, _ := queue.EncodeEnvelope(queue.Envelope{Args: []byte{0x90}, Description: "resize cat.png"})
		ready := queue.NewJob{ID: queue.NewID("r", now), Name: "resize", Envelope: e, MaxRetries: 4}
		later := queue.NewJob{ID: queue.NewID("r", now), Name: "resize", Envelope: e, RunAt: now.Add(time.Hour)}
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Low, []queue.NewJob{ready, later}, now); err != nil {
			t.Fatal(err)
		}
		p := list(t, q, queue.ListQuery{State: queue.ListPending, Priority: queue.Low})
		if len(p.Jobs) != 1 || p.Jobs[0] != (queue.ListedJob{ID: ready.ID, Route: "r", Name: "resize", Priority: queue.Low, State: queue.ListPending,
			MaxRetries: 4, CreatedAt: now, Description: "resize cat.png"}) {
			t.Fatalf("pending = %+v", p.Jobs)
		}
		if p := list(t, q, queue.ListQuery{State: queue.ListPending, Priority: queue.High}); len(p.Jobs) != 0 {
			t.Fatalf("high list = %+v, want none", p.Jobs)
		}
		p = list(t, q, queue.ListQuery{State: queue.ListScheduled})
		if len(p.Jobs) != 1 || p.Jobs[0].ID != later.ID || !p.Jobs[0].RunAt.Equal(now.Add(time.Hour)) || p.Jobs[0].Description != "resize cat.png" {
			t.Fatalf("scheduled = %+v", p.Jobs)
		}
		until := now.Add(time.Minute)
		if ds, err := q.Jobs.Fetch(ctx, "r", queue.Priorities, 1, until, now); err != nil || len(ds) != 1 {
			t.Fatalf("fetch = %v, %v", ds, err)
		}
		p = list(t, q, queue.ListQuery{State: queue.ListActive})
		if len(p.Jobs) != 1 || p.Jobs[0].ID != ready.ID || !p.Jobs[0].LeaseDeadline.Equal(until) || p.Jobs[0].State != queue.ListActive {
			t.Fatalf("active = %+v", p.Jobs)
		}
	})
}

// Garbage in Redis does not fail the page: the entry shows with what reads.
func TestListJobs_GarbageEntryShownWithWhatCanBeRead(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now()
		ids := enqueueN(t, q, queue.Normal, "t", 3, now)
		k := q.Keys("r")
		rdb := q.Client()
		if err := rdb.HSet(ctx, k.Payloads(), ids[0], "not a payload").Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.HDel(ctx, k.Payloads(), ids[1]).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, k.Job(ids[1]), "junk", 0).Err(); err != nil {
			t.Fatal(err)
		}
		p := list(t, q, queue.ListQuery{State: queue.ListPending})
		if len(p.Jobs) != 3 || p.Jobs[0].ID != ids[0] || p.Jobs[0].Problem == "" ||
			p.Jobs[1].ID != ids[1] || !strings.Contains(p.Jobs[1].Problem, "string") || p.Jobs[2].Name != "t" || p.Jobs[2].Problem != "" {
			t.Fatalf("page = %+v", p.Jobs)
		}
		if err := rdb.Set(ctx, k.Dead(), "junk", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if p := list(t, q, queue.ListQuery{State: queue.ListDead}); len(p.Jobs) != 0 || p.Next != "" {
			t.Fatalf("dead set of the wrong type = %+v", p)
		}
	})
}

func TestListJobs_BadCursorIsAnErrorNamingIt(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		enqueueN(t, q, queue.Normal, "t", 3, time.Now())
		next := list(t, q, queue.ListQuery{State: queue.ListPending, Limit: 1}).Next
		cases := []struct {
			lq   queue.ListQuery
			name string
		}{
			{queue.ListQuery{State: queue.ListPending, Cursor: "garbage!"}, `cursor "garbage!"`},
			{queue.ListQuery{State: queue.ListPending, Cursor: "Zm9v"}, `cursor "Zm9v"`},
			{queue.ListQuery{State: queue.ListDead, Cursor: next}, "continues a pending listing"},
			{queue.ListQuery{State: queue.ListPending, Cursor: next, Newest: true}, "other order"},
			{queue.ListQuery{State: queue.ListPending, Cursor: next, Priority: queue.High}, "another priority"},
			{queue.ListQuery{State: "running"}, `state "running"`},
			{queue.ListQuery{State: queue.ListPending, Priority: "urgent"}, `priority "urgent"`},
			{queue.ListQuery{State: queue.ListDead, Priority: queue.High}, `priority "high"`},
			{queue.ListQuery{State: queue.ListPending, Limit: 501}, "limit 501"},
		}
		for _, c := range cases {
			c.lq.Route = "r"
			_, err := q.Ops.ListJobs(context.Background(), c.lq)
			if !errors.Is(err, queue.ErrBadQuery) || !strings.Contains(err.Error(), c.name) {
				t.Fatalf("%+v: err = %v; want ErrBadQuery naming %s", c.lq, err, c.name)
			}
		}
	})
}

func TestDepths_OldestPendingAndPaused(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		// A chosen id carries no time: its created field says it is the oldest.
		old := job(t, "r")
		old.ID, old.ChosenID = "order-42", true
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.Low, []queue.NewJob{old}, now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		newer := job(t, "r")
		newer.ID = queue.NewID("r", now.Add(-time.Minute))
		if _, err := q.Jobs.Enqueue(ctx, "r", queue.High, []queue.NewJob{newer}, now); err != nil {
			t.Fatal(err)
		}
		if err := q.Client().Set(ctx, q.Keys("r").Paused(), "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		ds, err := q.Ops.Depths(ctx, []string{"r", "idle"})
		if err != nil {
			t.Fatal(err)
		}
		if !ds[0].OldestPending.Equal(now.Add(-time.Hour)) || !ds[0].Paused || ds[0].High != 1 || ds[0].Low != 1 {
			t.Fatalf("depth of r = %+v; want oldest an hour ago, paused", ds[0])
		}
		if !ds[1].OldestPending.IsZero() || ds[1].Paused {
			t.Fatalf("depth of an idle route = %+v", ds[1])
		}
		// Once the chosen-id job is taken, the oldest is the NewID job's time.
		// A paused route gives no job to fetch: resume it first.
		if err := q.Ops.Resume(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Jobs.Fetch(ctx, "r", []queue.Priority{queue.Low}, 1, now.Add(time.Minute), now); err != nil {
			t.Fatal(err)
		}
		ds, err = q.Ops.Depths(ctx, []string{"r"})
		if err != nil || !ds[0].OldestPending.Equal(now.Add(-time.Minute)) {
			t.Fatalf("depth = %+v, %v; want the oldest a minute ago", ds, err)
		}
	})
}
