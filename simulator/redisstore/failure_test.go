package redisstore_test

import (
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator/device"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// Redis unreachable at start: gwsim stops with one line that names the
// address but never the password.
func TestRedisUnreachableAtStart(t *testing.T) {
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

// Renames spread over two replicas, one of them killed with kill -9 in
// the middle: every device ends with its last acknowledged name (or the
// one in flight when the replica died, which may or may not have been
// applied), never an older one.
func TestReplicaKilledMidLoseNoAcknowledgedChange(t *testing.T) {
	r := simtest.StartRedis(t, false)
	ps := replicas(t, r, 2)
	type track struct{ acked, inflight string }
	n := len(device.Types)
	tracks := make([]track, n)
	var killed atomic.Bool
	var wg sync.WaitGroup
	var sent atomic.Int64
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sn := simtest.SN('a', i)
			for k := 0; k < 60; k++ {
				p := ps[k%2]
				if killed.Load() {
					p = ps[1]
				}
				c := simtest.NewClient(t, p.URL)
				name := fmt.Sprintf("n%d-%d", i, k)
				f := []device.Format{device.JSON, device.XML}[k%2]
				tracks[i].inflight = name
				res, err := sendNoFail(c, f, append(c.Envelope(), simtest.S("sn", sn), simtest.S("name", name)))
				sent.Add(1)
				if err == nil && res.Status == http.StatusOK {
					tracks[i].acked = name
				}
			}
		}()
	}
	for sent.Load() < int64(n*20) {
		time.Sleep(5 * time.Millisecond)
	}
	ps[0].Kill() // SIGKILL
	killed.Store(true)
	wg.Wait()
	c := simtest.NewClient(t, ps[1].URL)
	for i := 0; i < n; i++ {
		got := c.Device(simtest.MACA, simtest.SN('a', i)).Name
		if tracks[i].acked == "" || (got != tracks[i].acked && got != tracks[i].inflight) {
			t.Errorf("device %d: name %q, last acknowledged %q", i, got, tracks[i].acked)
		}
	}
}

// sendNoFail sends a rename and returns a transport error instead of
// failing the test (the replica may have been killed).
func sendNoFail(c *simtest.Client, f device.Format, fields []simtest.F) (res *simtest.Response, err error) {
	req, err := http.NewRequest(http.MethodPost, c.Base+device.UpdateName.Path(), strings.NewReader(string(simtest.Body(f, fields))))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", simtest.ContentType(f))
	hr, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	hr.Body.Close()
	return &simtest.Response{Status: hr.StatusCode}, nil
}
