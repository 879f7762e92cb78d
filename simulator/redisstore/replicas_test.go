package redisstore_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// These tests run gwsim replicas as real processes on a real redis-server
// (simtest.StartRedis), on loopback, and stop both by PID.

func gwsim(t *testing.T) string { return simtest.Binary(t, "gwsim") }

// gwconform is cmd/gwconform, built once for the package's tests.
func gwconform(t *testing.T) string { return simtest.Binary(t, "gwconform") }

func fleetFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "fleet.yaml")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := simtest.Fleet().WriteYAML(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

// redisURL is a *simtest.Redis or a *simtest.Cluster.
type redisURL interface{ URL() string }

// replicas starts n gwsim processes on one Redis (or Cluster) with the
// test fleet.
func replicas(t *testing.T, r redisURL, n int, args ...string) []*simtest.Process {
	bin, fl := gwsim(t), fleetFile(t)
	var ps []*simtest.Process
	for i := 0; i < n; i++ {
		ps = append(ps, simtest.Serve(t, bin, append([]string{"--store", r.URL(), "--fleet", fl}, args...)...))
	}
	return ps
}

func thermostat(t *testing.T) (int, *device.Type) {
	for i, ty := range device.Types {
		if ty.Name == "Thermostat" {
			return i, ty
		}
	}
	t.Fatal("no Thermostat type")
	return 0, nil
}

func wire(ty *device.Type, name string, f device.Format) string {
	fd, _, _ := ty.Field(name)
	return fd.WireName(f)
}

// A change through one replica is seen by every replica's admin API, in
// both formats; the journal, faults and reset are shared too.
func TestReplicasShareOneFleet(t *testing.T) {
	t.Parallel()
	r := simtest.StartRedis(t, false)
	ps := replicas(t, r, 3)
	i, ty := thermostat(t)
	sn := simtest.SN('a', i)
	for k, f := range []device.Format{device.JSON, device.XML} {
		a := simtest.NewClient(t, ps[k].URL)
		point := fmt.Sprint(15 + k)
		a.Send(device.SendCommand, f, a.Command(sn, ty.Name, simtest.N(wire(ty, "heating_point", f), point))).OK(t, f)
		a.Send(device.UpdateName, f, append(a.Envelope(), simtest.S("sn", sn), simtest.S("name", "Hall "+f.String()))).OK(t, f)
		for _, p := range ps {
			d := simtest.NewClient(t, p.URL).Device(simtest.MACA, sn)
			if fmt.Sprint(d.State["heating_point"]) != point || d.Name != "Hall "+f.String() {
				t.Errorf("%s: replica %s sees %v %q after a %s change through replica %d", f, p.URL, d.State, d.Name, f, k)
			}
		}
	}
	a, c := simtest.NewClient(t, ps[0].URL), simtest.NewClient(t, ps[2].URL)
	a.Send(device.SendMessage, device.JSON, append(a.Envelope(), simtest.S("message_type", "alarm"), simtest.S("message_value", "smoke=1"))).OK(t, device.JSON)
	if m := c.Messages(simtest.MACA); len(m) != 1 || m[0].Value != "smoke=1" {
		t.Errorf("messages through replica 3: %+v", m)
	}

	// One journal: replica 3 shows the requests replicas 1 and 2 served, each named.
	var entries []server.Entry
	c.AdminJSON(http.MethodGet, "/_sim/journal?limit=50", "", &entries)
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Replica] = true
	}
	if len(entries) < 5 || len(names) < 2 || names[""] {
		t.Errorf("journal on replica 3: %d entries from replicas %v", len(entries), names)
	}

	// Faults set on one replica apply to all.
	a.AdminJSON(http.MethodPut, "/_sim/faults", `{"offline_gateways":["`+simtest.MACA+`"]}`, nil)
	deadline := time.Now().Add(3 * time.Second)
	for {
		res := c.Send(device.SendCommand, device.XML, c.Command(sn, ty.Name, simtest.S(wire(ty, "mode", device.XML), "Heat")))
		if res.Code == device.CodeGatewayOffline {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica 3 does not apply the faults set on replica 1: %s", res)
		}
		time.Sleep(50 * time.Millisecond)
	}
	a.AdminJSON(http.MethodDelete, "/_sim/faults", "", nil)

	// Reset through one replica resets what all see.
	simtest.NewClient(t, ps[1].URL).Reset()
	if d := c.Device(simtest.MACA, sn); d.Name != "Thermostat a" || len(c.Messages(simtest.MACA)) != 0 {
		t.Errorf("after reset through replica 2, replica 3 sees %q and messages %v", d.Name, c.Messages(simtest.MACA))
	}
}

