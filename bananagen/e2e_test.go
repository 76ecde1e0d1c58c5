package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

const e2eTasks = `package tasks

import (
	"context"
	"fmt"
)

//go:generate go run github.com/bananas-go/bananas/bananagen

type Num struct{ N int }

//bananas:task route=e2e retries=1
func double(ctx context.Context, a Num) (Num, error) {
	if a.N < 0 {
		return Num{}, fmt.Errorf("negative %d", a.N)
	}
	return Num{N: 2 * a.N}, nil
}

//bananas:cron "@every 1s" tz=Europe/Berlin
func heartbeat(ctx context.Context) error { return nil }
`

const e2eMain = `package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"example.com/e2e/tasks"
	"github.com/bananas-go/bananas/runtime"
)

func main() {
	ctx := context.Background()
	c, err := runtime.Connect(ctx, os.Getenv("REDIS_URL"))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	runtime.SetDefault(c)
	w := runtime.NewWorker(c, runtime.WorkerOptions{Routes: []string{"e2e"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Backoff: func(int) time.Duration { return time.Millisecond }})
	tasks.Register(w)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()

	res, err := tasks.Double.Call(ctx, tasks.Num{N: 21})
	fmt.Println("call:", res.N, err)
	id, err := tasks.Double.EnqueueJSON(ctx, []byte(` + "`" + `{"N": 5}` + "`" + `))
	if err != nil {
		panic(err)
	}
	res, err = tasks.Double.Await(ctx, id)
	fmt.Println("json:", res.N, err)
	_, err = tasks.Double.EnqueueJSON(ctx, []byte(` + "`" + `{"M": 5}` + "`" + `))
	fmt.Println("bad json:", err)
	_, err = tasks.Double.Call(ctx, tasks.Num{N: -1})
	var je *runtime.JobError
	fmt.Println("failure:", errors.As(err, &je), je.Attempts, je.Message)
	info := tasks.Double.Info()
	fmt.Println("info:", info.Name, info.Route, info.Retries, info.ArgsType, info.Args[0].Name, info.Result)
	for _, e := range w.CronEntries() {
		fmt.Println("cron:", e.Name, e.Spec, e.TZ)
	}
	stop()
	fmt.Println("run:", <-done)
}
`

// TestEndToEnd generates a package in a fresh module, builds it with a
// program that uses the generated stubs, and runs that program's worker and
// producer against a real redis-server.
func TestEndToEnd_GeneratedStubsRunOnRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Shared(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := module(t, map[string]string{
		"go.mod":         "module example.com/e2e\n\ngo 1.26\n\nrequire github.com/bananas-go/bananas v0.0.0\n\nreplace github.com/bananas-go/bananas => " + root + "\n",
		"go.sum":         string(sum),
		"tasks/tasks.go": e2eTasks,
		"main.go":        strings.Replace(e2eMain, "\"os\"\n", "\"os\"\n\t\"time\"\n", 1),
	})
	if code, out := bananagen(t, dir, "./tasks"); code != 0 {
		t.Fatalf("bananagen: %s", out)
	}
	cmd := exec.Command("go", "run", "-mod=mod", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REDIS_URL="+srv.URL(), "BANANAS_NAMESPACE="+redistest.Namespace(t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run: %v\n%s\n%s", err, out, stderr.String())
	}
	want := `call: 42 <nil>
json: 10 <nil>
bad json: bananas: args of double: unknown field "M"
failure: true 2 negative -1
info: double e2e 1 Num N Num
cron: heartbeat @every 1s Europe/Berlin
run: <nil>
`
	if string(out) != want {
		t.Fatalf("program output:\n%s\nwant:\n%s", out, want)
	}
}
