package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
)

// DefaultScheduleSafety is the longest a ScheduleRunner sleeps: a schedule
// put or resumed by another process is seen within it.
const DefaultScheduleSafety = time.Second

// maxStepTicks bounds the ticks one look at one schedule handles (a long
// catch-up window fires its missed ticks over several passes), and
// maxTickWalk the ticks walked to find the latest due one: past it, every
// missed tick is older than any catch-up window worth walking.
const (
	maxStepTicks = 100
	maxTickWalk  = 100_000
)

// ScheduleRunner fires the due ticks of schedules as data. Any number of
// runners may run, in any number of processes: each tick is enqueued once.
// A tick's life is three scripts, each retry-safe: a claim in the
// schedule's slot (sched_claim.lua: compare-and-set on its next tick, which
// one runner wins, recording the tick's job id), the enqueue in the route's
// slot (sched_fire.lua: compare-and-set on the schedule's last enqueued
// tick, and the job written with it), and the claim marked done
// (sched_done.lua). A runner killed between them leaves the claim to any
// other, whose enqueue of it the route's compare-and-set makes the same one
// job; the job's id is derived from the schedule id and the tick
// (TickJobID), so every runner writes the same job.
type ScheduleRunner struct {
	Schedules *Schedules
	// Cancel cancels a running job (bananastype.OverlapCancelRunning). Nil: such a
	// schedule behaves as bananastype.OverlapAllow.
	Cancel func(ctx context.Context, jobID string) error
	// OnFire is told of each tick whose job this runner enqueued (optional).
	OnFire func(sc Schedule, tick time.Time, jobID string)
	// OnSkip is told of each tick this runner skipped because the last
	// tick's job was unfinished (optional): bananas_schedule_skipped_total.
	OnSkip func(sc Schedule, tick time.Time)
	// OnError is told of a schedule that could not be handled (optional).
	OnError func(id string, err error)
	// Safety bounds a sleep. Default DefaultScheduleSafety.
	Safety time.Duration
	// Outage, when set, is told of every pass, failed or not.
	Outage *OutageLog
	// Active, when set, says whether this runner fires schedules now; one
	// that is not calls Redis not at all and asks again after Safety. (A
	// worker's runner is active while it keeps a route, so that idle
	// standby workers cost Redis nothing.)
	Active func() bool

	specs sync.Map // spec|tz|start|end -> Spec
	known knownRecords
}

// knownRecords are the records of allow schedules as this runner's own
// claims and dones left them, so that a pass reads from Redis only the
// records it does not know (10,000 schedules ticking every second are
// otherwise 10,000 records read a second). A record changed by anyone else
// (a put, a pause, another runner's claim) fails the claim's compare on
// its next tick and updated time ('stale'), is dropped, and is read again:
// a known record is never trusted past that compare. Only allow schedules
// are kept: the other policies plan from the last job, which a run now
// changes without a compare.
type knownRecords struct {
	mu sync.Mutex
	m  map[string]Schedule
}

// knownCap bounds the records kept; past it the runner starts over.
const knownCap = 100_000

func (k *knownRecords) get(id string) (Schedule, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	sc, ok := k.m[id]
	return sc, ok
}

func (k *knownRecords) put(sc Schedule) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if sc.Overlap != bananastype.OverlapAllow {
		delete(k.m, sc.ID)
		return
	}
	if k.m == nil || len(k.m) >= knownCap {
		k.m = map[string]Schedule{}
	}
	k.m[sc.ID] = sc
}

func (k *knownRecords) drop(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, id)
}

// readKnown is s.read of ids, from the runner's known records where it
// has them.
func (r *ScheduleRunner) readKnown(ctx context.Context, ids []string) ([]*Schedule, error) {
	out := make([]*Schedule, len(ids))
	var miss []string
	var at []int
	for i, id := range ids {
		if sc, ok := r.known.get(id); ok {
			out[i] = &sc
			continue
		}
		miss, at = append(miss, id), append(at, i)
	}
	got, err := r.Schedules.read(ctx, miss)
	if err != nil {
		return nil, err
	}
	for j, sc := range got {
		out[at[j]] = sc
	}
	return out, nil
}

