package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Limits caps a task's (or a whole route's) jobs: how many run at once,
// across every worker and process, and how many start per period. The zero
// Limits limits nothing. A task's limits apply per key when its jobs are keyed
// (NewJob.Key), and to all of its jobs together otherwise; a route's limits
// apply to every job of the route together, on top of each task's own.
type Limits struct {
	MaxRunning int           // at most this many run at once; 0: no cap
	Rate       int           // at most this many start per Per; 0: no rate
	Per        time.Duration // the rate's period: a second, a minute or an hour
	Burst      int           // starts allowed back to back after a quiet spell; 0 means Rate
}

// LimitMax bounds every number of a Limits: far above any real cap, and low
// enough that the scripts' arithmetic (float64 milliseconds) stays exact.
const LimitMax = 1_000_000_000

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l.MaxRunning == 0 && l.Rate == 0 }

// Check says what is wrong with l, naming the field.
func (l Limits) Check() error {
	switch {
	case l.MaxRunning < 0 || l.MaxRunning > LimitMax:
		return fmt.Errorf("max_running must be between 1 and %d, got %d", LimitMax, l.MaxRunning)
	case l.Rate < 0 || l.Rate > LimitMax:
		return fmt.Errorf("rate must be between 1 and %d per period, got %d", LimitMax, l.Rate)
	case l.Rate > 0 && l.Per != time.Second && l.Per != time.Minute && l.Per != time.Hour:
		return fmt.Errorf("rate period must be a second, a minute or an hour, got %s", l.Per)
	case l.Burst < 0 || l.Burst > LimitMax:
		return fmt.Errorf("burst must be between 1 and %d, got %d", LimitMax, l.Burst)
	case l.Burst > 0 && l.Rate == 0:
		return errors.New("burst needs a rate")
	}
	return nil
}

// RateString writes l's rate as "N/s", "N/m" or "N/h"; "" when l has none.
func (l Limits) RateString() string {
	if l.Rate == 0 {
		return ""
	}
	unit := "s"
	switch l.Per {
	case time.Minute:
		unit = "m"
	case time.Hour:
		unit = "h"
	}
	return strconv.Itoa(l.Rate) + "/" + unit
}

// ParseRate reads "N/s", "N/m" or "N/h" (N >= 1) into Rate and Per.
func ParseRate(s string) (n int, per time.Duration, err error) {
	num, unit, ok := strings.Cut(s, "/")
	if ok {
		switch unit {
		case "s":
			per = time.Second
		case "m":
			per = time.Minute
		case "h":
			per = time.Hour
		default:
			ok = false
		}
	}
	if ok {
		n, err = strconv.Atoi(num)
		ok = err == nil && n >= 1 && n <= LimitMax && num == strconv.Itoa(n)
	}
	if !ok {
		return 0, 0, fmt.Errorf("rate %q is not N/s, N/m or N/h with N a whole number from 1 to %d", s, LimitMax)
	}
	return n, per, nil
}

// encode writes l as the scripts read it: "max rate period-ms burst", the
// burst already defaulted to the rate.
func (l Limits) encode() string {
	burst := l.Burst
	if burst == 0 {
		burst = l.Rate
	}
	return fmt.Sprintf("%d %d %d %d", l.MaxRunning, l.Rate, l.Per.Milliseconds(), burst)
}

// decodeLimits reads what encode wrote; ok is false for anything else
// (garbage, which the scripts treat as no limit).
func decodeLimits(s string) (l Limits, ok bool) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return Limits{}, false
	}
	var n [4]int
	for i, v := range f {
		x, err := strconv.Atoi(v)
		if err != nil || x < 0 || x > LimitMax*1000 {
			return Limits{}, false
		}
		n[i] = x
	}
	l = Limits{MaxRunning: n[0], Rate: n[1], Per: time.Duration(n[2]) * time.Millisecond, Burst: n[3]}
	if l.Rate > 0 && l.Burst == l.Rate {
		l.Burst = 0
	}
	if l.Rate == 0 {
		l.Per, l.Burst = 0, 0
	}
	if l.Check() != nil {
		return Limits{}, false
	}
	return l, true
}

// The fields of a route's limits hash (Keys.Limits): the route's own, and
// one per task that has limits.
const routeLimitsField = "route"

func taskLimitsField(task string) string { return "t:" + task }

// SetTaskLimits stores task's limits on route, where every worker's fetch
// reads them: a worker stores the limits of the tasks it registers when it
// starts. Zero limits remove the task's. Limits that change take effect at
// once for the task's flows held back by the old ones too: its flows held
// by their rate, and those parked at a cap since raised or removed, go back
// in their rings and an idle worker is woken (the next fetch holds a flow
// again if the new limits still do not allow a start).
func (fl Flows) SetTaskLimits(ctx context.Context, route, task string, l Limits) error {
	if err := CheckShardRoute(route); err != nil {
		return err
	}
	if task == "" {
		return errors.New("task limits need a task name")
	}
	if err := l.Check(); err != nil {
		return fmt.Errorf("limits of task %s: %w", task, err)
	}
	key := fl.q.Keys(route).Limits()
	old, err := fl.q.rdb.HGet(ctx, key, taskLimitsField(task)).Result()
	if err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
		return fmt.Errorf("read limits of task %s on route %s: %w", task, route, err)
	}
	want := ""
	if !l.IsZero() {
		want = l.encode()
	}
	if err == nil && old == want || errors.Is(err, redis.Nil) && want == "" {
		return nil // unchanged: a worker's start is the common call
	}
	if want == "" {
		err = fl.q.rdb.HDel(ctx, key, taskLimitsField(task)).Err()
	} else {
		err = fl.q.rdb.HSet(ctx, key, taskLimitsField(task), want).Err()
	}
	if err != nil {
		return fmt.Errorf("store limits of task %s on route %s: %w", task, route, err)
	}
	if err := fl.relimit(ctx, route, task); err != nil {
		return fmt.Errorf("limits of task %s on route %s stored, but: %w", task, route, err)
	}
	return nil
}

