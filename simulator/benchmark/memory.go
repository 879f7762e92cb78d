package benchmark

import (
	"io"
	"log/slog"
	"runtime"
	"time"

	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/fleet"
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
