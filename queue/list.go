package queue

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrBadQuery is wrapped by the error of a listing whose query cannot be
// served: an unknown state or priority, a cursor ListJobs did not give.
var ErrBadQuery = errors.New("bad listing query")

// Listing states (ListQuery.State).
const (
	ListPending   = "pending"   // in a ready list
	ListScheduled = "scheduled" // in the scheduled set
	ListActive    = "active"    // leased (running)
	ListDead      = "dead"      // in the dead-letter set
)

// ListQuery asks for one page of jobs of one route in one state.
type ListQuery struct {
	Route string
	State string // ListPending, ListScheduled, ListActive or ListDead
	// Priority narrows a pending listing to one ready list; "" lists all
	// three in drain order (high, normal, low).
	Priority Priority
	Task     string // exact task name; "" = any
	// Text keeps the jobs whose id or last error holds it, ASCII letters
	// matched in either case; "" = any.
	Text   string
	Cursor string // Next of the previous page; "" = the first page
	Limit  int    // jobs per page: default 50, at most 500
	// Newest reverses the order. The order is the one the route holds the
	// jobs in: ready lists head first (the next to run first), scheduled by
	// run-at, dead by died-at oldest first, active by when their lease was
	// taken (lease token) then id.
	Newest bool
}

// ListedJob is one job of a listing, with what its state holds: a pending
// light job has no attempts nor error; RunAt is set for scheduled jobs,
// DiedAt for dead ones, LeaseDeadline for active ones. Description is left
// out for a job whose stored envelope is over listEnvelopeMax bytes. Problem
// says why a job could not be read whole (garbage in Redis); its other
// fields hold what could be read.
type ListedJob struct {
	ID, Route, Name, State   string
	Priority                 Priority
	Attempts, MaxRetries     int
	Error                    string
	CreatedAt, RunAt, DiedAt time.Time
	LeaseDeadline            time.Time
	Description              string
	Problem                  string
}

// ListPage is one page of a listing.
type ListPage struct {
	Jobs []ListedJob
	Next string // the cursor of the next page; "" when there is no more
}

const (
	listDefault = 50
	listMax     = 500
	// listScan is the most entries a call goes through: a filter that
	// matches little gives a short (even empty) page with a Next rather
	// than a call that reads the whole route.
	listScan = 1000
	// listSteps bounds the window calls of one page: the pending listing's
	// four parts (the ready lists, then the three keyed sets; Newest the
	// other way round), with room for a page whose jobs finished between a
	// window and its read.
	listSteps = 8
	// listEnvelopeMax is the largest stored envelope read for a job's
	// description: the description comes after the arguments.
	listEnvelopeMax = 2048
)

