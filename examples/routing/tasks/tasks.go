// Package tasks holds the routing example's tasks: one for the gpu pool, one
// for the cpu pool. Each reports which pool ran it.
package tasks

//go:generate go tool bananagen

import (
	"context"
	"fmt"
	"os"
	"time"
)

type Frame struct{ N int }

type Ran struct {
	Pool string
	PID  int
	What string
}

//bananas:task route=gpu
func renderFrame(ctx context.Context, f Frame) (Ran, error) {
	time.Sleep(30 * time.Millisecond) // the "GPU" at work
	return Ran{Pool: os.Getenv("POOL"), PID: os.Getpid(), What: fmt.Sprintf("frame %d rendered", f.N)}, nil
}

//bananas:task route=cpu priority=high
func makeThumbnail(ctx context.Context, f Frame) (Ran, error) {
	return Ran{Pool: os.Getenv("POOL"), PID: os.Getpid(), What: fmt.Sprintf("thumbnail of frame %d", f.N)}, nil
}
