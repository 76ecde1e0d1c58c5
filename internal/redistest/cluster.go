package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a real Redis Cluster of three masters (no replicas) on free ports.
type Cluster struct {
	nodes []*Server
	once  sync.Once
}

func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Addr()
	}
	return out
}

func (c *Cluster) URL() string { return "redis+cluster://" + strings.Join(c.Addrs(), ",") }

// Client returns a new cluster client, closed when the test ends.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// Close stops every node. Idempotent.
func (c *Cluster) Close() {
	c.once.Do(func() {
		for _, n := range c.nodes {
			n.Close()
		}
	})
}

// StartCluster starts a private cluster, stopped when the test ends.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	c, err := startCluster()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// SharedCluster returns the one cluster of this test process, started on first use.
func SharedCluster(t testing.TB) *Cluster {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedCluster == nil {
		c, err := startCluster()
		if err != nil {
			t.Fatal(err)
		}
		sharedCluster = c
	}
	return sharedCluster
}

func startCluster() (*Cluster, error) {
	c := &Cluster{}
	for range 3 {
		s, err := start([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"})
		if err != nil {
			c.Close()
			return nil, err
		}
		c.nodes = append(c.nodes, s)
	}
	if err := c.form(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// form assigns the slots in three ranges, introduces the nodes to each other,
// and waits until every node sees a healthy cluster of three masters.
func (c *Cluster) form() error {
	ctx := context.Background()
	ranges := [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	clients := make([]*redis.Client, len(c.nodes))
	for i, n := range c.nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr()})
		defer clients[i].Close()
		if err := clients[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", ranges[i][0], ranges[i][1]).Err(); err != nil {
			return fmt.Errorf("redistest: cluster addslotsrange on %s: %w", n.Addr(), err)
		}
	}
	for _, n := range c.nodes[1:] {
		if err := clients[0].ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(n.port)).Err(); err != nil {
			return fmt.Errorf("redistest: cluster meet %s: %w", n.Addr(), err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ready := true
		for _, cl := range clients {
			info, err := cl.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:3") {
				ready = false
				break
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: cluster did not reach cluster_state:ok with 3 nodes within 20s")
		}
		time.Sleep(50 * time.Millisecond) // readiness wait, bounded by the deadline above
	}
}
