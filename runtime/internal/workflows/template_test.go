package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows/record"
)

func template(t *testing.T, tpl Template) []byte {
	t.Helper()
	b, err := json.Marshal(tpl)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A step's job is its template's task, route, priority, retries and
// options, with its args, its workflow and step, and the trails its
// predecessors left in the header that carries them.
func TestMaker_MakesAStepsJobFromItsTemplate(t *testing.T) {
	m := &Maker{AfterHeader: "after"}
	tpl := template(t, Template{Name: "resize", Route: "gpu", Priority: queue.High, MaxRetries: 7, Timeout: 1500, Description: "d", Headers: map[string]string{"h": "v"}})
	j, route, prio, err := m.Job("wf", record.ReadyStep{Index: 3, JobID: "job-3", Template: tpl, Args: []byte("args"), After: "t1,t2"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != "job-3" || j.Name != "resize" || j.MaxRetries != 7 || route != "gpu" || prio != queue.High || j.Keyed {
		t.Fatalf("job %+v on %s at %s; want job-3 of resize, 7 retries, on gpu at high", j, route, prio)
	}
	env, err := queue.DecodeEnvelope(j.Envelope)
	if err != nil {
		t.Fatal(err)
	}
	if string(env.Args) != "args" || env.Workflow != "wf" || env.Step != 3 || env.Timeout != 1500 || env.Description != "d" ||
		env.Headers["h"] != "v" || env.Headers["after"] != "t1,t2" {
		t.Fatalf("envelope %+v; want its args, workflow wf step 3, its options and headers, and the trails under after", env)
	}
}

// A step whose job can never be made fails with ErrPermanent naming why:
// a template that does not read, args over the limit, a key that cannot
// be read from its args.
func TestMaker_AStepThatCanNeverBeMadeIsPermanent(t *testing.T) {
	keyed := template(t, Template{Name: "send", Route: "default", Keyed: true})
	for _, c := range []struct {
		name string
		m    *Maker
		s    record.ReadyStep
		want string
	}{
		{"garbage template", &Maker{}, record.ReadyStep{Template: []byte("{")}, "its template does not read"},
		{"a gather's template", &Maker{}, record.ReadyStep{Template: nil}, "its template does not read"},
		{"a bad route", &Maker{}, record.ReadyStep{Template: template(t, Template{Name: "x", Route: "a b"})}, "its template does not read"},
		{"args over the limit", &Maker{CheckArgs: func(task string, args []byte) error { return fmt.Errorf("args of %s over the limit", task) }},
			record.ReadyStep{Template: keyed}, "args of send over the limit"},
		{"a key that does not read", &Maker{KeyOf: func(string, []byte) (string, error) { return "", errors.New("no KeyBy") }},
			record.ReadyStep{Template: keyed}, "no KeyBy"},
		{"no one to read a key", &Maker{}, record.ReadyStep{Template: keyed}, "keyed by its args"},
	} {
		_, _, _, err := c.m.Job("wf", c.s, false)
		if !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Job = %v; want ErrPermanent saying %q", c.name, err, c.want)
		}
	}
}

// A keyed step's key is the one known at submission, else its task's
// KeyBy of its args.
func TestMaker_AKeyedStepsKey(t *testing.T) {
	key := "known"
	m := &Maker{KeyOf: func(task string, args []byte) (string, error) { return task + ":" + string(args), nil }}
	for _, c := range []struct {
		tpl  Template
		want string
	}{
		{Template{Name: "send", Route: "r", Keyed: true, Key: &key}, "known"},
		{Template{Name: "send", Route: "r", Keyed: true}, "send:a1"},
	} {
		j, _, _, err := m.Job("wf", record.ReadyStep{Template: template(t, c.tpl), Args: []byte("a1")}, false)
		if err != nil || !j.Keyed || j.Key != c.want {
			t.Errorf("key of %+v = %q (keyed %v), %v; want %q", c.tpl, j.Key, j.Keyed, err, c.want)
		}
	}
}

// A job under an id fresh on its route, made by the call that marked its
// step creating, is enqueued without a check that it exists; any other is
// checked, so making it twice stores it once.
func TestMaker_OnlyAnOwnFreshIDSkipsTheCheck(t *testing.T) {
	fresh := queue.NewID("default", time.Now())
	tpl := template(t, Template{Name: "x", Route: "default"})
	for _, c := range []struct {
		id      string
		own     bool
		checked bool
	}{{fresh, true, false}, {fresh, false, true}, {"wf-3", true, true}} {
		j, _, _, err := (&Maker{}).Job("wf", record.ReadyStep{JobID: c.id, Template: tpl}, c.own)
		if err != nil || j.ChosenID != c.checked {
			t.Errorf("id %s own %v: ChosenID %v, %v; want %v", c.id, c.own, j.ChosenID, err, c.checked)
		}
	}
}

// A step whose headers leave no room for its predecessors' trails goes
// without them; a priority that does not read is normal.
func TestMaker_TrailsThatDoNotFitAreDropped(t *testing.T) {
	h := map[string]string{}
	for i := range queue.MaxHeaders {
		h[fmt.Sprint("h", i)] = "v"
	}
	tpl := template(t, Template{Name: "x", Route: "default", Priority: "urgent", Headers: h})
	j, _, prio, err := (&Maker{AfterHeader: "after"}).Job("wf", record.ReadyStep{Template: tpl, After: "t1"}, false)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := queue.DecodeEnvelope(j.Envelope)
	if len(env.Headers) != queue.MaxHeaders || env.Headers["after"] != "" || prio != queue.Normal {
		t.Fatalf("%d headers, after %q, priority %s; want the template's %d, no trails, normal", len(env.Headers), env.Headers["after"], prio, queue.MaxHeaders)
	}
}
