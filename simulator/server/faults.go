package server

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Faults is what fault injection currently does to interface requests.
type Faults struct {
	// Latency is added before every interface answer.
	Latency Duration `json:"latency"`
	// ErrorRate in [0,1] is the share of requests answered 503 injected_fault.
	ErrorRate float64 `json:"error_rate"`
	// OfflineGateways answer 504 gateway_offline.
	OfflineGateways []string `json:"offline_gateways"`
	// UnreachableDevices answer 504 device_unreachable: the gateway is
	// there, the device behind it does not answer.
	UnreachableDevices []DeviceRef `json:"unreachable_devices"`
	// SlowDevices add their own latency to requests naming that device.
	SlowDevices []SlowDevice `json:"slow_devices"`
	// OperationErrorRates is an error rate for one operation only, keyed
	// by its name: "command", "message" or "update_name".
	OperationErrorRates map[string]float64 `json:"operation_error_rates"`
	// RetryAfter is the Retry-After the injected errors carry (503
	// injected_fault, 504 gateway_offline and device_unreachable), as a
	// real service sends one: a number of seconds ("1", "2"), a duration
	// rounded up to whole seconds ("1500ms"), or "none" (also "0") for a
	// service that sends none. Empty: DefaultRetryAfter.
	RetryAfter string `json:"retry_after,omitempty"`
	// RetryAfterDate sends that Retry-After as an HTTP date (RFC 9110
	// allows both forms, so an app must read both): the moment the wait
	// ends, rounded up to the second.
	RetryAfterDate bool `json:"retry_after_date,omitempty"`
}

// DefaultRetryAfter is the Retry-After of injected errors when the
// faults do not set one.
const DefaultRetryAfter = "1"

// NoRetryAfter is Faults.RetryAfter for injected errors without one.
const NoRetryAfter = "none"

// MaxRetryAfter bounds an injected Retry-After.
const MaxRetryAfter = time.Hour

// retryAfterHeader is the Retry-After header value the faults' errors
// carry, "" for none.
func (f *Faults) retryAfterHeader() string {
	switch f.RetryAfter {
	case "":
		return DefaultRetryAfter
	case NoRetryAfter:
		return ""
	}
	return f.RetryAfter
}

// checkRetryAfter reads RetryAfter into its canonical form: whole
// seconds, or NoRetryAfter.
func (f *Faults) checkRetryAfter() error {
	v := strings.ToLower(strings.TrimSpace(f.RetryAfter))
	if v == "" {
		f.RetryAfter = ""
		return nil
	}
	if v == NoRetryAfter || v == "0" {
		f.RetryAfter = NoRetryAfter
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, serr := strconv.ParseUint(v, 10, 32)
		if serr != nil {
			return fmt.Errorf("retry_after must be a number of seconds (1), a duration (1500ms) or none, not %q", f.RetryAfter)
		}
		d = time.Duration(min(secs, uint64(MaxRetryAfter/time.Second)+1)) * time.Second
	}
	if d < 0 || d > MaxRetryAfter {
		return fmt.Errorf("retry_after must be from 0 to %s, or none", MaxRetryAfter)
	}
	if d == 0 {
		f.RetryAfter = NoRetryAfter
		return nil
	}
	f.RetryAfter = strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
	return nil
}

// DeviceRef names one device: its gateway's mac and its sn.
type DeviceRef struct {
	MAC string `json:"mac"`
	SN  string `json:"sn"`
}

// SlowDevice is a device whose requests wait Latency more.
type SlowDevice struct {
	DeviceRef
	Latency Duration `json:"latency"`
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
	for i := range f.UnreachableDevices {
		if err := f.UnreachableDevices[i].check(fmt.Sprintf("unreachable_devices[%d]", i)); err != nil {
			return err
		}
	}
	if f.UnreachableDevices == nil {
		f.UnreachableDevices = []DeviceRef{}
	}
	for i := range f.SlowDevices {
		name := fmt.Sprintf("slow_devices[%d]", i)
		if err := f.SlowDevices[i].check(name); err != nil {
			return err
		}
		if l := f.SlowDevices[i].Latency.Duration; l <= 0 || l > MaxLatency {
			return fmt.Errorf("%s.latency must be above 0 and at most %s", name, MaxLatency)
		}
	}
	if f.SlowDevices == nil {
		f.SlowDevices = []SlowDevice{}
	}
	for op, rate := range f.OperationErrorRates {
		known := false
		for _, o := range device.Operations {
			known = known || o.Name() == op
		}
		if !known {
			return fmt.Errorf("operation_error_rates.%s is not an operation: use command, message or update_name", op)
		}
		if rate < 0 || rate > 1 || rate != rate {
			return fmt.Errorf("operation_error_rates.%s must be from 0 to 1", op)
		}
	}
	if f.OperationErrorRates == nil {
		f.OperationErrorRates = map[string]float64{}
	}
	if err := f.checkRetryAfter(); err != nil {
		return err
	}
	return nil
}

