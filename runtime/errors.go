package runtime

import (
	"errors"

	"github.com/bananas-go/bananas/runtime/admin"
)

// Errors of the admin layer, matched with errors.Is (see package admin).
var (
	// ErrUnknownTask: no task of that name is registered in this program.
	ErrUnknownTask = admin.ErrUnknownTask
	// ErrBadArgs: JSON args that the task's decoder refuses.
	ErrBadArgs = admin.ErrBadArgs
	// ErrBadQuery: a listing or action parameter that is not valid.
	ErrBadQuery = admin.ErrBadQuery
	// ErrPayloadTooLarge: args or a result over the payload limit (MaxPayload).
	ErrPayloadTooLarge = admin.ErrPayloadTooLarge
	// ErrWrongState: the job is not in a state the action applies to (a
	// delete of a running job); the message names its state.
	ErrWrongState = admin.ErrWrongState
	// ErrUnknownRoute: a route that no job, registered task or live worker
	// has (Pause, Resume); the message lists the known ones.
	ErrUnknownRoute = admin.ErrUnknownRoute
	// ErrUnknownCron: no cron entry of that name is registered in this program.
	ErrUnknownCron = admin.ErrUnknownCron
	// ErrNoHistory matches the refusal of a history call in a program that
	// keeps no task history (no HISTORY_URL, no WithHistory).
	ErrNoHistory = admin.ErrNoHistory
)

// ErrDebounced is matched by the error of an enqueue that debounced
// (Debounce) the waiting job holding its unique key: that job took the
// enqueue's args and due time, and its id is returned. It wraps
// ErrDuplicate, which it matches too.
var ErrDebounced = admin.ErrDebounced

// ErrExpired is matched (errors.Is) by the *JobError that Await and Call
// return for a job that did not start before its expiry (ExpireIn,
// ExpireAt): it ended with StatusExpired and never ran.
var ErrExpired = errors.New("bananas: job expired")

// ErrKeyBusy matches the error of an enqueue of a keyed task with
// on_busy=drop (TaskLimits.OnBusy OnBusyDrop) that found its key busy: the
// job was not enqueued; the message names the key.
var ErrKeyBusy = admin.ErrKeyBusy