// How a pass reads and handles schedules. It reads, from every bucket's
// index, the schedules falling due within lookahead (at most readLimit a
// bucket), so that at their tick the records are read and planned already
// and only the claims, the enqueues and the dones remain; those go in
// script calls of at most chunk schedules each, one bucket's (or, for the
// enqueues, one route's) per call, parallel calls at a time.
const (
	lookahead = Ahead + 400*time.Millisecond
	readLimit = 2000
	chunk     = 1000
	parallel  = 16
)

// Ahead is how long before its tick (plus jitter) a schedule whose overlap
// policy is bananastype.OverlapAllow is claimed and its job written,
// scheduled to run at the tick: the delayed-job promoter makes it ready
// then, so the tick's lateness is the promoter's and not that of the
// claims, enqueues and dones of every schedule due at the same tick. The
// other policies decide at the tick (they look at the last job's status),
// so they are claimed at it. A pause or a delete within Ahead of a tick
// withdraws the job written ahead (Schedules.Pause, Schedules.Delete).
const Ahead = 800 * time.Millisecond

// ReleaseFallback is how long after its run-at a job written ahead (see
// Ahead) waits in the scheduled set: its runner makes it ready at the run-at
// (sched_release.lua, without the promoter's per-job reads), and the
// promoter moves it only when that runner died first.
const ReleaseFallback = time.Second

// claimGrace is how long the index holds a schedule whose tick this runner
// claimed to fire: the runner finishes the tick well within it; when it
// died, another finds the claim due after it and finishes it.
const claimGrace = 2 * time.Second

// Run fires due schedules until ctx ends. It first moves the schedules
// recorded before their buckets into them (Schedules.Migrate).
func (r *ScheduleRunner) Run(ctx context.Context) {
	safety := r.Safety
	if safety <= 0 {
		safety = DefaultScheduleSafety
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	migrated := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if r.Active != nil && !r.Active() {
			timer.Reset(safety)
			continue
		}
		if !migrated {
			// Schedules recorded before their buckets fire once moved; a
			// failure is tried again on the next pass.
			if _, err := r.Schedules.Migrate(ctx); err == nil {
				migrated = true
			} else if r.OnError != nil && ctx.Err() == nil {
				r.OnError("", err)
			}
		}
		wake, err := r.Pass(ctx)
		if r.Outage != nil && ctx.Err() == nil {
			if err != nil && Unreachable(err) {
				r.Outage.Failed("", err)
			} else {
				r.Outage.OK("")
			}
		}
		if err != nil && r.OnError != nil && ctx.Err() == nil && (r.Outage == nil || !Unreachable(err)) {
			r.OnError("", err)
		}
		now := r.Schedules.Queue.Now()
		sleep := safety
		if err == nil && !wake.IsZero() {
			sleep = min(max(wake.Add(-lookahead).Sub(now), 0), safety)
		}
		timer.Reset(sleep)
	}
}

// Pass handles every schedule due now, and those falling due within a
// moment (waiting for them), and returns when the earliest other one falls
// due (zero when none is indexed).
func (r *ScheduleRunner) Pass(ctx context.Context) (time.Time, error) {
	s := r.Schedules
	for range maxStepTicks {
		now := s.Queue.Now()
		ids, full, err := s.dueIDs(ctx, now.Add(lookahead))
		if err != nil {
			return time.Time{}, err
		}
		if len(ids) == 0 {
			break
		}
		scs, err := r.readKnown(ctx, ids)
		if err != nil {
			return time.Time{}, err
		}
		var work []Schedule
		var later []redis.Z
		horizon := ms(now.Add(lookahead))
		for i, sc := range scs {
			switch {
			case sc == nil:
				if err := s.unindex(ctx, ids[i]); err != nil {
					return time.Time{}, err
				}
			case sc.Pending != "":
				work = append(work, *sc)
			case sc.due() > horizon:
				later = append(later, redis.Z{Score: float64(sc.due()), Member: sc.ID})
			default:
				work = append(work, *sc)
			}
		}
		if err := s.reindex(ctx, later); err != nil {
			return time.Time{}, err
		}
		slices.SortStableFunc(work, func(a, b Schedule) int { return cmp.Compare(a.dueNow(), b.dueNow()) })
		for len(work) > 0 {
			if err := waitUntil(ctx, s.Queue, time.UnixMilli(work[0].dueNow())); err != nil {
				return time.Time{}, err
			}
			now := s.Queue.Now()
			n := 1
			for n < len(work) && work[n].dueNow() <= ms(now) {
				n++
			}
			failed, err := r.handle(ctx, work[:n], now, true)
			if err != nil {
				return time.Time{}, err
			}
			r.failed(ctx, failed)
			work = work[n:]
		}
		if !full && !r.dueAgain(ctx) {
			break
		}
	}
	return s.earliest(ctx)
}

