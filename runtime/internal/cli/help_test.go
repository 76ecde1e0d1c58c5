package cli

import (
	"fmt"
	"strings"
	"testing"
)

// The help is built from the command tables: it has every line of the
// program's own commands (App.Commands) and of the admin commands, and each
// command line it prints names a command that Run finds, so that the help
// and the commands cannot drift apart.
func TestHelp_ListsTheCommandTablesAndNothingElse(t *testing.T) {
	ran := false
	own := []Spec{{Name: "serve", Run: func(*Env, []string) error { ran = true; return nil },
		Help: [][2]string{{"serve", "a program's own command"}}}}
	app := &fakeApp{admin: &fakeAdmin{}, commands: own}
	out := wantRun(t, app, 0, "", "help")
	for _, c := range append(append([]Spec{}, own...), adminCommands...) {
		for _, l := range c.Help {
			if line := fmt.Sprintf("\n  %-27s %s\n", l[0], l[1]); !strings.Contains(out, line) {
				t.Errorf("help lacks the line of %s: %q", c.Name, line)
			}
		}
	}
	_, list, ok := strings.Cut(out, "commands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	if !ok || list == "" {
		t.Fatalf("help has no command list:\n%s", out)
	}
	for _, line := range strings.Split(list, "\n") {
		name := strings.Fields(line)[0]
		_, own := commandNamed(app.Commands(), name)
		_, adm := commandNamed(adminCommands, name)
		if !own && !adm && name != "help" {
			t.Errorf("help lists %q, which no command table has: %q", name, line)
		}
	}
	wantRun(t, app, 0, "", "serve")
	if !ran {
		t.Error("the program's own command did not run by its name")
	}
}
