package workflows

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

// Template is what a step's job is made of, fixed when its workflow is
// submitted and stored in the workflow's record (opaque to queue): the
// enqueue options as they were resolved then.
type Template struct {
	Name        string         `json:"n"`
	Route       string         `json:"r"`
	Priority    queue.Priority `json:"p"`
	MaxRetries  int            `json:"m"`
	Timeout     int64          `json:"o,omitempty"` // ms
	ResultTTL   int64          `json:"t,omitempty"` // ms
	Backoff     int64          `json:"b,omitempty"` // ms
	Description string         `json:"d,omitempty"`
	Keyed       bool           `json:"kd,omitempty"`
	Key         *string        `json:"k,omitempty"` // known when submitted; nil: read from the args (KeyBy)
	// Headers are the step's job's (runtime.Header, the submission's
	// EnqueueHooks).
	Headers map[string]string `json:"h,omitempty"`
}

// ReadTemplate reads a step's template; ok is false for one that does not
// read or names no task (a gather's, or garbage).
func ReadTemplate(b []byte) (Template, bool) {
	var t Template
	err := json.Unmarshal(b, &t)
	return t, err == nil && t.Name != ""
}

// Maker makes the jobs of ready steps from their templates: the heart of
// the runtime's Make, one per call, which reads each template once.
type Maker struct {
	// CheckArgs refuses args of task that no job may carry (over the
	// payload limit).
	CheckArgs func(task string, args []byte) error
	// KeyOf reads the key of a job of task from its args (the task's
	// KeyBy), for a keyed step whose key was not known at submission.
	KeyOf func(task string, args []byte) (string, error)
	// AfterHeader is the header that carries the trails the step's
	// predecessors' runs left.
	AfterHeader string
	// OpenArgs, when set, turns a step's args as the record holds them
	// (values sealed for workflow wf) into the plain msgpack its job's
	// task reads. An error that does not match ErrPermanent (a key this
	// process does not hold) leaves the step for the keeper.
	OpenArgs func(wf string, args []byte) ([]byte, error)
	// PackArgs, when set, is the form the plain args of job id take in its
	// envelope (sealed for the job).
	PackArgs func(id string, args []byte) ([]byte, error)

	templates map[string]*Template
}

// Job is the job of step s of workflow wf, made from its template with its
// args, and its route and priority. Every error but OpenArgs' matches
// ErrPermanent: the step can never be made. own: the caller's own script call marked s
// creating (Runner.Make), so a job id fresh on its route needs no check
// that it exists already.
func (m *Maker) Job(wf string, s record.ReadyStep, own bool) (queue.NewJob, string, queue.Priority, error) {
	tpl := m.templates[string(s.Template)]
	if tpl == nil {
		t, ok := ReadTemplate(s.Template)
		if !ok || queue.CheckRoute(t.Route) != nil {
			return queue.NewJob{}, "", "", fmt.Errorf("%w: its template does not read (%q)", ErrPermanent, s.Template)
		}
		if m.templates == nil {
			m.templates = map[string]*Template{}
		}
		tpl = &t
		m.templates[string(s.Template)] = tpl
	}
	args := s.Args
	if m.OpenArgs != nil {
		var err error
		if args, err = m.OpenArgs(wf, s.Args); err != nil {
			return queue.NewJob{}, "", "", err
		}
	}
	if m.CheckArgs != nil {
		if err := m.CheckArgs(tpl.Name, args); err != nil {
			return queue.NewJob{}, "", "", fmt.Errorf("%w: %v", ErrPermanent, err)
		}
	}
	stored := args
	if m.PackArgs != nil {
		var err error
		if stored, err = m.PackArgs(s.JobID, args); err != nil {
			return queue.NewJob{}, "", "", fmt.Errorf("%w: %v", ErrPermanent, err)
		}
	}
	env, err := queue.EncodeEnvelope(queue.Envelope{
		Args: stored, Timeout: tpl.Timeout, ResultTTL: tpl.ResultTTL, FailureTTL: tpl.ResultTTL,
		Backoff: tpl.Backoff, Description: tpl.Description, Workflow: wf, Step: s.Index, Headers: m.headers(tpl.Headers, s.After),
	})
	if err != nil {
		return queue.NewJob{}, "", "", fmt.Errorf("%w: %v", ErrPermanent, err)
	}
	j := queue.NewJob{ID: s.JobID, Name: tpl.Name, Envelope: env, MaxRetries: tpl.MaxRetries, ChosenID: true, Keyed: tpl.Keyed}
	if _, fresh := queue.RouteOf(s.JobID); fresh && own {
		j.ChosenID = false
	}
	if tpl.Keyed {
		switch {
		case tpl.Key != nil:
			j.Key = *tpl.Key
		case m.KeyOf == nil:
			return queue.NewJob{}, "", "", fmt.Errorf("%w: task %s is keyed by its args, and nothing here reads its key", ErrPermanent, tpl.Name)
		default:
			if j.Key, err = m.KeyOf(tpl.Name, args); err != nil {
				return queue.NewJob{}, "", "", fmt.Errorf("%w: %v", ErrPermanent, err)
			}
		}
	}
	prio := tpl.Priority
	if !queue.ValidPriority(prio) {
		prio = queue.Normal
	}
	return j, tpl.Route, prio, nil
}

// headers is a step's job's headers: its template's h, with its
// predecessors' trails when they fit within the bounds of headers; a step
// whose template leaves them no room goes without.
func (m *Maker) headers(h map[string]string, after string) map[string]string {
	if after == "" || m.AfterHeader == "" {
		return h
	}
	with := make(map[string]string, len(h)+1)
	maps.Copy(with, h)
	with[m.AfterHeader] = after
	if queue.CheckHeaders(with) != nil {
		return h
	}
	return with
}
