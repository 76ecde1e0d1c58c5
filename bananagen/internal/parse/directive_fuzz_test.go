package parse

import (
	"go/ast"
	"go/token"
	"strings"
	"testing"
)

// Whatever follows //bananas: on a line, parseDirective never panics; it
// either accepts the line, with each key found where its position says, or
// reports at least one error, each with a message and a position on the
// line itself (the generator prints file:line:col: message).
func FuzzDirective_ParseNeverPanicsAndPointsIntoTheLine(f *testing.F) {
	for _, seed := range []string{
		`task route=gpu priority=high`,
		`task retries=3 timeout=30s unique="5m" description="resize an image"`,
		`cron "*/5 * * * *" route=reports tz="Europe/Berlin"`,
		`cron "@every 10s"`,
		`task route="unterminated`,
		`task "quoted"`,
		`task =x`,
		`task route="\x"`,
		`tsak route=gpu`,
		`cron route=a`,
		`task   route=a	priority=low  `,
		`task description="\u00e9\t\""`,
		``,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if strings.ContainsAny(body, "\n\r") {
			return // a // comment ends at the line's end
		}
		text := prefix + body
		fset := token.NewFileSet()
		file := fset.AddFile("tasks.go", -1, len(text)+1)
		file.SetLines([]int{0})
		c := &ast.Comment{Slash: token.Pos(file.Base()), Text: text}
		errs := &collector{fset: fset}
		d, ok := parseDirective(c, errs)
		if !ok {
			if len(errs.errs) == 0 {
				t.Fatalf("%q refused without an error", text)
			}
			for _, e := range errs.errs {
				if e.Msg == "" || e.Pos.Line != 1 || e.Pos.Column < 1 || e.Pos.Column > len(text)+1 {
					t.Fatalf("%q: error %q at %d:%d, not on the line", text, e.Msg, e.Pos.Line, e.Pos.Column)
				}
			}
			return
		}
		if len(errs.errs) != 0 {
			t.Fatalf("%q accepted with errors %v", text, errs.errs)
		}
		if d.kind != "task" && d.kind != "cron" {
			t.Fatalf("%q accepted as directive kind %q", text, d.kind)
		}
		for _, kv := range d.keys {
			at := int(kv.pos) - file.Base()
			if at < 0 || at >= len(text) || !strings.HasPrefix(text[at:], kv.key+"=") {
				t.Fatalf("%q: key %q reported at offset %d, where the line has %q", text, kv.key, at, text[min(max(at, 0), len(text)):])
			}
		}
	})
}
