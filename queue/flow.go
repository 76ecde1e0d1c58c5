package queue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Flow control: keyed jobs, their round-robin and their limits.
//
// A job enqueued with NewJob.Keyed belongs to a flow, the jobs of one task
// and one key. It waits in the route's keyed set of its priority (a zset
// ordered by member: flow, order of arrival, id), not in a ready list, and
// its flow is in that priority's ring while the flow may start a job:
//
//	enqueue ──► keyed:<p> (flow's range) ──► ring:<p> ──fetch──► leased ──► ack/fail/…
//	                                          │  ▲  ▲                         │
//	                               at its cap │  │  └──── parked ◄────────────┘ a slot freed
//	                                          ▼  │ due
//	                              out of rate: held
//
// fetch.lua serves each priority's ring round-robin, one job per flow per
// turn, so a key with a long backlog delays another key's first job by at
// most one turn of the ring. A flow at its task's cap (max running, counted
// per flow by the ids of its running jobs, each checked against its lease
// when they fill the cap) is parked off the ring, and whatever ends the
// lease of one of its jobs — ack, fail, cancel, hand-back, reap — puts it
// back; a killed worker's slots come back when the reaper recovers its
// leases. A flow out of rate waits in the held set until its next start is
// allowed. Either holds nobody back. Every step is in the scripts of the
// transition it belongs to; see scripts/_flow.lua.

// FlowKeys returns the route's flow keys, in the order every flow script
// takes them as its last KEYS: the keyed sets and rings of each priority,
// the flows, held, flowof and limits hashes, the idle set and the stats.
func (k Keys) FlowKeys() []string {
	return []string{
		k.Keyed(High), k.Keyed(Normal), k.Keyed(Low),
		k.Ring(High), k.Ring(Normal), k.Ring(Low),
		k.Flows(), k.Held(), k.FlowOf(), k.Limits(), k.Idle(), k.Stats(),
	}
}

// memberID reads the job id at the end of a member of a keyed set: after
// the 4-digit length of the flow, the flow and the 15-digit order.
func memberID(m string) (string, bool) {
	if len(m) < 4 {
		return "", false
	}
	n, err := strconv.Atoi(m[:4])
	if err != nil || n < 0 || len(m) <= 4+n+15 {
		return "", false
	}
	return m[4+n+15:], true
}

// priorityDigits writes priorities as fetch.lua reads them, in drain order:
// a digit each, 1 high, 2 normal, 3 low.
func priorityDigits(priorities []Priority) string {
	var b strings.Builder
	for i, p := range Priorities {
		for _, want := range priorities {
			if want == p {
				b.WriteByte(byte('1' + i))
			}
		}
	}
	return b.String()
}

// dueMark starts the payload of the entry with which fetch.lua says when a
// held flow is looked at again.
const dueMark = "due:"

// dueOf finds that entry in a fetch's reply.
func dueOf(reply []string) (time.Time, bool) {
	for i := 1; i+1 < len(reply); i += 2 {
		if reply[i] == "" && strings.HasPrefix(reply[i+1], dueMark) {
			n, err := strconv.ParseInt(reply[i+1][len(dueMark):], 10, 64)
			if err == nil {
				return time.UnixMilli(n), true
			}
		}
	}
	return time.Time{}, false
}

// FlowState is what a route's flow control holds at one moment.
type FlowState struct {
	Limits    Limits            // the route's own limits
	Tasks     map[string]Limits // each task's limits stored on the route
	Running   int               // keyed jobs running under a cap: the slots held
	Waiting   int               // keyed jobs waiting in their flows
	Held      int               // flows held back by a limit now: parked at their cap, out of rate, or waiting on the route's limits
	Throttled int64             // times a flow was held back, since the route's stats began
	Busiest   []FlowInfo        // the flows with the most jobs running, then waiting
}

// FlowInfo is one flow: the jobs of one task and one key.
type FlowInfo struct {
	Task, Key string
	Running   int       // slots it holds
	Waiting   int       // jobs waiting
	Parked    bool      // at its cap: it waits for one of its running jobs to end
	HeldUntil time.Time // zero unless out of rate: when its next start is allowed
	// ByRoute is why the route's own limits hold back a flow that has jobs
	// waiting and that its task's limits let start: "cap" (the route's
	// max running is reached) or "rate" (the route's rate allows no start
	// now); "" when they do not.
	ByRoute string
}

// flowScan bounds how many flows Flows reads: a route can hold a million
// keys, and a look at its state must stay cheap.
const flowScan = 10000

