package bananastype

import "time"

// AuditEntry is one action an operator took through the HTTP API, the
// dashboard or the command line: who took it, what it was, on what, when,
// and how it ended. The audit log (GET /api/v1/audit, `app audit`, the
// dashboard's Audit page, the process's log and, with HISTORY_URL, the
// history's audit table) holds each action once.
type AuditEntry struct {
	// ID is the entry's own id, unique: an entry written twice (a reply
	// lost and the write sent again) is one entry.
	ID string `json:"id"`
	// When the action was taken.
	When time.Time `json:"when"`
	// Who took it: the API token's name (API_TOKENS, "admin" for
	// API_TOKEN, "anonymous" on a server that asks for no token), or
	// "cli@<host>" for the command line.
	Who string `json:"who"`
	// Via is where it came from: "api", "dashboard" or "cli".
	Via string `json:"via"`
	// What is the action, by the API's operation id (pauseRoute,
	// cancelJob, setRouteLimits…), whichever surface it came through.
	What string `json:"what"`
	// Target is what it acted on: a job's, workflow's or schedule's id, a
	// route, a cron entry, a task; "" for an action on everything (replay
	// every dead job).
	Target string `json:"target"`
	// Outcome is "ok", "refused" (the action did not fit: a bad value, a
	// job in another state, gone), "denied" (beyond the caller's role) or
	// "failed" (the server or Redis failed).
	Outcome string `json:"outcome"`
	// Error says why, when the outcome is not ok.
	Error string `json:"error,omitempty"`
	// Detail is what the action said of itself, when it says something:
	// how many jobs it touched, the job it made.
	Detail string `json:"detail,omitempty"`
}

// AuditPage is one page of the audit log, newest first; Next, when not
// "", is the cursor of the page after it.
type AuditPage struct {
	Entries []AuditEntry `json:"entries"`
	Next    string       `json:"next"`
}
