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

	"github.com/bananas-go/bananas/internal/testserver"
)

// Cluster is a real Redis Cluster of three masters on free ports, each with a
// replica when started by StartClusterWithReplicas.
type Cluster struct {
	nodes []*Server // the masters, then their replicas in the same order
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
	return testserver.Private(t, startCluster)
}

// SharedCluster returns the one cluster of this test process, started on first use.
func SharedCluster(t testing.TB) *Cluster {
	t.Helper()
	return sharedCluster.Get(t, startCluster)
}

// StartClusterWithReplicas starts a private cluster of three masters with a
// replica each, stopped when the test ends. Its nodes time out after one
// second, so a replica takes over a killed master within a few seconds.
func StartClusterWithReplicas(t testing.TB) *Cluster {
	t.Helper()
	return testserver.Private(t, func() (*Cluster, error) { return startClusterOf(3, "1000") })
}

func startCluster() (*Cluster, error) { return startClusterOf(0, "5000") }

func startClusterOf(replicas int, nodeTimeoutMS string) (*Cluster, error) {
	c := &Cluster{}
	for range 3 + replicas {
		s, err := start([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", nodeTimeoutMS})
		if err != nil {
			c.Close()
			return nil, err
		}
		c.nodes = append(c.nodes, s)
	}
	if err := c.form(replicas); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Kill kills the node at addr (as SIGKILL would: no shutdown, no save).
func (c *Cluster) Kill(addr string) error {
	for _, n := range c.nodes {
		if n.Addr() == addr {
			n.Close()
			return nil
		}
	}
	return fmt.Errorf("redistest: no node of the cluster at %s", addr)
}

// WaitHealthy waits until every node still running reports cluster_state:ok
// and serves every slot from a master that is running.
func (c *Cluster) WaitHealthy(timeout time.Duration) error {
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	for {
		err := c.healthy(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: cluster not healthy within %s: %w", timeout, err)
		}
		time.Sleep(50 * time.Millisecond) // readiness wait, bounded by the deadline above
	}
}

func (c *Cluster) healthy(ctx context.Context) error {
	running := map[string]bool{}
	for _, n := range c.nodes {
		select {
		case <-n.exited:
		default:
			running[n.Addr()] = true
		}
	}
	for addr := range running {
		cl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		info, err := cl.ClusterInfo(ctx).Result()
		if err != nil {
			_ = cl.Close()
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") {
			_ = cl.Close()
			return fmt.Errorf("%s: cluster_state not ok", addr)
		}
		//lint:ignore SA1019 CLUSTER SLOTS answers on every supported server (>= 7.0), and its ranges are what this check counts
		slots, err := cl.ClusterSlots(ctx).Result()
		_ = cl.Close()
		if err != nil {
			return err
		}
		covered := 0
		for _, s := range slots {
			if len(s.Nodes) == 0 || !running[s.Nodes[0].Addr] {
				return fmt.Errorf("%s: slots %d-%d served by %v, not running", addr, s.Start, s.End, s.Nodes)
			}
			covered += s.End - s.Start + 1
		}
		if covered != 16384 {
			return fmt.Errorf("%s: %d of 16384 slots served", addr, covered)
		}
	}
	return nil
}

// form assigns the slots to the first three nodes in three ranges, introduces
// the nodes to each other, makes each of the next ones the replica of a
// master, and waits until every node sees a healthy cluster.
func (c *Cluster) form(replicas int) error {
	ctx := context.Background()
	ranges := [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	clients := make([]*redis.Client, len(c.nodes))
	for i, n := range c.nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr()})
		defer clients[i].Close()
		if i >= len(ranges) {
			continue
		}
		if err := clients[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", ranges[i][0], ranges[i][1]).Err(); err != nil {
			return fmt.Errorf("redistest: cluster addslotsrange on %s: %w", n.Addr(), err)
		}
	}
	for _, n := range c.nodes[1:] {
		if err := clients[0].ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(n.port)).Err(); err != nil {
			return fmt.Errorf("redistest: cluster meet %s: %w", n.Addr(), err)
		}
	}
	known := "cluster_known_nodes:" + strconv.Itoa(len(c.nodes))
	deadline := time.Now().Add(20 * time.Second)
	if err := c.replicate(ctx, clients, replicas, known, deadline); err != nil {
		return err
	}
	for {
		ready := true
		for i, cl := range clients {
			info, err := cl.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, known) {
				ready = false
				break
			}
			if i < len(ranges) {
				continue
			}
			repl, err := cl.Info(ctx, "replication").Result()
			if err != nil || !strings.Contains(repl, "master_link_status:up") {
				ready = false
				break
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: cluster did not reach cluster_state:ok with %d nodes within 20s", len(c.nodes))
		}
		time.Sleep(50 * time.Millisecond) // readiness wait, bounded by the deadline above
	}
}

// replicate makes node 3+i the replica of master i, once it knows every node.
func (c *Cluster) replicate(ctx context.Context, clients []*redis.Client, replicas int, known string, deadline time.Time) error {
	for i := range replicas {
		master, err := clients[i].Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return fmt.Errorf("redistest: cluster myid on %s: %w", c.nodes[i].Addr(), err)
		}
		replica := clients[3+i]
		for {
			info, err := replica.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, known) {
				if err = replica.Do(ctx, "CLUSTER", "REPLICATE", master).Err(); err == nil {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("redistest: %s did not become the replica of %s within 20s: %v", c.nodes[3+i].Addr(), c.nodes[i].Addr(), err)
			}
			time.Sleep(50 * time.Millisecond) // readiness wait, bounded by the deadline
		}
	}
	return nil
}