// relimit puts back in their rings task's flows on route held by their
// rate or parked at their cap, for the next fetch to weigh them by the
// task's limits now in force (sweep.lua). It reads every such flow of the
// task, a page at a time: a change of limits is rare (a deploy), and every
// key the old limits hold back must see the new ones.
func (fl Flows) relimit(ctx context.Context, route, task string) error {
	k := fl.q.Keys(route)
	match := globEscape(task) + "|*"
	var flows []string
	var cursor uint64
	for {
		kv, next, err := fl.q.rdb.ZScan(ctx, k.Held(), cursor, match, 500).Result()
		if err != nil && !isWrongType(err) {
			return fmt.Errorf("read the held flows: %w", err)
		}
		for i := 0; i < len(kv); i += 2 {
			flows = append(flows, kv[i])
		}
		if cursor = next; err != nil || cursor == 0 {
			break
		}
	}
	for cursor = 0; ; {
		kv, next, err := fl.q.rdb.HScan(ctx, k.Flows(), cursor, match, 500).Result()
		if err != nil && !isWrongType(err) {
			return fmt.Errorf("read the flows: %w", err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if f := strings.Fields(kv[i+1]); len(f) > 1 && f[1] != "0" {
				flows = append(flows, kv[i])
			}
		}
		if cursor = next; err != nil || cursor == 0 {
			break
		}
	}
	now := ms(fl.q.Now())
	keys := append([]string{k.Leases(), k.Active()}, k.FlowKeys()...)
	for start := 0; start < len(flows); start += 200 {
		args := []any{now, 0}
		for _, f := range flows[start:min(start+200, len(flows))] {
			args = append(args, f)
		}
		// Retry-safe: a flow put back is no longer held nor parked.
		if err := fl.q.s.sweep.Run(ctx, fl.q.rdb, keys, args...).Err(); err != nil {
			return fmt.Errorf("put back the flows the old limits held: %w", err)
		}
	}
	return nil
}

// globEscape quotes the characters that SCAN's MATCH reads as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// RouteLimits returns the limits of route as a whole, zero when it has none;
// a stored value that is garbage reads as none, as the scripts read it.
func (fl Flows) RouteLimits(ctx context.Context, route string) (Limits, error) {
	if err := CheckShardRoute(route); err != nil {
		return Limits{}, err
	}
	v, err := fl.q.rdb.HGet(ctx, fl.q.Keys(route).Limits(), routeLimitsField).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return Limits{}, fmt.Errorf("read limits of route %s: %w", route, err)
	}
	l, _ := decodeLimits(v)
	return l, nil
}

// TaskLimits returns the limits stored for each task of route (SetTaskLimits).
func (fl Flows) TaskLimits(ctx context.Context, route string) (map[string]Limits, error) {
	if err := CheckShardRoute(route); err != nil {
		return nil, err
	}
	all, err := fl.q.rdb.HGetAll(ctx, fl.q.Keys(route).Limits()).Result()
	if err != nil {
		return nil, fmt.Errorf("read limits of route %s: %w", route, err)
	}
	_, tasks := limitsOf(all)
	return tasks, nil
}

// limitsOf reads a route's limits hash: the route's own limits and each
// task's, garbage left out as the scripts leave it out.
func limitsOf(all map[string]string) (route Limits, tasks map[string]Limits) {
	route, _ = decodeLimits(all[routeLimitsField])
	tasks = make(map[string]Limits)
	for field, v := range all {
		task, ok := strings.CutPrefix(field, "t:")
		if l, good := decodeLimits(v); ok && good && !l.IsZero() {
			tasks[task] = l
		}
	}
	return route, tasks
}

// SetRouteLimits replaces the limits of route as a whole (zero removes
// them), in force at the next fetch of every worker, and wakes the route's
// idle workers so that a raised limit is used at once.
func (fl Flows) SetRouteLimits(ctx context.Context, route string, l Limits) error {
	if err := CheckShardRoute(route); err != nil {
		return err
	}
	if err := l.Check(); err != nil {
		return err
	}
	k := fl.q.Keys(route)
	var err error
	if l.IsZero() {
		err = fl.q.rdb.HDel(ctx, k.Limits(), routeLimitsField).Err()
	} else {
		err = fl.q.rdb.HSet(ctx, k.Limits(), routeLimitsField, l.encode()).Err()
	}
	if err != nil {
		return fmt.Errorf("store limits of route %s: %w", route, err)
	}
	if _, err := fl.q.Jobs.WakeWaiters(ctx, route, 1<<20); err != nil {
		return fmt.Errorf("wake the workers of route %s: %w", route, err)
	}
	return nil
}

// MaxKeyLen bounds a job's key (NewJob.Key), which every waiting job of its
// flow carries in its member of the keyed set.
const MaxKeyLen = 256

// CheckKey says what is wrong with k as a job's key.
func CheckKey(k string) error {
	if len(k) > MaxKeyLen {
		return fmt.Errorf("key is %d bytes long, more than the %d allowed", len(k), MaxKeyLen)
	}
	return nil
}
