package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// A producer and a worker started with the same environment meet: Connect
// takes its namespace from BANANAS_NAMESPACE, and WithNamespace overrides it.
// (Not parallel: it sets an environment variable.)
func TestConnect_NamespaceFromEnvironment(t *testing.T) {
	srv := redistest.Shared(t)
	ns := redistest.Namespace(t)
	t.Setenv("BANANAS_NAMESPACE", ns)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := runtime.Connect(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Namespace() != ns {
		t.Fatalf("Namespace() = %q, want %q from BANANAS_NAMESPACE", c.Namespace(), ns)
	}
	id, err := testtasks.Note.With(c).Enqueue(ctx, Msg{}, runtime.Description("made by the env test"))
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.Redis().HExists(ctx, ns+":route:{default}:payloads", id).Result(); !ok {
		t.Fatalf("the job is not under the namespace %s", ns)
	}
	info, err := c.Job(ctx, id)
	if err != nil || info.Description != "made by the env test" || info.Status != runtime.StatusPending {
		t.Fatalf("Job = %+v, %v; want the description back", info, err)
	}
	other, err := runtime.Connect(ctx, srv.URL(), runtime.WithNamespace(ns+"-other"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if other.Namespace() != ns+"-other" {
		t.Fatalf("WithNamespace did not override the environment: %q", other.Namespace())
	}
	if _, err := other.Job(ctx, id); err == nil {
		t.Fatal("a job of one namespace is visible from another")
	}
}
