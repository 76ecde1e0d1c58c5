// Package parse is bananagen's front end: it loads packages (go/packages),
// finds and parses //bananas: directives (keeping their positions), checks them
// against go/types, and turns what passes into the plain model. It collects
// every mistake with its position before it gives up.
//
// A route, a priority, a rate and a cron schedule are checked by the same
// functions a worker uses (queue.ValidRoute, queue.ValidPriority,
// queue.ParseRate, scheduler.ParseSchedule), so the generator accepts
// exactly what runs. It
// must not import the runtime, whose stubs it writes.
package parse

import (
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/tools/go/packages"

	"github.com/bananas-go/bananas/bananagen/internal/model"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/scheduler"
)

// Result is what parsing found: a model per package with tasks, and the
// directories of loaded packages without any (their generated file, if any,
// is stale).
type Result struct {
	Packages []model.Package
	Empty    []string // directories of loaded packages with no task
}

// Parse loads the packages matching patterns (relative to dir) and returns the
// model of their tasks, or every error found (an Errors) if there is any.
func Parse(dir string, patterns []string) (*Result, error) {
	pkgs, err := load(dir, patterns)
	if err != nil {
		return nil, err
	}
	errs := &collector{fset: pkgs[0].Fset}
	res := &Result{}
	names := map[string]token.Pos{} // wire name -> first declaration, across packages
	for _, p := range pkgs {
		mp := parsePackage(p, errs, names)
		if len(mp.Tasks) > 0 {
			res.Packages = append(res.Packages, mp)
		} else if len(p.GoFiles) > 0 {
			res.Empty = append(res.Empty, mp.Dir)
		}
	}
	if err := errs.result(); err != nil {
		return nil, err
	}
	return res, nil
}

func parsePackage(p *packages.Package, errs *collector, names map[string]token.Pos) model.Package {
	mp := model.Package{Name: p.Name, Path: p.PkgPath}
	if len(p.GoFiles) > 0 {
		mp.Dir = filepath.Dir(p.GoFiles[0])
	}
	for _, f := range p.Syntax {
		if filepath.Base(p.Fset.Position(f.Pos()).Filename) == GenFile {
			continue
		}
		docOf := map[*ast.CommentGroup]*ast.FuncDecl{}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Doc != nil {
				docOf[fd.Doc] = fd
			}
		}
		seen := map[*ast.FuncDecl]bool{}
		for _, g := range f.Comments {
			for _, c := range g.List {
				if msg := nearMiss(c.Text); msg != "" {
					errs.add(c.Pos(), "%s", msg)
					continue
				}
				if !strings.HasPrefix(c.Text, prefix) {
					continue
				}
				fd := docOf[g]
				switch {
				case fd == nil:
					errs.add(c.Pos(), "%s is not in the doc comment of a function: put it directly above a top-level func", firstWord(c.Text))
					continue
				case fd.Recv != nil:
					errs.add(c.Pos(), "%s on method %s: tasks are top-level functions, not methods", firstWord(c.Text), fd.Name.Name)
					continue
				case seen[fd]:
					errs.add(c.Pos(), "function %s has more than one bananas directive: keep one", fd.Name.Name)
					continue
				}
				seen[fd] = true
				d, ok := parseDirective(c, errs)
				if !ok {
					continue
				}
				if t, ok := checkTask(p, fd, d, errs); ok {
					if first, dup := names[t.Name]; dup {
						errs.add(d.kindPos, "task name %q is already used by the task at %s: set name= to a unique wire name", t.Name, errs.fset.Position(first))
						continue
					}
					names[t.Name] = d.kindPos
					mp.Tasks = append(mp.Tasks, t)
				}
			}
		}
	}
	return mp
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}

var (
	namePattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)
)

// checkTask checks one directive's keys and its function's signature and
// types, and returns the task it describes.
func checkTask(p *packages.Package, fd *ast.FuncDecl, d *directive, errs *collector) (model.Task, bool) {
	ok := true
	bad := func(pos token.Pos, format string, args ...any) {
		errs.add(pos, format, args...)
		ok = false
	}
	fn := fd.Name.Name
	t := model.Task{Func: fn, Stub: stubName(fn), Name: snake(fn), Directive: d.text, Doc: strings.TrimSpace(fd.Doc.Text())}

	if ast.IsExported(fn) {
		bad(fd.Name.Pos(), "task function %s is exported: unexport it (func %s); callers enqueue through the generated %s stub, the queue is the only way in",
			fn, lowerFirst(fn), fn)
	}
	if d.kind == "cron" {
		t.Cron = &model.Cron{Spec: d.spec}
		if _, err := scheduler.ParseSchedule(d.spec); err != nil {
			bad(d.specPos, "invalid cron schedule %q: %v (use five fields such as \"*/5 * * * *\" or a descriptor such as @hourly, @every 1m)", d.spec, err)
		}
	}
	seen := map[string]bool{}
	for _, kv := range d.keys {
		if seen[kv.key] {
			bad(kv.pos, "duplicate key %s: give it once", kv.key)
			continue
		}
		seen[kv.key] = true
		if !checkKey(&t, d.kind, kv, bad) {
			ok = false
		}
	}

	obj, _ := p.TypesInfo.Defs[fd.Name].(*types.Func)
	if obj == nil {
		bad(fd.Pos(), "function %s has no type information", fn)
		return t, false
	}
	if other := p.Types.Scope().Lookup(t.Stub); other != nil && other != obj &&
		filepath.Base(p.Fset.Position(other.Pos()).Filename) != GenFile {
		bad(fd.Name.Pos(), "the stub %s for task function %s would clash with %s declared at %s: rename one of them",
			t.Stub, fn, t.Stub, p.Fset.Position(other.Pos()))
	}
	sig := obj.Type().(*types.Signature)
	if batched(d, sig) {
		if !checkBatchSignature(p, fd, sig, d, &t, errs) {
			ok = false
		}
	} else if !checkSignature(p, fd, sig, d.kind, &t, errs) {
		ok = false
	}
	checkBatch(d, &t, bad)
	checkFlow(p.Types, fn, sig, d, &t, bad)
	checkUnique(p.Types, fn, sig, d, &t, bad)
	if t.KeepNothing && t.Result != nil {
		for _, kv := range d.keys {
			if kv.key == "result_ttl" {
				bad(kv.valuePos, "result_ttl=%s keeps nothing of a success, but %s returns a result (%s) that nobody could read: return only an error, or keep the result for a while (e.g. result_ttl=1m)",
					kv.value, fn, t.ResultType)
				break
			}
		}
	}
	return t, ok
}

