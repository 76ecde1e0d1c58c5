package admin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/history"
)

// Auditor is the audit log of the admin layer: every action an operator
// takes through the HTTP API, the dashboard or the command line is one
// entry (Audited records it).
type Auditor interface {
	// Audit records e: as a JSON line on the audit log's writer, in Redis
	// (the most recent queue.AuditCap entries) and, when the program keeps
	// a task history that takes them (HISTORY_URL), as a row there. Its ID
	// and When are filled when empty. The line is written first and
	// whatever happens after; an error is the first store that failed.
	Audit(ctx context.Context, e bananastype.AuditEntry) error
	// AuditLog is one page of the entries Redis keeps, newest first
	// (ErrBadQuery for a bad cursor or limit).
	AuditLog(ctx context.Context, q AuditQuery) (bananastype.AuditPage, error)
}

// AuditQuery selects a page of the audit log.
type AuditQuery struct {
	// Cursor is where the previous page ended (its Next); "" the newest.
	Cursor string
	// Limit is the most entries on the page: 1 to 500, 0 for 50.
	Limit int
}

// auditTimeout bounds the writes of one entry, made after the action on a
// context of their own: the caller may have left, and the entry must still
// be written.
const auditTimeout = 5 * time.Second

// auditOut is where the audit lines of the Inspectors go, and its lock.
var auditOut = struct {
	sync.Mutex
	log *slog.Logger
}{log: slog.New(slog.NewJSONHandler(os.Stderr, nil))}

// SetAuditWriter sends the audit log's JSON lines to w (os.Stderr by
// default), for every Inspector of the process: one line per action,
// whatever LOG_FORMAT says, so that a log shipper can pick them out.
func SetAuditWriter(w io.Writer) {
	auditOut.Lock()
	defer auditOut.Unlock()
	auditOut.log = slog.New(slog.NewJSONHandler(w, nil))
}

func auditLogger() *slog.Logger {
	auditOut.Lock()
	defer auditOut.Unlock()
	return auditOut.log
}

// Audit records e (see Auditor).
func (in *Inspector) Audit(ctx context.Context, e bananastype.AuditEntry) error {
	if e.ID == "" {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		e.ID = hex.EncodeToString(b)
	}
	if e.When.IsZero() {
		e.When = in.q.Now()
	}
	e.When = e.When.UTC()
	auditLogger().LogAttrs(ctx, slog.LevelInfo, "bananas: audit", slog.String("id", e.ID), slog.Time("when", e.When),
		slog.String("who", e.Who), slog.String("via", e.Via), slog.String("what", e.What), slog.String("target", e.Target),
		slog.String("outcome", e.Outcome), slog.String("error", e.Error), slog.String("detail", e.Detail))
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	err = in.q.AddAudit(ctx, e.When.UnixMicro(), b)
	if w, ok := in.rt.History().(history.AuditWriter); ok && w != nil {
		if herr := w.WriteAudit(ctx, e); herr != nil && err == nil {
			err = fmt.Errorf("audit entry %s to the task history: %w", e.ID, herr)
		}
	}
	return err
}

// AuditLog reads a page of the audit log Redis keeps, newest first.
func (in *Inspector) AuditLog(ctx context.Context, q AuditQuery) (bananastype.AuditPage, error) {
	if q.Limit == 0 {
		q.Limit = 50
	}
	if q.Limit < 1 || q.Limit > 500 {
		return bananastype.AuditPage{}, BadQuery("limit", "limit %d: want 1 to 500", q.Limit)
	}
	var before int64
	if q.Cursor != "" {
		n, err := strconv.ParseInt(q.Cursor, 10, 64)
		if err != nil || n <= 0 {
			return bananastype.AuditPage{}, BadQuery("cursor", "cursor %q is not one a page of the audit log gave (pass its next unchanged)", q.Cursor)
		}
		before = n
	}
	zs, err := in.q.Audit(ctx, before, q.Limit+1)
	if err != nil {
		return bananastype.AuditPage{}, err
	}
	page := bananastype.AuditPage{Entries: []bananastype.AuditEntry{}}
	for i, z := range zs {
		if i == q.Limit {
			page.Next = strconv.FormatInt(int64(zs[i-1].Score), 10)
			break
		}
		var e bananastype.AuditEntry
		s, _ := z.Member.(string)
		if err := json.Unmarshal([]byte(s), &e); err != nil {
			continue // a member written by hand: not an entry
		}
		page.Entries = append(page.Entries, e)
	}
	return page, nil
}

