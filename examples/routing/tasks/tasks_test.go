package tasks_test

import (
	"context"
	"testing"

	"github.com/bananas-go/bananas/bananastest"
	"github.com/bananas-go/bananas/examples/routing/tasks"
)

func TestFrames_GoToTheirPoolsRoutes(t *testing.T) {
	h := bananastest.New(t, tasks.Register)
	ctx := context.Background()
	render, err := tasks.RenderFrame.With(h.Client).Enqueue(ctx, tasks.Frame{N: 7})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tasks.MakeThumbnail.With(h.Client).Enqueue(ctx, tasks.Frame{N: 7}); err != nil {
		t.Fatal(err)
	}
	if job := bananastest.RequireEnqueued(t, h.Client, tasks.RenderFrame, nil); job.Route != "gpu" {
		t.Fatalf("render_frame on route %q, want gpu", job.Route)
	}
	if job := bananastest.RequireEnqueued(t, h.Client, tasks.MakeThumbnail, nil); job.Route != "cpu" {
		t.Fatalf("make_thumbnail on route %q, want cpu", job.Route)
	}
	if report := h.Drain(t); report.Completed != 2 {
		t.Fatalf("report %s, want both jobs run", report)
	}
	ran, err := tasks.RenderFrame.With(h.Client).Await(ctx, render)
	if err != nil || ran.What != "frame 7 rendered" {
		t.Fatalf("render_frame ran %+v (%v), want frame 7 rendered", ran, err)
	}
}
