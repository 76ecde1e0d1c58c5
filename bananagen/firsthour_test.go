package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A new user's first run, as the README says it, in a module of their own
// outside this repository: init, add the runtime and the generator as a tool,
// annotate, go generate, build, run one job on the embedded server. The one
// step that differs is how the module is found: `go get` would fetch it from
// the module proxy, and here it is this checkout (a replace, and the tool
// directive that `go get -tool` writes).
func TestFirstHour_ReadmeStepsInAFreshModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module from scratch")
	}
	_, self, _, _ := runtime.Caller(0)
	repo := filepath.Dir(filepath.Dir(self))
	dir := t.TempDir()
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	goCmd("mod", "init", "example.com/app")
	goCmd("mod", "edit", "-require=github.com/bananas-go/bananas@v0.0.0", "-replace=github.com/bananas-go/bananas="+repo)
	// What `go get -tool github.com/bananas-go/bananas/bananagen` writes.
	goCmd("mod", "edit", "-tool=github.com/bananas-go/bananas/bananagen")
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tasks/tasks.go", firstHourTasks)
	write("main.go", firstHourMain)
	goCmd("mod", "tidy")
	if out := goCmd("generate", "./..."); strings.Contains(out, "warning") {
		t.Fatalf("go generate in a module that requires bananas warns:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "tasks", "bananas_gen.go")); err != nil {
		t.Fatalf("go generate wrote no bananas_gen.go: %v", err)
	}
	goCmd("build", "-o", "app", ".")
	out, err := exec.Command(filepath.Join(dir, "app")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "result 42") {
		t.Fatalf("the app: %v\n%s\nwant result 42", err, out)
	}
}

// The README's annotated task, as a new user writes it.
const firstHourTasks = `package tasks

//go:generate go tool bananagen

import "context"

type Args struct{ N int }

// double doubles N.
//
//bananas:task
func double(ctx context.Context, a Args) (int, error) { return 2 * a.N, nil }
`

// The README's main: a worker and one call on the embedded server.
const firstHourMain = `package main

import (
	"context"
	"fmt"
	"log"

	"example.com/app/tasks"
	"github.com/bananas-go/bananas/runtime"
)

func main() {
	ctx := context.Background()
	c, err := runtime.Connect(ctx, "mem://")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	runtime.SetDefault(c)
	w := runtime.NewWorker(c, runtime.WorkerOptions{})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	n, err := tasks.Double.Call(ctx, tasks.Args{N: 21})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("result", n)
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
}
`
