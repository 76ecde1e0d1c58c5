package scheduler

import (
	"context"
	"crypto/sha256"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
)

// Late is how late a tick may fire when its schedule has no catch-up window:
// a scheduler woken a little late (a pause of the process, a failover) still
// fires the tick; a tick missed by more (no scheduler ran) does not run.
const Late = 10 * time.Second

// tickMarkTTL is how long the route keeps a schedule's last enqueued tick
// (sched_fire.lua): far longer than a claimed tick waits to be finished.
const tickMarkTTL = 7 * 24 * time.Hour

// ScheduleDef is what a schedule's owner sets: the task's job of each tick,
// and when the ticks are.
type ScheduleDef struct {
	ID         string
	Name       string // the task's wire name
	Route      string
	Priority   queue.Priority
	Envelope   []byte // the job of every tick (queue.EncodeEnvelope)
	MaxRetries int
	Args       string // the args as JSON, for people (listings); may be ""
	Spec, TZ   string // a cron spec (five fields, six with seconds, or @every 1s) and an IANA zone ("" = UTC)
	Jitter     time.Duration
	Overlap    bananastype.Overlap // "" is bananastype.OverlapSkip
	CatchUp    time.Duration       // after an outage, the missed ticks this recent run, oldest first
	Start, End time.Time           // no tick before Start or after End (zero: unbounded)
	Paused     bool
}

// Schedule is a schedule's record: its definition and its state.
type Schedule struct {
	ScheduleDef
	Next     time.Time // the next tick; zero when none is left (past End)
	LastTick time.Time // the last tick fired
	LastFire time.Time // when it was fired
	LastJob  string    // the job of the last tick fired
	LastSkip time.Time // when a tick was last skipped (bananastype.OverlapSkip)
	Fired    int64
	Skipped  int64
	Created  time.Time
	Updated  time.Time
	Pending  string // the job of a claimed tick not yet known enqueued
	pendTick time.Time
	plan     string
	ver      string // the updated field as stored: a claim's compare on the definition
}

// CheckScheduleID validates a schedule id: 1-200 characters without spaces
// or braces (it is a key's hash tag).
func CheckScheduleID(id string) error {
	if id == "" || len(id) > 200 || strings.ContainsAny(id, "{} \t\r\n") {
		return fmt.Errorf("invalid schedule id %q: 1-200 characters without spaces or braces", id)
	}
	return nil
}

// ErrNoSchedule is the error of an action on a schedule that does not exist.
var ErrNoSchedule = errors.New("no such schedule")

// Schedules is the store of schedules as data. Schedules live in Buckets
// buckets, a schedule's drawn from its id (BucketOf); bucket b holds one
// hash per schedule, ns:schedule:{sched.<b>}:<id>, and its index,
// ns:schedules:{sched.<b>}, a ZSET of id -> when the schedule next needs a
// scheduler (unix ms). A bucket's keys share a hash tag, so one script
// claims many of its schedules at once; on a cluster the buckets spread
// over the masters. The hash is the truth; the index is a hint a scheduler
// corrects when it finds it wrong.
type Schedules struct {
	Queue *queue.Queue
}

// Buckets is how many buckets schedules are spread over.
const Buckets = 16

// BucketOf is the bucket of schedule id.
func BucketOf(id string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % Buckets)
}

func bucketTag(b int) string { return "{sched." + strconv.Itoa(b) + "}" }

// Key is the record of schedule id.
func (s *Schedules) Key(id string) string {
	return s.Queue.Namespace() + ":schedule:" + bucketTag(BucketOf(id)) + ":" + id
}

// IndexKey is the index of bucket b.
func (s *Schedules) IndexKey(b int) string { return s.Queue.Namespace() + ":schedules:" + bucketTag(b) }

// IndexKeys are the indexes of every bucket, in bucket order.
func (s *Schedules) IndexKeys() []string {
	out := make([]string, Buckets)
	for b := range out {
		out[b] = s.IndexKey(b)
	}
	return out
}

