package admin

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/bananas-go/bananas/queue"
)

// batchGroup is the jobs of a batch that one script call writes: those of
// one shard of a route and priority, by their index in the batch.
type batchGroup struct {
	route    string
	shard    string
	priority Priority
	idx      []int
}

// enqueueBatch writes jobs, all checked, with one script call per route and
// priority, and returns their ids in order (see SubmitBatch for a failure
// part-way, and for duplicates of a unique task: they are not written, and
// the 409 names the job that holds each one's key).
func (in *Inspector) enqueueBatch(ctx context.Context, jobs []BatchJob) ([]string, error) {
	var groups []*batchGroup
	byKey := map[[2]string]*batchGroup{}
	for i, j := range jobs {
		key := [2]string{j.Shard, string(j.Priority)}
		g := byKey[key]
		if g == nil {
			g = &batchGroup{route: j.Route, shard: j.Shard, priority: j.Priority}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
	}
	ids := make([]string, len(jobs))
	var dups []BatchRefusal
	for gi, g := range groups {
		news := make([]queue.NewJob, len(g.idx))
		for k, i := range g.idx {
			news[k] = jobs[i].Job
		}
		holders, err := in.q.Jobs.Enqueue(ctx, g.shard, g.priority, news, in.q.Now())
		if err != nil {
			return nil, batchIncomplete(jobs, ids, groups[gi:], err)
		}
		enqueued := map[string]int{}
		for k, i := range g.idx {
			if holders[k] == queue.BusyHolder {
				ids[i] = ""
				dups = append(dups, BatchRefusal{Index: i, Field: "key", Error: fmt.Sprintf(
					"key %q of task %s is busy (max_running=%d, on_busy=drop); this one was not enqueued", jobs[i].Job.Key, jobs[i].Name, jobs[i].Job.BusyCap)})
				continue
			}
			if h, debounced := strings.CutPrefix(holders[k], queue.DebouncedMark); debounced {
				ids[i] = h
				dups = append(dups, BatchRefusal{Index: i, Field: "args", Error: fmt.Sprintf(
					"debounced: %s job %s, which holds its unique key, waits with this job's args and due time; this one was not enqueued", jobs[i].Name, h)})
				continue
			}
			if h := holders[k]; h != "" {
				ids[i] = h
				dups = append(dups, BatchRefusal{Index: i, Field: "args", Error: fmt.Sprintf(
					"a duplicate: %s job %s already holds its unique key (held for %s at most); this one was not enqueued", jobs[i].Name, h, jobs[i].UniqueTTL)})
				continue
			}
			ids[i] = jobs[i].Job.ID
			enqueued[jobs[i].Name]++
		}
		for name, n := range enqueued {
			in.rt.Enqueued(g.route, g.priority, name, n)
		}
	}
	if len(dups) > 0 {
		sort.Slice(dups, func(i, j int) bool { return dups[i].Index < dups[j].Index })
		return nil, &BatchError{Class: Conflict, Jobs: dups, IDs: ids,
			Msg: fmt.Sprintf("%d of %d jobs were duplicates of a unique task and not enqueued (listed in jobs); the others were: ids holds every job's id, a duplicate's the id of the job that holds its key", len(dups), len(jobs))}
	}
	return ids, nil
}

// batchIncomplete is the 500 of a batch whose script call for the first of
// unsent failed with err: ids holds the jobs stored before it.
func batchIncomplete(jobs []BatchJob, ids []string, unsent []*batchGroup, err error) error {
	failed := unsent[0]
	var missing []BatchRefusal
	for gi, g := range unsent {
		for _, i := range g.idx {
			msg := fmt.Sprintf("not enqueued: the batch stopped at route %s, priority %s, before this job's call", failed.route, failed.priority)
			if gi == 0 {
				msg = fmt.Sprintf("unknown: the call that writes this job's route and priority failed (%v); it is all or nothing, and may have run before its reply was lost: GET /api/v1/jobs/%s tells", err, jobs[i].Job.ID)
			}
			missing = append(missing, BatchRefusal{Index: i, Error: msg})
		}
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i].Index < missing[j].Index })
	stored := len(jobs) - len(missing)
	return &BatchError{Class: Failure, Jobs: missing, IDs: ids,
		Msg: fmt.Sprintf("enqueue failed part-way: %v; %d of %d jobs were stored (their ids are in ids), the others are listed in jobs", Message(err), stored, len(jobs))}
}
