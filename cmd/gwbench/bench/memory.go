package bench

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
)

// FleetMemory is what a generated fleet costs a simulator.
type FleetMemory struct {
	Devices  int `json:"devices"`
	Gateways int `json:"gateways"`
	// Generate is fleet.Generate; Load is simulator.New on the fleet
	// (the store, the keys, the server), without listening.
	Generate time.Duration `json:"generate_ns"`
	Load     time.Duration `json:"load_ns"`
	// FleetBytes is the heap the generated fleet holds; SimBytes what the
	// simulator adds on top (the store's records, index and locks); both
	// stay, since the simulator keeps the fleet for /_sim/reset.
	FleetBytes int64 `json:"fleet_bytes"`
	SimBytes   int64 `json:"sim_bytes"`
}

// TotalBytes is the heap a running simulator holds for the fleet.
func (m FleetMemory) TotalBytes() int64 { return m.FleetBytes + m.SimBytes }

// PerDevice is bytes per device.
func (m FleetMemory) PerDevice(bytes int64) float64 {
	if m.Devices == 0 {
		return 0
	}
	return float64(bytes) / float64(m.Devices)
}

// PerGateway is the devices per gateway of the measured fleets, as
// gwsim serve --seed would be asked for them.
const PerGateway = 1000

// MeasureFleet generates a fleet of devices (PerGateway to a gateway, or
// fewer when devices is smaller) and loads it into a simulator, measuring
// the time of each step and the live heap after each (runtime.ReadMemStats
// after a forced GC, as a delta). Run it in a fresh process: anything else
// the process holds or frees in between shows in the deltas.
func MeasureFleet(devices int) FleetMemory {
	per := min(devices, PerGateway)
	gateways := max(1, devices/max(per, 1))
	m := FleetMemory{Devices: gateways * per, Gateways: gateways}
	heap := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	h0 := heap()
	t0 := time.Now()
	f := fleet.Generate(1, gateways, per)
	m.Generate = time.Since(t0)
	h1 := heap()
	t1 := time.Now()
	sim := simulator.New(simulator.Options{Fleet: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	m.Load = time.Since(t1)
	h2 := heap()
	runtime.KeepAlive(sim)
	runtime.KeepAlive(f)
	m.FleetBytes, m.SimBytes = h1-h0, h2-h1
	return m
}

// RSSRun is gwsim serve's resident memory (VmRSS), as a user sees it:
// with the demo fleet and with a generated fleet of RSSDevices.
type RSSRun struct {
	Devices  int    `json:"devices"`
	DemoCmd  string `json:"demo_command"`
	DemoRSS  int64  `json:"demo_rss"`
	FleetCmd string `json:"fleet_command"`
	FleetRSS int64  `json:"fleet_rss"`
}

// PerDevice is the RSS a device adds: the difference over the devices.
func (r RSSRun) PerDevice() float64 {
	if r.Devices == 0 || r.FleetRSS == 0 {
		return 0
	}
	return float64(r.FleetRSS-r.DemoRSS) / float64(r.Devices)
}

// BigFleetRun is gwsim serve started with a large generated fleet.
type BigFleetRun struct {
	Devices int           `json:"devices"`
	Command string        `json:"command"`
	Startup time.Duration `json:"startup_ns"` // from start until it listens
	RSS     int64         `json:"rss"`
}

// RSSDevices is the fleet of the RSS-per-device figure.
const RSSDevices = 1_000_000

// serveArgv is gwsim serve with default flags and a generated fleet of
// devices (PerGateway to a gateway); 0 devices: the demo fleet.
func serveArgv(o Options, devices int) []string {
	argv := []string{filepath.Join(o.Bin, "gwsim"), "serve", "--addr", "127.0.0.1:0"}
	if devices > 0 {
		per := min(devices, PerGateway)
		argv = append(argv, "--seed", "1", "--gateways", strconv.Itoa(max(1, devices/per)), "--devices-per-gateway", strconv.Itoa(per))
	}
	return argv
}

// measureRSS reads gwsim serve's RSS with the demo fleet and with
// RSSDevices devices, each in a fresh process once it listens and has
// settled.
func (r *Report) measureRSS(ctx context.Context, o Options, logf func(string, ...any)) error {
	r.RSS.Devices = RSSDevices
	for _, n := range []int{0, RSSDevices} {
		argv := serveArgv(o, n)
		s, err := startServer(argv, 2*time.Minute)
		if err != nil {
			return err
		}
		rss := s.settledRSS()
		s.stop()
		if n == 0 {
			r.RSS.DemoCmd, r.RSS.DemoRSS = strings.Join(shortArgv(argv), " "), rss
		} else {
			r.RSS.FleetCmd, r.RSS.FleetRSS = strings.Join(shortArgv(argv), " "), rss
		}
	}
	logf("  RSS: demo fleet %s, %d devices %s: %.0f B a device", mib(r.RSS.DemoRSS), RSSDevices, mib(r.RSS.FleetRSS), r.RSS.PerDevice())
	return nil
}

// measureBig starts gwsim serve with o.BigFleet devices and reads how
// long it took to listen and its RSS.
func (r *Report) measureBig(ctx context.Context, o Options, logf func(string, ...any)) error {
	if o.BigFleet < 0 {
		return nil
	}
	argv := serveArgv(o, o.BigFleet)
	s, err := startServer(argv, 5*time.Minute)
	if err != nil {
		return err
	}
	r.Big = BigFleetRun{Devices: o.BigFleet, Command: strings.Join(shortArgv(argv), " "), Startup: s.started, RSS: s.settledRSS()}
	s.stop()
	logf("  %d devices: listening after %s, RSS %s", o.BigFleet, r.Big.Startup.Round(time.Millisecond), mib(r.Big.RSS))
	return nil
}