// State reads the flow control state of route: its limits, counts, and up
// to n of its busiest flows (among the first flowScan flows read).
func (fl Flows) State(ctx context.Context, route string, n int) (FlowState, error) {
	if err := CheckShardRoute(route); err != nil {
		return FlowState{}, err
	}
	k := fl.q.Keys(route)
	var st FlowState
	pipe := fl.q.rdb.Pipeline()
	limits := pipe.HGetAll(ctx, k.Limits())
	cards := make([]*redis.IntCmd, 0, 3)
	for _, p := range Priorities {
		cards = append(cards, pipe.ZCard(ctx, k.Keyed(p)))
	}
	heldN := pipe.ZCard(ctx, k.Held())
	held := pipe.ZRangeWithScores(ctx, k.Held(), 0, flowScan-1)
	throttled := pipe.HGet(ctx, k.Stats(), "throttled")
	flows := pipe.HScan(ctx, k.Flows(), 0, "*|*", flowScan)
	leased := pipe.HLen(ctx, k.Leases())
	routeState := pipe.HGet(ctx, k.Flows(), "#route")
	rings := make([]*redis.StringSliceCmd, 0, 3)
	for _, p := range Priorities {
		rings = append(rings, pipe.ZRange(ctx, k.Ring(p), 0, 999))
	}
	done, _ := pipe.Exec(ctx)
	for _, c := range done {
		// A key of another type (garbage) reads as empty: the next flow
		// script drops it (bn_flow_repair).
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
			return st, fmt.Errorf("read flows of route %s: %w", route, err)
		}
	}
	st.Limits, st.Tasks = limitsOf(limits.Val())
	for _, c := range cards {
		st.Waiting += int(c.Val())
	}
	st.Held = int(heldN.Val())
	st.Throttled, _ = strconv.ParseInt(throttled.Val(), 10, 64)
	byName := map[string]*FlowInfo{}
	info := func(flow string) *FlowInfo {
		if f, ok := byName[flow]; ok {
			return f
		}
		task, key, _ := strings.Cut(flow, "|")
		f := &FlowInfo{Task: task, Key: key}
		byName[flow] = f
		return f
	}
	kv, _ := flows.Val()
	for i := 0; i+1 < len(kv); i += 2 {
		f := strings.Fields(kv[i+1]) // "tat park id1 id2 ..."
		running := max(0, len(f)-2)
		if running > 0 {
			info(kv[i]).Running = running
			st.Running += running
		}
		if len(f) > 1 && f[1] != "0" {
			info(kv[i]).Parked = true
			st.Held++
		}
	}
	for _, r := range rings {
		for _, flow := range r.Val() {
			if strings.Contains(flow, "|") {
				info(flow)
			}
		}
	}
	for _, z := range held.Val() {
		if name, ok := z.Member.(string); ok && strings.Contains(name, "|") {
			info(name).HeldUntil = time.UnixMilli(int64(z.Score))
		}
	}
	byRoute := routeHold(st.Limits, int(leased.Val()), routeState.Val(), fl.q.Now())
	var err error
	var heldByRoute int
	st.Busiest, heldByRoute, err = fl.busiest(ctx, k, byName, n, byRoute)
	st.Held += heldByRoute
	return st, err
}

// routeHold says why the route's own limits let no job start now: "cap"
// when its leased jobs fill its max running, "rate" when its rate (its
// state "tat park" in the flows hash, as fetch.lua keeps it) allows no
// start; "" when they let one start.
func routeHold(l Limits, leased int, state string, now time.Time) string {
	if l.MaxRunning > 0 && leased >= l.MaxRunning {
		return "cap"
	}
	if l.Rate == 0 {
		return ""
	}
	tat, err := strconv.ParseFloat(strings.Fields(state + " -")[0], 64)
	if err != nil {
		return ""
	}
	burst := l.Burst
	if burst == 0 {
		burst = l.Rate
	}
	interval := float64(l.Per.Milliseconds()) / float64(l.Rate)
	// GCRA (bn_rate_room): a start is allowed while tat stays within the
	// burst, less the one start, of now.
	if tat > float64(now.UnixMilli())+float64(burst-1)*interval+1e-6 {
		return "rate"
	}
	return ""
}

