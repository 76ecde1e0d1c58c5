package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
)

// History is one page of the client's task history, newest end first. Every
// field of q is checked before the store is asked: a bad value is a refusal
// naming its field.
func (in *Inspector) History(ctx context.Context, q HistoryQuery) (bananastype.HistoryPage, error) {
	store := in.rt.History()
	if store == nil {
		return bananastype.HistoryPage{}, ErrNoHistory
	}
	hq, err := historyQuery(q, time.Now())
	if err != nil {
		return bananastype.HistoryPage{}, err
	}
	page, err := store.Search(ctx, hq)
	if errors.Is(err, history.ErrSearchTimeout) {
		return bananastype.HistoryPage{}, badQuery("", "the search of %s to %s took too long and was stopped: narrow it (a shorter since..until, a task, a route, a status, a longer q)",
			hq.Since.UTC().Format(time.RFC3339), untilText(hq.Until))
	}
	if errors.Is(err, history.ErrBadCursor) {
		return bananastype.HistoryPage{}, badQuery("cursor", "cursor %q: pass a page's next unchanged", q.Cursor)
	}
	if errors.Is(err, history.ErrBadQuery) {
		return bananastype.HistoryPage{}, badQuery("", "%s", err)
	}
	if err != nil {
		return bananastype.HistoryPage{}, fmt.Errorf("bananas: search the task history: %w", err)
	}
	if o, ok := in.rt.(interface{ OpenHistoryRow(*bananastype.Job) }); ok {
		for i := range page.Rows {
			o.OpenHistoryRow(&page.Rows[i]) // what the row keeps sealed, opened with the program's keys
		}
	}
	return bananastype.HistoryPage{Next: page.Next, Jobs: page.Rows, Since: hq.Since, Until: hq.Until}, nil
}

func untilText(t time.Time) string {
	if t.IsZero() {
		return "now"
	}
	return t.UTC().Format(time.RFC3339)
}

// historyQuery is q in the store's words at now, or the refusal of its
// first bad field. A query without since searches the HistoryWindow
// before its until, or before now.
func historyQuery(q HistoryQuery, now time.Time) (history.Query, error) {
	for _, f := range []struct{ name, value string }{
		{"task", q.Task}, {"route", q.Route}, {"status", string(q.Status)}, {"q", q.Text}, {"cursor", q.Cursor},
	} {
		if err := searchableText(f.name, f.value); err != nil {
			return history.Query{}, err
		}
	}
	for path, value := range q.Args {
		if err := searchableText("args."+path, path); err != nil {
			return history.Query{}, err
		}
		if err := searchableText("args."+path, value); err != nil {
			return history.Query{}, err
		}
	}
	if q.Status != "" && !slices.Contains(HistoryStatuses, q.Status) {
		return history.Query{}, InvalidValue("status", string(q.Status), "use completed, failed or canceled")
	}
	if q.Limit == 0 {
		q.Limit = 50
	}
	if q.Limit < 1 || q.Limit > 500 {
		return history.Query{}, badQuery("limit", "limit %d: want 1 to 500", q.Limit)
	}
	if n := utf8.RuneCountInString(q.Text); n > 0 && n < HistoryMinText {
		return history.Query{}, badQuery("q", "q %q: give at least %d characters (a shorter text matches through no index, and would read every row)", q.Text, HistoryMinText)
	}
	if q.Since.IsZero() {
		q.Since = cmp.Or(q.Until, now).Add(-HistoryWindow)
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return history.Query{}, badQuery("until", "until %s is not after since %s: no job ends in between",
			q.Until.UTC().Format(time.RFC3339), q.Since.UTC().Format(time.RFC3339))
	}
	for path := range q.Args {
		if path == "" || slices.Contains(strings.Split(path, "."), "") {
			return history.Query{}, badQuery("args."+path, "args.%s: want a field of the args, or a dotted path to one (args.customer.id)", path)
		}
	}
	return history.Query{Task: q.Task, Route: q.Route, Status: q.Status, Since: q.Since, Until: q.Until,
		Text: q.Text, Args: q.Args, Cursor: q.Cursor, Limit: q.Limit}, nil
}

// searchableText refuses, naming field, a value that no stored row can
// hold: text with a NUL byte or invalid UTF-8, which the store keeps
// sanitised (a row with a NUL keeps ␀, U+2400, in its place) and
// PostgreSQL refuses to compare.
func searchableText(field, value string) error {
	switch {
	case strings.Contains(value, "\x00"):
		return badQuery(field, "%s %q holds a NUL byte, which no stored job holds (the history keeps each as ␀, U+2400)", field, value)
	case !utf8.ValidString(value):
		return badQuery(field, "%s %q is not valid UTF-8 (the history keeps text as UTF-8)", field, value)
	}
	return nil
}

// MigrateHistory creates or migrates the schema of the client's history
// store (a history.Migrator), and says whether it had one to migrate.
func (in *Inspector) MigrateHistory(ctx context.Context) (bool, error) {
	store := in.rt.History()
	if store == nil {
		return false, ErrNoHistory
	}
	m, ok := store.(history.Migrator)
	if !ok {
		return false, nil
	}
	if err := m.Migrate(ctx); err != nil {
		return false, fmt.Errorf("bananas: migrate the task history's schema: %w", err)
	}
	return true, nil
}
