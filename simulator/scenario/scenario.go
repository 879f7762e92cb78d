// Package scenario plays a timeline of faults (gwsim serve --scenario
// FILE) on top of gwsim's fault injection: at 10 s a gateway goes offline
// for 30 s, from 60 s 5% of commands fail, a device is slow for a minute,
// Redis is lost for a while. The admin API starts, stops and restarts it
// (/_sim/scenario), the dashboard shows where it stands, and the client
// report tells how the app behaved during each fault (Player.Phases).
package scenario

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
	"github.com/gwdmi/gwtools/simulator/server"
)

// Scenario is a timeline of faults, read from YAML.
type Scenario struct {
	Name string `yaml:"name"`
	// Autostart plays the timeline as gwsim starts (the default); false
	// waits for POST /_sim/scenario/start.
	Autostart *bool  `yaml:"autostart"`
	Steps     []Step `yaml:"steps"`
}

// Step is one fault: from At, for For (until the scenario is stopped when
// For is zero). Exactly one kind of fault is set.
type Step struct {
	At  Duration `yaml:"at"`
	For Duration `yaml:"for"`

	GatewayOffline    string      `yaml:"gateway_offline"`
	ErrorRate         *ErrorRate  `yaml:"error_rate"`
	Latency           Duration    `yaml:"latency"`
	DeviceSlow        *SlowDevice `yaml:"device_slow"`
	DeviceUnreachable *DeviceRef  `yaml:"device_unreachable"`
	RedisLoss         bool        `yaml:"redis_loss"`
	// RetryAfter, beside a step's fault, sets the Retry-After the
	// injected errors carry while the step is in force (server.Faults'
	// retry_after: seconds, a duration, or "none" for a service that
	// sends none).
	RetryAfter string        `yaml:"retry_after"`
	extra      server.Faults // the step as faults, filled by check
}

// ErrorRate fails a share of the requests of one operation (all when
// Operation is empty) with 503 injected_fault.
type ErrorRate struct {
	Operation string  `yaml:"operation"`
	Rate      float64 `yaml:"rate"`
}

// DeviceRef names a device by its gateway's mac and its sn.
type DeviceRef struct {
	MAC string `yaml:"mac"`
	SN  string `yaml:"sn"`
}

// SlowDevice is a device whose requests wait Latency more.
type SlowDevice struct {
	DeviceRef `yaml:",inline"`
	Latency   Duration `yaml:"latency"`
}

// Duration is a time.Duration written as "10s" or "1m30s" in YAML.
type Duration struct{ time.Duration }

// UnmarshalYAML reads "10s", "1m" or a number of seconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: a duration such as 10s or 1m30s", n.Line)
	}
	if v, err := time.ParseDuration(s); err == nil {
		d.Duration = v
		return nil
	}
	var secs float64
	if _, err := fmt.Sscanf(s, "%g", &secs); err == nil && fmt.Sprint(secs) == strings.TrimSpace(s) {
		d.Duration = time.Duration(secs * float64(time.Second))
		return nil
	}
	return fmt.Errorf("line %d: %q is not a duration such as 10s or 1m30s", n.Line, s)
}

// MaxSteps bounds a timeline.
const MaxSteps = 1000

// MaxFileSize bounds a scenario file.
const MaxFileSize = 1 << 20

// Load reads and checks a scenario file: a regular file of at most
// MaxFileSize bytes (a FIFO or a device is refused at once).
func Load(path string) (*Scenario, error) {
	b, err := safefile.ReadFile(path, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	sc, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	return sc, nil
}

// Parse reads and checks a scenario; unknown keys are refused, so that a
// misspelt fault is not silently left out.
func Parse(b []byte) (*Scenario, error) {
	var sc Scenario
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&sc); err != nil {
		return nil, err
	}
	if err := sc.check(); err != nil {
		return nil, err
	}
	return &sc, nil
}

func (sc *Scenario) check() error {
	if len(sc.Steps) == 0 {
		return errors.New("steps: a scenario needs at least one step")
	}
	if len(sc.Steps) > MaxSteps {
		return fmt.Errorf("steps: at most %d", MaxSteps)
	}
	for i := range sc.Steps {
		if err := sc.Steps[i].check(); err != nil {
			return fmt.Errorf("steps[%d].%w", i, err)
		}
	}
	return nil
}

func (s *Step) check() error {
	if s.At.Duration < 0 || s.For.Duration < 0 {
		return errors.New("at: at and for must not be negative")
	}
	kinds := 0
	f := server.Faults{}
	if s.GatewayOffline != "" {
		kinds++
		f.OfflineGateways = []string{s.GatewayOffline}
	}
	if e := s.ErrorRate; e != nil {
		kinds++
		if e.Operation == "" {
			f.ErrorRate = e.Rate
		} else {
			f.OperationErrorRates = map[string]float64{e.Operation: e.Rate}
		}
	}
	if s.Latency.Duration != 0 {
		kinds++
		f.Latency = server.Duration{Duration: s.Latency.Duration}
	}
	if d := s.DeviceSlow; d != nil {
		kinds++
		f.SlowDevices = []server.SlowDevice{{DeviceRef: server.DeviceRef{MAC: d.MAC, SN: d.SN}, Latency: server.Duration{Duration: d.Latency.Duration}}}
	}
	if d := s.DeviceUnreachable; d != nil {
		kinds++
		f.UnreachableDevices = []server.DeviceRef{{MAC: d.MAC, SN: d.SN}}
	}
	if s.RedisLoss {
		kinds++
		if s.For.Duration <= 0 {
			return errors.New("for: a redis_loss needs a for")
		}
	}
	f.RetryAfter = s.RetryAfter
	if kinds != 1 {
		return fmt.Errorf("%s: a step sets exactly one of gateway_offline, error_rate, latency, device_slow, device_unreachable, redis_loss (this one sets %d)", "fault", kinds)
	}
	// The server's own rules for faults, so that a step that would be
	// refused when its time comes is refused now.
	if err := server.CheckFaults(&f); err != nil {
		return fmt.Errorf("fault: %v", err)
	}
	s.extra = f
	return nil
}

