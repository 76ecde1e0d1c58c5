package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
	"github.com/bananas-go/bananas/runtime/internal/workflows/redisstore"
	"github.com/bananas-go/bananas/runtime/internal/workflows/storetest"
)

// The in-memory store that the workflow machine's unit tests run against
// (package workflows, without Redis) answers as the Redis scripts do: one
// story of two workflows — a gather, a failure, a stale end, a resent
// submission, a retry, a late job under an old id, a cancel — told to
// both, each answer and each record's states written down and compared.
func TestWorkflowStore_TheMemoryStoreAnswersAsRedisDoes(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, rdb *redis.Client) {
		q, err := queue.New(rdb, redistest.Namespace(t))
		if err != nil {
			t.Fatal(err)
		}
		redisTold, memTold := workflowStory(t, redisstore.New(q)), workflowStory(t, storetest.New())
		if !slices.Equal(redisTold, memTold) {
			for i := range max(len(redisTold), len(memTold)) {
				r, m := "", ""
				if i < len(redisTold) {
					r = redisTold[i]
				}
				if i < len(memTold) {
					m = memTold[i]
				}
				mark := "  "
				if r != m {
					mark = "!="
				}
				t.Logf("%s redis %-50s memory %s", mark, r, m)
			}
			t.Fatal("the memory store answered otherwise than Redis")
		}
	})
}

// workflowStory tells one story to st and returns what it answered.
func workflowStory(t *testing.T, st workflows.Store) []string {
	ctx := context.Background()
	now := time.UnixMilli(1_700_000_000_000)
	keep := record.TTLs{Completed: time.Hour, Failed: time.Hour}
	var told []string
	tell := func(what string, args ...any) { told = append(told, fmt.Sprintf(what, args...)) }
	ready := func(rs []record.ReadyStep) string {
		var out []string
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%d=%s", r.Index, r.JobID))
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	tellRecord := func(id string) {
		rec, err := st.Read(ctx, id)
		if err != nil {
			tell("read %s: %v", id, err)
			return
		}
		var states []string
		for _, s := range rec.Steps {
			states = append(states, fmt.Sprintf("%c:%s", s.State, s.JobID))
		}
		tell("  %s %s why %d [%s]", id, rec.Status, rec.Why, strings.Join(states, " "))
	}
	step := func(label string, after ...int) record.NewStep {
		s := record.NewStep{Label: label, After: after, Template: []byte("t-" + label)}
		if strings.HasPrefix(label, "gather") {
			s.Gather = true
		} else {
			s.JobID = "job-" + label
		}
		if len(after) == 0 {
			s.Args = []byte{0xc0}
		}
		return s
	}
	advance := func(id string, k int, job string, how queue.Ending) {
		a, err := st.Advance(ctx, id, k, job, how, []byte{0xa1, 'r'}, "", keep)
		tell("advance %s %d %s %c: %s why %d ready [%s] again [%s] %v", id, k, job, how, a.Status, a.Why, ready(a.Ready), ready(a.Again), err)
		tellRecord(id)
	}
	created := func(id string, steps ...record.ReadyStep) {
		out, err := st.StepsCreated(ctx, id, steps)
		slices.Sort(out)
		tell("created %s: cancel %v %v", id, out, err)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}

	steps := []record.NewStep{step("a"), step("b"), step("gather", 0, 1), step("c", 2), step("d", 0)}
	rs, own, err := st.Submit(ctx, "wf", steps, 3, time.Second, now)
	must(err)
	tell("submit wf: ready [%s] own %v", ready(rs), own)
	created("wf", rs...)
	advance("wf", 0, "job-a", queue.EndCompleted)
	rs, own, err = st.Submit(ctx, "wf", steps, 3, time.Second, now) // a resent submission
	must(err)
	tell("submit wf again: ready [%s] own %v", ready(rs), own)
	created("wf", record.ReadyStep{Index: 4, JobID: "job-d"})
	advance("wf", 1, "job-b", queue.EndDead)
	advance("wf", 1, "job-old", queue.EndCompleted) // stale
	a, err := st.Retry(ctx, "wf", map[int]string{1: "job-b2", 2: "", 3: ""}, now)
	tell("retry wf: %s ready [%s] %v", a.Status, ready(a.Ready), err)
	tellRecord("wf")
	created("wf", record.ReadyStep{Index: 1, JobID: "job-b2"}, record.ReadyStep{Index: 1, JobID: "job-b"})
	advance("wf", 1, "job-b2", queue.EndCompleted)
	a, err = st.CreatingSteps(ctx, "wf")
	tell("creating wf: [%s] %v", ready(a.Ready), err)
	created("wf", record.ReadyStep{Index: 3, JobID: "job-c"})
	advance("wf", 4, "job-d", queue.EndCompleted)
	advance("wf", 3, "job-c", queue.EndCompleted)
	status, jobs, err := st.Cancel(ctx, "wf", time.Hour, now)
	tell("cancel wf: %s %v %v", status, jobs, err)

	_, _, err = st.Submit(ctx, "wf2", []record.NewStep{step("a"), step("b", 0)}, 1, 2*time.Second, now)
	must(err)
	status, jobs, err = st.Cancel(ctx, "wf2", time.Hour, now)
	slices.Sort(jobs)
	tell("cancel wf2: %s %v %v", status, jobs, err)
	tellRecord("wf2")
	created("wf2", record.ReadyStep{Index: 0, JobID: "job-a"})

	for _, at := range []time.Duration{time.Second, 2 * time.Second} {
		ids, err := st.Due(ctx, now.Add(at), now.Add(time.Hour), 10)
		tell("due at +%v: %v %v", at, ids, err)
	}
	must(st.Settle(ctx, "wf"))
	must(st.Watch(ctx, "wf2", now))
	ids, err := st.Due(ctx, now.Add(time.Minute), now.Add(time.Hour), 10)
	tell("due after settle and watch: %v %v", ids, err)
	_, err = st.Advance(ctx, "none", 0, "j", queue.EndCompleted, nil, "", keep)
	tell("advance none: %v", err != nil && strings.Contains(err.Error(), record.ErrNotFound.Error()))
	return told
}
