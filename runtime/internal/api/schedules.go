package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/bananas-go/bananas/runtime/admin"
)

// scheduleFields are the keys PUT /api/v1/schedules/{id} takes.
var scheduleFields = []string{"name", "args", "route", "priority", "cron", "tz", "jitter", "overlap", "catch_up", "paused", "start", "end"}

// scheduleDeleted is the answer to a delete of a schedule.
type scheduleDeleted struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

func (s *server) schedules(w http.ResponseWriter, r *http.Request) error {
	return answer(w, http.StatusOK)(array(s.a.Schedules(r.Context())))
}

func (s *server) schedule(w http.ResponseWriter, r *http.Request) error {
	return answer(w, http.StatusOK)(s.a.Schedule(r.Context(), r.PathValue("id")))
}

// putSchedule creates or changes a schedule: 200 the schedule. A key that
// is not a schedule's, or a value of the wrong JSON type, is a 400 naming
// it; the admin layer checks the rest (args through the task's decoder).
func (s *server) putSchedule(w http.ResponseWriter, r *http.Request) error {
	body, err := objectBody(r)
	if err != nil {
		return err
	}
	var sub admin.ScheduleSubmission
	// Where each key's value goes; args stay raw JSON, for the task's own
	// decoder.
	into := map[string]any{"name": &sub.Name, "route": &sub.Route, "priority": &sub.Priority, "cron": &sub.Cron,
		"tz": &sub.TZ, "jitter": &sub.Jitter, "overlap": &sub.Overlap, "catch_up": &sub.CatchUp, "paused": &sub.Paused,
		"start": &sub.Start, "end": &sub.End}
	for k, raw := range body {
		if k == "args" {
			sub.Args = raw
			continue
		}
		to, ok := into[k]
		if !ok {
			return BadRequest(k, "unknown field %q (want %s)", k, strings.Join(scheduleFields, ", "))
		}
		if err := json.Unmarshal(raw, to); err != nil {
			want := "a string"
			switch k {
			case "paused":
				want = "true or false"
			case "start", "end":
				want = "an RFC 3339 time such as " + time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC).Format(time.RFC3339)
			}
			return BadRequest(k, "%s: want %s, got JSON %s", k, want, clip(raw))
		}
	}
	if sub.Name == "" {
		return BadRequest("name", "name is missing: the task's wire name")
	}
	return answer(w, http.StatusOK)(s.a.PutSchedule(r.Context(), r.PathValue("id"), sub))
}

func (s *server) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	if err := s.a.DeleteSchedule(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, scheduleDeleted{ID: r.PathValue("id"), Deleted: true})
}

func (s *server) pauseSchedule(w http.ResponseWriter, r *http.Request) error {
	return s.setPaused(w, r, true)
}

func (s *server) resumeSchedule(w http.ResponseWriter, r *http.Request) error {
	return s.setPaused(w, r, false)
}

// setPaused pauses or resumes a schedule: 200 the schedule after it.
func (s *server) setPaused(w http.ResponseWriter, r *http.Request, paused bool) error {
	if err := s.a.PauseSchedule(r.Context(), r.PathValue("id"), paused); err != nil {
		return err
	}
	return answer(w, http.StatusOK)(s.a.Schedule(r.Context(), r.PathValue("id")))
}

// backfilled is the answer to a backfill: the ids it enqueued, oldest
// tick first (none for ticks enqueued before).
type backfilled struct {
	IDs []string `json:"ids"`
}

// runSchedule enqueues one job of a schedule now: 201 {"id"}.
func (s *server) runSchedule(w http.ResponseWriter, r *http.Request) error {
	id, err := s.a.RunSchedule(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/jobs/"+id)
	return writeJSON(w, http.StatusCreated, submitted{ID: id})
}

// backfillSchedule enqueues the ticks of a range: 200 {"ids"}.
func (s *server) backfillSchedule(w http.ResponseWriter, r *http.Request) error {
	body, err := objectBody(r)
	if err != nil {
		return err
	}
	var from, to time.Time
	for k, raw := range body {
		var at *time.Time
		switch k {
		case "from":
			at = &from
		case "to":
			at = &to
		default:
			return BadRequest(k, "unknown field %q (want from, to)", k)
		}
		if err := json.Unmarshal(raw, at); err != nil {
			return BadRequest(k, "%s: want an RFC 3339 time, got JSON %s", k, clip(raw))
		}
	}
	ids, err := s.a.BackfillSchedule(r.Context(), r.PathValue("id"), from, to)
	if err != nil {
		return err
	}
	if ids == nil {
		ids = []string{}
	}
	return writeJSON(w, http.StatusOK, backfilled{IDs: ids})
}
