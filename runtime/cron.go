package runtime

import (
	"fmt"

	"github.com/bananas-go/bananas/scheduler"
)

// CronEntry is a task enqueued on a schedule.
type CronEntry struct {
	Name string `json:"name"` // the task's wire name
	Spec string `json:"spec"` // five cron fields, or a descriptor such as @every 1s
	TZ   string `json:"tz,omitempty"`
}

// Schedule registers task t to be enqueued on spec (in time zone tz, "" for
// UTC) by the worker's scheduler. Generated Register functions call it for
// //bananas:cron functions. A bad spec or zone is an error of Run.
func Schedule[A, R any](w *Worker, t *Task[A, R], spec, tz string) {
	if _, _, err := scheduler.ParseSpec(spec, tz); err != nil {
		w.regErrs = append(w.regErrs, fmt.Errorf("cron entry %s: %w", t.name, err))
		return
	}
	w.cron = append(w.cron, CronEntry{Name: t.name, Spec: spec, TZ: tz})
}

// CronEntries returns the cron entries registered on w.
func (w *Worker) CronEntries() []CronEntry {
	return append([]CronEntry(nil), w.cron...)
}