// CheckFleet refuses a scenario whose steps name a gateway or a device
// the fleet does not have: such a step would silently do nothing. The
// error names the step and what it names (steps[1].device_slow.sn: ...).
func (sc *Scenario) CheckFleet(f *fleet.Fleet) error {
	gateways := map[string]map[string]bool{}
	for _, a := range f.Accounts {
		for _, g := range a.Gateways {
			sns := map[string]bool{}
			for _, d := range g.Devices {
				sns[d.SN] = true
			}
			gateways[strings.ToLower(g.MAC)] = sns
		}
	}
	for i := range sc.Steps {
		s := &sc.Steps[i]
		where := fmt.Sprintf("steps[%d]", i)
		for _, mac := range s.extra.OfflineGateways {
			if gateways[mac] == nil {
				return fmt.Errorf("%s.gateway_offline: the fleet has no gateway %s", where, mac)
			}
		}
		refs := []struct {
			key string
			ref server.DeviceRef
		}{}
		for _, d := range s.extra.UnreachableDevices {
			refs = append(refs, struct {
				key string
				ref server.DeviceRef
			}{"device_unreachable", d})
		}
		for _, d := range s.extra.SlowDevices {
			refs = append(refs, struct {
				key string
				ref server.DeviceRef
			}{"device_slow", d.DeviceRef})
		}
		for _, r := range refs {
			sns := gateways[r.ref.MAC]
			if sns == nil {
				return fmt.Errorf("%s.%s.mac: the fleet has no gateway %s", where, r.key, r.ref.MAC)
			}
			if !sns[r.ref.SN] {
				return fmt.Errorf("%s.%s.sn: gateway %s has no device %s", where, r.key, r.ref.MAC, r.ref.SN)
			}
		}
	}
	return nil
}

// Label names a step for people: the dashboard and the client report.
func (s *Step) Label() string {
	var what string
	switch {
	case s.GatewayOffline != "":
		what = "gateway " + s.GatewayOffline + " offline"
	case s.ErrorRate != nil && s.ErrorRate.Operation != "":
		what = fmt.Sprintf("%g%% errors on %s", s.ErrorRate.Rate*100, s.ErrorRate.Operation)
	case s.ErrorRate != nil:
		what = fmt.Sprintf("%g%% errors", s.ErrorRate.Rate*100)
	case s.Latency.Duration != 0:
		what = "latency " + s.Latency.String()
	case s.DeviceSlow != nil:
		what = fmt.Sprintf("device %s/%s slow by %s", s.DeviceSlow.MAC, s.DeviceSlow.SN, s.DeviceSlow.Latency)
	case s.DeviceUnreachable != nil:
		what = fmt.Sprintf("device %s/%s unreachable", s.DeviceUnreachable.MAC, s.DeviceUnreachable.SN)
	case s.RedisLoss:
		what = "Redis lost"
	}
	switch s.extra.RetryAfter {
	case "":
	case server.NoRetryAfter:
		what += ", no Retry-After"
	default:
		what += ", Retry-After " + s.extra.RetryAfter + "s"
	}
	if s.For.Duration > 0 {
		return fmt.Sprintf("%s (%s for %s)", what, s.At.Duration, s.For.Duration)
	}
	return fmt.Sprintf("%s (from %s)", what, s.At.Duration)
}

// active says whether the step is in force at elapsed.
func (s *Step) active(elapsed time.Duration) bool {
	return elapsed >= s.At.Duration && (s.For.Duration == 0 || elapsed < s.At.Duration+s.For.Duration)
}

// End is when the last bounded step ends; zero when every step lasts
// until the scenario is stopped.
func (sc *Scenario) End() time.Duration {
	var end time.Duration
	for _, s := range sc.Steps {
		if s.For.Duration > 0 {
			end = max(end, s.At.Duration+s.For.Duration)
		} else {
			end = max(end, s.At.Duration)
		}
	}
	return end
}

// merge adds the faults of a step to f.
func merge(f *server.Faults, add server.Faults) {
	f.Latency.Duration += add.Latency.Duration
	f.ErrorRate = max(f.ErrorRate, add.ErrorRate)
	f.OfflineGateways = append(f.OfflineGateways, add.OfflineGateways...)
	f.UnreachableDevices = append(f.UnreachableDevices, add.UnreachableDevices...)
	f.SlowDevices = append(f.SlowDevices, add.SlowDevices...)
	if add.RetryAfter != "" {
		f.RetryAfter = add.RetryAfter
	}
	for op, r := range add.OperationErrorRates {
		if f.OperationErrorRates == nil {
			f.OperationErrorRates = map[string]float64{}
		}
		f.OperationErrorRates[op] = max(f.OperationErrorRates[op], r)
	}
}

// RedisLoss makes the shared store unreachable for d (CLIENT PAUSE) and
// ends a loss early when d is zero.
type RedisLoss func(ctx context.Context, d time.Duration) error
