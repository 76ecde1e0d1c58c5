package runtime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/api"
)

// batchJob is one job of a batch submission, checked and encoded, not sent.
type batchJob struct {
	route     string
	priority  Priority
	name      string
	uniqueTTL time.Duration
	job       queue.NewJob
}

// jobJSON decodes data with the task's strict decoder and builds the job
// Enqueue would send, without sending it.
func (t *Task[A, R]) jobJSON(data []byte, opts []Option) (batchJob, error) {
	args, err := t.decodeArgsJSON(data)
	if err != nil {
		return batchJob{}, err
	}
	c, cfg, now, runAt, err := t.prepare(opts, 1)
	if err != nil {
		return batchJob{}, err
	}
	job, err := t.newJob(c, cfg, args, now, runAt)
	if err != nil {
		return batchJob{}, err
	}
	return batchJob{route: cfg.route, priority: cfg.priority, name: t.name, uniqueTTL: cfg.uniqueTTL, job: job}, nil
}

// SubmitBatch serves POST /api/v1/jobs/batch.
//
// All or nothing: every job is checked first — its task, its args through
// the task's strict decoder, its route, priority and delay, its payload size
// — and one refused job refuses the batch, with every refused job named and
// nothing enqueued. Then the jobs are written with one script call per route
// and priority among them (a batch of one route and priority is one call,
// atomic in Redis). A batch over several routes or priorities is several
// calls, in the order the batch first names each: should Redis fail part-way,
// the calls before the failing one are stored, the failing one may or may not
// have run (its reply can be lost after it ran), and the ones after it are
// not sent. The 500 says which: ids holds the id of every job stored and ""
// for the others, and jobs lists every job not known to be stored.
func (b apiBackend) SubmitBatch(ctx context.Context, subs []api.Submission, refused []api.BatchRefusal) ([]string, error) {
	skip := make([]bool, len(subs))
	for _, r := range refused {
		skip[r.Index] = true
	}
	jobs := make([]batchJob, len(subs))
	for i, s := range subs {
		if skip[i] {
			continue
		}
		j, err := b.in.batchJob(s)
		if err != nil {
			var ae *api.Error
			if !errors.As(err, &ae) {
				return nil, err
			}
			refused = append(refused, api.BatchRefusal{Index: i, Field: ae.Field, Error: ae.Msg})
			continue
		}
		jobs[i] = j
	}
	if len(refused) > 0 {
		sort.Slice(refused, func(i, j int) bool { return refused[i].Index < refused[j].Index })
		return nil, &api.BatchError{Status: http.StatusBadRequest, Jobs: refused,
			Msg: fmt.Sprintf("%d of %d jobs refused (listed in jobs): nothing was enqueued", len(refused), len(subs))}
	}
	return b.in.enqueueBatch(ctx, jobs)
}

// batchJob checks one submission of a batch and builds its job; a refusal is
// an *api.Error naming the field.
func (in *Inspector) batchJob(s api.Submission) (batchJob, error) {
	opts, err := submissionOptions(s)
	if err != nil {
		return batchJob{}, err
	}
	h := in.reg.handlers[s.Name]
	if h == nil {
		return batchJob{}, api.BadRequest("name", "no task named %q (registered: %s)", s.Name, strings.Join(in.reg.Tasks(), ", "))
	}
	j, err := h.jobJSON(in.c, s.Args, opts)
	switch {
	case err == nil:
		return j, nil
	case errors.Is(err, ErrBadArgs), errors.Is(err, ErrPayloadTooLarge):
		return batchJob{}, api.BadRequest("args", "%s", trimBananas(err))
	}
	return batchJob{}, api.BadRequest("", "%s", trimBananas(err))
}

// batchGroup is the jobs of a batch that one script call writes: those of
// one route and priority, by their index in the batch.
type batchGroup struct {
	route    string
	priority Priority
	idx      []int
}

// enqueueBatch writes jobs, all checked, with one script call per route and
// priority, and returns their ids in order (see SubmitBatch for a failure
// part-way, and for duplicates of a unique task: they are not written, and
// the 409 names the job that holds each one's key).
func (in *Inspector) enqueueBatch(ctx context.Context, jobs []batchJob) ([]string, error) {
	var groups []*batchGroup
	byKey := map[[2]string]*batchGroup{}
	for i, j := range jobs {
		key := [2]string{j.route, string(j.priority)}
		g := byKey[key]
		if g == nil {
			g = &batchGroup{route: j.route, priority: j.priority}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
	}
	ids := make([]string, len(jobs))
	var dups []api.BatchRefusal
	for gi, g := range groups {
		news := make([]queue.NewJob, len(g.idx))
		for k, i := range g.idx {
			news[k] = jobs[i].job
		}
		holders, err := in.c.q.Enqueue(ctx, g.route, g.priority, news, in.c.q.Now())
		if err != nil {
			return nil, batchIncomplete(jobs, ids, groups[gi:], err)
		}
		enqueued := map[string]int{}
		for k, i := range g.idx {
			if h := holders[k]; h != "" {
				ids[i] = h
				dups = append(dups, api.BatchRefusal{Index: i, Field: "args", Error: fmt.Sprintf(
					"a duplicate: %s job %s already holds its unique key (identical args within %s); this one was not enqueued", jobs[i].name, h, jobs[i].uniqueTTL)})
				continue
			}
			ids[i] = jobs[i].job.ID
			enqueued[jobs[i].name]++
		}
		for name, n := range enqueued {
			in.c.metrics.Enqueued(g.route, string(g.priority), name, n)
		}
	}
	if len(dups) > 0 {
		sort.Slice(dups, func(i, j int) bool { return dups[i].Index < dups[j].Index })
		return nil, &api.BatchError{Status: http.StatusConflict, Jobs: dups, IDs: ids,
			Msg: fmt.Sprintf("%d of %d jobs were duplicates of a unique task and not enqueued (listed in jobs); the others were: ids holds every job's id, a duplicate's the id of the job that holds its key", len(dups), len(jobs))}
	}
	return ids, nil
}

// batchIncomplete is the 500 of a batch whose script call for the first of
// unsent failed with err: ids holds the jobs stored before it.
func batchIncomplete(jobs []batchJob, ids []string, unsent []*batchGroup, err error) error {
	failed := unsent[0]
	var missing []api.BatchRefusal
	for gi, g := range unsent {
		for _, i := range g.idx {
			msg := fmt.Sprintf("not enqueued: the batch stopped at route %s, priority %s, before this job's call", failed.route, failed.priority)
			if gi == 0 {
				msg = fmt.Sprintf("unknown: the call that writes this job's route and priority failed (%v); it is all or nothing, and may have run before its reply was lost: GET /api/v1/jobs/%s tells", err, jobs[i].job.ID)
			}
			missing = append(missing, api.BatchRefusal{Index: i, Error: msg})
		}
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i].Index < missing[j].Index })
	stored := len(jobs) - len(missing)
	return &api.BatchError{Status: http.StatusInternalServerError, Jobs: missing, IDs: ids,
		Msg: fmt.Sprintf("enqueue failed part-way: %v; %d of %d jobs were stored (their ids are in ids), the others are listed in jobs", trimBananas(err), stored, len(jobs))}
}