func (s *Schedules) indexOf(id string) string { return s.IndexKey(BucketOf(id)) }

//go:embed scripts/*.lua
var scriptFS embed.FS

type scheduleScripts struct {
	put, pause, del, claim, done, fire *redis.Script
	withdraw, adopt, forget, release   *redis.Script
	cronPause                          *redis.Script
}

// loadLua is this package's Lua, assembled by queue's loader with
// _schedule.lua as its shared file.
var loadLua = sync.OnceValues(func() (*queue.Lua, error) {
	sub, err := fs.Sub(scriptFS, "scripts")
	if err != nil {
		return nil, err
	}
	return queue.LoadLua(sub, "_schedule.lua")
})

var lua = sync.OnceValue(func() *scheduleScripts {
	l, err := loadLua()
	if err != nil {
		panic("scheduler: " + err.Error())
	}
	return &scheduleScripts{
		put: l.Script("sched_put"), pause: l.Script("sched_pause"), del: l.Script("sched_delete"),
		claim: l.Script("sched_claim"), done: l.Script("sched_done"), fire: l.Script("sched_fire"),
		cronPause: l.Script("cron_pause"), withdraw: l.Script("sched_withdraw"),
		adopt: l.Script("sched_adopt"), forget: l.Script("sched_forget"), release: l.Script("sched_release"),
	}
})

// Check validates d, filling its defaults (Overlap, Priority), and returns
// the parsed spec.
func (d *ScheduleDef) Check() (Spec, error) {
	if err := CheckScheduleID(d.ID); err != nil {
		return Spec{}, err
	}
	if d.Name == "" {
		return Spec{}, errors.New("a schedule needs a task name")
	}
	if err := queue.CheckRoute(d.Route); err != nil {
		return Spec{}, err
	}
	if d.Priority == "" {
		d.Priority = queue.Normal
	}
	if !queue.ValidPriority(d.Priority) {
		return Spec{}, fmt.Errorf("invalid priority %q: use high, normal or low", d.Priority)
	}
	if d.Overlap == "" {
		d.Overlap = bananastype.OverlapSkip
	}
	if !d.Overlap.Valid() {
		return Spec{}, fmt.Errorf("invalid overlap %q: use skip, buffer_one, allow or cancel_running", d.Overlap)
	}
	if len(d.Envelope) == 0 {
		return Spec{}, errors.New("a schedule needs its job's envelope")
	}
	if d.MaxRetries < 0 {
		return Spec{}, errors.New("max retries must be >= 0")
	}
	if d.Jitter < 0 || d.CatchUp < 0 {
		return Spec{}, errors.New("jitter and catch_up must be >= 0")
	}
	if !d.Start.IsZero() && !d.End.IsZero() && !d.End.After(d.Start) {
		return Spec{}, errors.New("end must come after start")
	}
	return ParseScheduleSpec(d.Spec, d.TZ, d.Start, d.End)
}

// Put creates schedule d or changes it. Any number of processes may put
// the same schedule at once: one schedule results, with one next tick
// (sched_put.lua keeps the stored next tick while the plan, spec, zone,
// start and end, is the same).
func (s *Schedules) Put(ctx context.Context, d ScheduleDef, now time.Time) (Schedule, error) {
	sp, err := d.Check()
	if err != nil {
		return Schedule{}, err
	}
	next := sp.Next(now)
	paused := "0"
	if d.Paused {
		paused = "1"
	}
	args := []any{ms(now), sp.plan(), msOrZero(next), d.ID,
		"name", d.Name, "route", d.Route, "prio", string(d.Priority), "env", d.Envelope,
		"retries", d.MaxRetries, "args", d.Args, "spec", d.Spec, "tz", d.TZ,
		"jitter", d.Jitter.Milliseconds(), "overlap", string(d.Overlap), "catchup", d.CatchUp.Milliseconds(),
		"start", msOrZero(d.Start), "end", msOrZero(d.End), "paused", paused}
	if err := s.Queue.AddRoute(ctx, d.Route); err != nil {
		return Schedule{}, err
	}
	// Retry-safe: a second run writes what the first did. The script
	// indexes the schedule as due now; it is indexed at its due time below,
	// or by a scheduler if this process dies first.
	if err := lua().put.Run(ctx, s.Queue.Client(), []string{s.Key(d.ID), s.indexOf(d.ID)}, args...).Err(); err != nil {
		return Schedule{}, fmt.Errorf("put schedule %s: %w", d.ID, err)
	}
	got, err := s.Get(ctx, d.ID)
	if err != nil {
		return Schedule{}, err
	}
	return got, s.index(ctx, got)
}