// busiest counts the waiting jobs of the flows known and returns the n
// with the most running, then waiting, and how many are held back by the
// route's own limits (byRoute, when they hold every flow back): those with
// jobs waiting that neither their cap nor their rate holds.
func (fl Flows) busiest(ctx context.Context, k Keys, byName map[string]*FlowInfo, n int, byRoute string) ([]FlowInfo, int, error) {
	out := make([]FlowInfo, 0, len(byName))
	pipe := fl.q.rdb.Pipeline()
	counts := make([][]*redis.IntCmd, 0, len(byName))
	for flow, f := range byName {
		prefix := fmt.Sprintf("%04d", len(flow)) + flow
		var cs []*redis.IntCmd
		for _, p := range Priorities {
			cs = append(cs, pipe.ZLexCount(ctx, k.Keyed(p), "["+prefix, "("+prefix+":"))
		}
		counts = append(counts, cs)
		out = append(out, *f)
	}
	if len(out) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, 0, fmt.Errorf("count the waiting jobs of route %s's flows: %w", k.Route(), err)
		}
	}
	held := 0
	for i, cs := range counts {
		for _, c := range cs {
			out[i].Waiting += int(c.Val())
		}
		if f := &out[i]; byRoute != "" && f.Waiting > 0 && !f.Parked && f.HeldUntil.IsZero() {
			f.ByRoute = byRoute
			held++
		}
	}
	return BusiestFirst(out, n), held, nil
}

// BusiestFirst sorts flows by running jobs, then waiting ones, then name,
// and keeps the first n.
func BusiestFirst(flows []FlowInfo, n int) []FlowInfo {
	sort.Slice(flows, func(i, j int) bool {
		a, b := flows[i], flows[j]
		if a.Running != b.Running {
			return a.Running > b.Running
		}
		if a.Waiting != b.Waiting {
			return a.Waiting > b.Waiting
		}
		return a.Task+"|"+a.Key < b.Task+"|"+b.Key
	})
	return flows[:min(n, len(flows))]
}

// Sweep repairs the flows of route that garbage stranded, which no
// release, due time or new job would put back (every script that ends a
// lease frees its slot itself, so this only repairs what garbage did):
//   - a flow parked at its cap whose slots are gone without a release (its
//     jobs' leases or flowof entries dropped from Redis by hand) goes back
//     in its rings; it reads the route's flows hash, up to flowScan entries
//     a call;
//   - a flow with jobs waiting that is in no ring, not parked and not held
//     (its ring, held set or state lost to garbage) goes back in its ring;
//     it looks at up to flowScan such flows a call, resuming where the last
//     call stopped, so a huge keyed set costs bounded work a call.
//
// It returns how many flows it put back. A worker's reaper runs it now and
// then.
func (fl Flows) Sweep(ctx context.Context, route string, now time.Time) (int, error) {
	if err := CheckShardRoute(route); err != nil {
		return 0, err
	}
	k := fl.q.Keys(route)
	var parked []string
	var cursor uint64
	for read := 0; read < flowScan; {
		kv, next, err := fl.q.rdb.HScan(ctx, k.Flows(), cursor, "*|*", 500).Result()
		if err != nil {
			if isWrongType(err) {
				break // garbage: the sweep script drops it
			}
			return 0, fmt.Errorf("read the flows of route %s: %w", route, err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if f := strings.Fields(kv[i+1]); len(f) > 1 && f[1] != "0" && !strings.HasPrefix(kv[i], "#") {
				parked = append(parked, kv[i])
			}
		}
		read += len(kv) / 2
		if cursor = next; cursor == 0 {
			break
		}
	}
	keys := append([]string{k.Leases(), k.Active()}, k.FlowKeys()...)
	total := 0
	// sweep runs sweep.lua on some parked flows and, with look > 0, looks
	// at that many flows with jobs waiting. Retry-safe: a flow put back is
	// no longer parked, and in its ring.
	sweep := func(look int, flows []string) (done bool, err error) {
		args := make([]any, 0, 2+len(flows))
		args = append(args, ms(now), look)
		for _, f := range flows {
			args = append(args, f)
		}
		r, err := fl.q.s.sweep.Run(ctx, fl.q.rdb, keys, args...).Int64Slice()
		if err == nil && len(r) != 2 {
			err = fmt.Errorf("reply %v is not two numbers", r)
		}
		if err != nil {
			return false, fmt.Errorf("sweep the flows of route %s: %w", route, err)
		}
		total += int(r[0])
		return r[1] == 1, nil
	}
	for start := 0; start < len(parked); start += 200 {
		if _, err := sweep(0, parked[start:min(start+200, len(parked))]); err != nil {
			return total, err
		}
	}
	for looked := 0; looked < flowScan; looked += 200 {
		done, err := sweep(200, nil)
		if err != nil {
			return total, err
		}
		if done {
			break
		}
	}
	return total, nil
}
