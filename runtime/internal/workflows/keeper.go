package workflows

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/bananas-go/bananas/scheduler"
)

// Keeper looks, every so often, at the workflows whose time in the index
// has come, in every process that runs one: Due hands each to one
// keeper per period.
type Keeper struct {
	R *Runner
	// Tick is how often it looks for due workflows.
	Tick time.Duration
	// Every is how often a workflow still running is looked at.
	Every time.Duration
	// Active, when set, says whether this process looks now: a worker
	// looks only while it keeps a route, so that the workers standing by
	// do not each poll Redis.
	Active func() bool
	// Parallel is how many due workflows a pass looks at at once; zero:
	// 32.
	Parallel int
	// Outage is told of every pass, failed or not.
	Outage *scheduler.OutageLog
	Logger *slog.Logger

	pruneFrom int // where prune goes on among the old entries kept
}

// NewKeeper is the keeper of a worker whose jobs hold leases of lease: it
// looks at each workflow still running every lease (at least every
// second), and for due ones four times as often, at least every 250 ms
// and at most every 100 ms.
// active, when set, says whether this process looks now.
func NewKeeper(r *Runner, lease time.Duration, log *slog.Logger, active func() bool) *Keeper {
	every := max(lease, time.Second)
	// At least every 250 ms: a timer fires, and a wait times out, within a
	// second of its due time.
	tick := min(max(every/4, 100*time.Millisecond), 250*time.Millisecond)
	return &Keeper{R: r, Tick: tick, Every: every, Logger: log, Active: active,
		Outage: scheduler.NewOutageLog(log, "workflow keeper (steps a dead worker left unmade or unheard of)")}
}

// Run looks until ctx ends. Every period it also drops from the list of
// workflows some of the entries whose records expired (prune).
func (k *Keeper) Run(ctx context.Context) {
	t := time.NewTicker(k.Tick)
	defer t.Stop()
	var pruned time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if k.Active == nil || k.Active() {
			k.pass(ctx)
			if time.Since(pruned) >= k.Every {
				pruned = time.Now()
				k.prune(ctx)
			}
		}
	}
}

// prune drops from the list of workflows up to 1,000 entries, old enough
// for their records to have expired, whose records are gone. It goes on
// from where the last call stopped among the entries of workflows that
// live on (running for days), so those are not read again each period.
func (k *Keeper) prune(ctx context.Context) {
	ttl := min(k.R.TTLs.Completed, k.R.TTLs.Failed)
	before := k.R.Store.Now().Add(-ttl)
	for range 10 {
		kept, end, err := k.R.Store.PruneList(ctx, before, k.pruneFrom, 100)
		if err != nil {
			if ctx.Err() == nil {
				k.Logger.Warn("bananas: workflow keeper: prune the list of workflows", "err", err)
			}
			return
		}
		k.pruneFrom += kept
		if end {
			k.pruneFrom = 0
			return
		}
	}
}

// pass looks at every workflow whose time in the index has come. It takes
// them from the index a batch at a time and looks at up to
// Parallel (default 32) of them at once across batches — the next batch is
// taken as soon as the last is handed out, not when it is done — so that
// timers due together fire together: each look is a few round trips, and
// a burst of thousands of due timers is round-trip bound, not Redis bound.
func (k *Keeper) pass(ctx context.Context) {
	const batch = 100
	sem := make(chan struct{}, k.parallel())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var down error // Redis unreachable: the pass stops
	for {
		mu.Lock()
		stop := down
		mu.Unlock()
		if stop != nil {
			break
		}
		now := k.R.Store.Now()
		ids, err := k.R.Store.Due(ctx, now, now.Add(k.Every), batch)
		if err != nil {
			wg.Wait()
			if ctx.Err() == nil {
				k.Outage.Failed("", err)
			}
			return
		}
		for _, id := range ids {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				err := k.R.Check(ctx, id)
				switch {
				case err == nil, ctx.Err() != nil:
				case scheduler.Unreachable(err):
					mu.Lock()
					down = err
					mu.Unlock()
				default:
					k.Logger.Warn("bananas: workflow keeper", "workflow", id, "err", err)
				}
			}()
		}
		if len(ids) < batch {
			break
		}
	}
	wg.Wait()
	if down != nil {
		k.Outage.Failed("", down)
		return
	}
	k.Outage.OK("")
}

// parallel is how many workflows a pass looks at at once.
func (k *Keeper) parallel() int {
	if k.Parallel > 0 {
		return k.Parallel
	}
	return 32
}
