package redisstore_test

import (
	"context"
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

// The Redis primary killed (kill -9) under load, behind Sentinel, with
// --store-durability replicated: Sentinel promotes the replica, the two
// gwsim replicas follow it (redis+sentinel://), requests succeed again
// within 30 s of the kill, and every device ends with its last
// acknowledged change (or one sent after it whose outcome is unknown).
func TestSentinelFailoverLosesNoAcknowledgedChange(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	began := time.Now()
	sen := simtest.StartSentinel(t)
	t.Logf("Sentinel setup ready in %s", time.Since(began).Round(time.Millisecond))
	ps := replicas(t, sen, 2, "--store-durability", "replicated")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := startLoad(t, ctx, []string{ps[0].URL + "," + ps[1].URL}, "6s", 200, 150)
	sen.Primary.Kill() // SIGKILL, mid-load
	killedAt := time.Now()

	// Sentinel promotes the replica. The old primary comes back as a
	// replica of the new one, as an operator brings it back (Sentinel
	// would also reconfigure it, within about ten seconds), so that
	// "replicated" changes have a replica to confirm them again.
	for {
		addr, err := sen.PrimaryAddr(ctx)
		if err == nil && addr == sen.Replica.Addr() {
			break
		}
		if time.Since(killedAt) > 30*time.Second {
			t.Fatalf("Sentinel did not promote the replica within 30 s: %s %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	promoted := time.Since(killedAt)
	sen.Primary.Args = []string{"--replicaof", "127.0.0.1", strconv.Itoa(sen.Replica.Port)}
	sen.Primary.Start()

	// Requests succeed again within 30 s of the kill, on both replicas (a
	// message: the ack log's check looks at names and fields only).
	last := ""
	for k, p := range ps {
		c := simtest.NewClient(t, p.URL)
		f := []device.Format{device.JSON, device.XML}[k]
		for {
			res := c.Send(device.SendMessage, f, append(c.Envelope(), simtest.S("message_type", "alarm"), simtest.S("message_value", "failover=1")))
			if res.Status == http.StatusOK {
				break
			}
			if res.Message != last {
				t.Logf("%s after the kill: %s", time.Since(killedAt).Round(time.Millisecond), res.Message)
				last = res.Message
			}
			if res.Code != device.CodeStorageUnavailable || res.Header.Get("Retry-After") == "" {
				t.Errorf("during the failover: %s (want 503 storage_unavailable with Retry-After)", res)
			}
			if time.Since(killedAt) > 30*time.Second {
				t.Fatalf("replica %d: no request succeeded within 30 s of the kill: %s\n%s", k+1, res, p.Stderr())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	recovered := time.Since(killedAt)

	res, entries := l.finish(t, true)
	checked := checkNothingLost(t, ps[1].URL, entries, len(device.Types))
	t.Logf("promoted %s and served again %s after the kill; %d ack log lines (%s), %d devices checked",
		promoted.Round(time.Millisecond), recovered.Round(time.Millisecond), len(entries), load.AckCounts(res.Acknowledged, res.Uncertain, res.Unanswered), checked)
}

// With --store-durability replicated a change is acknowledged only once a
// Redis replica has it: with the replica there, it is on the replica when
// the answer comes; with the replica gone, changes answer 503
// storage_unavailable with Retry-After (both formats), never 200; with it
// back, 200 again.
func TestReplicatedWaitsForAReplica(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	primary := simtest.StartRedis(t, false)
	replica := simtest.StartReplica(t, primary)
	ps := replicas(t, primary, 1, "--store-durability", "replicated")
	c := simtest.NewClient(t, ps[0].URL)
	i, ty := thermostat(t)
	sn := simtest.SN('a', i)
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr()})
	defer rc.Close()
	for k, f := range []device.Format{device.JSON, device.XML} {
		name := "Replicated " + f.String()
		c.Send(device.UpdateName, f, append(c.Envelope(), simtest.S("sn", sn), simtest.S("name", name))).OK(t, f)
		// Read on the replica itself, at once: WAIT saw it there.
		got, err := rc.HGet(context.Background(), redisstore.DefaultPrefix+"{gw:"+simtest.MACA+"}:d:"+simtest.AccountA+":"+sn, "n").Result()
		if err != nil || got != name {
			t.Errorf("%s: the replica holds %q (%v) right after the 200, want %q", f, got, err, name)
		}
		c.Send(device.SendMessage, f, append(c.Envelope(), simtest.S("message_type", "alarm"), simtest.S("message_value", "n="+strconv.Itoa(k)))).OK(t, f)
	}

	replica.Kill()
	for _, f := range []device.Format{device.JSON, device.XML} {
		for _, res := range []*simtest.Response{
			c.Send(device.SendCommand, f, c.Command(sn, ty.Name, simtest.N(wire(ty, "heating_point", f), "18"))),
			c.Send(device.SendMessage, f, append(c.Envelope(), simtest.S("message_type", "alarm"), simtest.S("message_value", "n=9"))),
		} {
			res.Fail(t, f, http.StatusServiceUnavailable, device.CodeStorageUnavailable, "")
			if res.Header.Get("Retry-After") == "" || !strings.Contains(res.Message, "no replica confirmed") {
				t.Errorf("%s without a replica: %s (want Retry-After and why)", f, res)
			}
		}
	}
	status, _, body := c.Admin(http.MethodPut, "/_sim/faults", `{"latency":"0s"}`)
	if status != http.StatusServiceUnavailable {
		t.Errorf("PUT /_sim/faults without a replica: %d %s", status, body)
	}

	replica.Start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := c.Send(device.SendCommand, device.XML, c.Command(sn, ty.Name, simtest.N(wire(ty, "heating_point", device.XML), "19")))
		if res.Status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 200 within 10 s of the replica's return: %s", res)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
