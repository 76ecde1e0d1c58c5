package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"
)

// Status is where a job is in its life, derived from where its id is (and,
// for a finished job, from its result record). runtime.Status is this type.
type Status string

const (
	StatusPending    Status = "pending"    // in a ready list, waiting for a worker
	StatusScheduled  Status = "scheduled"  // in the scheduled set: delayed, or waiting for a retry
	StatusProcessing Status = "processing" // leased to a worker, running
	StatusCompleted  Status = "completed"  // succeeded; kept as long as its result
	StatusFailed     Status = "failed"     // dead-lettered after its last attempt
	StatusCanceled   Status = "canceled"   // canceled before or while it ran; not retried
	StatusExpired    Status = "expired"    // not started before its expiry (NewJob.ExpireAt): never run
)

// Statuses are every status, in the order of a job's life.
var Statuses = []Status{StatusPending, StatusScheduled, StatusProcessing, StatusCompleted, StatusFailed, StatusCanceled, StatusExpired}

// Finished reports whether a job in status s will not run again by itself
// (a failed job runs again only when replayed).
func (s Status) Finished() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCanceled || s == StatusExpired
}

// JobState is a snapshot of one job.
type JobState struct {
	ID, Route, Name                  string
	Priority                         Priority
	Status                           Status
	Attempts, MaxRetries             int
	Error                            string
	FailedAt                         []time.Time // when its last failed runs ended, oldest first (see FailuresKept)
	FailedStartedAt                  []time.Time // when each run of FailedAt started; zero when not kept
	Earlier                          []string    // its lives before it was replayed, oldest first (see ParseEarlierLife)
	CreatedAt, StartedAt, FinishedAt time.Time
	RunAt                            time.Time // scheduled: when it becomes ready
	LeaseDeadline                    time.Time // processing: when its lease runs out
	Envelope                         Envelope
	BadEnvelope                      error
	Result                           []byte // the stored result record, if any
	// Progress is what the running job's current run last said of how far
	// it got (runtime.Progress); nil when that run said nothing yet, or the
	// job is not running. LookupMany leaves it nil.
	Progress *Progress
}

// Lookup returns a consistent snapshot of job id (lookup.lua: one atomic
// read on the route's slot), or ErrNotFound.
func (js Jobs) Lookup(ctx context.Context, id string) (*JobState, error) {
	route, err := js.q.RouteOfJob(ctx, id)
	if err != nil {
		return nil, err
	}
	k := js.q.Keys(route)
	p, err := js.peek(ctx, k, id)
	if err != nil {
		return nil, fmt.Errorf("look up job %s: %w", id, err)
	}
	// A leased job's deadline is its lease group's (see Keys.Groups), and its
	// progress is a key of its own: one more round trip, only for a job that
	// is running.
	var deadline time.Time
	var progress *redis.StringCmd
	if p.leased {
		pipe := js.q.rdb.Pipeline()
		score := pipe.ZScore(ctx, k.Active(), p.lease)
		progress = pipe.Get(ctx, k.Progress(id))
		_, _ = pipe.Exec(ctx) // each read is optional: its error leaves it out
		if score.Err() == nil {
			deadline = time.UnixMilli(int64(score.Val()))
		}
	}
	s, err := stateOf(id, route, p, deadline)
	if err == nil && progress != nil && progress.Err() == nil && s.Status == StatusProcessing {
		s.Progress = progressOf(progress.Val(), p.lease, s.Attempts+1)
	}
	return s, err
}

// LookupMany is Lookup of each of ids in one pipelined round trip (ids of
// another shape than NewID's, which must be searched for, one by one), nil
// for a job not found; a running job's LeaseDeadline is left zero.
func (js Jobs) LookupMany(ctx context.Context, ids []string) ([]*JobState, error) {
	out := make([]*JobState, len(ids))
	cmds := make([]*redis.Cmd, len(ids))
	routes := make([]string, len(ids))
	pipe := js.q.rdb.Pipeline()
	for i, id := range ids {
		if route, ok := RouteOf(id); ok {
			routes[i] = route
			cmds[i] = js.q.s.lookup.EvalSha(ctx, pipe, lookupKeys(js.q.Keys(route), id), id)
		}
	}
	if pipe.Len() > 0 {
		_, _ = pipe.Exec(ctx) // each command's own error is read below
	}
	for i, id := range ids {
		var s *JobState
		var err error
		if cmds[i] == nil || isNoScript(cmds[i].Err()) {
			s, err = js.Lookup(ctx, id) // searched for, or the script loaded
		} else {
			var res []any
			if res, err = cmds[i].Slice(); err == nil {
				var p peeked
				if p, err = parsePeek(res); err == nil {
					s, err = stateOf(id, routes[i], p, time.Time{})
				}
			}
		}
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("look up job %s: %w", id, err)
		default:
			out[i] = s
		}
	}
	return out, nil
}