// dueAgain reports whether a schedule is due within the lookahead already
// (a catch-up window's next missed tick, a claim to finish).
func (r *ScheduleRunner) dueAgain(ctx context.Context) bool {
	first, err := r.Schedules.earliest(ctx)
	return err == nil && !first.IsZero() && !first.After(r.Schedules.Queue.Now().Add(lookahead))
}

// dueNow is when sc is to be handled (unix ms): a claimed tick at once, a
// schedule claimed ahead (aheadOf) that long before its tick.
func (sc Schedule) dueNow() int64 {
	if sc.Pending != "" {
		return 0
	}
	return sc.due() - aheadOf(sc).Milliseconds()
}

// aheadOf is how long before its ticks sc is claimed: Ahead for a schedule
// that allows overlap, else none.
func aheadOf(sc Schedule) time.Duration {
	if sc.Overlap == bananastype.OverlapAllow {
		return Ahead
	}
	return 0
}

// waitUntil sleeps until q's clock reaches t, or ctx ends.
func waitUntil(ctx context.Context, q *queue.Queue, t time.Time) error {
	d := t.Sub(q.Now())
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// dueIDs reads, from every bucket's index in one pipelined round trip, the
// ids due by until, and whether a bucket had more than readLimit.
func (s *Schedules) dueIDs(ctx context.Context, until time.Time) (ids []string, full bool, err error) {
	pipe := s.Queue.Client().Pipeline()
	cmds := make([]*redis.StringSliceCmd, Buckets)
	for b := range cmds {
		cmds[b] = pipe.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.IndexKey(b), ByScore: true, Start: "-inf", Stop: strconv.FormatInt(ms(until), 10), Count: readLimit})
	}
	_, _ = pipe.Exec(ctx)
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return nil, false, fmt.Errorf("read the schedules index: %w", err)
		}
		ids = append(ids, c.Val()...)
		full = full || len(c.Val()) == readLimit
	}
	return ids, full, nil
}

// earliest is when the earliest indexed schedule needs a scheduler (zero
// when none does), from every bucket's index in one pipelined round trip.
func (s *Schedules) earliest(ctx context.Context) (time.Time, error) {
	pipe := s.Queue.Client().Pipeline()
	cmds := make([]*redis.ZSliceCmd, Buckets)
	for b := range cmds {
		cmds[b] = pipe.ZRangeWithScores(ctx, s.IndexKey(b), 0, 0)
	}
	_, _ = pipe.Exec(ctx)
	first := int64(parked)
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return time.Time{}, fmt.Errorf("read the schedules index: %w", err)
		}
		if v := c.Val(); len(v) > 0 && int64(v[0].Score) < first {
			first = int64(v[0].Score)
		}
	}
	if first >= parked {
		return time.Time{}, nil
	}
	return time.UnixMilli(first), nil
}

// reindex puts entries in their buckets' indexes, in one pipelined round trip.
func (s *Schedules) reindex(ctx context.Context, entries []redis.Z) error {
	if len(entries) == 0 {
		return nil
	}
	pipe := s.Queue.Client().Pipeline()
	for _, z := range entries {
		pipe.ZAdd(ctx, s.indexOf(z.Member.(string)), z)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("index schedules: %w", err)
	}
	return nil
}