func (d *DeviceRef) check(name string) error {
	d.MAC = strings.ToLower(strings.TrimSpace(d.MAC))
	if len(d.MAC) != 12 || strings.Trim(d.MAC, "0123456789abcdef") != "" {
		return fmt.Errorf("%s.mac must be a 12-hex mac", name)
	}
	d.SN = strings.TrimSpace(d.SN)
	if d.SN == "" || len(d.SN) > 64 {
		return fmt.Errorf("%s.sn must be a device's sn", name)
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
	f           Faults
	retryAfter  string // the header value, "" for none
	offline     map[string]bool
	unreachable map[DeviceRef]bool
	slow        map[DeviceRef]time.Duration
}

func (s *faultState) get() Faults {
	p := s.cur.Load()
	f := p.f
	f.OfflineGateways = append([]string{}, p.f.OfflineGateways...)
	f.UnreachableDevices = append([]DeviceRef{}, p.f.UnreachableDevices...)
	f.SlowDevices = append([]SlowDevice{}, p.f.SlowDevices...)
	f.OperationErrorRates = make(map[string]float64, len(p.f.OperationErrorRates))
	for k, v := range p.f.OperationErrorRates {
		f.OperationErrorRates[k] = v
	}
	return f
}

// noFaults is the empty fault set, with empty lists rather than nulls.
func noFaults() Faults {
	f := Faults{}
	f.check()
	return f
}

func (s *faultState) set(f Faults) {
	off := make(map[string]bool, len(f.OfflineGateways))
	for _, m := range f.OfflineGateways {
		off[m] = true
	}
	f.OfflineGateways = append([]string{}, f.OfflineGateways...)
	snap := &faultSnapshot{f: f, offline: off, unreachable: map[DeviceRef]bool{}, slow: map[DeviceRef]time.Duration{},
		retryAfter: f.retryAfterHeader()}
	for _, d := range f.UnreachableDevices {
		snap.unreachable[d] = true
	}
	for _, d := range f.SlowDevices {
		snap.slow[d.DeviceRef] += d.Latency.Duration
	}
	rates := make(map[string]float64, len(f.OperationErrorRates))
	for k, v := range f.OperationErrorRates {
		rates[k] = v
	}
	snap.f.OperationErrorRates = rates
	snap.f.UnreachableDevices = append([]DeviceRef{}, f.UnreachableDevices...)
	snap.f.SlowDevices = append([]SlowDevice{}, f.SlowDevices...)
	s.cur.Store(snap)
}

// device returns the latency a slow device adds, whether the device is
// unreachable, and whether this operation's own error rate fails it.
func (s *faultState) device(op device.Operation, mac, sn string) (time.Duration, bool, bool) {
	p := s.cur.Load()
	ref := DeviceRef{MAC: mac, SN: sn}
	rate := p.f.OperationErrorRates[op.Name()]
	return p.slow[ref], p.unreachable[ref], rate > 0 && rand.Float64() < rate
}

// draw returns the latency to add and whether to fail this request.
func (s *faultState) draw() (time.Duration, bool) {
	p := s.cur.Load()
	return p.f.Latency.Duration, p.f.ErrorRate > 0 && rand.Float64() < p.f.ErrorRate
}

// retryAfter is the Retry-After header of the injected errors at now, ""
// for none: seconds, or with RetryAfterDate the HTTP date the wait ends.
func (s *faultState) retryAfter(now time.Time) string {
	p := s.cur.Load()
	if p.retryAfter == "" || !p.f.RetryAfterDate {
		return p.retryAfter
	}
	secs, _ := strconv.Atoi(p.retryAfter)
	end := now.Add(time.Duration(secs) * time.Second)
	if t := end.Truncate(time.Second); t.Before(end) {
		end = t.Add(time.Second)
	}
	return end.UTC().Format(http.TimeFormat)
}

func (s *faultState) isOffline(mac string) bool {
	p := s.cur.Load()
	return len(p.offline) > 0 && p.offline[mac]
}

// checkNames refuses faults that name a gateway or a device the fleet
// does not have: such a fault would silently do nothing (a typo in a mac,
// the sn of another fleet). Each is named with its place in the faults.
func (s *Server) checkNames(f *Faults) *device.Error {
	gateway := func(field, mac string) *device.Error {
		_, _, ok, derr := s.store.Messages(mac)
		if derr != nil {
			return derr
		}
		if !ok {
			return device.Errorf(device.CodeInvalidField, field, "%s: the fleet has no gateway %s", field, mac)
		}
		return nil
	}
	dev := func(field string, d DeviceRef) *device.Error {
		if derr := gateway(field+".mac", d.MAC); derr != nil {
			return derr
		}
		_, ok, derr := s.store.Device(d.MAC, d.SN)
		if derr != nil {
			return derr
		}
		if !ok {
			return device.Errorf(device.CodeInvalidField, field+".sn", "%s.sn: gateway %s has no device %s", field, d.MAC, d.SN)
		}
		return nil
	}
	for i, m := range f.OfflineGateways {
		if derr := gateway(fmt.Sprintf("offline_gateways[%d]", i), m); derr != nil {
			return derr
		}
	}
	for i, d := range f.UnreachableDevices {
		if derr := dev(fmt.Sprintf("unreachable_devices[%d]", i), d); derr != nil {
			return derr
		}
	}
	for i, d := range f.SlowDevices {
		if derr := dev(fmt.Sprintf("slow_devices[%d]", i), d.DeviceRef); derr != nil {
			return derr
		}
	}
	return nil
}

// shown is f as the admin API answers it: retry_after always there, the
// value the injected errors carry ("1" unless set, "none").
func (f Faults) shown() Faults {
	if f.RetryAfter == "" {
		f.RetryAfter = DefaultRetryAfter
	}
	return f
}
