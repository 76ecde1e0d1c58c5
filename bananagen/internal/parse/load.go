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

// load type-checks the packages matching patterns from dir. Errors matter
// only in packages that hold directives (a broken package elsewhere, or one
// that uses stubs not generated yet, is not ours to judge). Loading is tried as
// the code stands, then — if a package with directives does not type-check —
// with its bananas_gen.go replaced by an empty file, so that stale generated
// code (naming a function since renamed) never stops the generator that would
// fix it.
func load(dir string, patterns []string) ([]*packages.Package, error) {
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	shallow, err := packages.Load(&packages.Config{Dir: dir, Mode: packages.NeedName | packages.NeedFiles}, patterns...)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", strings.Join(patterns, " "), err)
	}
	if len(shallow) == 0 {
		return nil, fmt.Errorf("no packages match %s", strings.Join(patterns, " "))
	}
	overlay := map[string][]byte{}
	for _, p := range shallow {
		for _, f := range p.GoFiles {
			if filepath.Base(f) == GenFile {
				overlay[f] = []byte("package " + p.Name + "\n")
			}
		}
	}
	var errs Errors
	for _, ov := range []map[string][]byte{nil, overlay} {
		if ov != nil && len(ov) == 0 {
			break
		}
		cfg := &packages.Config{
			Dir:     dir,
			Mode:    packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
			Overlay: ov,
		}
		pkgs, err := packages.Load(cfg, patterns...)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", strings.Join(patterns, " "), err)
		}
		errs = nil
		for _, p := range pkgs {
			if !hasDirectives(p) {
				continue
			}
			for _, e := range p.Errors {
				errs = append(errs, Error{Pos: position(e.Pos), Msg: e.Msg})
			}
		}
		if len(errs) == 0 {
			return pkgs, nil
		}
	}
	return nil, errs
}

// hasDirectives reports whether a hand-written file of p has a //bananas: line.
func hasDirectives(p *packages.Package) bool {
	for _, f := range p.Syntax {
		if filepath.Base(p.Fset.Position(f.Pos()).Filename) == GenFile {
			continue
		}
		if len(findDirectives(f)) > 0 {
			return true
		}
	}
	return false
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