// failed tells OnError of schedules that could not be handled and looks at
// them again after the safety period, not in a hot loop.
func (r *ScheduleRunner) failed(ctx context.Context, failed map[string]error) {
	if len(failed) == 0 {
		return
	}
	at := float64(ms(r.Schedules.Queue.Now().Add(DefaultScheduleSafety)))
	entries := make([]redis.Z, 0, len(failed))
	for id, err := range failed {
		if r.OnError != nil {
			r.OnError(id, err)
		}
		entries = append(entries, redis.Z{Score: at, Member: id})
	}
	_ = r.Schedules.reindex(ctx, entries)
}

// Step handles schedule id: finishes a claimed tick, claims and fires the
// due ones (as its catch-up window and overlap policy say), and puts the
// schedule back in the index at the time it next needs a runner.
func (r *ScheduleRunner) Step(ctx context.Context, id string) error {
	s := r.Schedules
	for range maxStepTicks {
		sc, err := s.Get(ctx, id)
		if errors.Is(err, ErrNoSchedule) {
			return s.unindex(ctx, id)
		}
		if err != nil {
			return err
		}
		now := s.Queue.Now()
		if sc.Pending == "" && (sc.Paused || sc.Next.IsZero() || ms(now) < sc.dueNow()) {
			return s.index(ctx, sc)
		}
		failed, err := r.handle(ctx, []Schedule{sc}, now, false)
		if err != nil {
			return err
		}
		if err := failed[id]; err != nil {
			return err
		}
	}
	return nil
}

// handle handles scs, each due at now or holding a claim: the claims are
// finished, the due ticks planned, claimed (one script call per bucket),
// their jobs enqueued (one call per route) and marked done (one call per
// bucket). It returns the schedules that failed on their own, and an
// error only for want of Redis (or ctx's end). With release, the jobs it
// wrote ahead of their ticks are made ready at their run-ats by a goroutine
// that lives until then (or ctx's end); without, the promoter moves them
// ReleaseFallback after.
func (r *ScheduleRunner) handle(ctx context.Context, scs []Schedule, now time.Time, release bool) (map[string]error, error) {
	s := r.Schedules
	failed := map[string]error{}
	var mu sync.Mutex
	fail := func(id string, err error) {
		r.known.drop(id)
		mu.Lock()
		failed[id] = err
		mu.Unlock()
	}
	var fin, due []Schedule
	for _, sc := range scs {
		if sc.Pending != "" {
			fin = append(fin, sc)
		} else {
			due = append(due, sc)
		}
	}
	plans, err := r.planAll(ctx, due, now, fail)
	if err != nil {
		return nil, err
	}
	var claims []claimItem
	for i, sc := range due {
		if plans[i].what != "" {
			claims = append(claims, claimItem{sc: sc, c: plans[i]})
		}
	}
	// Each bucket's claims go on to their enqueues at once, so that the
	// first jobs are out while later buckets are being claimed; the dones
	// wait until every enqueue is.
	var done []Schedule
	var ahead []releaseItem
	fire := func(fin []Schedule) error {
		return r.fireAll(ctx, fin, func(sc Schedule, got any, rel *releaseItem) {
			switch got {
			case int64(1):
				if r.OnFire != nil {
					r.OnFire(sc, sc.pendTick, sc.Pending)
				}
				if rel != nil {
					mu.Lock()
					ahead = append(ahead, *rel)
					mu.Unlock()
				}
				fallthrough
			case int64(0):
				mu.Lock()
				done = append(done, sc)
				mu.Unlock()
			default:
				fail(sc.ID, fmt.Errorf("enqueue the job of schedule %s: %v", sc.ID, got))
			}
		}, fail)
	}
	if err := fire(fin); err != nil {
		return nil, err
	}
	err = s.claimAll(ctx, claims, now, func(g []claimItem, answers []string) error {
		var fin []Schedule
		for i, it := range g {
			switch got := answers[i]; {
			case got == "ok":
				if it.c.what == "skip" && r.OnSkip != nil {
					r.OnSkip(it.sc, it.c.tick)
				}
				sc := it.sc
				sc.Next = it.c.next
				if it.c.what == "fire" {
					sc.Pending, sc.pendTick = it.c.job, it.c.tick
					fin = append(fin, sc)
				} else {
					r.known.put(sc)
				}
			case got == "gone":
				r.known.drop(it.sc.ID)
				if err := s.unindex(ctx, it.sc.ID); err != nil {
					fail(it.sc.ID, err)
				}
			case got == "paused", got == "stale", got == "pending": // read again by the next round
				r.known.drop(it.sc.ID)
			case strings.HasPrefix(got, "garbage"):
				fail(it.sc.ID, fmt.Errorf("schedule %s: %s", it.sc.ID, got))
			default:
				fail(it.sc.ID, fmt.Errorf("schedule %s: claim answered %q", it.sc.ID, got))
			}
		}
		return fire(fin)
	}, fail)
	if err != nil {
		return nil, err
	}
	if release && len(ahead) > 0 {
		go r.release(ctx, ahead)
	}
	if err := s.doneAll(ctx, done, func(sc Schedule, at time.Time, marked bool) {
		if !marked {
			r.known.drop(sc.ID)
			return
		}
		sc.LastJob, sc.LastTick, sc.LastFire, sc.Fired = sc.Pending, sc.pendTick, at, sc.Fired+1
		sc.Pending, sc.pendTick = "", time.Time{}
		r.known.put(sc)
	}, fail); err != nil {
		return nil, err
	}
	return failed, nil
}

