package redistest

import (
	"context"
	"regexp"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

func TestStart_ServesOnAFreePortNot6379(t *testing.T) {
	t.Parallel()
	s := Start(t)
	if s.port == 6379 {
		t.Fatal("a test server must never use port 6379")
	}
	c := s.Client(t)
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET = %q, %v", v, err)
	}
	//lint:ignore SA4000 each call may start a server: two calls must return the one shared server
	if Shared(t) != Shared(t) {
		t.Fatal("Shared returned two servers")
	}
}

func TestCluster_KeysOfEveryHashTagWork(t *testing.T) {
	t.Parallel()
	c := SharedCluster(t)
	cc := c.Client(t)
	ctx := context.Background()
	nodes := map[string]bool{}
	for _, tag := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		key := "{" + tag + "}:k"
		if err := cc.Set(ctx, key, tag, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		if v, err := cc.Get(ctx, key).Result(); err != nil || v != tag {
			t.Fatalf("GET %s = %q, %v", key, v, err)
		}
		slot, _ := cc.ClusterKeySlot(ctx, key).Result()
		nodes[c.Addrs()[min(int(slot)/5461, 2)]] = true
	}
	if len(nodes) < 2 {
		t.Fatalf("8 hash tags all landed on one node: %v", nodes)
	}
}

func TestNamespace_UniqueAndKeySafe(t *testing.T) {
	t.Parallel()
	a, b := Namespace(t), Namespace(t)
	if a == b {
		t.Fatal("two namespaces of one test are equal")
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{1,60}$`).MatchString(a) {
		t.Fatalf("namespace %q has unsafe characters or is too long", a)
	}
}

// A replica takes over the slots of a killed master, and the data written to
// the master before the kill is read back from it.
func TestClusterWithReplicas_AReplicaTakesOverAKilledMaster(t *testing.T) {
	t.Parallel()
	c := StartClusterWithReplicas(t)
	cc := c.Client(t)
	ctx := context.Background()
	if err := cc.Set(ctx, "{a}:k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	master, err := cc.MasterForKey(ctx, "{a}:k")
	if err != nil {
		t.Fatal(err)
	}
	addr := master.Options().Addr
	if err := master.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.Kill(addr); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("slots of the killed master served again after %s", time.Since(start).Round(time.Millisecond))
	cc.ReloadState(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := cc.Get(ctx, "{a}:k").Result()
		if err == nil && v == "v" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET after the failover = %q, %v", v, err)
		}
		time.Sleep(50 * time.Millisecond) // the client's map reloads in the background
	}
}

// A persistent server killed and restarted serves on the same port what it
// acknowledged before the kill.
func TestStartPersistent_RestartKeepsWhatWasAcknowledged(t *testing.T) {
	t.Parallel()
	s := StartPersistent(t)
	c := s.Client(t)
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET after the restart = %q, %v", v, err)
	}
}
