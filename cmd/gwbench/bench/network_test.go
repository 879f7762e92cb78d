package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// The proxy holds each request for the delay it counts, forwards it
// whole, and draws the same delays from the same seed.
func TestDelayProxyAddsTheDelaysItReports(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Method+" "+r.URL.Path)
	}))
	defer target.Close()
	u, _ := url.Parse(target.URL)
	const most, n = 20 * time.Millisecond, 12
	p := NewDelayProxy(u, most, 7)
	front := httptest.NewServer(p)
	defer front.Close()
	var waited time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		resp, err := http.Get(front.URL + "/_sim/state")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		waited += time.Since(start)
		if string(b) != "GET /_sim/state" {
			t.Fatalf("forwarded as %q", b)
		}
	}
	s, err := delayStats(context.Background(), front.URL)
	if err != nil {
		t.Fatal(err)
	}
	if s.Requests != n || s.Max != most {
		t.Fatalf("stats %+v: want %d requests (the stats read not counted), max %s", s, n, most)
	}
	if s.Total <= 0 || s.Mean() > most || waited < s.Total {
		t.Fatalf("delays reported %s (mean %s), waited %s: the proxy reports more than it added", s.Total, s.Mean(), waited)
	}
	q := NewDelayProxy(u, most, 7)
	for i := 0; i < n; i++ {
		q.draw()
	}
	if q := q.Stats(); q.Total != s.Total || q.Requests != s.Requests {
		t.Fatalf("the same seed drew %+v, then %+v", s, q)
	}
	if s.Peak != 1 {
		t.Fatalf("one request at a time, %d in flight at most reported", s.Peak)
	}
	if d := NewDelayProxy(u, 0, 7).draw(); d != 0 {
		t.Fatalf("no delay asked, %s drawn", d)
	}
}

func TestNetworkFloorAndRatio(t *testing.T) {
	n := NetworkRun{Wall: 45 * time.Second, RoundTrips: 400, Delays: DelayStats{Requests: 4, Total: 300 * time.Millisecond}}
	if n.Delays.Mean() != 75*time.Millisecond || n.Floor() != 30*time.Second || n.OverFloor() != 1.5 {
		t.Fatalf("mean %s, floor %s, ratio %v: want 75ms, 30s, 1.5", n.Delays.Mean(), n.Floor(), n.OverFloor())
	}
	n.Delays.Total = 90 * time.Second
	if n.MeanInFlight() != 2 {
		t.Fatalf("90 s of delays in 45 s: %v in flight on average, want 2", n.MeanInFlight())
	}
	zero := NetworkRun{Wall: 3 * time.Second, RoundTrips: 2600, Delays: DelayStats{Requests: 5000}}
	if zero.Floor() != 0 || zero.OverFloor() != 0 || (NetworkRun{}).Delays.Mean() != 0 {
		t.Fatalf("no delay: floor %s, ratio %v", zero.Floor(), zero.OverFloor())
	}
}

func TestOnePerTypeFleet(t *testing.T) {
	f, err := OnePerTypeFleet()
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := fleet.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	_, gw, err := back.TestedGateway()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, d := range gw.Devices {
		count[d.Type]++
	}
	for _, typ := range device.Types {
		if count[typ.Name] != 1 {
			t.Errorf("%d devices of type %s on the tested gateway, want 1", count[typ.Name], typ.Name)
		}
	}
	if len(gw.Devices) != len(device.Types) {
		t.Errorf("%d devices on the tested gateway, want %d", len(gw.Devices), len(device.Types))
	}
}