// planAll plans the claims of due: the last jobs' statuses that an overlap
// policy needs are read in one pipelined round trip. A schedule that cannot
// be planned is failed and gets an empty plan.
func (r *ScheduleRunner) planAll(ctx context.Context, due []Schedule, now time.Time, fail func(string, error)) ([]claimPlan, error) {
	var last []string
	for _, sc := range due {
		if sc.LastJob != "" && sc.Overlap != bananastype.OverlapAllow {
			last = append(last, sc.LastJob)
		}
	}
	status := map[string]queue.Status{}
	if len(last) > 0 {
		states, err := r.Schedules.Queue.Jobs.LookupMany(ctx, last)
		if err != nil {
			return nil, fmt.Errorf("look up the schedules' last jobs: %w", err)
		}
		for i, st := range states {
			if st != nil {
				status[last[i]] = st.Status
			}
		}
	}
	plans := make([]claimPlan, len(due))
	for i, sc := range due {
		c, err := r.planWith(ctx, sc, now, status[sc.LastJob])
		if err != nil {
			if ctx.Err() != nil || Unreachable(err) {
				return nil, err
			}
			fail(sc.ID, err)
			continue
		}
		plans[i] = c
	}
	return plans, nil
}

// claimItem is one schedule's claim.
type claimItem struct {
	sc Schedule
	c  claimPlan
}

// each runs f on each group, parallel at a time, and returns the first
// error for want of Redis (or ctx's end); other errors go to fail for
// every schedule of the group.
func each[T any](ctx context.Context, groups [][]T, id func(T) string, f func([]T) error, fail func(string, error)) error {
	sem := make(chan struct{}, parallel)
	var mu sync.Mutex
	var down error
	var wg sync.WaitGroup
	for _, g := range groups {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := f(g)
			switch {
			case err == nil:
			case ctx.Err() != nil || Unreachable(err):
				mu.Lock()
				if down == nil {
					down = err
				}
				mu.Unlock()
			default:
				for _, it := range g {
					fail(id(it), err)
				}
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return down
}

// groupBy splits items by key into groups of at most chunk, in a stable order.
func groupBy[T any](items []T, key func(T) string) [][]T {
	by := map[string][]T{}
	var keys []string
	for _, it := range items {
		k := key(it)
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], it)
	}
	var out [][]T
	for _, k := range keys {
		for g := by[k]; len(g) > 0; g = g[min(chunk, len(g)):] {
			out = append(out, g[:min(chunk, len(g))])
		}
	}
	return out
}

