// Package testtasks declares the tasks the runtime's own tests run, as
// generated code: the stubs below come from bananagen like any application's.
// The tests mostly register closures of their own on these stubs
// (runtime.Handle) to observe and steer each run; the function bodies here are
// what Register installs. Their wire names carry a t_ prefix: wire names are
// unique across every package bananagen loads, examples included.
package testtasks

//go:generate go tool bananagen

import "context"

// Msg is the args of every test task.
type Msg struct {
	Text string
	N    int
}

// Reply is the result of the tasks that have one.
type Reply struct{ Text string }

//bananas:task name=t_echo
func echo(ctx context.Context, m Msg) (Reply, error) { return Reply{Text: m.Text}, nil }

//bananas:task name=t_other
func other(ctx context.Context, m Msg) (Reply, error) { return Reply{Text: m.Text}, nil }

//bananas:task name=t_note
func note(ctx context.Context, m Msg) error { return nil }

//bananas:task name=t_other_note
func otherNote(ctx context.Context, m Msg) error { return nil }

//bananas:task name=t_tick
func tick(ctx context.Context) error { return nil }