// checkKey validates one key=value and stores it in t.
func checkKey(t *model.Task, kind string, kv keyValue, bad func(token.Pos, string, ...any)) bool {
	dur := func(what string) (time.Duration, bool) {
		d, err := time.ParseDuration(kv.value)
		if err != nil || d <= 0 {
			bad(kv.valuePos, "%s=%s is not a positive Go duration (e.g. 30s, 5m, 1h)%s", what, kv.value, zeroHint(what))
			return 0, false
		}
		return d, true
	}
	ok := true
	switch kv.key {
	case "name":
		if !namePattern.MatchString(kv.value) {
			bad(kv.valuePos, "name=%q is not a valid wire name: use 1-128 of A-Z a-z 0-9 _ . : -", kv.value)
			return false
		}
		t.Name = kv.value
	case "route":
		if !queue.ValidRoute(kv.value) {
			bad(kv.valuePos, "route=%q is not a valid route: use 1-64 of A-Z a-z 0-9 _ -", kv.value)
			return false
		}
		t.Route = kv.value
	case "priority":
		if !queue.ValidPriority(kv.value) {
			bad(kv.valuePos, "priority=%s is not a priority: use high, normal or low", kv.value)
			return false
		}
		t.Priority = kv.value
	case "retries":
		n, err := strconv.Atoi(kv.value)
		if err != nil || n < 0 {
			bad(kv.valuePos, "retries=%s is not a whole number >= 0", kv.value)
			return false
		}
		t.Retries, t.HasRetries = n, true
	case "timeout":
		t.Timeout, ok = dur("timeout")
	case "unique":
		if kind == "cron" {
			bad(kv.pos, "unique is not a //bananas:cron key: a cron entry fires once per tick already")
			return false
		}
		t.Unique, ok = dur("unique")
	case "result_ttl":
		// 0 keeps nothing of a success (a fire-and-forget task); checkTask
		// refuses it on a task with a result, which nobody could read.
		if d, err := time.ParseDuration(kv.value); err == nil && d == 0 {
			t.KeepNothing = true
			return true
		}
		t.ResultTTL, ok = dur("result_ttl")
	case "backoff":
		t.Backoff, ok = dur("backoff")
	case "tz":
		if kind != "cron" {
			bad(kv.pos, "tz is only a //bananas:cron key")
			return false
		}
		if _, err := time.LoadLocation(kv.value); err != nil || kv.value == "" || kv.value == "Local" {
			bad(kv.valuePos, "tz=%s is not an IANA time zone (e.g. Europe/Berlin, UTC)", kv.value)
			return false
		}
		t.Cron.TZ = kv.value
	case "key", "max_running", "rate", "burst", "on_busy":
		return checkFlowKey(t, kind, kv, bad)
	case "batch", "linger":
		return checkBatchKey(t, kind, kv, bad)
	case "unique_by", "unique_until", "debounce":
		return checkUniqueKey(t, kind, kv, bad)
	case "expire":
		t.Expire, ok = dur("expire")
	default:
		keys := "name, route, priority, retries, backoff, timeout, unique, unique_by, unique_until, debounce, result_ttl, key, max_running, rate, burst, batch, linger"
		if kind == "cron" {
			keys = "name, route, priority, retries, backoff, timeout, result_ttl, tz"
		}
		keys += ", expire"
		if kind != "cron" {
			keys += ", on_busy"
		}
		bad(kv.pos, "unknown key %q: the keys of //bananas:%s are %s", kv.key, kind, keys)
		return false
	}
	return ok
}

// zeroHint is what the error of a bad duration adds for the key that also
// takes 0.
func zeroHint(key string) string {
	if key == "result_ttl" {
		return ", or 0 to keep nothing of a success"
	}
	return ""
}

// stubName upper-cases the first letter: sendEmail -> SendEmail.
func stubName(fn string) string {
	r, n := utf8.DecodeRuneInString(fn)
	return string(unicode.ToUpper(r)) + fn[n:]
}

func lowerFirst(fn string) string {
	r, n := utf8.DecodeRuneInString(fn)
	return string(unicode.ToLower(r)) + fn[n:]
}

// snake turns a function name into its default wire name: sendEmail ->
// send_email, resizeHTTPImage -> resize_http_image.
func snake(fn string) string {
	rs := []rune(fn)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) {
			prevLower := i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]))
			nextLower := i > 0 && i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1])
			if prevLower || nextLower {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