// claimAll runs sched_claim.lua for items, one call per bucket and chunk,
// and hands each call's claims and answers to then.
func (s *Schedules) claimAll(ctx context.Context, items []claimItem, now time.Time, then func([]claimItem, []string) error, fail func(string, error)) error {
	groups := groupBy(items, func(it claimItem) string { return s.indexOf(it.sc.ID) })
	return each(ctx, groups, func(it claimItem) string { return it.sc.ID }, func(g []claimItem) error {
		keys := make([]string, 0, len(g)+1)
		keys = append(keys, s.indexOf(g[0].sc.ID))
		args := make([]any, 0, 1+8*len(g))
		args = append(args, ms(now))
		for _, it := range g {
			keys = append(keys, s.Key(it.sc.ID))
			score := ms(now.Add(claimGrace))
			if it.c.what != "fire" {
				next := it.sc
				next.Next = it.c.next
				score = next.due()
			}
			args = append(args, it.sc.ID, ms(it.sc.Next), it.sc.ver, msOrZero(it.c.next), it.c.what, msOrZero(it.c.tick), it.c.job, score)
		}
		// Retry-safe: a second run finds each next moved and writes nothing.
		res, err := lua().claim.Run(ctx, s.Queue.Client(), keys, args...).StringSlice()
		if err != nil {
			return fmt.Errorf("claim ticks of schedules: %w", err)
		}
		if len(res) != len(g) {
			return fmt.Errorf("claim ticks of schedules: %d answers for %d claims", len(res), len(g))
		}
		return then(g, res)
	}, fail)
}

// fireAll runs sched_fire.lua for the claimed ticks of fin, one call per
// route and chunk, and tells got of each enqueue's answer (1, 0 or a
// reason), with, for a job written ahead of its run-at, its release.
func (r *ScheduleRunner) fireAll(ctx context.Context, fin []Schedule, got func(Schedule, any, *releaseItem), fail func(string, error)) error {
	q := r.Schedules.Queue
	var ok []Schedule
	for _, sc := range fin {
		if _, has := queue.RouteOf(sc.Pending); !has {
			fail(sc.ID, fmt.Errorf("schedule %s is garbage: its claimed job id %q names no route", sc.ID, sc.Pending))
			continue
		}
		ok = append(ok, sc)
	}
	groups := groupBy(ok, func(sc Schedule) string { route, _ := queue.RouteOf(sc.Pending); return route })
	return each(ctx, groups, func(sc Schedule) string { return sc.ID }, func(g []Schedule) error {
		route, _ := queue.RouteOf(g[0].Pending)
		now := q.Now()
		k := q.Keys(route)
		keys := make([]string, 0, 7+2*len(g))
		keys = append(keys, k.Stats(), k.Series(queue.HourOf(now)), k.Idle(), k.List(queue.High), k.List(queue.Normal), k.List(queue.Low), k.Scheduled())
		args := make([]any, 0, 4+8*len(g))
		args = append(args, ms(now), k.WakeChannel(), tickMarkTTL.Milliseconds(), queue.ScheduleChannel(q.Namespace()))
		rels := make([]*releaseItem, len(g))
		for i, sc := range g {
			keys = append(keys, k.ScheduleTick(sc.ID), k.Job(sc.Pending))
			runAt := sc.pendTick.Add(JitterOf(sc.ID, sc.pendTick, sc.Jitter))
			score := runAt // at or before now: ready at once
			if runAt.After(now) {
				score = runAt.Add(ReleaseFallback)
				rels[i] = &releaseItem{id: sc.Pending, route: route, prio: sc.Priority, runAt: runAt, score: score}
			}
			args = append(args, ms(sc.pendTick), sc.Pending, sc.Name, sc.Envelope, string(sc.Priority), sc.MaxRetries, sc.ID, ms(score))
		}
		// Retry-safe: compare-and-set on each tick; a second run finds them enqueued.
		res, err := lua().fire.Run(ctx, q.Client(), keys, args...).Slice()
		if err != nil {
			return fmt.Errorf("enqueue the jobs of schedules: %w", err)
		}
		if len(res) != len(g) {
			return fmt.Errorf("enqueue the jobs of schedules: %d answers for %d jobs", len(res), len(g))
		}
		for i, sc := range g {
			got(sc, res[i], rels[i])
		}
		return nil
	}, fail)
}

