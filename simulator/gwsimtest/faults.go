package gwsimtest

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gwdmi/gwtools/simulator/server"
)

// Faults is what fault injection does to the interface's requests: the
// faults PUT /_sim/faults sets (docs/dashboard.md). Each field is the
// member of that body with the same name in snake case (OfflineGateways:
// offline_gateways), and an error of SetFaults names the member.
type Faults struct {
	// Latency is added before every answer.
	Latency time.Duration
	// ErrorRate, from 0 to 1, is the share of requests answered 503
	// injected_fault.
	ErrorRate float64
	// OperationErrorRates is an error rate for one operation only, keyed
	// by its name: "command", "message" or "update_name".
	OperationErrorRates map[string]float64
	// OfflineGateways (their macs) answer 504 gateway_offline.
	OfflineGateways []string
	// UnreachableDevices answer 504 device_unreachable: the gateway is
	// there, the device behind it does not answer.
	UnreachableDevices []DeviceRef
	// SlowDevices add their own latency to the requests naming them.
	SlowDevices []SlowDevice
	// RetryAfter is the Retry-After the injected errors carry: a number
	// of seconds ("2"), a duration rounded up to whole seconds
	// ("1500ms"), or "none" (also "0") for a service that sends none.
	// Empty: "1".
	RetryAfter string
	// RetryAfterDate sends that Retry-After as an HTTP date, the moment
	// the wait ends (RFC 9110 allows both forms, so an app must read
	// both).
	RetryAfterDate bool
}

// DeviceRef names one device by its gateway's mac and its sn.
type DeviceRef struct {
	MAC string
	SN  string
}

// SlowDevice is a device whose requests wait its Latency more.
type SlowDevice struct {
	DeviceRef
	Latency time.Duration
}

// serverFaults is f as the simulator takes it. Slices and maps are
// copied: the simulator normalises what it is given (macs in lower case),
// and the caller's Faults stay as written.
func (f Faults) serverFaults() server.Faults {
	sf := server.Faults{Latency: server.Duration{Duration: f.Latency}, ErrorRate: f.ErrorRate,
		OperationErrorRates: maps.Clone(f.OperationErrorRates), OfflineGateways: slices.Clone(f.OfflineGateways),
		RetryAfter: f.RetryAfter, RetryAfterDate: f.RetryAfterDate}
	for _, d := range f.UnreachableDevices {
		sf.UnreachableDevices = append(sf.UnreachableDevices, server.DeviceRef{MAC: d.MAC, SN: d.SN})
	}
	for _, d := range f.SlowDevices {
		sf.SlowDevices = append(sf.SlowDevices, server.SlowDevice{DeviceRef: server.DeviceRef{MAC: d.MAC, SN: d.SN},
			Latency: server.Duration{Duration: d.Latency}})
	}
	return sf
}

// faultsOf is the simulator's faults as this package gives them: no
// fault is the zero Faults (nil where the simulator holds empty lists).
func faultsOf(sf server.Faults) Faults {
	f := Faults{Latency: sf.Latency.Duration, ErrorRate: sf.ErrorRate, RetryAfter: sf.RetryAfter, RetryAfterDate: sf.RetryAfterDate}
	if len(sf.OperationErrorRates) > 0 {
		f.OperationErrorRates = maps.Clone(sf.OperationErrorRates)
	}
	if len(sf.OfflineGateways) > 0 {
		f.OfflineGateways = slices.Clone(sf.OfflineGateways)
	}
	for _, d := range sf.UnreachableDevices {
		f.UnreachableDevices = append(f.UnreachableDevices, DeviceRef{MAC: d.MAC, SN: d.SN})
	}
	for _, d := range sf.SlowDevices {
		f.SlowDevices = append(f.SlowDevices, SlowDevice{DeviceRef: DeviceRef{MAC: d.MAC, SN: d.SN}, Latency: d.Latency.Duration})
	}
	return f
}

// Faults are the faults in force.
func (s *Server) Faults() Faults { return faultsOf(s.sim.Server.Faults()) }

// SetFaults replaces the faults in force, as PUT /_sim/faults does: a
// gateway or device the fleet does not have, a rate out of 0..1 or an
// operation that does not exist is an error naming it, and changes
// nothing.
func (s *Server) SetFaults(f Faults) error {
	if err := s.sim.Server.SetHandFaults(f.serverFaults()); err != nil {
		return fmt.Errorf("gwsimtest: faults: %w", err)
	}
	return nil
}

// ClearFaults ends every fault (DELETE /_sim/faults).
func (s *Server) ClearFaults() {
	s.sim.Server.SetHandFaults(server.Faults{})
}

// change adds to the faults in force.
func (s *Server) change(fn func(*Faults)) error {
	f := s.Faults()
	fn(&f)
	return s.SetFaults(f)
}

// GatewayOffline makes a gateway answer 504 gateway_offline until the
// faults are cleared.
func (s *Server) GatewayOffline(mac string) error {
	return s.change(func(f *Faults) { f.OfflineGateways = append(f.OfflineGateways, mac) })
}

// DeviceUnreachable makes requests naming a device answer 504
// device_unreachable.
func (s *Server) DeviceUnreachable(mac, sn string) error {
	return s.change(func(f *Faults) { f.UnreachableDevices = append(f.UnreachableDevices, DeviceRef{MAC: mac, SN: sn}) })
}

// DeviceSlow makes requests naming a device wait d more.
func (s *Server) DeviceSlow(mac, sn string, d time.Duration) error {
	return s.change(func(f *Faults) {
		f.SlowDevices = append(f.SlowDevices, SlowDevice{DeviceRef: DeviceRef{MAC: mac, SN: sn}, Latency: d})
	})
}

// ErrorRate fails a share (0 to 1) of the requests of one operation
// ("command", "message" or "update_name"; every operation when "") with
// 503 injected_fault.
func (s *Server) ErrorRate(operation string, rate float64) error {
	return s.change(func(f *Faults) {
		if operation == "" {
			f.ErrorRate = rate
			return
		}
		if f.OperationErrorRates == nil {
			f.OperationErrorRates = map[string]float64{}
		}
		f.OperationErrorRates[operation] = rate
	})
}

// Latency adds d before every answer.
func (s *Server) Latency(d time.Duration) error {
	return s.change(func(f *Faults) { f.Latency = d })
}