// Get reads schedule id, or ErrNoSchedule.
func (s *Schedules) Get(ctx context.Context, id string) (Schedule, error) {
	if err := CheckScheduleID(id); err != nil {
		return Schedule{}, err
	}
	m, err := s.Queue.Client().HGetAll(ctx, s.Key(id)).Result()
	if err != nil {
		return Schedule{}, fmt.Errorf("read schedule %s: %w", id, err)
	}
	if len(m) == 0 {
		return Schedule{}, fmt.Errorf("schedule %s: %w", id, ErrNoSchedule)
	}
	return parseSchedule(id, m)
}

// List reads every schedule of the indexes, in id order, in pipelined
// round trips of up to 500 reads each (a pipeline of a cluster client is
// split by node). An id whose record is gone is left out.
func (s *Schedules) List(ctx context.Context) ([]Schedule, error) {
	ids, err := s.ids(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Schedule, 0, len(ids))
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		scs, err := s.read(ctx, chunk)
		if err != nil {
			return nil, err
		}
		for _, sc := range scs {
			if sc != nil {
				out = append(out, *sc)
			}
		}
	}
	return out, nil
}

// ids are the ids of every bucket's index, sorted.
func (s *Schedules) ids(ctx context.Context) ([]string, error) {
	pipe := s.Queue.Client().Pipeline()
	cmds := make([]*redis.StringSliceCmd, Buckets)
	for b := range cmds {
		cmds[b] = pipe.ZRange(ctx, s.IndexKey(b), 0, -1)
	}
	_, _ = pipe.Exec(ctx)
	var ids []string
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return nil, fmt.Errorf("list schedules: %w", err)
		}
		ids = append(ids, c.Val()...)
	}
	slices.Sort(ids)
	return ids, nil
}

// read reads the records of ids in one pipelined round trip: nil where a
// record is gone.
func (s *Schedules) read(ctx context.Context, ids []string) ([]*Schedule, error) {
	pipe := s.Queue.Client().Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, s.Key(id))
	}
	if len(ids) > 0 {
		_, _ = pipe.Exec(ctx) // each read's error is its own, below
	}
	out := make([]*Schedule, len(ids))
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return nil, fmt.Errorf("read schedule %s: %w", ids[i], err)
		}
		if len(cmd.Val()) == 0 {
			continue
		}
		sc, err := parseSchedule(ids[i], cmd.Val())
		if err != nil {
			return nil, err
		}
		out[i] = &sc
	}
	return out, nil
}

// Delete deletes schedule id: it fires nothing more (a tick claimed before
// the delete is still enqueued once). ErrNoSchedule when there is none.
func (s *Schedules) Delete(ctx context.Context, id string) error {
	if err := CheckScheduleID(id); err != nil {
		return err
	}
	// Retry-safe: a second run finds nothing to delete (a tick claimed
	// ahead that the first answer named and a lost reply hid stays
	// scheduled: the delete answers ErrNoSchedule, as after any delete).
	res, err := lua().del.Run(ctx, s.Queue.Client(), []string{s.Key(id), s.indexOf(id)}, id, ms(s.Queue.Now())).Result()
	if err != nil {
		return fmt.Errorf("delete schedule %s: %w", id, err)
	}
	got, _ := res.([]any)
	if len(got) == 0 {
		return fmt.Errorf("schedule %s: %w", id, ErrNoSchedule)
	}
	return s.withdraw(ctx, id, got)
}

