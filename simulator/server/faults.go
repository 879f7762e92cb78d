package server

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/simulator/device"
)

// Faults is what fault injection currently does to interface requests.
type Faults struct {
	// Latency is added before every interface answer.
	Latency Duration `json:"latency"`
	// ErrorRate in [0,1] is the share of requests answered 503 injected_fault.
	ErrorRate float64 `json:"error_rate"`
	// OfflineGateways answer 504 gateway_offline.
	OfflineGateways []string `json:"offline_gateways"`
	// UnreachableDevices (by sn) answer 504 device_unreachable to commands
	// and renames: the gateway answers, the device does not.
	UnreachableDevices []string `json:"unreachable_devices"`
	// SlowDevices add their latency (by sn) to requests about them.
	SlowDevices map[string]Duration `json:"slow_devices"`
	// Operations limit latency and an error rate to one operation
	// ("command", "message", "update_name"), on top of the ones above.
	Operations map[string]OperationFaults `json:"operations"`
}

// OperationFaults are faults of one operation only.
type OperationFaults struct {
	Latency   Duration `json:"latency"`
	ErrorRate float64  `json:"error_rate"`
}

// Duration is a time.Duration written as "150ms" in JSON.
type Duration struct{ time.Duration }

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n float64
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("latency must be a duration such as \"150ms\"")
		}
		d.Duration = time.Duration(n * float64(time.Millisecond))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("latency must be a duration such as \"150ms\", not %q", s)
	}
	d.Duration = v
	return nil
}

// MaxLatency bounds injected latency so that a typo cannot hang clients.
const MaxLatency = 60 * time.Second

func (f *Faults) check() error {
	if f.Latency.Duration < 0 || f.Latency.Duration > MaxLatency {
		return fmt.Errorf("latency must be from 0 to %s", MaxLatency)
	}
	if f.ErrorRate < 0 || f.ErrorRate > 1 || f.ErrorRate != f.ErrorRate {
		return fmt.Errorf("error_rate must be from 0 to 1")
	}
	for i, m := range f.OfflineGateways {
		f.OfflineGateways[i] = strings.ToLower(strings.TrimSpace(m))
		if len(f.OfflineGateways[i]) != 12 || strings.Trim(f.OfflineGateways[i], "0123456789abcdef") != "" {
			return fmt.Errorf("offline_gateways[%d] must be a 12-hex mac", i)
		}
	}
	if f.OfflineGateways == nil {
		f.OfflineGateways = []string{}
	}
	for i, sn := range f.UnreachableDevices {
		f.UnreachableDevices[i] = strings.ToLower(strings.TrimSpace(sn))
		if !isHex(f.UnreachableDevices[i], 32) {
			return fmt.Errorf("unreachable_devices[%d] must be a 32-hex sn", i)
		}
	}
	if f.UnreachableDevices == nil {
		f.UnreachableDevices = []string{}
	}
	slow := make(map[string]Duration, len(f.SlowDevices))
	for sn, d := range f.SlowDevices {
		k := strings.ToLower(strings.TrimSpace(sn))
		if !isHex(k, 32) {
			return fmt.Errorf("slow_devices must be keyed by 32-hex sn, not %q", sn)
		}
		if d.Duration < 0 || d.Duration > MaxLatency {
			return fmt.Errorf("slow_devices latency of %s must be from 0 to %s", k, MaxLatency)
		}
		slow[k] = d
	}
	f.SlowDevices = slow
	if f.Operations == nil {
		f.Operations = map[string]OperationFaults{}
	}
	for name, of := range f.Operations {
		if _, ok := device.LookupOperation(name); !ok {
			return fmt.Errorf("operations must be keyed by command, message or update_name, not %q", name)
		}
		if of.Latency.Duration < 0 || of.Latency.Duration > MaxLatency {
			return fmt.Errorf("operations latency of %s must be from 0 to %s", name, MaxLatency)
		}
		if of.ErrorRate < 0 || of.ErrorRate > 1 || of.ErrorRate != of.ErrorRate {
			return fmt.Errorf("operations error_rate of %s must be from 0 to 1", name)
		}
	}
	return nil
}

func isHex(s string, n int) bool {
	return len(s) == n && strings.Trim(s, "0123456789abcdef") == ""
}

// faultState holds the faults as an immutable snapshot that set replaces
// whole: every request reads it, and an atomic load is all that costs, with
// no lock that requests share.
type faultState struct {
	cur atomic.Pointer[faultSnapshot]
}

type faultSnapshot struct {
	f           Faults
	offline     map[string]bool
	unreachable map[string]bool
}

func (s *faultState) get() Faults {
	return s.cur.Load().f.clone()
}

// clone copies the lists and maps, so that a caller cannot change the
// snapshot every request reads.
func (f Faults) clone() Faults {
	f.OfflineGateways = append([]string{}, f.OfflineGateways...)
	f.UnreachableDevices = append([]string{}, f.UnreachableDevices...)
	slow := make(map[string]Duration, len(f.SlowDevices))
	for k, v := range f.SlowDevices {
		slow[k] = v
	}
	ops := make(map[string]OperationFaults, len(f.Operations))
	for k, v := range f.Operations {
		ops[k] = v
	}
	f.SlowDevices, f.Operations = slow, ops
	return f
}

func (s *faultState) set(f Faults) {
	f = f.clone()
	snap := &faultSnapshot{f: f, offline: make(map[string]bool, len(f.OfflineGateways)), unreachable: make(map[string]bool, len(f.UnreachableDevices))}
	for _, m := range f.OfflineGateways {
		snap.offline[m] = true
	}
	for _, sn := range f.UnreachableDevices {
		snap.unreachable[sn] = true
	}
	s.cur.Store(snap)
}

// draw returns the latency to add to a request of an operation about a
// device (sn empty for a message), and whether to fail it.
func (s *faultState) draw(op, sn string) (time.Duration, bool) {
	p := s.cur.Load()
	latency, rate := p.f.Latency.Duration, p.f.ErrorRate
	if len(p.f.Operations) > 0 {
		if of, ok := p.f.Operations[op]; ok {
			latency += of.Latency.Duration
			rate = 1 - (1-rate)*(1-of.ErrorRate)
		}
	}
	if len(p.f.SlowDevices) > 0 && sn != "" {
		latency += p.f.SlowDevices[sn].Duration
	}
	return latency, rate > 0 && rand.Float64() < rate
}

func (s *faultState) isUnreachable(sn string) bool {
	p := s.cur.Load()
	return len(p.unreachable) > 0 && p.unreachable[sn]
}

func (s *faultState) isOffline(mac string) bool {
	p := s.cur.Load()
	return len(p.offline) > 0 && p.offline[mac]
}