// Audited is a with every action it takes recorded in a's audit log, once,
// as taken by who through via ("api", "dashboard", "cli"): what (the API's
// operation id of the action), its target, and its outcome, read from the
// action's error. The reads go to a as they are.
func Audited(a Admin, who, via string) Admin { return audited{Admin: a, who: who, via: via} }

type audited struct {
	Admin
	who, via string
}

// record writes the entry of action what on target, ended with err. A
// failure to write it is said on the audit log's lines (the line itself is
// written before any store), never to the caller: the action is done.
func (a audited) record(ctx context.Context, what, target string, err error, detail string) {
	e := bananastype.AuditEntry{Who: a.who, Via: a.via, What: what, Target: target, Outcome: "ok", Detail: detail}
	if err != nil {
		p := Classify(err)
		e.Outcome, e.Error, e.Detail = "refused", p.Msg, ""
		if p.Class == Failure {
			e.Outcome = "failed"
		}
	}
	if werr := a.Admin.Audit(ctx, e); werr != nil {
		auditLogger().Warn("bananas: audit entry not stored", "what", what, "target", target, "err", werr)
	}
}

// Denied records that who was refused action what on target: beyond its
// role (the API's 403), said in why.
func Denied(ctx context.Context, a Admin, who, via, what, target, why string) {
	audited{Admin: a, who: who, via: via}.recordDenied(ctx, what, target, why)
}

func (a audited) recordDenied(ctx context.Context, what, target, why string) {
	e := bananastype.AuditEntry{Who: a.who, Via: a.via, What: what, Target: target, Outcome: "denied", Error: why}
	if werr := a.Admin.Audit(ctx, e); werr != nil {
		auditLogger().Warn("bananas: audit entry not stored", "what", what, "target", target, "err", werr)
	}
}

// scope is the target of an action over a route's jobs, or a task's, or all.
func scope(route, task string) string {
	switch {
	case route != "" && task != "":
		return route + " task=" + task
	case task != "":
		return "task=" + task
	}
	return route
}

func (a audited) Submit(ctx context.Context, s Submission) (string, string, error) {
	id, warning, err := a.Admin.Submit(ctx, s)
	target := id
	if target == "" {
		target = s.Name
	}
	a.record(ctx, "submitJob", target, err, "task "+s.Name)
	return id, warning, err
}

func (a audited) SubmitBatch(ctx context.Context, subs []Submission, refused []BatchRefusal) ([]string, error) {
	ids, err := a.Admin.SubmitBatch(ctx, subs, refused)
	a.record(ctx, "submitJobs", "", err, fmt.Sprintf("%d jobs", len(subs)))
	return ids, err
}

func (a audited) Cancel(ctx context.Context, id string) (Status, error) {
	st, err := a.Admin.Cancel(ctx, id)
	a.record(ctx, "cancelJob", id, err, "")
	return st, err
}

func (a audited) Delete(ctx context.Context, id string) error {
	err := a.Admin.Delete(ctx, id)
	a.record(ctx, "deleteJob", id, err, "")
	return err
}

func (a audited) RunNow(ctx context.Context, id string) error {
	err := a.Admin.RunNow(ctx, id)
	a.record(ctx, "runJobNow", id, err, "")
	return err
}

func (a audited) Replay(ctx context.Context, id string) error {
	err := a.Admin.Replay(ctx, id)
	a.record(ctx, "replayDeadJob", id, err, "")
	return err
}

func (a audited) ReplayDead(ctx context.Context, route, task string) (int, error) {
	n, err := a.Admin.ReplayDead(ctx, route, task)
	a.record(ctx, "replayDeadJobs", scope(route, task), err, fmt.Sprintf("%d replayed", n))
	return n, err
}

func (a audited) PurgeDead(ctx context.Context, route, task string, olderThan time.Duration) (int, error) {
	n, err := a.Admin.PurgeDead(ctx, route, task, olderThan)
	a.record(ctx, "purgeDeadJobs", scope(route, task), err, fmt.Sprintf("%d purged", n))
	return n, err
}

func (a audited) Pause(ctx context.Context, route string) error {
	err := a.Admin.Pause(ctx, route)
	a.record(ctx, "pauseRoute", route, err, "")
	return err
}

func (a audited) Resume(ctx context.Context, route string) error {
	err := a.Admin.Resume(ctx, route)
	a.record(ctx, "resumeRoute", route, err, "")
	return err
}