// Pause pauses (or, with paused false, resumes) schedule id. A paused
// schedule fires nothing and keeps its next tick.
func (s *Schedules) Pause(ctx context.Context, id string, paused bool, now time.Time) error {
	if err := CheckScheduleID(id); err != nil {
		return err
	}
	p := 0
	if paused {
		p = 1
	}
	// Retry-safe: a second run sets what the first did.
	res, err := lua().pause.Run(ctx, s.Queue.Client(), []string{s.Key(id), s.indexOf(id)}, p, ms(now), id, parked).Result()
	if err != nil {
		return fmt.Errorf("pause schedule %s: %w", id, err)
	}
	got, _ := res.([]any)
	if len(got) == 0 {
		return fmt.Errorf("schedule %s: %w", id, ErrNoSchedule)
	}
	if err := s.withdraw(ctx, id, got); err != nil {
		return err
	}
	if !paused {
		sc, err := s.Get(ctx, id)
		if err != nil {
			return err
		}
		return s.index(ctx, sc)
	}
	return nil
}

// withdraw withdraws the job of a tick of schedule id claimed ahead, as a
// pause or a delete answered it ({1, job id, tick, jitter ms, drop|rewind};
// {1} when there is none), in the job's route's slot.
func (s *Schedules) withdraw(ctx context.Context, id string, got []any) error {
	if len(got) < 5 {
		return nil
	}
	job, _ := got[1].(string)
	tick, err1 := strconv.ParseInt(fmt.Sprint(got[2]), 10, 64)
	jitter, err2 := strconv.ParseInt(fmt.Sprint(got[3]), 10, 64)
	mode, _ := got[4].(string)
	route, ok := queue.RouteOf(job)
	if err1 != nil || err2 != nil || !ok {
		return fmt.Errorf("schedule %s is garbage: its tick claimed ahead is %v", id, got[1:])
	}
	k := s.Queue.Keys(route)
	at := time.UnixMilli(tick)
	runAt := at.Add(JitterOf(id, at, time.Duration(jitter)*time.Millisecond))
	// Retry-safe: a second run finds the job gone and the mark set.
	err := lua().withdraw.Run(ctx, s.Queue.Client(), []string{k.ScheduleTick(id), k.Job(job), k.Scheduled()},
		ms(s.Queue.Now()), job, tick, ms(runAt), mode, tickMarkTTL.Milliseconds(), ms(runAt.Add(ReleaseFallback))).Err()
	if err != nil {
		return fmt.Errorf("schedule %s: withdraw the job %s of its tick claimed ahead: %w", id, job, err)
	}
	return nil
}

// index puts sc in the index at the time it next needs a scheduler.
func (s *Schedules) index(ctx context.Context, sc Schedule) error {
	if err := s.Queue.Client().ZAdd(ctx, s.indexOf(sc.ID), redis.Z{Score: float64(sc.due()), Member: sc.ID}).Err(); err != nil {
		return fmt.Errorf("index schedule %s: %w", sc.ID, err)
	}
	return nil
}

// parked is the index score of a schedule no scheduler needs to look at
// until a change puts it back: paused, or with no tick left.
const parked = int64(1) << 52

// due is when sc next needs a scheduler (unix ms): a claimed tick at once,
// else its next tick plus that tick's jitter; parked when paused or ended.
func (sc Schedule) due() int64 {
	switch {
	case sc.Pending != "":
		return 0
	case sc.Paused || sc.Next.IsZero():
		return parked
	}
	return ms(sc.Next.Add(JitterOf(sc.ID, sc.Next, sc.Jitter)))
}