// The whole conformance suite passes against each replica.
func TestConformanceOnEachReplica(t *testing.T) {
	simtest.Heavy(t)
	r := simtest.StartRedis(t, false)
	conformOnEach(t, replicas(t, r, 3))
}

// conformOnEach runs gwconform run against each replica in turn: every
// check must pass.
func conformOnEach(t *testing.T, ps []*simtest.Process) {
	t.Helper()
	dir := t.TempDir()
	conform := gwconform(t)
	fl := fleetFile(t)
	for k, p := range ps {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		out, err := exec.CommandContext(ctx, conform, "run", "--target", p.URL, "--fleet", fl,
			"--report-dir", filepath.Join(dir, fmt.Sprint("r", k))).CombinedOutput()
		cancel()
		if err != nil || !strings.Contains(string(out), " 0 failed") {
			t.Errorf("gwconform against replica %d: %v\n%s", k+1, err, out)
		}
	}
}

// Commands to one device through different replicas at once never lose a
// field: each writer sets its own field, and each field ends at its
// writer's last acknowledged value.
func TestConcurrentCommandsAcrossReplicas(t *testing.T) {
	t.Parallel()
	r := simtest.StartRedis(t, false)
	ps := replicas(t, r, 3)
	i, ty := thermostat(t)
	sn := simtest.SN('a', i)
	type writer struct {
		field  string
		values []string
		format device.Format
	}
	ws := []writer{
		{"heating_point", []string{"10", "11", "12", "13", "14", "15", "16", "17", "18", "19"}, device.JSON},
		{"cooling_point", []string{"20", "21", "22", "23", "24", "25", "26", "27", "28", "29"}, device.XML},
		{"mode", []string{"Auto", "Cool", "Heat", "Off", "Auto", "Cool", "Heat", "Off", "Auto", "Cool"}, device.JSON},
	}
	last := make([]string, len(ws))
	var wg sync.WaitGroup
	for k, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := simtest.NewClient(t, ps[k].URL)
			for round := 0; round < 5; round++ {
				for _, v := range w.values {
					var f simtest.F
					if w.field == "mode" {
						f = simtest.S(wire(ty, w.field, w.format), v)
					} else {
						f = simtest.N(wire(ty, w.field, w.format), v)
					}
					if res := c.Send(device.SendCommand, w.format, c.Command(sn, ty.Name, f)); res.Status == http.StatusOK {
						last[k] = v
					} else {
						t.Errorf("%s=%s: %s", w.field, v, res)
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, p := range ps {
		d := simtest.NewClient(t, p.URL).Device(simtest.MACA, sn)
		for k, w := range ws {
			if got := fmt.Sprint(d.State[w.field]); got != last[k] {
				t.Errorf("replica %s: %s = %s, last acknowledged %s", p.URL, w.field, got, last[k])
			}
		}
	}
}

// A replay is caught whichever replica gets it; the rate limit counts
// requests to every replica.
func TestReplayAndRateLimitAcrossReplicas(t *testing.T) {
	t.Parallel()
	r := simtest.StartRedis(t, false)
	ps := replicas(t, r, 2, "--reject-replays", "--rate-limit", "5")
	a, b := simtest.NewClient(t, ps[0].URL), simtest.NewClient(t, ps[1].URL)
	for _, f := range []device.Format{device.JSON, device.XML} {
		fields := append(a.Envelope(), simtest.S("sn", simtest.SN('a', 0)), simtest.S("name", "Once "+f.String()))
		a.Send(device.UpdateName, f, fields).OK(t, f)
		b.Send(device.UpdateName, f, fields).Fail(t, f, http.StatusUnauthorized, device.CodeReplayedRequest, "")
		time.Sleep(1100 * time.Millisecond) // a new timestamp second for the next sign
	}
	// 5 a second per client across both replicas: of 8 requests in one
	// second, at most 5 pass.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	ok, limited := 0, 0
	for k := 0; k < 8; k++ {
		c := []*simtest.Client{a, b}[k%2]
		res := c.Post(device.SendCommand.Path(), simtest.ContentType(device.JSON), []byte(`{}`))
		switch res.Status {
		case http.StatusTooManyRequests:
			limited++
			if res.Header.Get("Retry-After") == "" || res.Code != device.CodeRateLimited {
				t.Errorf("429 without Retry-After or code: %s", res)
			}
		default:
			ok++
		}
	}
	if ok > 5 || limited < 3 {
		t.Errorf("8 requests in a second over two replicas with --rate-limit 5: %d passed, %d limited", ok, limited)
	}
}
