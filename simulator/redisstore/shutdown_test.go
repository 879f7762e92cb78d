package redisstore_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// SIGTERM stops a replica promptly even when Redis is gone, with
// requests in flight waiting on it: a rollout or a drain during a Redis
// outage does not hold each pod for its whole grace period. The changes
// in flight still get their 503 (each Redis call waits out its budget);
// the client report's last fold and the journal entries still queued,
// which could not be saved, are not waited on, and the log says so. The
// 8 s bound is a guard against a hang, not a figure: here it stops in
// about 2.1 s, the in-flight changes' own wait.
func TestSigtermWithRedisGone(t *testing.T) {
	simtest.Heavy(t)
	t.Parallel()
	r := simtest.StartRedis(t, false)
	p := replicas(t, r, 1, "--log-level", "info")[0]
	c := simtest.NewClient(t, p.URL)
	i, ty := thermostat(t)
	sn := simtest.SN('a', i)
	c.Send(device.SendCommand, device.JSON, c.Command(sn, ty.Name, simtest.N(wire(ty, "heating_point", device.JSON), "18"))).OK(t, device.JSON)
	r.Kill()
	// Changes in flight while Redis is gone (each waits on it).
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Send(device.SendCommand, device.JSON, c.Command(sn, ty.Name, simtest.N(wire(ty, "heating_point", device.JSON), "19")))
		}()
	}
	time.Sleep(200 * time.Millisecond)
	began := time.Now()
	err := p.Terminate(30 * time.Second)
	took := time.Since(began)
	wg.Wait()
	if err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, p.Stderr())
	}
	if took > 8*time.Second {
		t.Errorf("SIGTERM with Redis gone took %s to stop, want under 8 s\n%s", took.Round(time.Millisecond), p.Stderr())
	}
	if !strings.Contains(p.Stderr(), "stopping without saving the client report's last counts") {
		t.Errorf("the log does not say what was not saved:\n%s", p.Stderr())
	}
	t.Logf("stopped %s after SIGTERM with Redis gone", took.Round(time.Millisecond))
}