// JitterOf is the delay of tick of schedule id, in [0, max): the same on
// every scheduler, so all agree when the tick is due.
func JitterOf(id string, tick time.Time, max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	h := sha256.Sum256([]byte(id + "\x00" + strconv.FormatInt(ms(tick), 10)))
	var n uint64
	for _, b := range h[:8] {
		n = n<<8 | uint64(b)
	}
	return time.Duration(n%uint64(max.Milliseconds()+1)) * time.Millisecond
}

// TickJobID is the id of the job of tick of schedule id on route: a ULID
// whose time is the tick and whose entropy is drawn from the schedule id
// and the tick, a dot and the route (so the id alone locates the job, as
// queue.NewID's do). Every scheduler derives the same id for a tick.
func TickJobID(id, route string, tick time.Time) string {
	h := sha256.Sum256([]byte(id + "\x00" + strconv.FormatInt(ms(tick), 10)))
	var u ulid.ULID
	_ = u.SetTime(uint64(ms(tick)))
	_ = u.SetEntropy(h[:10])
	return u.String() + "." + route
}

func parseSchedule(id string, m map[string]string) (Schedule, error) {
	num := func(f string) (int64, error) {
		v, ok := m[f]
		if !ok || v == "" {
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("schedule %s is garbage: its %s %q is not a number", id, f, v)
		}
		return n, nil
	}
	var nums [14]int64
	for i, f := range []string{"retries", "jitter", "catchup", "start", "end", "next", "last_tick", "last_fire", "last_skip", "fired", "skipped", "created", "updated", "pend_tick"} {
		n, err := num(f)
		if err != nil {
			return Schedule{}, err
		}
		nums[i] = n
	}
	t := func(n int64) time.Time {
		if n == 0 {
			return time.Time{}
		}
		return time.UnixMilli(n)
	}
	sc := Schedule{
		ScheduleDef: ScheduleDef{
			ID: id, Name: m["name"], Route: m["route"], Priority: queue.Priority(m["prio"]), Envelope: []byte(m["env"]),
			MaxRetries: int(nums[0]), Args: m["args"], Spec: m["spec"], TZ: m["tz"],
			Jitter: time.Duration(nums[1]) * time.Millisecond, Overlap: bananastype.Overlap(m["overlap"]),
			CatchUp: time.Duration(nums[2]) * time.Millisecond, Start: t(nums[3]), End: t(nums[4]),
			Paused: m["paused"] == "1",
		},
		Next: t(nums[5]), LastTick: t(nums[6]), LastFire: t(nums[7]), LastJob: m["last_job"], LastSkip: t(nums[8]),
		Fired: nums[9], Skipped: nums[10], Created: t(nums[11]), Updated: t(nums[12]),
		Pending: m["pend_job"], pendTick: t(nums[13]), plan: m["plan"], ver: m["updated"],
	}
	if _, ok := m["next"]; !ok {
		return Schedule{}, fmt.Errorf("schedule %s is garbage: it has no next tick", id)
	}
	return sc, nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func msOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return ms(t)
}

// View is sc as users meet a schedule (bananastype.Schedule), made at run
// time (Source data).
func (sc Schedule) View() bananastype.Schedule {
	var args []byte
	if sc.Args != "" {
		args = []byte(sc.Args)
	}
	return bananastype.Schedule{
		ID: sc.ID, Source: bananastype.SourceData, Name: sc.Name, Route: sc.Route, Priority: sc.Priority, Args: args,
		Spec: sc.Spec, TZ: sc.TZ, Jitter: sc.Jitter, Overlap: sc.Overlap, CatchUp: sc.CatchUp, Start: sc.Start, End: sc.End,
		Paused: sc.Paused, NextRun: sc.Next, LastRun: sc.LastFire, LastJob: sc.LastJob, RunCount: sc.Fired, Skipped: sc.Skipped,
	}
}