func (a audited) CancelWaiting(ctx context.Context, route, task string) (int, error) {
	n, err := a.Admin.CancelWaiting(ctx, route, task)
	a.record(ctx, "cancelWaitingJobs", scope(route, task), err, fmt.Sprintf("%d canceled", n))
	return n, err
}

func (a audited) RunScheduled(ctx context.Context, route, task string) (int, error) {
	n, err := a.Admin.RunScheduled(ctx, route, task)
	a.record(ctx, "runScheduledJobs", scope(route, task), err, fmt.Sprintf("%d run", n))
	return n, err
}

func (a audited) SetShards(ctx context.Context, route string, n int) error {
	err := a.Admin.SetShards(ctx, route, n)
	a.record(ctx, "setRouteShards", route, err, fmt.Sprintf("shards %d", n))
	return err
}

func (a audited) SetLimits(ctx context.Context, route string, p LimitsPatch) (Limits, error) {
	l, err := a.Admin.SetLimits(ctx, route, p)
	detail := ""
	if b, jerr := json.Marshal(l); jerr == nil && err == nil {
		detail = string(b)
	}
	a.record(ctx, "setRouteLimits", route, err, detail)
	return l, err
}

func (a audited) SubmitWorkflow(ctx context.Context, s WorkflowSubmission) (string, map[string]string, error) {
	id, jobs, err := a.Admin.SubmitWorkflow(ctx, s)
	a.record(ctx, "submitWorkflow", id, err, fmt.Sprintf("%d steps", len(jobs)))
	return id, jobs, err
}

func (a audited) CancelWorkflow(ctx context.Context, id string) (*bananastype.Workflow, error) {
	w, err := a.Admin.CancelWorkflow(ctx, id)
	a.record(ctx, "cancelWorkflow", id, err, "")
	return w, err
}

func (a audited) RetryWorkflow(ctx context.Context, id string) (*bananastype.Workflow, int, error) {
	w, n, err := a.Admin.RetryWorkflow(ctx, id)
	a.record(ctx, "retryWorkflow", id, err, fmt.Sprintf("%d steps run again", n))
	return w, n, err
}

func (a audited) SignalWorkflow(ctx context.Context, id, name string, payload json.RawMessage) error {
	err := a.Admin.SignalWorkflow(ctx, id, name, payload)
	a.record(ctx, "signalWorkflow", id, err, "signal "+name)
	return err
}

func (a audited) RunCron(ctx context.Context, name string) (string, error) {
	id, err := a.Admin.RunCron(ctx, name)
	a.record(ctx, "runCron", name, err, "job "+id)
	return id, err
}

func (a audited) PutSchedule(ctx context.Context, id string, s ScheduleSubmission) (bananastype.Schedule, error) {
	sc, err := a.Admin.PutSchedule(ctx, id, s)
	a.record(ctx, "putSchedule", id, err, "")
	return sc, err
}

func (a audited) DeleteSchedule(ctx context.Context, id string) error {
	err := a.Admin.DeleteSchedule(ctx, id)
	a.record(ctx, "deleteSchedule", id, err, "")
	return err
}

func (a audited) PauseSchedule(ctx context.Context, id string, paused bool) error {
	err := a.Admin.PauseSchedule(ctx, id, paused)
	what := "pauseSchedule"
	if !paused {
		what = "resumeSchedule"
	}
	a.record(ctx, what, id, err, "")
	return err
}

func (a audited) RunSchedule(ctx context.Context, id string) (string, error) {
	job, err := a.Admin.RunSchedule(ctx, id)
	a.record(ctx, "runSchedule", id, err, "job "+job)
	return job, err
}

func (a audited) BackfillSchedule(ctx context.Context, id string, from, to time.Time) ([]string, error) {
	ids, err := a.Admin.BackfillSchedule(ctx, id, from, to)
	a.record(ctx, "backfillSchedule", id, err, fmt.Sprintf("%d jobs", len(ids)))
	return ids, err
}

func (a audited) MigrateHistory(ctx context.Context) (bool, error) {
	ok, err := a.Admin.MigrateHistory(ctx)
	a.record(ctx, "migrateHistory", "", err, "")
	return ok, err
}

// Outbox reads the outbox's backlog through the admin it wraps: a read, so
// nothing is recorded; ErrNoOutbox when that admin reads none.
func (a audited) Outbox(ctx context.Context) (Outbox, error) {
	if oa, ok := a.Admin.(OutboxAdmin); ok {
		return oa.Outbox(ctx)
	}
	return Outbox{}, ErrNoOutbox
}
