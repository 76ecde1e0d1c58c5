package parse

import (
	"fmt"
	"go/token"
	"sort"
	"strings"
)

// Error is one mistake in the annotated code, at a position.
type Error struct {
	Pos token.Position
	Msg string
}

func (e Error) Error() string {
	if !e.Pos.IsValid() {
		return e.Msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.Pos.Filename, e.Pos.Line, e.Pos.Column, e.Msg)
}

// Errors is every mistake found in one run, in file and position order.
type Errors []Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// collector gathers errors instead of stopping at the first, so that one run
// reports every mistake.
type collector struct {
	fset *token.FileSet
	errs Errors
}

func (c *collector) add(pos token.Pos, format string, args ...any) {
	c.errs = append(c.errs, Error{Pos: c.fset.Position(pos), Msg: fmt.Sprintf(format, args...)})
}

func (c *collector) result() error {
	if len(c.errs) == 0 {
		return nil
	}
	sort.SliceStable(c.errs, func(i, j int) bool {
		a, b := c.errs[i].Pos, c.errs[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return c.errs
}