// ListJobs returns one page of route's jobs in one state, filtered.
//
// A page is filled: it holds Limit jobs, or every job left when fewer are
// left (and then no Next), whichever of the route's lists and sets they
// wait in — a pending listing goes through the ready lists and the keyed
// sets (the jobs waiting in their flows, see flow.go) as one listing, and
// a Next is given only when a job followed as the page was read. Only a
// filter (Task, Text) makes a page short: each call goes through at most
// 1000 entries of the route, so a filter that matches little gives a short
// page, an empty one even, with a Next: ask again with it. Its cost does
// not grow with the route's depth save where said below.
//
// What a cursor guarantees while jobs are pushed, popped and removed between
// the calls:
//
//   - Scheduled and dead (sorted sets): the cursor is the (score, id) of the
//     last entry gone through, and the next page starts strictly past it in
//     the set's total order. A job whose run-at (died-at) does not change is
//     shown exactly once across the pages, whatever else happens; one whose
//     time changes is shown where it is when the page reaching it is read
//     (once, twice or not at all).
//   - Active: the leases are read whole (their count is the route's running
//     jobs, not its depth) and ordered by (lease token, id); the cursor is
//     the last pair gone through. A job that stays leased under the same
//     lease is shown exactly once.
//   - Pending (ready lists): jobs are pushed at the tail, fetched from the
//     head and handed back to the head; a task-filtered fetch (claim) takes
//     them from anywhere. The cursor is the last entry gone through, X, its
//     position, and the entry after it, A. The next page starts just after
//     X if X is still waiting in the list, else at A if A is, else at the
//     list's head (head first) or past that list (Newest). A job that stays
//     in its list is neither skipped nor shown twice as long as X and A each
//     stay or are fetched from the head (the way a queue drains). When both
//     leave otherwise (claimed, deleted, or back in the list after a run),
//     a head-first listing starts again at the list's head — jobs may show
//     twice, none is skipped — and a Newest listing ends with that list.
//     Finding X costs reading 513 entries around its old position when it
//     moved less than 256 places meanwhile; else one LPOS over the entries
//     between it and the listing's start (about 25 ns an entry).
//
// A job whose data does not read (a payload that does not parse, a job key of
// the wrong type) is listed with what can be read and Problem set; a job gone
// between the two reads of a page is left out. A bad State, Priority or
// Cursor is an error wrapping ErrBadQuery that names it.
func (o Ops) ListJobs(ctx context.Context, lq ListQuery) (ListPage, error) {
	if err := CheckShardRoute(lq.Route); err != nil {
		return ListPage{}, fmt.Errorf("%w: route: %w", ErrBadQuery, err)
	}
	if lq.Priority != "" && (lq.State != ListPending || !ValidPriority(lq.Priority)) {
		if lq.State != ListPending {
			return ListPage{}, fmt.Errorf("%w: priority %q: only a pending listing has one", ErrBadQuery, lq.Priority)
		}
		return ListPage{}, fmt.Errorf("%w: priority %q: use high, normal or low", ErrBadQuery, lq.Priority)
	}
	switch {
	case lq.Limit == 0:
		lq.Limit = listDefault
	case lq.Limit < 0 || lq.Limit > listMax:
		return ListPage{}, fmt.Errorf("%w: limit %d: use 1 to %d", ErrBadQuery, lq.Limit, listMax)
	}
	switch lq.State {
	case ListPending, ListScheduled, ListDead, ListActive:
	default:
		return ListPage{}, fmt.Errorf("%w: state %q: use pending, scheduled, active or dead", ErrBadQuery, lq.State)
	}
	cur, err := parseCursor(lq)
	if err != nil {
		return ListPage{}, err
	}
	// Window after window until the page is full, the listing ends or the
	// entries a call may go through are spent: a window ends where one part
	// of the listing does (a priority's keyed set), and a job can finish
	// between a window and its read, so one window alone can come back
	// short with more to come.
	page := ListPage{Jobs: []ListedJob{}}
	budget := listScan
	for step := 1; ; step++ {
		sub := lq
		sub.Limit = lq.Limit - len(page.Jobs)
		got, went, err := o.listWindow(ctx, sub, cur, min(scanOf(sub), budget))
		if err != nil {
			return ListPage{}, err
		}
		page.Jobs = append(page.Jobs, got.Jobs...)
		page.Next = got.Next
		budget -= went
		if page.Next == "" || len(page.Jobs) >= lq.Limit || budget <= 0 || step == listSteps {
			return page, nil
		}
		if cur, err = parseCursor(ListQuery{State: lq.State, Priority: lq.Priority, Newest: lq.Newest, Cursor: page.Next}); err != nil {
			return ListPage{}, err
		}
	}
}

// listWindow lists one window of at most scan entries from cur on, and
// returns how many entries it went through.
func (o Ops) listWindow(ctx context.Context, lq ListQuery, cur *listCursor, scan int) (ListPage, int, error) {
	switch lq.State {
	case ListPending:
		return o.listPending(ctx, lq, cur, scan)
	case ListScheduled, ListDead:
		return o.listSorted(ctx, lq, cur, scan)
	default:
		return o.listActive(ctx, lq, cur, scan)
	}
}

// scanOf is how many entries a call goes through: Limit when every entry
// is kept, listScan when a filter may drop some.
func scanOf(lq ListQuery) int {
	if lq.Task == "" && lq.Text == "" {
		return lq.Limit
	}
	return listScan
}

// candidate is one entry a window call went through.
type candidate struct {
	id    string
	list  int     // pending: which of the listed lists (1-based)
	pos   int64   // pending: position in the list, from the listing's start
	score string  // scheduled, dead: the entry's score; active: its lease token
	at    float64 // the score read as a number (ms)
}

// listCursor is a position in a listing. Encoded, its fields are joined by
// newlines (ids hold no newline, see CheckID) and the whole in base64.
type listCursor struct {
	state string
	// pending: list (a priority), pos, x, a; sorted sets: key (score), x;
	// active: key (lease token), x.
	list   string
	pos    int64
	key    string
	x, a   string
	newest bool
}

