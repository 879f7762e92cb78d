package redisstore_test

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/conformance/load"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// Redis unreachable at start: gwsim stops with one line that names the
// address but never the password.
func TestRedisUnreachableAtStart(t *testing.T) {
	t.Parallel()
	r := simtest.StartRedis(t, false)
	url := fmt.Sprintf("redis://gw:s3cretpw@127.0.0.1:%d/0", r.Port)
	r.Kill()
	out, err := exec.Command(gwsim(t), "serve", "--addr", "127.0.0.1:0", "--store", url).CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err == nil || len(lines) != 1 || !strings.Contains(lines[0], "cannot be reached") || strings.Contains(string(out), "s3cretpw") {
		t.Errorf("gwsim with Redis down: %v\n%s", err, out)
	}
}

// A different fleet stops a replica unless --store-reset.
func TestFleetGuard(t *testing.T) {
	t.Parallel()
	r := simtest.StartRedis(t, false)
	replicas(t, r, 1)
	out, err := exec.Command(gwsim(t), "serve", "--addr", "127.0.0.1:0", "--store", r.URL(), "--seed", "7").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another fleet") || !strings.Contains(string(out), "--store-reset") {
		t.Errorf("second replica with another fleet: %v\n%s", err, out)
	}
	p := simtest.Serve(t, gwsim(t), "--store", r.URL(), "--seed", "7", "--store-reset")
	var s struct{ Accounts []any }
	simtest.NewClient(t, p.URL).AdminJSON(http.MethodGet, "/_sim/state", "", &s)
	if len(s.Accounts) != 1 {
		t.Errorf("after --store-reset the seed-7 fleet (1 account) should be served: %d accounts", len(s.Accounts))
	}
}

// Redis killed while serving: 503 storage_unavailable with Retry-After,
// health degraded; Redis back: service resumes by itself, and with
// appendfsync always the change acknowledged before the kill is there.
func TestRedisLostAndBack(t *testing.T) {
	t.Parallel()
	r := simtest.StartRedis(t, true)
	ps := replicas(t, r, 1)
	c := simtest.NewClient(t, ps[0].URL)
	i, ty := thermostat(t)
	sn := simtest.SN('a', i)
	c.Send(device.SendCommand, device.JSON, c.Command(sn, ty.Name, simtest.N(wire(ty, "heating_point", device.JSON), "17"))).OK(t, device.JSON)

	r.Kill()
	for _, f := range []device.Format{device.JSON, device.XML} {
		res := c.Send(device.SendCommand, f, c.Command(sn, ty.Name, simtest.N(wire(ty, "heating_point", f), "18")))
		res.Fail(t, f, http.StatusServiceUnavailable, device.CodeStorageUnavailable, "")
		if res.Header.Get("Retry-After") == "" {
			t.Errorf("%s: 503 without Retry-After", f)
		}
	}
	if status, _, body := c.Admin(http.MethodGet, "/_sim/health", ""); status != http.StatusServiceUnavailable || !strings.Contains(string(body), "degraded") {
		t.Errorf("health with Redis down: %d %s", status, body)
	}

	r.Start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, _, _ := c.Admin(http.MethodGet, "/_sim/health", "")
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("health did not come back after Redis restarted")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if d := c.Device(simtest.MACA, sn); fmt.Sprint(d.State["heating_point"]) != "17" {
		t.Errorf("after kill -9 of redis-server (appendfsync always): heating_point %v, want the acknowledged 17", d.State["heating_point"])
	}
	c.Send(device.SendCommand, device.XML, c.Command(sn, ty.Name, simtest.N(wire(ty, "heating_point", device.XML), "19"))).OK(t, device.XML)
}

// gwconform load spread round-robin over three replicas, one of them
// killed with kill -9 in the middle: the load goes on to the other two,
// and every device ends, for its name and each field, with its last
// acknowledged value from the ack log, or with a value sent after it that
// got no answer (in flight when the replica died: it may or may not have
// been applied), never an older one.
func TestReplicaKilledMidLoadLosesNoAcknowledgedChange(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	r := simtest.StartRedis(t, false)
	ps := replicas(t, r, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := startLoad(t, ctx, []string{ps[0].URL, ps[1].URL + "," + ps[2].URL}, "8s", 300, 300)
	ps[1].Kill() // SIGKILL, mid-load
	killedAt := time.Now()
	atKill := l.lines()
	res, entries := l.finish(t, false)
	if len(res.Targets) != 3 || res.Targets[0].Errors != 0 || res.Targets[2].Errors != 0 || res.Targets[1].Errors == 0 ||
		res.Targets[0].Requests < res.Targets[1].Requests/2 {
		t.Errorf("per target: %+v (the killed replica, and only it, should count errors; the load goes on to the others)", res.Targets)
	}
	if int64(len(entries)) != res.Acknowledged+res.Uncertain+res.Unanswered || len(entries) < atKill+100 {
		t.Errorf("ack log: %d lines (%d at the kill); result: %d acknowledged, %d unanswered",
			len(entries), atKill, res.Acknowledged, res.Unanswered)
	}
	after := map[string]bool{}
	for _, e := range entries[atKill:] {
		if e.Status == load.AckAcknowledged {
			after[e.Target] = true
		}
		// (An answer read just before the kill may be logged a moment after.)
		if e.Target == ps[1].URL && e.Status == load.AckAcknowledged && e.Time.After(killedAt.Add(time.Second)) {
			t.Errorf("acknowledged by the killed replica a second after the kill: %+v", e)
		}
	}
	if !after[ps[0].URL] || !after[ps[2].URL] {
		t.Errorf("after the kill, changes were acknowledged by %v; want both surviving replicas", after)
	}
	checked := checkNothingLost(t, ps[2].URL, entries, 2*len(device.Types))
	t.Logf("%d lines, %d unanswered, %d devices checked; targets %+v", len(entries), res.Unanswered, checked, res.Targets)
}
