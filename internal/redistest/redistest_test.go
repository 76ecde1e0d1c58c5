package redistest

import (
	"context"
	"regexp"
	"testing"
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
