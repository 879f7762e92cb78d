package redisstore_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/load"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// A Redis primary behind Sentinel whose only replica is gone (the state
// after a one-replica failover, or a partition), as deploy/k8s-sentinel
// runs it (min-replicas-to-write 1, --store-durability replicated), under
// load: Redis answers NOREPLICAS at once, and gwsim says so at once and in
// the same words everywhere. A change answers 503 storage_unavailable with
// Retry-After within half a second, naming "refuses writes";
// /_sim/health answers 503 degraded with that reason within half a
// second; gwsim_redis_up stays 1 and gwsim_store_writable is 0; the log
// gives the same reason; /_sim/ready still answers 200 (the readiness
// probe keeps the replica in its Service). With the replica back, changes succeed again, and
// no acknowledged change is lost.
func TestSentinelNoReplicaAnsweredAtOnce(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	const reason = "refuses writes: fewer good replicas than its min-replicas-to-write"
	sen := simtest.StartSentinelWith(t, simtest.SentinelOptions{Replicas: 1, MinReplicasToWrite: 1})
	ps := replicas(t, sen, 2, "--store-durability", "replicated", "--log-level", "info", "--log-summary", "0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := startLoad(t, ctx, []string{ps[0].URL + "," + ps[1].URL}, "8s", 200, 150)
	c := simtest.NewClient(t, ps[0].URL)
	i, ty := thermostat(t)
	sn := simtest.SN('a', i)
	change := func(f device.Format) (*simtest.Response, time.Duration) {
		began := time.Now()
		res := c.Send(device.SendCommand, f, c.Command(sn, ty.Name, simtest.N(wire(ty, "heating_point", f), "18")))
		return res, time.Since(began)
	}
	health := func() (int, map[string]string, time.Duration) {
		began := time.Now()
		status, _, body := c.Admin(http.MethodGet, "/_sim/health", "")
		var h map[string]string
		json.Unmarshal(body, &h)
		return status, h, time.Since(began)
	}
	metric := func(name string) string {
		_, _, body := c.Admin(http.MethodGet, "/metrics", "")
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				return v
			}
		}
		return "(none)"
	}

	sen.Replica.Kill()
	killed := time.Now()
	// The first truthful 503: Redis refuses at once once the primary has
	// seen its replica's connection close.
	var first time.Duration
	for {
		res, _ := change(device.JSON)
		if res.Status == http.StatusServiceUnavailable && strings.Contains(res.Message, reason) {
			first = time.Since(killed)
			break
		}
		if time.Since(killed) > 10*time.Second {
			t.Fatalf("no 503 naming %q within 10 s of the replica's loss: %s", reason, res)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, f := range []device.Format{device.JSON, device.XML} {
		res, took := change(f)
		if res.Status != http.StatusServiceUnavailable || res.Code != device.CodeStorageUnavailable ||
			res.Header.Get("Retry-After") == "" || !strings.Contains(res.Message, reason) {
			t.Errorf("%s change without a replica: %s (want 503 storage_unavailable, Retry-After, %q)", f, res, reason)
		}
		if took > 500*time.Millisecond {
			t.Errorf("%s change without a replica took %s to be refused, want under 0.5 s", f, took.Round(time.Millisecond))
		}
	}
	status, h, took := health()
	if status != http.StatusServiceUnavailable || h["status"] != "degraded" || !strings.Contains(h["reason"], reason) {
		t.Errorf("health without a replica: %d %v (want 503 degraded, reason %q)", status, h, reason)
	}
	if took > 500*time.Millisecond {
		t.Errorf("health without a replica took %s, want under 0.5 s", took.Round(time.Millisecond))
	}
	if w, u := metric("gwsim_store_writable"), metric("gwsim_redis_up"); w != "0" || u != "1" {
		t.Errorf("without a replica: gwsim_store_writable %s (want 0), gwsim_redis_up %s (want 1)", w, u)
	}
	// The readiness probe's answer: still ready (the replica answers the
	// documented 503), and it says the storage is unavailable.
	var ready map[string]string
	rs, _, body := c.Admin(http.MethodGet, "/_sim/ready", "")
	json.Unmarshal(body, &ready)
	if rs != http.StatusOK || ready["storage"] != "unavailable" {
		t.Errorf("/_sim/ready without a replica: %d %s (want 200, storage unavailable)", rs, body)
	}

	sen.Replica.Start()
	back := time.Now()
	for {
		res, _ := change(device.XML)
		if res.Status == http.StatusOK {
			break
		}
		if time.Since(back) > 15*time.Second {
			t.Fatalf("no 200 within 15 s of the replica's return: %s", res)
		}
		time.Sleep(50 * time.Millisecond)
	}
	again := time.Since(back)
	res, entries := l.finish(t, true)
	for k, p := range ps {
		if logs := p.Stderr(); !strings.Contains(logs, reason) {
			t.Errorf("replica %d's log does not give the reason %q:\n%s", k+1, reason, logs)
		}
	}
	checked := checkNothingLost(t, ps[1].URL, entries, len(device.Types))
	t.Logf("no replica: truthful 503 %s after the loss, health in %s; writes again %s after the replica's return; %s; %d devices checked, none lost",
		first.Round(time.Millisecond), took.Round(time.Millisecond), again.Round(time.Millisecond),
		load.AckCounts(res.Acknowledged, res.Uncertain, res.Unanswered), checked)
}
