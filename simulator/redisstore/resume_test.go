package redisstore_test

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gwdmi/gwtools/conformance/load"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/redisstore"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// The documented topology for --store-durability replicated (a primary,
// two replicas, min-replicas-to-write 1 on every node, three Sentinels:
// deploy/compose-sentinel.yaml, deploy/k8s-sentinel) loses its primary to
// kill -9 under load, and the old primary is NOT brought back: Sentinel
// promotes a replica, the other replica follows it, and changes are
// accepted again on both gwsim replicas (JSON and XML) while the old
// primary stays dead; a change acknowledged after the failover is on the
// remaining replica at once (WAIT 1 found it); every device ends with its
// last acknowledged change. With one replica (the setup before), every
// change answered 503 until the old primary came back.
func TestFailoverResumesWithoutTheOldPrimary(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	began := time.Now()
	sen := simtest.StartSentinelWith(t, simtest.SentinelOptions{Replicas: 2, MinReplicasToWrite: 1})
	t.Logf("Sentinel setup (a primary, two replicas) ready in %s", time.Since(began).Round(time.Millisecond))
	ps := replicas(t, sen, 2, "--store-durability", "replicated")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := startLoad(t, ctx, []string{ps[0].URL + "," + ps[1].URL}, "8s", 200, 150)
	linesAtKill := l.lines()
	sen.Primary.Kill() // SIGKILL, mid-load; never started again
	killedAt := time.Now()
	old := sen.Primary.Addr()

	var promoted string
	for {
		addr, err := sen.PrimaryAddr(ctx)
		if err == nil && addr != old {
			promoted = addr
			break
		}
		if time.Since(killedAt) > 30*time.Second {
			t.Fatalf("Sentinel did not promote a replica within 30 s: %s %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	promotedAfter := time.Since(killedAt)
	var other *simtest.Redis
	for _, r := range sen.Replicas {
		if r.Addr() != promoted {
			other = r
		}
	}

	// Changes are accepted again on both gwsim replicas, one format each,
	// within 30 s of the kill, with the old primary still dead. The change
	// is a message: the load sends only renames and commands, so nothing
	// else writes the gateway's message log (a rename could be overwritten
	// by the load's own renames before it is read back).
	var rc *redis.Client
	if other != nil { // none with a single replica: the promoted one
		rc = redis.NewClient(&redis.Options{Addr: other.Addr()})
		defer rc.Close()
	}
	last := ""
	for k, p := range ps {
		c := simtest.NewClient(t, p.URL)
		f := []device.Format{device.JSON, device.XML}[k]
		value := "failover=" + strconv.Itoa(k+1)
		for {
			res := c.Send(device.SendMessage, f, append(c.Envelope(), simtest.S("message_type", "alarm"), simtest.S("message_value", value)))
			if res.Status == http.StatusOK {
				break
			}
			if res.Message != last {
				t.Logf("%s after the kill: %s", time.Since(killedAt).Round(time.Millisecond), res.Message)
				last = res.Message
			}
			if res.Code != device.CodeStorageUnavailable || res.Header.Get("Retry-After") == "" {
				t.Fatalf("during the failover: %s (want 503 storage_unavailable with Retry-After)", res)
			}
			if time.Since(killedAt) > 30*time.Second {
				t.Fatalf("gwsim replica %d: no change accepted within 30 s of the kill, the old primary being down: %s\n%s", k+1, res, p.Stderr())
			}
			time.Sleep(100 * time.Millisecond)
		}
		// WAIT 1 was answered by the replica that was not promoted: the
		// message is there the moment the 200 comes.
		if rc == nil {
			t.Fatal("a change was acknowledged with no replica left")
		}
		log, err := rc.LRange(context.Background(), redisstore.DefaultPrefix+"{gw:"+c.MAC+"}:m:"+c.Account, 0, -1).Result()
		found := false
		for _, m := range log {
			found = found || strings.Contains(m, value)
		}
		if err != nil || !found {
			t.Errorf("%s: the remaining replica %s does not hold the message %q right after the 200 (%v; its log: %q)", f, other.Addr(), value, err, log)
		}
	}
	resumed := time.Since(killedAt)
	if pingable(old) {
		t.Fatal("the old primary answers: the test must show writes resuming without it")
	}

	res, entries := l.finish(t, true)
	// The load itself went on after the failover: acknowledged lines
	// written after the kill.
	ackedAfter := 0
	for _, e := range entries[min(linesAtKill, len(entries)):] {
		if e.Status == load.AckAcknowledged {
			ackedAfter++
		}
	}
	if ackedAfter < 50 {
		t.Errorf("only %d changes acknowledged after the kill: the load did not resume", ackedAfter)
	}
	checked := checkNothingLost(t, ps[0].URL, entries, len(device.Types))
	t.Logf("promoted %s after %s, changes accepted again %s after the kill without the old primary; %d ack log lines (%d acknowledged, %d after the kill), %d devices checked",
		promoted, promotedAfter.Round(time.Millisecond), resumed.Round(time.Millisecond), len(entries), res.Acknowledged, ackedAfter, checked)
}

// pingable says whether anything accepts connections at addr.
func pingable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err == nil {
		c.Close()
	}
	return err == nil
}