// doneAll runs sched_done.lua for the enqueued ticks of done, one call per
// bucket and chunk, and tells marked of each answer (the claim marked done
// at the time at, or not found).
func (s *Schedules) doneAll(ctx context.Context, done []Schedule, marked func(sc Schedule, at time.Time, ok bool), fail func(string, error)) error {
	groups := groupBy(done, func(sc Schedule) string { return s.indexOf(sc.ID) })
	now := s.Queue.Now()
	return each(ctx, groups, func(sc Schedule) string { return sc.ID }, func(g []Schedule) error {
		keys := make([]string, 0, len(g)+1)
		keys = append(keys, s.indexOf(g[0].ID))
		args := make([]any, 0, 1+5*len(g))
		args = append(args, ms(now))
		for _, sc := range g {
			keys = append(keys, s.Key(sc.ID))
			next := sc
			next.Pending = ""
			args = append(args, sc.ID, ms(sc.pendTick), sc.Pending, msOrZero(sc.Next), next.due())
		}
		// Retry-safe: a second run finds no claim of those ticks.
		res, err := lua().done.Run(ctx, s.Queue.Client(), keys, args...).Int64Slice()
		if err != nil {
			return fmt.Errorf("mark ticks of schedules done: %w", err)
		}
		for i, sc := range g {
			marked(sc, now, i < len(res) && res[i] == 1)
		}
		return nil
	}, fail)
}

// claimPlan is what one claim does to a schedule.
type claimPlan struct {
	what string // fire, skip, miss
	tick time.Time
	next time.Time
	job  string
}

// plan decides the claim of sc's due ticks at now: which tick fires (or is
// skipped), and the next tick after it.
func (r *ScheduleRunner) plan(ctx context.Context, sc Schedule, now time.Time) (claimPlan, error) {
	var st queue.Status
	if sc.LastJob != "" && sc.Overlap != bananastype.OverlapAllow {
		var err error
		if st, err = s0(ctx, r.Schedules.Queue, sc.LastJob); err != nil {
			return claimPlan{}, err
		}
	}
	return r.planWith(ctx, sc, now, st)
}

// planWith is plan with the status of sc's last job ("" when it is gone).
func (r *ScheduleRunner) planWith(ctx context.Context, sc Schedule, now time.Time, st queue.Status) (claimPlan, error) {
	sp, err := r.spec(sc)
	if err != nil {
		return claimPlan{}, fmt.Errorf("schedule %s: %w", sc.ID, err)
	}
	dueAt := func(t time.Time) time.Time { return t.Add(JitterOf(sc.ID, t, sc.Jitter)) }
	window := max(sc.CatchUp, Late)
	// With a catch-up window, the oldest due tick inside it fires (the
	// claim skips those before it); without one, the latest due tick, if it
	// is at most Late late.
	var tick, latest time.Time
	n := 0
	for t := sc.Next; !t.IsZero() && !dueAt(t).After(now); t = sp.Next(t) {
		if n++; n > maxTickWalk { // too many missed ticks to walk: none runs
			latest = time.Time{}
			break
		}
		latest = t
		if sc.CatchUp > 0 && now.Sub(t) <= window {
			tick = t
			break
		}
	}
	if sc.CatchUp == 0 && !latest.IsZero() && now.Sub(latest) <= Late {
		tick = latest
	}
	if due := dueAt(sc.Next); latest.IsZero() && !sc.Next.IsZero() && due.After(now) && !due.After(now.Add(aheadOf(sc))) {
		tick = sc.Next // not due yet, but claimed ahead
	}
	if tick.IsZero() {
		if latest.IsZero() {
			return claimPlan{what: "miss", next: sp.Next(now)}, nil
		}
		return claimPlan{what: "miss", next: sp.Next(latest)}, nil
	}
	c := claimPlan{what: "fire", tick: tick, next: sp.Next(tick), job: TickJobID(sc.ID, sc.Route, tick)}
	if sc.LastJob == "" || sc.Overlap == bananastype.OverlapAllow {
		return c, nil
	}
	switch sc.Overlap {
	case bananastype.OverlapSkip:
		if st != "" && !st.Finished() {
			c.what, c.job = "skip", ""
		}
	case bananastype.OverlapBufferOne:
		if st == queue.StatusPending || st == queue.StatusScheduled {
			c.what, c.job = "skip", ""
		}
	case bananastype.OverlapCancelRunning:
		if st != "" && !st.Finished() && r.Cancel != nil {
			if err := r.Cancel(ctx, sc.LastJob); err != nil && !errors.Is(err, queue.ErrNotFound) {
				return claimPlan{}, fmt.Errorf("schedule %s: cancel its last job %s: %w", sc.ID, sc.LastJob, err)
			}
		}
	}
	return c, nil
}

