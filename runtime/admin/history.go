package admin

import (
	"errors"
	"time"
)

// ErrNoHistory: the program keeps no task history (HISTORY_URL is unset),
// so there is nothing to search or migrate. A NotFound: the history the
// request names does not exist here, and no request can make it.
var ErrNoHistory = errors.New("bananas: no task history: this program keeps none; set HISTORY_URL (such as postgres://user:pass@host:5432/db) and import its store's package")

// HistoryQuery selects a page of the task history, newest end first. Zero
// fields select everything.
type HistoryQuery struct {
	Task   string
	Route  string
	Status Status    // completed, failed or canceled; "" any
	Since  time.Time // ended at or after; zero: the HistoryWindow before Until (or now)
	Until  time.Time // ended before; zero: no bound
	// Text matches rows whose job id or error holds it: at least
	// HistoryMinText characters.
	Text string
	// Args selects on the args' fields: a dotted path ("customer.id") to
	// the value it must hold, compared as text; every pair must match.
	Args map[string]string
	// Cursor is the Next of the page before; "" is the first page.
	Cursor string
	// Limit is the most rows a page holds (default 50, at most 500).
	Limit int
}

// HistoryStatuses are the statuses a history row has, in the order the
// surfaces offer them.
var HistoryStatuses = []Status{"completed", "failed", "canceled", "expired"}

// Bounds of a search of the task history, so that no search reads a whole
// long history: a text shorter than HistoryMinText matches through no
// trigram index (it would read every row in range), and a search with no
// since reads the HistoryWindow before its until (or before now).
const (
	HistoryMinText = 3
	HistoryWindow  = 7 * 24 * time.Hour
)