func (c listCursor) encode() string {
	dir := "f"
	if c.newest {
		dir = "n"
	}
	s := strings.Join([]string{"1", c.state, dir, c.list, strconv.FormatInt(c.pos, 10), c.key, c.x, c.a}, "\n")
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

// maxCursorPos bounds a pending cursor's position: no list holds 2^40
// entries, and a larger number would reach the script as one Redis does not
// take as an index.
const maxCursorPos = 1 << 40

// CheckCursor reports whether lq.Cursor can continue a listing of lq's state,
// priority and order, without reading Redis: what ListJobs checks before any
// script runs. A bad cursor is an error wrapping ErrBadQuery that names it.
func CheckCursor(lq ListQuery) error {
	_, err := parseCursor(lq)
	return err
}

// parseCursor reads lq.Cursor, which must come from a listing of the same
// state, priority and direction. Every field that reaches a script as a
// number is checked here to be one Redis takes (a position as a list index, a
// score as a finite float), so that a forged cursor is refused by name
// rather than failing inside the script.
func parseCursor(lq ListQuery) (*listCursor, error) {
	if lq.Cursor == "" {
		return nil, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("%w: cursor %q: %s", ErrBadQuery, lq.Cursor, why)
	}
	const forged = "not a cursor a listing gave"
	raw, err := base64.RawURLEncoding.DecodeString(lq.Cursor)
	if err != nil {
		return nil, bad(forged)
	}
	f := strings.Split(string(raw), "\n")
	if len(f) != 8 || f[0] != "1" {
		return nil, bad(forged)
	}
	c := &listCursor{state: f[1], newest: f[2] == "n", list: f[3], key: f[5], x: f[6], a: f[7]}
	if c.state != lq.State {
		return nil, bad(fmt.Sprintf("it continues a %s listing, not a %s one", c.state, lq.State))
	}
	if c.newest != lq.Newest {
		return nil, bad("it continues a listing in the other order")
	}
	if c.pos, err = strconv.ParseInt(f[4], 10, 64); err != nil || c.pos < 0 || c.pos > maxCursorPos {
		return nil, bad(forged + ": its position is not a list index")
	}
	switch c.state {
	case ListPending:
		prio, keyed := strings.CutPrefix(c.list, keyedPhase)
		if !ValidPriority(prio) || (lq.Priority != "" && Priority(prio) != lq.Priority) {
			return nil, bad("it continues a listing of another priority")
		}
		if keyed && c.x != "" && c.key != "0" {
			return nil, bad(forged)
		}
	case ListScheduled, ListDead:
		if !cursorScore(c.key) || c.x == "" {
			return nil, bad(forged + ": its score is not a finite decimal number")
		}
	case ListActive:
		if c.key == "" || c.x == "" {
			return nil, bad(forged)
		}
	}
	return c, nil
}

// cursorScore reports whether s is a score as Redis writes one: a finite
// decimal number (digits, a point, an exponent; no hex, no underscores, no
// inf or nan), which Lua and Redis both read as the same float.
func cursorScore(s string) bool {
	if s == "" || strings.Trim(s, "0123456789.eE+-") != "" {
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// keyedPhase marks a pending listing's cursor that stands in the keyed
// jobs of a priority (their flows, see flow.go): a pending listing goes
// through the ready lists, then the keyed sets (Newest: the other way round).
const keyedPhase = "k:"

// pendingPrios is the priorities a pending listing goes through, in its
// order.
func pendingPrios(lq ListQuery) []Priority {
	switch {
	case lq.Priority != "":
		return []Priority{lq.Priority}
	case lq.Newest:
		return []Priority{Low, Normal, High}
	}
	return []Priority{High, Normal, Low}
}

// listPending lists pending jobs: those of the ready lists, then those
// waiting in their flows (Newest: the other way round), each a part of the
// listing with a cursor of its own. A window ends with its part; its Next
// is then the start of the next part that holds jobs, or "" when none does.
func (o Ops) listPending(ctx context.Context, lq ListQuery, cur *listCursor, scan int) (ListPage, int, error) {
	prios := pendingPrios(lq)
	var from Priority // the keyed part: its priority
	if cur != nil {
		if p, ok := strings.CutPrefix(cur.list, keyedPhase); ok {
			from = Priority(p)
		}
	}
	switch {
	case from != "":
	case lq.Newest && cur == nil:
		from = prios[0]
	default:
		return o.listReadyThenKeyed(ctx, lq, cur, prios, scan)
	}
	page, went, err := o.listKeyed(ctx, lq, from, cur, scan)
	if err != nil || page.Next != "" {
		return page, went, err
	}
	// The priority's keyed jobs are through: on to the next priority's that
	// holds some, or, for Newest after the last, the ready lists.
	rest := prios[slices.Index(prios, from)+1:]
	cards, err := o.keyedWaiting(ctx, lq.Route, rest)
	if err != nil {
		return ListPage{}, 0, err
	}
	for i, n := range cards {
		if n > 0 {
			page.Next = listCursor{state: ListPending, newest: lq.Newest, list: keyedPhase + string(rest[i])}.encode()
			return page, went, nil
		}
	}
	if lq.Newest {
		n, err := o.readyWaiting(ctx, lq.Route, prios)
		if err != nil {
			return ListPage{}, 0, err
		}
		if n > 0 {
			page.Next = listCursor{state: ListPending, newest: true, list: string(prios[0])}.encode()
		}
	}
	return page, went, nil
}

// listReadyThenKeyed lists the ready lists and, once they are through (in
// the head-first order), goes on to the keyed jobs.
func (o Ops) listReadyThenKeyed(ctx context.Context, lq ListQuery, cur *listCursor, prios []Priority, scan int) (ListPage, int, error) {
	page, went, err := o.listReady(ctx, lq, cur, scan)
	if err != nil || page.Next != "" || lq.Newest {
		return page, went, err
	}
	cards, err := o.keyedWaiting(ctx, lq.Route, prios)
	if err != nil {
		return ListPage{}, 0, err
	}
	for i, n := range cards {
		if n > 0 {
			page.Next = listCursor{state: ListPending, list: keyedPhase + string(prios[i])}.encode()
			break
		}
	}
	return page, went, nil
}

// keyedWaiting counts the keyed jobs waiting at each of the priorities.
func (o Ops) keyedWaiting(ctx context.Context, route string, prios []Priority) ([]int64, error) {
	k := o.q.Keys(route)
	return o.cards(ctx, route, prios, func(pipe redis.Pipeliner, p Priority) *redis.IntCmd { return pipe.ZCard(ctx, k.Keyed(p)) })
}

// readyWaiting counts the jobs in the ready lists of the priorities.
func (o Ops) readyWaiting(ctx context.Context, route string, prios []Priority) (int64, error) {
	k := o.q.Keys(route)
	cards, err := o.cards(ctx, route, prios, func(pipe redis.Pipeliner, p Priority) *redis.IntCmd { return pipe.LLen(ctx, k.List(p)) })
	var n int64
	for _, c := range cards {
		n += c
	}
	return n, err
}

// cards runs count for each priority in one pipeline; a key of the wrong
// type (garbage) counts 0.
func (o Ops) cards(ctx context.Context, route string, prios []Priority, count func(redis.Pipeliner, Priority) *redis.IntCmd) ([]int64, error) {
	if len(prios) == 0 {
		return nil, nil
	}
	pipe := o.q.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(prios))
	for i, p := range prios {
		cmds[i] = count(pipe, p)
	}
	if _, err := pipe.Exec(ctx); err != nil && !isWrongType(err) {
		return nil, fmt.Errorf("count pending jobs of route %s: %w", route, err)
	}
	out := make([]int64, len(cmds))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// listKeyed lists the keyed jobs waiting at priority p, flow by flow (the
// order of their members), after the cursor's member.
func (o Ops) listKeyed(ctx context.Context, lq ListQuery, p Priority, cur *listCursor, scan int) (ListPage, int, error) {
	k := o.q.Keys(lq.Route)
	dir := 1
	if lq.Newest {
		dir = -1
	}
	score, member := "", ""
	if cur != nil && cur.x != "" {
		score, member = "0", cur.x
	}
	res, err := o.q.s.list.Run(ctx, o.q.rdb, []string{k.Keyed(p)}, "zset", dir, scan, score, member).Slice()
	if err != nil {
		return ListPage{}, 0, fmt.Errorf("list keyed jobs of route %s: %w", lq.Route, err)
	}
	var cands []candidate
	var members []string
	for i := 1; i+1 < len(res); i += 2 {
		m, _ := res[i].(string)
		if id, ok := memberID(m); ok {
			cands = append(cands, candidate{id: id})
			members = append(members, m)
		}
	}
	page, went, err := o.describe(ctx, lq, cands, min(len(cands), scan))
	if err != nil {
		return ListPage{}, 0, err
	}
	for i := range page.Jobs {
		page.Jobs[i].State = ListPending
	}
	if went < len(cands) {
		page.Next = listCursor{state: ListPending, newest: lq.Newest, list: keyedPhase + string(p), key: "0", x: members[went-1]}.encode()
	}
	return page, went, nil
}

// listReady lists pending jobs: the window call finds the cursor in its list
// and reads on, list after list in listing order.
func (o Ops) listReady(ctx context.Context, lq ListQuery, cur *listCursor, scan int) (ListPage, int, error) {
	k := o.q.Keys(lq.Route)
	prios := pendingPrios(lq)
	dir := 1
	if lq.Newest {
		dir = -1
	}
	li, pos, x, a := 1, int64(0), "", ""
	if cur != nil {
		for i, p := range prios {
			if string(p) == cur.list {
				li = i + 1
			}
		}
		pos, x, a = cur.pos, cur.x, cur.a
	}
	keys := []string{k.Payloads(), k.Leases(), k.Scheduled(), k.Dead(), k.Job(x), k.Job(a)}
	for _, p := range prios {
		keys = append(keys, k.List(p))
	}
	res, err := o.q.s.list.Run(ctx, o.q.rdb, keys, "list", dir, scan, li, pos, x, a).Slice()
	if err != nil {
		return ListPage{}, 0, fmt.Errorf("list pending jobs of route %s: %w", lq.Route, err)
	}
	// res[0] says whether entries follow; the window holds one more entry
	// than is gone through, which answers that and is the cursor's A.
	var cands []candidate
	for i := 1; i+2 < len(res); i += 3 {
		n, _ := res[i].(int64)
		p, _ := res[i+1].(int64)
		id, _ := res[i+2].(string)
		cands = append(cands, candidate{id: id, list: int(n), pos: p})
	}
	page, went, err := o.describe(ctx, lq, cands, min(len(cands), scan))
	if err != nil {
		return ListPage{}, 0, err
	}
	for i := range page.Jobs {
		page.Jobs[i].State = ListPending
	}
	if went < len(cands) {
		last := cands[went-1]
		c := listCursor{state: ListPending, newest: lq.Newest, list: string(prios[last.list-1]), pos: last.pos, x: last.id}
		if went < len(cands) && cands[went].list == last.list {
			c.a = cands[went].id
		}
		page.Next = c.encode()
	}
	return page, went, nil
}

// listSorted lists scheduled or dead jobs, by score then id.
func (o Ops) listSorted(ctx context.Context, lq ListQuery, cur *listCursor, scan int) (ListPage, int, error) {
	k := o.q.Keys(lq.Route)
	set := k.Scheduled()
	if lq.State == ListDead {
		set = k.Dead()
	}
	dir := 1
	if lq.Newest {
		dir = -1
	}
	score, id := "", ""
	if cur != nil {
		score, id = cur.key, cur.x
	}
	res, err := o.q.s.list.Run(ctx, o.q.rdb, []string{set}, "zset", dir, scan, score, id).Slice()
	if err != nil {
		return ListPage{}, 0, fmt.Errorf("list %s jobs of route %s: %w", lq.State, lq.Route, err)
	}
	var cands []candidate // one more than is gone through: is there more?
	for i := 1; i+1 < len(res); i += 2 {
		id, _ := res[i].(string)
		s, _ := res[i+1].(string)
		at, _ := strconv.ParseFloat(s, 64)
		cands = append(cands, candidate{id: id, score: s, at: at})
	}
	page, went, err := o.describe(ctx, lq, cands, min(len(cands), scan))
	if err != nil {
		return ListPage{}, 0, err
	}
	at := make(map[string]float64, len(cands))
	for _, c := range cands[:went] {
		at[c.id] = c.at
	}
	for i := range page.Jobs {
		j := &page.Jobs[i]
		j.State = lq.State
		t := time.UnixMilli(int64(at[j.ID]))
		if lq.State == ListDead {
			j.DiedAt = t
		} else {
			j.RunAt = t
		}
	}
	if went < len(cands) {
		last := cands[went-1]
		page.Next = listCursor{state: lq.State, newest: lq.Newest, key: last.score, x: last.id}.encode()
	}
	return page, went, nil
}

// listActive lists leased jobs by (lease token, id). The leases are read
// whole: there are as many as jobs running, however deep the route.
func (o Ops) listActive(ctx context.Context, lq ListQuery, cur *listCursor, scan int) (ListPage, int, error) {
	k := o.q.Keys(lq.Route)
	leases, err := o.q.rdb.HGetAll(ctx, k.Leases()).Result()
	if err != nil && !isWrongType(err) {
		return ListPage{}, 0, fmt.Errorf("list active jobs of route %s: %w", lq.Route, err)
	}
	all := make([]candidate, 0, len(leases))
	for id, token := range leases {
		all = append(all, candidate{id: id, score: token})
	}
	before := func(a, b candidate) bool {
		if a.score != b.score {
			return a.score < b.score
		}
		return a.id < b.id
	}
	if lq.Newest {
		sort.Slice(all, func(i, j int) bool { return before(all[j], all[i]) })
	} else {
		sort.Slice(all, func(i, j int) bool { return before(all[i], all[j]) })
	}
	start := 0
	if cur != nil {
		c := candidate{id: cur.x, score: cur.key}
		start = sort.Search(len(all), func(i int) bool {
			if lq.Newest {
				return before(all[i], c)
			}
			return before(c, all[i])
		})
	}
	cands := all[start:min(len(all), start+scan)]
	page, went, err := o.describe(ctx, lq, cands, len(cands))
	if err != nil {
		return ListPage{}, 0, err
	}
	for i := range page.Jobs {
		page.Jobs[i].State = ListActive
	}
	if start+went < len(all) {
		last := cands[went-1]
		page.Next = listCursor{state: ListActive, newest: lq.Newest, key: last.score, x: last.id}.encode()
	}
	return page, went, nil
}

// describe reads the first n candidates (describe mode of list.lua), keeps the
// ones the filters match, up to lq.Limit, and returns how many candidates it
// went through.
func (o Ops) describe(ctx context.Context, lq ListQuery, cands []candidate, n int) (ListPage, int, error) {
	page := ListPage{Jobs: []ListedJob{}}
	if n == 0 {
		return page, 0, nil
	}
	k := o.q.Keys(lq.Route)
	keys := make([]string, 0, 3+n)
	keys = append(keys, k.Payloads(), k.Leases(), k.Active())
	args := make([]any, 0, 5+2*n)
	args = append(args, "describe", lq.Limit, lq.Task, strings.ToLower(lq.Text), listEnvelopeMax)
	for _, c := range cands[:n] {
		keys = append(keys, k.Job(c.id))
		token := ""
		if lq.State == ListActive {
			token = c.score
		}
		args = append(args, c.id, token)
	}
	res, err := o.q.s.list.Run(ctx, o.q.rdb, keys, args...).Slice()
	if err != nil {
		return page, 0, fmt.Errorf("list %s jobs of route %s: %w", lq.State, lq.Route, err)
	}
	went := 0
	if len(res) > 0 {
		n, _ := res[0].(int64)
		went = int(n)
	}
	for i := 1; i+9 < len(res); i += 10 {
		v := make([]string, 10)
		for j := range v {
			v[j], _ = res[i+j].(string)
		}
		j := ListedJob{ID: v[0], Route: lq.Route, Name: v[1], Priority: Priority(v[2]),
			MaxRetries: atoi(v[3]), Attempts: atoi(v[4]), Error: v[5], CreatedAt: parseMS(v[6])}
		if v[7] != "" {
			if e, err := DecodeEnvelope([]byte(v[7])); err == nil {
				j.Description = e.Description
			}
		}
		if ms, err := strconv.ParseFloat(v[8], 64); err == nil {
			j.LeaseDeadline = time.UnixMilli(int64(ms))
		}
		if v[9] != "ok" {
			j.Problem = v[9]
		}
		page.Jobs = append(page.Jobs, j)
	}
	return page, went, nil
}