// s0 is the status of job id, "" when it is gone (finished, its record
// expired).
func s0(ctx context.Context, q *queue.Queue, id string) (queue.Status, error) {
	st, err := q.Jobs.Lookup(ctx, id)
	if errors.Is(err, queue.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("look up job %s: %w", id, err)
	}
	return st.Status, nil
}

// claim runs sched_claim.lua for c alone.
func (s *Schedules) claim(ctx context.Context, sc Schedule, c claimPlan, now time.Time) (string, error) {
	var out string
	var failed error
	err := s.claimAll(ctx, []claimItem{{sc: sc, c: c}}, now, func(_ []claimItem, got []string) error { out = got[0]; return nil }, func(_ string, err error) { failed = err })
	if err == nil {
		err = failed
	}
	return out, err
}

// spec is sc's parsed spec, from the runner's cache: a pass plans many
// schedules sharing few specs.
func (r *ScheduleRunner) spec(sc Schedule) (Spec, error) {
	key := sc.Spec + "\x00" + sc.TZ + "\x00" + strconv.FormatInt(msOrZero(sc.Start), 10) + "\x00" + strconv.FormatInt(msOrZero(sc.End), 10)
	if sp, ok := r.specs.Load(key); ok {
		return sp.(Spec), nil
	}
	sp, err := ParseScheduleSpec(sc.Spec, sc.TZ, sc.Start, sc.End)
	if err != nil {
		return Spec{}, err
	}
	r.specs.Store(key, sp)
	return sp, nil
}

// unindex drops id from the index when its record is gone, and puts it
// back if a put wrote the record meanwhile (a put writes the record, then
// the index).
func (s *Schedules) unindex(ctx context.Context, id string) error {
	if err := s.Queue.Client().ZRem(ctx, s.indexOf(id), id).Err(); err != nil {
		return err
	}
	sc, err := s.Get(ctx, id)
	if errors.Is(err, ErrNoSchedule) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.index(ctx, sc)
}

// releaseItem is a job written ahead of its tick, to be made ready at its
// run-at (sched_release.lua); score is where it waits in the scheduled set.
type releaseItem struct {
	id, route    string
	prio         queue.Priority
	runAt, score time.Time
}

// release makes the jobs of items ready at their run-ats, one call per
// route for the jobs due together, until all are released or ctx ends. A
// call that fails leaves its jobs to the promoter (ReleaseFallback).
func (r *ScheduleRunner) release(ctx context.Context, items []releaseItem) {
	q := r.Schedules.Queue
	slices.SortFunc(items, func(a, b releaseItem) int { return a.runAt.Compare(b.runAt) })
	for len(items) > 0 {
		if err := waitUntil(ctx, q, items[0].runAt); err != nil {
			return
		}
		now := q.Now()
		n := 0
		for n < len(items) && !items[n].runAt.After(now) {
			n++
		}
		if n == 0 {
			continue
		}
		groups := groupBy(items[:n], func(it releaseItem) string { return it.route })
		_ = each(ctx, groups, func(it releaseItem) string { return it.id }, func(g []releaseItem) error {
			k := q.Keys(g[0].route)
			args := make([]any, 0, 2+4*len(g))
			args = append(args, ms(now), k.WakeChannel())
			for _, it := range g {
				args = append(args, it.id, ms(it.runAt), ms(it.score), string(it.prio))
			}
			// Retry-safe: a second run finds the jobs gone from the scheduled set.
			return lua().release.Run(ctx, q.Client(), []string{k.Scheduled(), k.List(queue.High), k.List(queue.Normal), k.List(queue.Low), k.Idle()}, args...).Err()
		}, func(id string, err error) {
			if r.OnError != nil && ctx.Err() == nil {
				r.OnError("", fmt.Errorf("make the job %s of a tick ready (the promoter will): %w", id, err))
			}
		})
		items = items[n:]
	}
}
