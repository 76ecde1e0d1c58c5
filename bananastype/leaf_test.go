package bananastype_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// bananastype is a leaf: every layer that shows a job, a workflow, a route
// or a schedule imports it, so it imports the standard library and package
// queue (for its words: Priority, Status, Ending) and nothing else.
func TestBananastype_ImportsOnlyTheStandardLibraryAndQueue(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		read++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			std := !strings.Contains(strings.Split(path, "/")[0], ".")
			if !std && path != "github.com/bananas-go/bananas/queue" {
				t.Errorf("%s imports %s: bananastype imports only the standard library and queue", name, path)
			}
		}
	}
	if read == 0 {
		t.Fatal("no source files read")
	}
}