// stateOf is the snapshot of job id of route that lookup.lua read (p),
// its lease deadline given.
func stateOf(id, route string, p peeked, deadline time.Time) (*JobState, error) {
	f := p.hash
	if len(f) == 0 {
		return lookupLight(id, route, p, deadline)
	}
	s := &JobState{
		ID: id, Route: route, Name: f["n"], Priority: Priority(f["p"]), Error: f["err"],
		Attempts: atoi(f["a"]), MaxRetries: atoi(f["m"]),
		CreatedAt: parseMS(f["c"]), StartedAt: parseMS(f["st"]), FinishedAt: parseMS(f["f"]),
		FailedAt: failedAt(f, atoi(f["a"])), FailedStartedAt: failedStartedAt(f, atoi(f["a"])), Earlier: earlierLives(f),
	}
	s.Envelope, s.BadEnvelope = decodeStored(id, f)
	if r, ok := f["r"]; ok {
		s.Result = []byte(r)
	} else if p.hasResult {
		s.Result = p.result
	}
	switch {
	case f["s"] == "d":
		s.Status = StatusCompleted
	case f["s"] == "x":
		s.Status = StatusFailed
	case p.leased:
		s.Status = StatusProcessing
		s.LeaseDeadline = deadline
		s.StartedAt = tokenTime(p.lease)
	case p.scheduled:
		s.Status = StatusScheduled
		s.RunAt = time.UnixMilli(p.runAt)
	default:
		s.Status = StatusPending
	}
	return s, nil
}

