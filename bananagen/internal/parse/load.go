package parse

import (
	"fmt"
	"go/token"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/packages"
)

// GenFile is the name of the file bananagen writes in each package.
const GenFile = "bananas_gen.go"

// load type-checks the packages matching patterns from dir. A package's
// existing bananas_gen.go is replaced by an empty file while loading, so that
// stale generated code (naming a function since renamed) never stops the
// generator that would fix it. Errors of the packages themselves stop the run.
func load(dir string, patterns []string) ([]*packages.Package, error) {
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	cfg := &packages.Config{Dir: dir, Mode: packages.NeedName | packages.NeedFiles}
	shallow, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", strings.Join(patterns, " "), err)
	}
	overlay := map[string][]byte{}
	for _, p := range shallow {
		for _, f := range p.GoFiles {
			if filepath.Base(f) == GenFile {
				overlay[f] = []byte("package " + p.Name + "\n")
			}
		}
	}
	cfg = &packages.Config{
		Dir:     dir,
		Mode:    packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Overlay: overlay,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", strings.Join(patterns, " "), err)
	}
	var errs Errors
	for _, p := range pkgs {
		for _, e := range p.Errors {
			errs = append(errs, Error{Pos: position(e.Pos), Msg: e.Msg})
		}
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("no packages match %s", strings.Join(patterns, " "))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return pkgs, nil
}

// position parses the "file:line:col" of a packages.Error.
func position(s string) (p token.Position) {
	parts := strings.Split(s, ":")
	p.Filename = s
	if len(parts) >= 3 {
		var line, col int
		if _, err := fmt.Sscanf(parts[len(parts)-2]+" "+parts[len(parts)-1], "%d %d", &line, &col); err == nil {
			p.Filename, p.Line, p.Column = strings.Join(parts[:len(parts)-2], ":"), line, col
		}
	}
	return p
}
