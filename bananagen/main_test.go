package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"
)

const oneTask = `package p

import "context"

//bananas:task
func ping(ctx context.Context) error { return nil }
`

func module(t *testing.T, files map[string]string) string {
	t.Helper()
	ar := &txtar.Archive{}
	for name, data := range files {
		ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(data)})
	}
	return writeModule(t, ar)
}

func bananagen(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(dir, args, &stdout, &stderr)
	return code, stderr.String()
}

// Generating in a module that cannot build the generated code — it does not
// require bananas, as after `go run github.com/bananas-go/bananas/bananagen@…`
// — writes the file and says what to run, instead of leaving the user to meet
// it at the next build.
func TestGenerate_ModuleWithoutTheRuntimeSaysWhatToRun(t *testing.T) {
	t.Parallel()
	dir := module(t, map[string]string{"p.go": oneTask})
	code, out := bananagen(t, dir)
	if code != 0 || !strings.Contains(out, "cannot build it") || !strings.Contains(out, "go get github.com/bananas-go/bananas/runtime") {
		t.Fatalf("generate in a module without bananas = %d %q; want 0 and the go get to run", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "bananas_gen.go")); err != nil {
		t.Fatalf("the stubs were not written: %v", err)
	}
}

func TestCheck_MissingThenFreshThenStale(t *testing.T) {
	t.Parallel()
	dir := module(t, map[string]string{"p.go": oneTask})
	if code, out := bananagen(t, dir, "-check"); code != 1 || !strings.Contains(out, "bananas_gen.go is missing: run go generate") {
		t.Fatalf("-check with no generated file = %d %q; want 1 and 'missing'", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "bananas_gen.go")); err == nil {
		t.Fatal("-check wrote a file")
	}
	if code, out := bananagen(t, dir); code != 0 {
		t.Fatalf("generate = %d %s", code, out)
	}
	if code, out := bananagen(t, dir, "-check"); code != 0 || out != "" {
		t.Fatalf("-check after generate = %d %q; want 0 and silence", code, out)
	}
	more := oneTask + "\n//bananas:task\nfunc pong(ctx context.Context) error { return nil }\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(more), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := bananagen(t, dir, "-check"); code != 1 || !strings.Contains(out, "is stale") {
		t.Fatalf("-check after adding a task = %d %q; want 1 and 'stale'", code, out)
	}
}

func TestWrite_OnlyWhenChangedAndRemovedWhenNoTaskLeft(t *testing.T) {
	t.Parallel()
	dir := module(t, map[string]string{"p.go": oneTask})
	gen := filepath.Join(dir, "bananas_gen.go")
	if code, out := bananagen(t, dir); code != 0 {
		t.Fatal(out)
	}
	first, _ := os.ReadFile(gen)
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(gen, past, past); err != nil {
		t.Fatal(err)
	}
	if code, out := bananagen(t, dir); code != 0 {
		t.Fatal(out)
	}
	st, _ := os.Stat(gen)
	if !st.ModTime().Equal(past) {
		t.Fatalf("an unchanged file was rewritten (mtime %s, want %s)", st.ModTime(), past)
	}
	second, _ := os.ReadFile(gen)
	if !bytes.Equal(first, second) {
		t.Fatal("two runs gave different bytes")
	}
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte("package p\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _ := bananagen(t, dir, "-check"); code != 1 {
		t.Fatal("-check did not flag a generated file left over after the last task went")
	}
	if code, out := bananagen(t, dir); code != 0 {
		t.Fatal(out)
	}
	if _, err := os.Stat(gen); !os.IsNotExist(err) {
		t.Fatalf("bananas_gen.go still there after its last task went: %v", err)
	}
}

// A generated file that names a function since renamed must not stop the
// generator that would fix it.
func TestStaleGeneratedFileDoesNotBlockRegeneration(t *testing.T) {
	t.Parallel()
	dir := module(t, map[string]string{"p.go": oneTask})
	if code, out := bananagen(t, dir); code != 0 {
		t.Fatal(out)
	}
	renamed := strings.ReplaceAll(oneTask, "ping", "pong")
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(renamed), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := bananagen(t, dir); code != 0 {
		t.Fatalf("regenerate after a rename = %d\n%s", code, out)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "bananas_gen.go"))
	if !bytes.Contains(b, []byte("var Pong *runtime.Task[")) || bytes.Contains(b, []byte("Ping")) {
		t.Fatalf("regenerated file does not follow the rename:\n%s", b)
	}
}

func TestDuplicateWireNameAcrossPackages(t *testing.T) {
	t.Parallel()
	dir := module(t, map[string]string{
		"a/a.go": "package a\n\nimport \"context\"\n\n//bananas:task name=same\nfunc one(ctx context.Context) error { return nil }\n",
		"b/b.go": "package b\n\nimport \"context\"\n\n//bananas:task name=same\nfunc two(ctx context.Context) error { return nil }\n",
	})
	code, out := bananagen(t, dir, "./...")
	if code != 1 || !strings.Contains(out, `b.go:5:3: task name "same" is already used by the task at`) {
		t.Fatalf("two packages with one wire name = %d\n%s", code, out)
	}
	for _, p := range []string{"a", "b"} {
		if _, err := os.Stat(filepath.Join(dir, p, "bananas_gen.go")); err == nil {
			t.Fatalf("a failed run wrote %s/bananas_gen.go", p)
		}
	}
}

func TestSnakeCaseWireNames(t *testing.T) {
	t.Parallel()
	dir := module(t, map[string]string{"p.go": `package p

import "context"

//bananas:task
func sendEmail(ctx context.Context) error { return nil }

//bananas:task
func resizeHTTPImage(ctx context.Context) error { return nil }

//bananas:task
func v2Sync(ctx context.Context) error { return nil }
`})
	if code, out := bananagen(t, dir); code != 0 {
		t.Fatal(out)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "bananas_gen.go"))
	for _, want := range []string{`("send_email")`, `("resize_http_image")`, `("v2_sync")`, "var SendEmail *runtime.Task[", "var ResizeHTTPImage *runtime.Task[", "var V2Sync *runtime.Task["} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("generated code lacks %s", want)
		}
	}
}

func TestUsageErrorExits2(t *testing.T) {
	t.Parallel()
	if code, _ := bananagen(t, t.TempDir(), "-nope"); code != 2 {
		t.Fatalf("unknown flag exit = %d, want 2", code)
	}
}

// make test fails when a committed generated file in the repository is stale.
func TestRepository_GeneratedCodeIsFresh(t *testing.T) {
	t.Parallel()
	if code, out := bananagen(t, "..", "-check", "./..."); code != 0 {
		t.Fatalf("committed generated code is stale or broken (run go generate ./...):\n%s", out)
	}
}
