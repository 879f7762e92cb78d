package server

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"
)

// Faults is what fault injection currently does to interface requests.
type Faults struct {
	// Latency is added before every interface answer.
	Latency Duration `json:"latency"`
	// ErrorRate in [0,1] is the share of requests answered 503 injected_fault.
	ErrorRate float64 `json:"error_rate"`
	// OfflineGateways answer 504 gateway_offline.
	OfflineGateways []string `json:"offline_gateways"`
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
	return nil
}

// faultState holds the faults as an immutable snapshot that set replaces
// whole: every request reads it, and an atomic load is all that costs, with
// no lock that requests share.
type faultState struct {
	cur atomic.Pointer[faultSnapshot]
}

type faultSnapshot struct {
	f       Faults
	offline map[string]bool
}

func (s *faultState) get() Faults {
	p := s.cur.Load()
	f := p.f
	f.OfflineGateways = append([]string{}, p.f.OfflineGateways...)
	return f
}

func (s *faultState) set(f Faults) {
	off := make(map[string]bool, len(f.OfflineGateways))
	for _, m := range f.OfflineGateways {
		off[m] = true
	}
	f.OfflineGateways = append([]string{}, f.OfflineGateways...)
	s.cur.Store(&faultSnapshot{f: f, offline: off})
}

// draw returns the latency to add and whether to fail this request.
func (s *faultState) draw() (time.Duration, bool) {
	p := s.cur.Load()
	return p.f.Latency.Duration, p.f.ErrorRate > 0 && rand.Float64() < p.f.ErrorRate
}

func (s *faultState) isOffline(mac string) bool {
	p := s.cur.Load()
	return len(p.offline) > 0 && p.offline[mac]
}
