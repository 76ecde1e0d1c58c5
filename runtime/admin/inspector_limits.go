package admin

import (
	"context"
	"strconv"
	"strings"

	"github.com/bananas-go/bananas/queue"
)

// busiestShown is how many keys Flows lists.
const busiestShown = 20

// Limits returns route's own limits. On a sharded route they are the
// route's first shard's: SetLimits sets every shard alike.
func (in *Inspector) Limits(ctx context.Context, route string) (Limits, error) {
	if err := queue.CheckRoute(route); err != nil {
		return Limits{}, badQuery("route", "route: %w", err)
	}
	l, err := in.q.Flows.RouteLimits(ctx, route)
	if err != nil {
		return Limits{}, err
	}
	return limitsView(route, l), nil
}

// SetLimits applies p to route's own limits, on every shard of the route
// (each shard then holds them: a route of N shards runs N times them), and
// returns those now in force. The workers' next fetch honours them, and the
// route's idle workers are woken so that a raised limit is used at once.
func (in *Inspector) SetLimits(ctx context.Context, route string, p LimitsPatch) (Limits, error) {
	if err := queue.CheckRoute(route); err != nil {
		return Limits{}, badQuery("route", "route: %w", err)
	}
	cur, err := in.q.Flows.RouteLimits(ctx, route)
	if err != nil {
		return Limits{}, err
	}
	next, err := patchLimits(cur, p)
	if err != nil {
		return Limits{}, err
	}
	shards, err := in.shardsOf(ctx, route)
	if err != nil {
		return Limits{}, err
	}
	if err := in.q.AddRoute(ctx, route); err != nil { // shown in Routes from now on
		return Limits{}, err
	}
	for _, s := range shards {
		if err := in.q.Flows.SetRouteLimits(ctx, s, next); err != nil {
			return Limits{}, err
		}
	}
	return limitsView(route, next), nil
}

// patchLimits applies p to l, checking each field given, named when bad.
func patchLimits(l queue.Limits, p LimitsPatch) (queue.Limits, error) {
	count := func(field string, v *string, into *int) error {
		if v == nil {
			return nil
		}
		if *v == "" {
			*into = 0
			return nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(*v))
		if err != nil || n < 1 || n > queue.LimitMax {
			return InvalidValue(field, *v, "want a whole number from 1 to "+strconv.Itoa(queue.LimitMax)+", or null to remove it")
		}
		*into = n
		return nil
	}
	if err := count("max_running", p.MaxRunning, &l.MaxRunning); err != nil {
		return l, err
	}
	if p.Rate != nil {
		l.Rate, l.Per = 0, 0
		if *p.Rate != "" {
			n, per, err := queue.ParseRate(strings.TrimSpace(*p.Rate))
			if err != nil {
				return l, InvalidValue("rate", *p.Rate, "want N/s, N/m or N/h with N from 1 to "+strconv.Itoa(queue.LimitMax)+", or null to remove it")
			}
			l.Rate, l.Per = n, per
		}
	}
	if err := count("burst", p.Burst, &l.Burst); err != nil {
		return l, err
	}
	if l.Rate == 0 && l.Burst > 0 {
		if p.Burst != nil {
			return l, Invalid("burst", "burst needs a rate: set rate too, or remove burst with null")
		}
		l.Burst = 0 // a rate removed takes its burst with it
	}
	if err := l.Check(); err != nil {
		return l, Invalid("", "%v", err)
	}
	return l, nil
}

func limitsView(route string, l queue.Limits) Limits {
	return Limits{Route: route, MaxRunning: l.MaxRunning, Rate: l.RateString(), Burst: l.Burst}
}

// Flows reads what route's flow control holds now, over every shard of a
// sharded route (the busiest keys of all its shards together).
func (in *Inspector) Flows(ctx context.Context, route string) (Flows, error) {
	if err := queue.CheckRoute(route); err != nil {
		return Flows{}, badQuery("route", "route: %w", err)
	}
	shards, err := in.shardsOf(ctx, route)
	if err != nil {
		return Flows{}, err
	}
	out := Flows{Route: route, Tasks: map[string]TaskLimits{}}
	var busiest []queue.FlowInfo
	for i, s := range shards {
		st, err := in.q.Flows.State(ctx, s, busiestShown)
		if err != nil {
			return Flows{}, err
		}
		if i == 0 {
			out.Limits = limitsView(route, st.Limits)
		}
		for name, l := range st.Tasks {
			out.Tasks[name] = TaskLimits{MaxRunning: l.MaxRunning, Rate: l.RateString(), Burst: l.Burst}
		}
		out.Running += st.Running
		out.Waiting += st.Waiting
		out.Held += st.Held
		out.Throttled += st.Throttled
		busiest = append(busiest, st.Busiest...)
	}
	for _, f := range queue.BusiestFirst(busiest, busiestShown) {
		out.Busiest = append(out.Busiest, Flow{Task: f.Task, Key: f.Key, Running: f.Running, Waiting: f.Waiting,
			Parked: f.Parked, HeldUntil: f.HeldUntil, ByRoute: f.ByRoute})
	}
	return out, nil
}
