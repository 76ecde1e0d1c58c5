package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
)

// Submit checks s and enqueues it (see Admin). A refusal names the
// submission's key at fault (Classify).
func (in *Inspector) Submit(ctx context.Context, s Submission) (id, warning string, err error) {
	id, err = in.rt.Enqueue(ctx, s)
	if err != nil {
		return id, "", err
	}
	return id, in.submitWarning(ctx, id), nil
}

// submitWarning is what the submitter of job id should know: that its
// route is paused (the job waits until it is resumed), and that no live
// worker takes its route; "" when neither holds, or when it cannot be read
// (the job was enqueued all the same).
func (in *Inspector) submitWarning(ctx context.Context, id string) string {
	unserved := in.unservedWarning(ctx, id)
	shard, ok := queue.RouteOf(id)
	if !ok {
		return unserved
	}
	paused, err := in.paused.read(ctx, shard, in.q.Ops.PausedRoutes)
	if err != nil || !paused {
		return unserved
	}
	msg := pausedWarning(queue.ShardBase(shard), id)
	if unserved != "" {
		msg += "; and " + unserved
	}
	return msg
}

// pausedWarning says that job id waits on paused route, and how to resume
// it: the warning of a submission to a paused route, and the reason a wait
// for its result ends with the job still pending.
func pausedWarning(route, id string) string {
	return fmt.Sprintf("route %s is paused: job %s waits, and no worker takes it, until the route is resumed; "+
		"resume with `app resume %[1]s` (or POST /api/v1/routes/%[1]s/resume, or Resume on the dashboard)", route, id)
}

// pausedRoutes keeps for a second whether each route (a shard, for a
// sharded route) was paused at the last read, so that a stream of
// submissions reads it once a second, not once a submission: a pause takes
// effect on the workers within about a second too.
type pausedRoutes struct {
	mu   sync.Mutex
	seen map[string]pausedAt
}

type pausedAt struct {
	at     time.Time
	paused bool
}

// pausedRoutesMax bounds the routes remembered: past it the memory starts
// afresh.
const pausedRoutesMax = 4096

// read tells whether route is paused, read by fresh when the last answer
// is older than servedRoutesFor.
func (p *pausedRoutes) read(ctx context.Context, route string, fresh func(context.Context, []string) (map[string]bool, error)) (bool, error) {
	p.mu.Lock()
	e, ok := p.seen[route]
	p.mu.Unlock()
	if ok && time.Since(e.at) < servedRoutesFor {
		return e.paused, nil
	}
	// Read without the lock: a slow read of one route holds up no
	// submission to another.
	got, err := fresh(ctx, []string{route})
	if err != nil {
		return false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil || len(p.seen) >= pausedRoutesMax {
		p.seen = map[string]pausedAt{}
	}
	p.seen[route] = pausedAt{time.Now(), got[route]}
	return got[route], nil
}

// SubmitBatch checks every job of a batch and enqueues them all, or none.
//
// The client's enqueue hooks (AddEnqueueHook) wrap the whole batch once, as
// they wrap an EnqueueMany: Enqueueing.Task and Route are the batch's when
// all its jobs share them, "" otherwise, and the headers the hooks set go
// to every job.
//
// All or nothing: every job is checked first — its task, its args through
// the task's strict decoder, its route, priority and delay, its payload size
// — and one refused job refuses the batch, with every refused job named and
// nothing enqueued. Then the jobs are written with one script call per route
// (shard) and priority among them: the jobs of a route without a unique key
// or chosen id go to one of its shards, so a batch of one route and priority
// is one call, atomic in Redis, unless keys spread it over the shards of a
// sharded route. A batch over several routes or priorities is several
// calls, in the order the batch first names each: should Redis fail part-way,
// the calls before the failing one are stored, the failing one may or may not
// have run (its reply can be lost after it ran), and the ones after it are
// not sent. The *BatchError says which: IDs holds the id of every job
// stored and "" for the others, and Jobs lists every job not known to be
// stored.
func (in *Inspector) SubmitBatch(ctx context.Context, subs []Submission, refused []BatchRefusal) ([]string, error) {
	task, route := in.batchTaskRoute(subs)
	return in.rt.Hooked(ctx, task, route, len(subs), func(ctx context.Context, headers map[string]string) ([]string, error) {
		return in.submitBatch(ctx, subs, refused, headers)
	})
}

// batchTaskRoute is the task and the route every job of subs has, each ""
// when they differ (or a task is unknown: its route is).
func (in *Inspector) batchTaskRoute(subs []Submission) (task, route string) {
	for i, s := range subs {
		r := s.Route
		if t, ok := in.rt.Task(s.Name); r == "" && ok {
			r = t.Route
		} else if !ok {
			r = ""
		}
		if i == 0 {
			task, route = s.Name, r
			continue
		}
		if s.Name != task {
			task = ""
		}
		if r != route {
			route = ""
		}
	}
	return task, route
}

// submitBatch is SubmitBatch inside the hooks, whose headers go to every job.
func (in *Inspector) submitBatch(ctx context.Context, subs []Submission, refused []BatchRefusal, headers map[string]string) ([]string, error) {
	skip := make([]bool, len(subs))
	for _, r := range refused {
		skip[r.Index] = true
	}
	jobs := make([]BatchJob, len(subs))
	shards := map[string]string{}
	for i, s := range subs {
		if skip[i] {
			continue
		}
		j, err := in.rt.BatchJob(s, headers, shards)
		if err != nil {
			p := Classify(err)
			if p.Class == Failure {
				return nil, err
			}
			refused = append(refused, BatchRefusal{Index: i, Field: p.Field, Error: p.Msg})
			continue
		}
		jobs[i] = j
	}
	if len(refused) > 0 {
		sort.Slice(refused, func(i, j int) bool { return refused[i].Index < refused[j].Index })
		return nil, &BatchError{Class: BadInput, Jobs: refused,
			Msg: fmt.Sprintf("%d of %d jobs refused (listed in jobs): nothing was enqueued", len(refused), len(subs))}
	}
	return in.enqueueBatch(ctx, jobs)
}

// Result waits up to wait for job id to finish, then reads it.
func (in *Inspector) Result(ctx context.Context, id string, wait time.Duration) (*bananastype.Job, error) {
	if _, err := in.Job(ctx, id); err != nil {
		return nil, err
	}
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		err := in.rt.Wait(wctx, id)
		cancel()
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return in.Job(ctx, id)
}

// Ready reports whether Redis answers.
func (in *Inspector) Ready(ctx context.Context) error { return in.rt.Ping(ctx) }

// ArgsSchemas is the JSON Schema of each registered task's args type, the
// one the OpenAPI document gives the task's submission.
func (in *Inspector) ArgsSchemas() (map[string]json.RawMessage, error) { return in.rt.ArgsSchemas() }

// OpenAPI is the OpenAPI 3.1 document of the HTTP API for the registered
// tasks: every task's args and result are JSON Schemas, so a client in any
// language can be generated that submits typed jobs.
func (in *Inspector) OpenAPI() ([]byte, error) { return in.rt.OpenAPI() }