// Result returns the stored result record of job id: nil (no error) while the
// job exists without one, ErrNotFound when neither exists.
func (js Jobs) Result(ctx context.Context, id string) ([]byte, error) {
	route, err := js.q.RouteOfJob(ctx, id)
	if err != nil {
		return nil, err
	}
	p, err := js.peek(ctx, js.q.Keys(route), id)
	if err != nil {
		return nil, fmt.Errorf("read result of job %s: %w", id, err)
	}
	if p.hasResult {
		return p.result, nil
	}
	if len(p.hash) == 0 && !p.light {
		return nil, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	return nil, nil
}

// peeked is what lookup.lua read of one job.
type peeked struct {
	hash      map[string]string // its hash; empty for a light job
	payload   string            // a light job's payload
	light     bool              // payload was found
	runAt     int64             // unix ms it is scheduled for
	scheduled bool
	lease     string // its lease token
	leased    bool
	result    []byte // its result record
	hasResult bool
}

func (js Jobs) peek(ctx context.Context, k Keys, id string) (peeked, error) {
	res, err := js.q.s.lookup.Run(ctx, js.q.rdb, lookupKeys(k, id), id).Slice()
	if err != nil {
		return peeked{}, err
	}
	return parsePeek(res)
}

// lookupKeys are lookup.lua's keys for job id of the route of k.
func lookupKeys(k Keys, id string) []string {
	return []string{k.Job(id), k.Payloads(), k.Scheduled(), k.Leases(), k.Result(id)}
}

// parsePeek reads lookup.lua's reply.
func parsePeek(res []any) (peeked, error) {
	var p peeked
	if len(res) != 5 {
		return p, fmt.Errorf("lookup.lua answered %d values, want 5", len(res))
	}
	pairs, _ := res[0].([]any)
	p.hash = make(map[string]string, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		f, _ := pairs[i].(string)
		v, _ := pairs[i+1].(string)
		p.hash[f] = v
	}
	p.payload, p.light = res[1].(string)
	if score, ok := res[2].(string); ok {
		if f, err := strconv.ParseFloat(score, 64); err == nil {
			p.runAt, p.scheduled = int64(f), true
		}
	}
	p.lease, p.leased = res[3].(string)
	if r, ok := res[4].(string); ok {
		p.result, p.hasResult = []byte(r), true
	}
	return p, nil
}

// lookupLight describes a job without a hash: a light job waiting or running
// (its payload), or a finished one (its result record, which the caller
// decodes: StatusCompleted with Result set).
func lookupLight(id, route string, p peeked, deadline time.Time) (*JobState, error) {
	s := &JobState{ID: id, Route: route}
	if !p.light {
		if p.hasResult {
			s.Status, s.Result = StatusCompleted, p.result
			return s, nil
		}
		return nil, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	d := Dispatch{ID: id}
	d.fillFromPayload(p.payload)
	s.Name, s.Priority, s.MaxRetries, s.CreatedAt = d.Name, d.Priority, d.MaxRetries, d.CreatedAt
	s.Envelope, s.BadEnvelope = d.Envelope, d.BadEnvelope
	s.Status = StatusPending
	if p.leased {
		s.Status = StatusProcessing
		s.LeaseDeadline = deadline
		s.StartedAt = tokenTime(p.lease)
	}
	return s, nil
}

// Depth counts the jobs of one route in each place.
type Depth struct {
	Route                   string
	High, Normal, Low       int64
	Scheduled, Active, Dead int64
	// OldestPending is when the oldest job at the head of a ready list was
	// created; zero when none waits.
	OldestPending time.Time
	Paused        bool // the route is paused (Keys.Paused)
	// Ended is how many ended jobs wait in the route's ended list to be
	// written to the task history (0 when none is kept).
	Ended int64
	// Held is how many flows their rate holds back now, and Throttled how
	// many times a flow was held back by its cap or rate (the route's stats
	// counter): see flow.go.
	// High, Normal and Low count keyed jobs waiting in their flows too.
	Held, Throttled int64
	// KeyedRunning is how many keyed jobs run now: those of flowof that
	// wait in no keyed set.
	KeyedRunning int64
	// Expired is how many jobs of the route ended expired, never run (the
	// route's stats counter, see expire.go).
	Expired int64
}

// Depths counts the jobs of each route in one pipelined round trip, and one
// more when the head of a ready list has an id not made by NewID (chosen by
// the caller), whose created time is then read from the job.
func (o Ops) Depths(ctx context.Context, routes []string) ([]Depth, error) {
	pipe := o.q.rdb.Pipeline()
	cs := make([]depthCmds, len(routes))
	tolerant := make(map[redis.Cmder]bool, 8*len(routes))
	for i, r := range routes {
		cs[i] = queueDepthCmds(ctx, pipe, o.q.Keys(r))
		for _, c := range cs[i].flowAndEnded() {
			tolerant[c] = true
		}
	}
	done, _ := pipe.Exec(ctx)
	for _, c := range done {
		// Nil: an empty list's head. Garbage under an ended list is
		// replaced by the next end (bn_ended), and under a flow key by the
		// next flow script (bn_flow_repair): it reads as none.
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) && !(tolerant[c] && isWrongType(err)) {
			return nil, fmt.Errorf("read queue depths: %w", err)
		}
	}
	out := make([]Depth, len(routes))
	var chosen []int // routes whose head jobs have chosen ids, which tell no time
	for i, c := range cs {
		out[i] = c.depth(routes[i])
		if c.chosenHead() {
			chosen = append(chosen, i)
		}
	}
	o.oldestOfChosen(ctx, out, cs, chosen)
	return out, nil
}

// depthCmds are the reads of one route's depths, queued on a pipeline.
type depthCmds struct {
	h, n, l, s, a, d, paused *redis.IntCmd
	ended, held, flowof      *redis.IntCmd
	keyed                    [3]*redis.IntCmd
	throttled                *redis.StringCmd
	expired                  *redis.StringCmd
	heads                    [3]*redis.StringCmd
}

func queueDepthCmds(ctx context.Context, pipe redis.Pipeliner, k Keys) depthCmds {
	c := depthCmds{
		h: pipe.LLen(ctx, k.List(High)), n: pipe.LLen(ctx, k.List(Normal)), l: pipe.LLen(ctx, k.List(Low)),
		s: pipe.ZCard(ctx, k.Scheduled()), a: pipe.HLen(ctx, k.Leases()), d: pipe.ZCard(ctx, k.Dead()),
		paused:    pipe.Exists(ctx, k.Paused()),
		ended:     pipe.LLen(ctx, k.Ended()),
		held:      pipe.ZCard(ctx, k.Held()),
		flowof:    pipe.HLen(ctx, k.FlowOf()),
		throttled: pipe.HGet(ctx, k.Stats(), "throttled"),
		expired:   pipe.HGet(ctx, k.Stats(), "expired"),
	}
	for j, p := range Priorities {
		c.keyed[j] = pipe.ZCard(ctx, k.Keyed(p))
	}
	for j, p := range Priorities {
		c.heads[j] = pipe.LIndex(ctx, k.List(p), 0)
	}
	return c
}

// flowAndEnded are the reads of keys that a later script repairs when
// they hold garbage, so that a wrong type there reads as none.
func (c depthCmds) flowAndEnded() []redis.Cmder {
	return []redis.Cmder{c.ended, c.held, c.flowof, c.throttled, c.expired, c.keyed[0], c.keyed[1], c.keyed[2]}
}

// depth is what the reads say of route; OldestPending from the heads
// whose ids tell their time.
func (c depthCmds) depth(route string) Depth {
	d := Depth{Route: route, High: c.h.Val(), Normal: c.n.Val(), Low: c.l.Val(),
		Scheduled: c.s.Val(), Active: c.a.Val(), Dead: c.d.Val(), Paused: c.paused.Val() > 0, Ended: c.ended.Val(),
		Held: c.held.Val()}
	d.Throttled, _ = strconv.ParseInt(c.throttled.Val(), 10, 64)
	d.Expired, _ = strconv.ParseInt(c.expired.Val(), 10, 64)
	d.High += c.keyed[0].Val()
	d.Normal += c.keyed[1].Val()
	d.Low += c.keyed[2].Val()
	d.KeyedRunning = max(0, c.flowof.Val()-c.keyed[0].Val()-c.keyed[1].Val()-c.keyed[2].Val())
	for _, head := range c.heads {
		if t, ok := idTime(head.Val()); ok {
			d.OldestPending = older(d.OldestPending, t)
		}
	}
	return d
}

// chosenHead reports whether a head job's id is a chosen one, which tells
// no time: its created time is read from the job.
func (c depthCmds) chosenHead() bool {
	for _, head := range c.heads {
		if id := head.Val(); id != "" {
			if _, ok := idTime(id); !ok {
				return true
			}
		}
	}
	return false
}

// oldestOfChosen reads, in one more round trip, the created time of the
// head jobs with chosen ids of the routes at chosen, into their
// OldestPending. A job gone meanwhile, or garbage, has no time.
func (o Ops) oldestOfChosen(ctx context.Context, out []Depth, cs []depthCmds, chosen []int) {
	if len(chosen) == 0 {
		return
	}
	type look struct {
		at       int
		pay, job *redis.StringCmd
	}
	var looks []look
	pipe := o.q.rdb.Pipeline()
	for _, i := range chosen {
		k := o.q.Keys(out[i].Route)
		for _, head := range cs[i].heads {
			id := head.Val()
			if _, ok := idTime(id); id == "" || ok {
				continue
			}
			looks = append(looks, look{i, pipe.HGet(ctx, k.Payloads(), id), pipe.HGet(ctx, k.Job(id), "c")})
		}
	}
	_, _ = pipe.Exec(ctx)
	for _, l := range looks {
		t := parseMS(l.job.Val())
		if p, ok := splitPayload(l.pay.Val()); ok {
			t = p.created
		}
		if !t.IsZero() {
			out[l.at].OldestPending = older(out[l.at].OldestPending, t)
		}
	}
}

// idTime returns the time in an id made by NewID.
func idTime(id string) (time.Time, bool) {
	if _, ok := RouteOf(id); !ok {
		return time.Time{}, false
	}
	u, err := ulid.ParseStrict(id[:ulid.EncodedSize])
	if err != nil {
		return time.Time{}, false
	}
	return ulid.Time(u.Time()), true
}

func older(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// Stats returns the counters of route (enqueued, processed, failed, retried,
// dead, recovered, replayed).
func (o Ops) Stats(ctx context.Context, route string) (map[string]int64, error) {
	m, err := o.q.rdb.HGetAll(ctx, o.q.Keys(route).Stats()).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = int64(atoi(v))
	}
	return out, nil
}

// DeadJob is one entry of the dead-letter set.
type DeadJob struct {
	ID, Route, Name, Error string
	Attempts               int
	DiedAt                 time.Time
}

// DeadList returns up to limit dead-lettered jobs of route, newest first.
func (o Ops) DeadList(ctx context.Context, route string, offset, limit int) ([]DeadJob, error) {
	k := o.q.Keys(route)
	zs, err := o.q.rdb.ZRevRangeWithScores(ctx, k.Dead(), int64(offset), int64(offset+limit-1)).Result()
	if err != nil || len(zs) == 0 {
		return nil, err
	}
	pipe := o.q.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(zs))
	for i, z := range zs {
		cmds[i] = pipe.HMGet(ctx, k.Job(z.Member.(string)), "n", "err", "a")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]DeadJob, len(zs))
	for i, z := range zs {
		v := cmds[i].Val()
		str := func(i int) string { s, _ := v[i].(string); return s }
		out[i] = DeadJob{ID: z.Member.(string), Route: route, Name: str(0), Error: str(1),
			Attempts: atoi(str(2)), DiedAt: time.UnixMilli(int64(z.Score))}
	}
	return out, nil
}
