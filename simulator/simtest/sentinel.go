package simtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelSetup is a Redis primary, its replicas and three Sentinels
// watching them, started for a test: redis-server processes on free
// loopback ports, each with its own temporary directory, stopped by PID
// when the test ends. The Sentinels declare the primary down after
// DownAfter without an answer and fail over to the replica, so that a
// failover takes a few seconds.
type SentinelSetup struct {
	// Replica is the first of Replicas.
	Primary, Replica *Redis
	Replicas         []*Redis
	Sentinels        []*Redis
	// Master is the name the Sentinels know the primary by.
	Master string
}

// Sentinel timings of StartSentinel: short, so that a test's failover
// takes seconds.
const (
	SentinelDownAfter       = time.Second
	SentinelFailoverTimeout = 3 * time.Second
)

// StartSentinel starts the primary, one replica (replicaof the primary)
// and three Sentinels (quorum 2), and waits until the replica is in sync
// and every Sentinel knows the replica and the two other Sentinels, so
// that a failover can happen. A missing redis-server skips or fails the
// test (NeedTool).
func StartSentinel(t testing.TB) *SentinelSetup {
	t.Helper()
	return StartSentinelWith(t, SentinelOptions{Replicas: 1})
}

// SentinelOptions shape StartSentinelWith's setup.
type SentinelOptions struct {
	// Replicas is how many replicas the primary has (at least 1).
	Replicas int
	// MinReplicasToWrite, when above 0, is every node's
	// min-replicas-to-write (with min-replicas-max-lag 10): a primary
	// with fewer replicas connected refuses writes.
	MinReplicasToWrite int
}

// StartSentinelWith is StartSentinel with o.Replicas replicas, as
// deploy/compose-sentinel.yaml and deploy/k8s-sentinel run it (a primary
// and two replicas, min-replicas-to-write 1).
func StartSentinelWith(t testing.TB, o SentinelOptions) *SentinelSetup {
	t.Helper()
	needRedisServer(t)
	if o.Replicas < 1 {
		o.Replicas = 1
	}
	s := &SentinelSetup{Master: "gwsim"}
	used := map[int]bool{}
	port := func() int {
		for {
			if p := freePort(t); !used[p] {
				used[p] = true
				return p
			}
		}
	}
	start := func(r *Redis) *Redis {
		r.t = t
		r.Start()
		t.Cleanup(r.Kill)
		return r
	}
	// A replica's full sync starts at once rather than after the default
	// 5 s wait for more replicas (either node may be primary later).
	noDelay := []string{"--repl-diskless-sync-delay", "0"}
	if o.MinReplicasToWrite > 0 {
		noDelay = append(noDelay, "--min-replicas-to-write", strconv.Itoa(o.MinReplicasToWrite), "--min-replicas-max-lag", "10")
	}
	s.Primary = start(&Redis{Dir: t.TempDir(), Port: port(), Args: noDelay})
	for range o.Replicas {
		s.Replicas = append(s.Replicas, start(&Redis{Dir: t.TempDir(), Port: port(),
			Args: append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(s.Primary.Port)}, noDelay...)}))
	}
	s.Replica = s.Replicas[0]
	// Each Sentinel is told the others and the replica in its file, with
	// fixed ids, rather than finding them through hello messages every
	// 2 s: the setup is ready in a moment.
	ports := []int{port(), port(), port()}
	ids := make([]string, len(ports))
	for i := range ids {
		ids[i] = fmt.Sprintf("%040x", i+1)
	}
	for i, p := range ports {
		dir := t.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		var b strings.Builder
		fmt.Fprintf(&b, "sentinel myid %s\nsentinel resolve-hostnames no\nsentinel monitor %s 127.0.0.1 %d 2\n", ids[i], s.Master, s.Primary.Port)
		fmt.Fprintf(&b, "sentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s %d\nsentinel parallel-syncs %s 1\n",
			s.Master, SentinelDownAfter.Milliseconds(), s.Master, SentinelFailoverTimeout.Milliseconds(), s.Master)
		for _, r := range s.Replicas {
			fmt.Fprintf(&b, "sentinel known-replica %s 127.0.0.1 %d\n", s.Master, r.Port)
		}
		for j, q := range ports {
			if j != i {
				fmt.Fprintf(&b, "sentinel known-sentinel %s 127.0.0.1 %d %s\n", s.Master, q, ids[j])
			}
		}
		if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		s.Sentinels = append(s.Sentinels, start(&Redis{Dir: dir, Port: p, Conf: conf}))
	}
	for _, r := range s.Replicas {
		waitInSync(t, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, sn := range s.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr()})
		for {
			m, err := c.Master(ctx, s.Master).Result()
			if err == nil && m["num-other-sentinels"] == "2" && m["num-slaves"] == strconv.Itoa(o.Replicas) {
				break
			}
			if ctx.Err() != nil {
				log, _ := os.ReadFile(filepath.Join(sn.Dir, "redis.log"))
				c.Close()
				t.Fatalf("Sentinel %s does not know the replica and the other Sentinels after 30 s: %v %v\n%s", sn.Addr(), m, err, log)
			}
			time.Sleep(100 * time.Millisecond)
		}
		c.Close()
	}
	return s
}

// StartReplica starts a redis-server that replicates primary (no
// persistence, full sync at once) and waits until it is in sync.
func StartReplica(t testing.TB, primary *Redis) *Redis {
	t.Helper()
	needRedisServer(t)
	r := &Redis{t: t, Dir: t.TempDir(), Port: freePort(t),
		Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.Port), "--repl-diskless-sync-delay", "0"}}
	r.Start()
	t.Cleanup(r.Kill)
	waitInSync(t, r)
	return r
}

// waitInSync waits until the replica r says its link to the primary is up.
func waitInSync(t testing.TB, r *Redis) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer rc.Close()
	for {
		info, _ := rc.Info(ctx, "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the replica %s did not sync with its primary in 30 s: %s", r.Addr(), info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// URL is the --store URL: redis+sentinel://S1,S2,S3/MASTER/0.
func (s *SentinelSetup) URL() string {
	addrs := make([]string, len(s.Sentinels))
	for i, sn := range s.Sentinels {
		addrs[i] = sn.Addr()
	}
	return "redis+sentinel://" + strings.Join(addrs, ",") + "/" + s.Master + "/0"
}

// PrimaryAddr is the address the first Sentinel gives for the primary now.
func (s *SentinelSetup) PrimaryAddr(ctx context.Context) (string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinels[0].Addr()})
	defer c.Close()
	a, err := c.GetMasterAddrByName(ctx, s.Master).Result()
	if err != nil {
		return "", err
	}
	return strings.Join(a, ":"), nil
}
