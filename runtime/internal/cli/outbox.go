package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
)

// cmdOutbox is `outbox`: the transactional outbox's backlog, read from its
// database: the committed jobs no relay has moved into Redis yet, by task,
// and how long the oldest has waited.
func cmdOutbox(e *Env, args []string) error {
	fs := e.Flags("[--json]: the transactional outbox's backlog (OUTBOX_URL): committed jobs no relay has moved into Redis yet, by task, and the oldest's age")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	c, err := e.open()
	if err != nil {
		return err
	}
	defer c.Close()
	o, err := readOutbox(e.Ctx, c.Admin)
	if errors.Is(err, admin.ErrNoOutbox) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.Stdout, o)
	}
	fmt.Fprintln(e.Stdout, outboxLine(o))
	rows := admin.Map(o.Tasks, func(t admin.OutboxTask) []string {
		registered := "yes"
		if !t.Registered {
			registered = "NO: kept until a program that registers it relays it"
		}
		return []string{t.Task, fmt.Sprint(t.Pending), admin.FormatDuration(t.OldestAge.Round(time.Millisecond)), registered}
	})
	if len(rows) == 0 {
		return nil
	}
	return table(e.Stdout, []string{"TASK", "PENDING", "OLDEST", "REGISTERED"}, rows)
}

// readOutbox is a's outbox backlog, ErrNoOutbox when a reads none.
func readOutbox(ctx context.Context, a admin.Admin) (admin.Outbox, error) {
	if c, ok := a.(Conn); ok { // a listing's connection: its admin layer reads it
		a = c.Admin
	}
	oa, ok := a.(admin.OutboxAdmin)
	if !ok {
		return admin.Outbox{}, admin.ErrNoOutbox
	}
	return oa.Outbox(ctx)
}

// outboxLine sums the backlog up in one line, for `outbox` and `queues`.
func outboxLine(o admin.Outbox) string {
	if o.Pending == 0 {
		return "outbox: empty (every committed job is in Redis)"
	}
	s := fmt.Sprintf("outbox: %d committed jobs waiting for a relay, the oldest for %s", o.Pending, admin.FormatDuration(o.OldestAge.Round(time.Millisecond)))
	if n := o.Unregistered(); n > 0 {
		s += fmt.Sprintf("; %d of a task no worker of this program registers", n)
	}
	return s
}

// withOutboxCaption heads a listing (queues) with the outbox's backlog in
// a program that has one; its JSON stays the listing's own.
func withOutboxCaption(setup func(*flag.FlagSet) lister) func(*flag.FlagSet) lister {
	return func(fs *flag.FlagSet) lister {
		get := setup(fs)
		return func(e *Env, a admin.Admin) (listing, error) {
			l, err := get(e, a)
			if err != nil {
				return l, err
			}
			if o, err := readOutbox(e.Ctx, a); err == nil {
				l.caption = outboxLine(o)
			} else if !errors.Is(err, admin.ErrNoOutbox) {
				l.caption = "outbox: cannot be read: " + err.Error()
			}
			return l, nil
		}
	}
}
