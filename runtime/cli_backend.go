package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/admin"
	"github.com/bananas-go/bananas/runtime/internal/cli"
)

// cliBackend answers the admin commands of package cli from the Inspector,
// with the --json shapes of the API (views.go).
type cliBackend struct {
	c        *Client
	in       *Inspector
	reg      *Worker // every registered task, not run
	embedded bool    // REDIS_URL is mem://
}

var _ cli.Backend = (*cliBackend)(nil)

// usageIfBadQuery makes a bad flag value or argument that the admin layer
// refused (ErrBadQuery, ErrUnknownRoute, ErrUnknownCron) a usage error,
// exit 2; other errors stay failures.
func usageIfBadQuery(err error) error {
	if errors.Is(err, ErrBadQuery) || errors.Is(err, ErrUnknownRoute) || errors.Is(err, ErrUnknownCron) {
		return cli.Usage(errors.New(trimBananas(err)))
	}
	return err
}

func (b *cliBackend) Close() error    { return b.c.Close() }
func (b *cliBackend) Tasks() []string { return b.reg.Tasks() }
func (b *cliBackend) Embedded() bool  { return b.embedded }

func (b *cliBackend) RouteOf(task string) string {
	if h := b.reg.handlers[task]; h != nil && h.info != nil {
		return h.info().Route
	}
	return ""
}

func (b *cliBackend) Takers(ctx context.Context) (map[string]int, error) { return b.c.routeTakers(ctx) }

func (b *cliBackend) Enqueue(ctx context.Context, task string, args []byte, route, priority string, delay time.Duration) (string, error) {
	h := b.reg.handlers[task]
	if h == nil {
		return "", cli.Usage(fmt.Errorf("no task named %q (registered: %s)", task, strings.Join(b.reg.Tasks(), ", ")))
	}
	var opts []Option
	if route != "" {
		if err := queue.CheckRoute(route); err != nil {
			return "", cli.Usage(fmt.Errorf("--route: %w", err))
		}
		opts = append(opts, Route(route))
	}
	if priority != "" {
		if !queue.ValidPriority(priority) {
			return "", cli.Usage(fmt.Errorf("--priority %s: use high, normal or low", priority))
		}
		opts = append(opts, WithPriority(Priority(priority)))
	}
	if delay > 0 {
		opts = append(opts, Delay(delay))
	}
	id, err := h.enqueueJSON(ctx, b.c, args, opts)
	if err != nil && !errors.Is(err, ErrDuplicate) {
		return "", cli.Usage(err)
	}
	return id, err
}

func (b *cliBackend) Await(ctx context.Context, task, id string) (any, error) {
	h := b.reg.handlers[task]
	if h == nil {
		return nil, fmt.Errorf("no task named %q", task)
	}
	res, err := h.await(ctx, b.c, id)
	if _, none := res.(None); none {
		res = nil // a task without a result: null, not an empty object
	}
	return res, err
}

func (b *cliBackend) Job(ctx context.Context, id string) (cli.Job, error) {
	info, err := b.in.Job(ctx, id)
	if err != nil {
		return cli.Job{}, err
	}
	j := cliJob(*info)
	j.Args, j.Result, j.JSON = info.Args, info.ResultJSON, info
	if j.Args == nil {
		j.Args = json.RawMessage("null")
	}
	if j.Result == nil {
		j.Result = json.RawMessage("null")
	}
	return j, nil
}

func cliJob(info JobInfo) cli.Job {
	return cli.Job{
		ID: info.ID, Task: info.Name, Route: info.Route, Priority: string(info.Priority), Status: string(info.Status),
		Description: info.Description, Error: info.Error, Attempts: info.Attempts, MaxRetries: info.MaxRetries,
		Timeout: info.Timeout, Created: info.CreatedAt, Scheduled: info.ScheduledAt, Started: info.StartedAt,
		Finished: info.FinishedAt, FailedAt: info.FailedAt,
	}
}

func (b *cliBackend) Jobs(ctx context.Context, q cli.JobQuery) (cli.Page, error) {
	page, err := b.in.Jobs(ctx, JobQuery{Route: q.Route, State: Status(q.State), Task: q.Task, Text: q.Text, Limit: q.Limit, Cursor: q.Cursor, Newest: q.Newest})
	if err != nil {
		return cli.Page{}, usageIfBadQuery(err)
	}
	return cli.Page{Jobs: admin.Map(page.Jobs, cliJob), Next: page.Next, JSON: page}, nil
}

func (b *cliBackend) Cancel(ctx context.Context, id string) (bool, error) {
	st, err := b.in.Cancel(ctx, id)
	if err != nil {
		return false, errors.New(trimBananas(err))
	}
	return st == StatusProcessing, nil
}

func (b *cliBackend) Delete(ctx context.Context, id string) error {
	if err := b.in.Delete(ctx, id); err != nil {
		return errors.New(trimBananas(err))
	}
	return nil
}

func (b *cliBackend) Pause(ctx context.Context, route string) error {
	return usageIfBadQuery(b.in.Pause(ctx, route))
}

func (b *cliBackend) Resume(ctx context.Context, route string) error {
	return usageIfBadQuery(b.in.Resume(ctx, route))
}

func (b *cliBackend) Routes(ctx context.Context) ([]cli.Route, any, error) {
	routes, err := b.in.Routes(ctx)
	if err != nil {
		return nil, nil, err
	}
	rows := admin.Map(routes, func(r RouteInfo) cli.Route {
		return cli.Route{Name: r.Route, High: r.High, Normal: r.Normal, Low: r.Low, Scheduled: r.Scheduled, Active: r.Active,
			Dead: r.Dead, Paused: r.Paused, OldestPending: r.OldestPending, OldestPendingAge: r.OldestPendingAge, Workers: r.Workers}
	})
	return rows, routes, nil
}

func (b *cliBackend) Replay(ctx context.Context, id string) error { return b.in.Replay(ctx, id) }

func (b *cliBackend) ReplayDead(ctx context.Context, route, task string) (int, error) {
	n, err := b.in.ReplayDead(ctx, route, task)
	return n, usageIfBadQuery(err)
}

func (b *cliBackend) PurgeDead(ctx context.Context, route, task string, olderThan time.Duration) (int, error) {
	n, err := b.in.PurgeDead(ctx, route, task, olderThan)
	return n, usageIfBadQuery(err)
}

func (b *cliBackend) Cron(ctx context.Context) ([]cli.CronEntry, any, error) {
	sts, err := b.reg.CronStatus(ctx)
	if err != nil {
		return nil, nil, err
	}
	rows := admin.Map(sts, func(s CronStatus) cli.CronEntry {
		return cli.CronEntry{Name: s.Name, Spec: s.Spec, TZ: s.TZ, Route: s.Route, LastRun: s.LastRun, NextRun: s.NextRun,
			RunCount: s.RunCount, LastError: s.LastError}
	})
	return rows, sts, nil
}

func (b *cliBackend) Workers(ctx context.Context) ([]cli.Worker, any, error) {
	ws, err := b.c.Workers(ctx)
	if err != nil {
		return nil, nil, err
	}
	rows := admin.Map(ws, func(w WorkerState) cli.Worker {
		return cli.Worker{ID: w.ID, Host: w.Host, Mode: w.Mode, PID: w.PID, Routes: w.Routes, Concurrency: w.Concurrency,
			InFlight: w.InFlight, LastBeat: w.LastBeat}
	})
	return rows, ws, nil
}

func (b *cliBackend) RunCron(ctx context.Context, name string) (string, error) {
	id, err := b.in.RunCron(ctx, name)
	return id, usageIfBadQuery(err)
}
