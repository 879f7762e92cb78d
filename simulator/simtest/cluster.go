package simtest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a real Redis Cluster of three masters started for a test:
// three redis-server processes with cluster-enabled, each on its own free
// loopback port (and cluster bus port) and temporary directory, the 16384
// slots split among them. They are stopped by PID when the test ends.
// Only redis-server is needed: the cluster is joined with CLUSTER MEET
// and CLUSTER ADDSLOTSRANGE sent by go-redis, not by redis-cli.
type Cluster struct {
	Nodes []*Redis
}

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// StartCluster starts the three nodes, assigns the slots, joins them and
// waits until CLUSTER INFO says cluster_state:ok on every node. The test
// fails (never skips) when redis-server is missing.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	needRedisServer(t)
	c := &Cluster{}
	used := map[int]bool{}
	port := func() int {
		for {
			if p := freePort(t); !used[p] {
				used[p] = true
				return p
			}
		}
	}
	const n = 3
	var bus []int // each node's cluster bus port
	for i := 0; i < n; i++ {
		r := &Redis{t: t, Dir: t.TempDir(), Port: port()}
		bus = append(bus, port())
		r.Args = []string{"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus[i]),
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"}
		r.Start()
		t.Cleanup(r.Kill)
		c.Nodes = append(c.Nodes, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clients := make([]*redis.Client, n)
	for i, r := range c.Nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: r.Addr()})
		defer clients[i].Close()
		lo, hi := i*clusterSlots/n, (i+1)*clusterSlots/n-1
		if err := clients[i].ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			t.Fatalf("CLUSTER ADDSLOTSRANGE %d %d on %s: %v", lo, hi, r.Addr(), err)
		}
	}
	for i, r := range c.Nodes[1:] {
		// The bus port is not the default port+10000, so MEET names it.
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", r.Port, bus[i+1]).Err(); err != nil {
			t.Fatalf("CLUSTER MEET %s: %v", r.Addr(), err)
		}
	}
	for i, cl := range clients {
		for {
			info, err := cl.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", n)) {
				break
			}
			if ctx.Err() != nil {
				log, _ := os.ReadFile(c.Nodes[i].Dir + "/redis.log")
				t.Fatalf("Redis Cluster node %s is not ok after 30 s: %v\n%s\n%s", c.Nodes[i].Addr(), err, info, log)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

// URL is the --store URL of the cluster: the first node's address, the
// others as addr parameters.
func (c *Cluster) URL() string {
	u := "redis://" + c.Nodes[0].Addr()
	for i, r := range c.Nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + r.Addr()
	}
	return u
}
