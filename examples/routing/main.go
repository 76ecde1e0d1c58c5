// Command routing shows routed worker pools as separate processes, started by
// one command:
//
//	go run ./examples/routing
//
// It starts an embedded Redis (or uses $REDIS_URL), launches itself twice as
// workers — a gpu pool (WORKER_ROUTING_KEYS=gpu) and a cpu pool
// (WORKER_ROUTING_KEYS=cpu) — enqueues work to both routes, and prints which
// process ran each job. Each child is an ordinary runtime.Main binary.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"syscall"

	"github.com/bananas-go/bananas/examples/routing/tasks"
	"github.com/bananas-go/bananas/runtime"
)

func main() {
	if os.Getenv("POOL") != "" { // a child: one worker pool
		runtime.Main(tasks.Register)
		return
	}
	if err := launch(); err != nil {
		log.Fatal(err)
	}
}

func launch() error {
	ctx := context.Background()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = "mem://"
	}
	c, err := runtime.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close()
	runtime.SetDefault(c)
	shared := url
	if e := c.EmbeddedURL(); e != "" {
		shared = e // the children reach the embedded server over loopback
	}
	fmt.Printf("launcher %d: Redis at %s\n", os.Getpid(), shared)

	var children []*exec.Cmd
	for _, pool := range []struct{ name, routes, conc string }{{"gpu", "gpu", "2"}, {"cpu", "cpu", "8"}} {
		cmd := exec.Command(os.Args[0], "worker")
		cmd.Env = append(os.Environ(), "POOL="+pool.name, "REDIS_URL="+shared, "BANANAS_NAMESPACE="+c.Namespace(),
			"WORKER_ROUTING_KEYS="+pool.routes, "WORKER_CONCURRENCY="+pool.conc, "LOG_LEVEL=warn")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		fmt.Printf("launcher: started the %s pool, pid %d (routes %s, concurrency %s)\n", pool.name, cmd.Process.Pid, pool.routes, pool.conc)
		children = append(children, cmd)
	}
	defer func() {
		for _, ch := range children {
			_ = ch.Process.Signal(syscall.SIGTERM) // graceful shutdown
			_ = ch.Wait()
		}
		fmt.Println("launcher: both pools shut down")
	}()

	frames := []tasks.Frame{{N: 1}, {N: 2}, {N: 3}}
	renders, err := tasks.RenderFrame.EnqueueMany(ctx, frames)
	if err != nil {
		return err
	}
	thumbs, err := tasks.MakeThumbnail.EnqueueMany(ctx, frames)
	if err != nil {
		return err
	}
	for i := range frames {
		for _, await := range []func() (tasks.Ran, error){
			func() (tasks.Ran, error) { return tasks.MakeThumbnail.Await(ctx, thumbs[i]) },
			func() (tasks.Ran, error) { return tasks.RenderFrame.Await(ctx, renders[i]) },
		} {
			r, err := await()
			if err != nil {
				return err
			}
			fmt.Printf("  %-22s ran in the %s pool (pid %d)\n", r.What, r.Pool, r.PID)
		}
	}
	return nil
}
