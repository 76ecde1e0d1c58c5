package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/runtime/admin"
)

// Each verb is listed in the help and run by its noun's command.
func TestVerbs_EachIsListedInTheHelpAndRunByItsNoun(t *testing.T) {
	help := wantRun(t, &fakeApp{admin: &fakeAdmin{}}, 0, "", "help")
	for _, v := range verbs {
		if line := fmt.Sprintf("  %-27s %s [--json]\n", v.Noun+" "+v.Name+" ID", v.Help); !strings.Contains(help, line) {
			t.Errorf("help lacks %q:\n%s", line, help)
		}
		if out := wantRun(t, &fakeApp{admin: &fakeAdmin{}}, 0, "", v.Noun, v.Name, "-h"); !strings.Contains(out, "usage: "+v.Noun+" "+v.Name+" ID") {
			t.Errorf("%s %s -h printed %q", v.Noun, v.Name, out)
		}
	}
}

func TestJobRun_RunsAScheduledJobNowOrSaysWhyNot(t *testing.T) {
	f := &fakeAdmin{}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "job", "run", jobID); out != "pending now: "+jobID+"\n" {
		t.Fatalf("job run printed %q", out)
	}
	if out := wantRun(t, &fakeApp{admin: f}, 0, "", "job", "run", "--json", jobID); out != "{\n  \"run\": \""+jobID+"\"\n}\n" {
		t.Fatalf("job run --json printed %q", out)
	}
	if got := strings.Join(f.acted, ", "); got != "run "+jobID+", run "+jobID {
		t.Fatalf("acted: %s", got)
	}
	wantRun(t, &fakeApp{admin: f}, 2, "job: want one job ID after run\n", "job", "run")
	refused := fmt.Errorf("%w: cannot run job %s: it is failed", admin.ErrWrongState, jobID)
	f = &fakeAdmin{errs: map[string]error{"RunNow": refused}}
	wantRun(t, &fakeApp{admin: f}, 1, "job: job is in the wrong state: cannot run job "+jobID+": it is failed\n", "job", "run", jobID)
}
