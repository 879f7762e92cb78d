package redisstore_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// byKey is the client of an api_key in a report (key-a and key-b are
// both shown as key-…: their ids tell them apart).
func byKey(rep clients.Report, key string) (clients.Client, bool) {
	sum := sha256.Sum256([]byte(key))
	for _, c := range rep.Clients {
		if c.ID == hex.EncodeToString(sum[:4]) {
			return c, true
		}
	}
	return clients.Client{}, false
}

// clientReport is GET /_sim/clients of a replica.
func clientReport(t *testing.T, c *simtest.Client) clients.Report {
	t.Helper()
	var rep clients.Report
	c.AdminJSON(http.MethodGet, "/_sim/clients", "", &rep)
	return rep
}

// waitReport polls a replica's client report until ok holds (the other
// replicas fold their counts in every clients.FoldEvery).
func waitReport(t *testing.T, c *simtest.Client, what string, ok func(clients.Report) bool) clients.Report {
	t.Helper()
	deadline := time.Now().Add(4*clients.FoldEvery + 5*time.Second)
	for {
		rep := clientReport(t, c)
		if ok(rep) {
			return rep
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(rep, "", " ")
			t.Fatalf("%s: the report never showed it:\n%s", what, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClientReportAcrossReplicas: three replicas on one redis-server;
// an app's requests, in JSON and XML, spread over the three, and a second
// app's on one: every replica's /_sim/clients shows all of them, merged,
// says it covers every replica, and a DELETE on one forgets them on all.
func TestClientReportAcrossReplicas(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	r := simtest.StartRedis(t, false)
	ps := replicas(t, r, 3)
	i, ty := thermostat(t)
	sn := simtest.SN('a', i)
	sent := 0
	for k, p := range ps {
		a := simtest.NewClient(t, p.URL)
		for _, f := range []device.Format{device.JSON, device.XML} {
			a.Send(device.SendCommand, f, a.Command(sn, ty.Name, simtest.N(wire(ty, "heating_point", f), strconv.Itoa(15+k)))).OK(t, f)
			sent++
		}
		if k == 1 {
			// A refused request, on replica 2 only.
			a.Send(device.SendCommand, device.XML, a.Command(sn, ty.Name, simtest.N(wire(ty, "heating_point", device.XML), "900"))).
				Fail(t, device.XML, http.StatusBadRequest, device.CodeInvalidField, wire(ty, "heating_point", device.XML))
			sent++
		}
	}
	b := simtest.NewClient(t, ps[2].URL)
	b.APIKey, b.Secret, b.Account, b.MAC = simtest.KeyB, simtest.SecretB, simtest.AccountB, simtest.MACB
	b.Send(device.SendMessage, device.JSON, append(b.Envelope(), simtest.S("message_type", "alarm"), simtest.S("message_value", "smoke=1"))).OK(t, device.JSON)

	for k, p := range ps {
		c := simtest.NewClient(t, p.URL)
		rep := waitReport(t, c, "replica "+strconv.Itoa(k+1), func(rep clients.Report) bool {
			a, okA := byKey(rep, simtest.KeyA)
			bb, okB := byKey(rep, simtest.KeyB)
			return okA && okB && a.Requests == uint64(sent) && bb.Requests == 1
		})
		if rep.Scope != clients.ScopeReplicas || len(rep.Replicas) != 3 {
			t.Errorf("replica %d: scope %q, replicas %v", k+1, rep.Scope, rep.Replicas)
		}
		a, _ := byKey(rep, simtest.KeyA)
		got := map[string]uint64{}
		for _, cv := range a.Coverage {
			got[cv.Operation+" "+cv.Type+" "+cv.Format] += cv.Succeeded
		}
		if got["command Thermostat json"] != 3 || got["command Thermostat xml"] != 3 {
			t.Errorf("replica %d: coverage %+v", k+1, a.Coverage)
		}
		if len(a.Errors) != 1 || a.Errors[0].Code != device.CodeInvalidField || a.Errors[0].Count != 1 {
			t.Errorf("replica %d: errors %+v", k+1, a.Errors)
		}
		if j := a.Judgement(clients.JudgeValid); j.Violations != 1 || j.Passed || !strings.Contains(j.Latest, "command Thermostat (xml)") {
			t.Errorf("replica %d: %+v", k+1, j)
		}
		if a.Skew == nil || a.Skew.Samples != uint64(sent) {
			t.Errorf("replica %d: skew %+v", k+1, a.Skew)
		}
		if len(rep.Clients) != 2 {
			t.Errorf("replica %d: %d clients", k+1, len(rep.Clients))
		}
	}

	// Forgotten everywhere, and counted afresh afterwards.
	c0 := simtest.NewClient(t, ps[0].URL)
	simtest.NewClient(t, ps[1].URL).AdminJSON(http.MethodDelete, "/_sim/clients", "", nil)
	time.Sleep(2 * clients.FoldEvery) // every replica notices the reset
	a := simtest.NewClient(t, ps[2].URL)
	a.Send(device.SendCommand, device.JSON, a.Command(sn, ty.Name, simtest.N(wire(ty, "heating_point", device.JSON), "20"))).OK(t, device.JSON)
	waitReport(t, c0, "after the reset", func(rep clients.Report) bool {
		ca, okA := byKey(rep, simtest.KeyA)
		_, okB := byKey(rep, simtest.KeyB)
		return okA && !okB && ca.Requests == 1
	})

	// The metrics say Redis is up, then down when it is gone.
	metric := func() string {
		status, _, body := c0.Admin(http.MethodGet, "/metrics", "")
		if status != http.StatusOK {
			t.Fatalf("GET /metrics: %d", status)
		}
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, "gwsim_redis_up "); ok {
				return v
			}
		}
		return "absent"
	}
	if v := metric(); v != "1" {
		t.Errorf("gwsim_redis_up %s with Redis up", v)
	}
	r.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for metric() != "0" {
		if time.Now().After(deadline) {
			t.Fatalf("gwsim_redis_up still %s with Redis gone", metric())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Redis gone: the report says it is this replica's own.
	if rep := clientReport(t, c0); rep.Scope != clients.ScopeProcess || rep.ScopeNote == "" {
		t.Errorf("with Redis gone: scope %q (%s)", rep.Scope, rep.ScopeNote)
	}
}
