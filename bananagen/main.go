// Command bananagen turns Go functions annotated with //bananas:task or
// //bananas:cron into typed task stubs and a Register function, written to
// bananas_gen.go beside them. Add it to a module as a tool (Go >= 1.24:
// go get -tool github.com/bananas-go/bananas/bananagen) and run it with go
// generate:
//
//	//go:generate go tool bananagen
//
// Usage:
//
//	bananagen [-check] [packages]
//
// With no packages it handles the package in the current directory. -check
// writes nothing and exits 1 when a generated file is missing or stale. Every
// mistake in the annotations is reported as file:line:col: message, all of
// them in one run, with exit status 1 and no file written.
//
// The stages: load (go/packages; errors of the packages stop the run) → parse
// directives (positions kept) → check against go/types → plain model → emit
// (jennifer, gofmt'd) → write (only files whose bytes change).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"golang.org/x/mod/semver"
	"golang.org/x/tools/go/packages"

	"github.com/bananas-go/bananas/bananagen/internal/emit"
	"github.com/bananas-go/bananas/bananagen/internal/parse"
)

func main() {
	os.Exit(run(".", os.Args[1:], os.Stdout, os.Stderr))
}

// output is one file bananagen wants on disk; nil content means "remove it".
type output struct {
	path    string
	content []byte
}

// run is the whole command, from dir, returning the exit status.
func run(dir string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bananagen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	check := fs.Bool("check", false, "write nothing; exit 1 if a generated file is missing or stale")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bananagen [-check] [packages]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	outs, err := generate(dir, fs.Args())
	if err != nil {
		var perrs parse.Errors
		if errors.As(err, &perrs) {
			for _, e := range perrs {
				e.Pos.Filename = relative(e.Pos.Filename)
				fmt.Fprintln(stderr, e.Error())
			}
		} else {
			fmt.Fprintln(stderr, "bananagen:", err)
		}
		return 1
	}
	status := 0
	for _, o := range outs {
		old, readErr := os.ReadFile(o.path)
		exists := readErr == nil
		switch {
		case o.content == nil && !exists:
			continue
		case o.content == nil && !bytes.Contains(old, []byte(emit.Header)):
			continue // a hand-written file of that name: not ours to remove
		case o.content != nil && exists && bytes.Equal(old, o.content):
			continue
		}
		if *check {
			what := "stale"
			switch {
			case o.content == nil:
				what = "left over (the package has no task any more)"
			case !exists:
				what = "missing"
			}
			fmt.Fprintf(stderr, "bananagen: %s is %s: run go generate\n", relative(o.path), what)
			status = 1
			continue
		}
		if o.content == nil {
			err = os.Remove(o.path)
		} else {
			err = os.WriteFile(o.path, o.content, 0o644)
		}
		if err != nil {
			fmt.Fprintln(stderr, "bananagen:", err)
			return 1
		}
	}
	if status == 0 && !*check {
		if msg := runtimeUnresolved(outs); msg != "" {
			fmt.Fprintln(stderr, msg)
		}
	}
	return status
}

// runtimeUnresolved says what to run when the module of the generated files
// cannot resolve the runtime package they import — bananagen run with
// `go run …@version` in a module that does not require bananas — so that the
// user meets it here, with the command, rather than at the next build; "" when
// it resolves or nothing was generated. A warning, not a failure: the files
// are right, and go generate goes on to the other packages, which need the
// same one command.
func runtimeUnresolved(outs []output) string {
	var generated []string
	for _, o := range outs {
		if o.content != nil {
			generated = append(generated, relative(o.path))
		}
	}
	if len(generated) == 0 {
		return ""
	}
	pkgs, err := packages.Load(&packages.Config{Dir: filepath.Dir(generated[0]), Mode: packages.NeedName}, emit.RuntimePath)
	if err == nil && len(pkgs) == 1 && len(pkgs[0].Errors) == 0 {
		return ""
	}
	why := "it is not found"
	if err != nil {
		why = err.Error()
	} else if len(pkgs) == 1 && len(pkgs[0].Errors) > 0 {
		why = pkgs[0].Errors[0].Msg
	}
	get := emit.RuntimePath
	if bi, ok := debug.ReadBuildInfo(); ok && semver.IsValid(bi.Main.Version) {
		get = bi.Main.Path + "/runtime@" + bi.Main.Version
	}
	return fmt.Sprintf("bananagen: warning: wrote %s, which imports %s, but this module cannot build it (%s).\n"+
		"Add the runtime to the module, then build:\n\tgo get %s", strings.Join(generated, ", "), emit.RuntimePath, firstLine(why), get)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSuffix(s[:i], "; to add it:")
	}
	return s
}

// generate computes every output in memory, writing nothing.
func generate(dir string, patterns []string) ([]output, error) {
	res, err := parse.Parse(dir, patterns)
	if err != nil {
		return nil, err
	}
	var outs []output
	for _, p := range res.Packages {
		b, err := emit.File(p)
		if err != nil {
			return nil, err
		}
		outs = append(outs, output{path: filepath.Join(p.Dir, parse.GenFile), content: b})
	}
	for _, d := range res.Empty {
		outs = append(outs, output{path: filepath.Join(d, parse.GenFile)})
	}
	return outs, nil
}

// relative shortens path to be relative to the working directory when it is under it.
func relative(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && !filepath.IsAbs(rel) && len(rel) < len(path) && rel[0] != '.' {
		return rel
	}
	return path
}
