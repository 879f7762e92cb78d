package clients

import (
	"strconv"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Fault is one fault of a scenario as the client report judges the app
// by it (Config.Faults): what it answers, to which gateway, device or
// operation, and when it started and ended.
type Fault struct {
	Label string
	Kind  FaultKind
	// MAC and SN name the gateway (and device) it hits, in lower case;
	// Operation the operation of an error rate ("" for all).
	MAC, SN, Operation string
	// Rate is an error rate's share, Latency a latency's or a slow
	// device's wait: of two faults of one kind in force, the request is
	// counted under the one gwsim's merge kept (the highest, hits).
	Rate    float64
	Latency time.Duration
	// Start and End bound it; End is zero while it is in force.
	Start, End time.Time
}

// FaultKind is what a fault does.
type FaultKind uint8

const (
	FaultOther             FaultKind = iota
	FaultGatewayOffline              // 504 gateway_offline to requests to MAC
	FaultDeviceUnreachable           // 504 device_unreachable to requests to MAC/SN
	FaultDeviceSlow                  // requests to MAC/SN wait more
	FaultErrorRate                   // 503 injected_fault to a share of Operation's requests
	FaultLatency                     // every request waits more
	FaultStorage                     // 503 storage_unavailable (Redis lost)
)

// phaseHit is one request as a fault saw it: answered (or slowed) by the
// fault while it was in force, against target (a device's sn, or the
// gateway's mac); or, recovered, the first request to its target that
// succeeded after it ended, after that long.
type phaseHit struct {
	label, target string
	recovered     bool
	after         time.Duration
}

// hits attributes a request to the one fault that answered it: the
// fault gwsim applied, in the order gwsim applies them (an offline
// gateway, an unreachable device, the error rate of every operation, the
// error rate of the request's own), or, when none of those answered it,
// the one that slowed it (a slow device, then a latency on every
// request); not to every fault that happened to be in force. Among
// faults of one kind the one gwsim's merge kept wins: the highest error
// rate, the longest latency, the latest started when equal. A request to
// a fault's target that succeeded after the fault ended tells the app
// recovered. message is the answer's error message: gwsim names there
// which error rate failed the request.
func hits(faults []Fault, op device.Operation, mac, sn, code, message string, ok bool, at time.Time) []phaseHit {
	var out []phaseHit
	best, bestRank := -1, 0
	target := sn
	if target == "" {
		target = mac
	}
	for i := range faults {
		f := &faults[i]
		if at.Before(f.Start) {
			continue
		}
		onGateway := mac != "" && strings.EqualFold(mac, f.MAC)
		onDevice := onGateway && sn != "" && strings.EqualFold(sn, f.SN)
		ofOp := f.Operation == "" || f.Operation == op.Name()
		if f.End.IsZero() || at.Before(f.End) {
			rank := answeredBy(f, code, message, onGateway, onDevice, ofOp)
			if rank > 0 && (rank > bestRank || rank == bestRank && f.outranks(&faults[best])) {
				best, bestRank = i, rank
			}
			continue
		}
		if !ok {
			continue
		}
		recovers := true
		switch f.Kind {
		case FaultGatewayOffline:
			recovers = onGateway
		case FaultDeviceUnreachable, FaultDeviceSlow:
			recovers = onDevice
		case FaultErrorRate:
			recovers = ofOp
		}
		if recovers {
			out = append(out, phaseHit{label: f.Label, recovered: true, after: at.Sub(f.End)})
		}
	}
	if best >= 0 {
		out = append(out, phaseHit{label: faults[best].Label, target: strings.Clone(strings.ToLower(target))})
	}
	return out
}

// answeredBy ranks how a fault in force met a request: 0 it did not; the
// higher the rank, the earlier gwsim applies such a fault (the one that
// answered the request outranks the ones that only slowed it).
func answeredBy(f *Fault, code, message string, onGateway, onDevice, ofOp bool) int {
	switch f.Kind {
	case FaultGatewayOffline:
		if onGateway && code == device.CodeGatewayOffline {
			return 7
		}
	case FaultStorage:
		if code == device.CodeStorageUnavailable {
			return 7
		}
	case FaultDeviceUnreachable:
		if onDevice && code == device.CodeDeviceUnreachable {
			return 6
		}
	case FaultErrorRate:
		if code != device.CodeInjectedFault || !ofOp {
			return 0
		}
		// gwsim's message names the rate that failed the request; an
		// answer that names neither (another service's) fits both.
		everyOp := strings.Contains(message, "(fault injection error_rate)")
		ownOp := strings.Contains(message, "operation_error_rates.")
		switch {
		case f.Operation == "" && !ownOp:
			return 5
		case f.Operation != "" && !everyOp:
			return 4
		}
	case FaultDeviceSlow:
		if onDevice && !answered(code) {
			return 2
		}
	case FaultLatency, FaultOther:
		if !answered(code) {
			return 1
		}
	}
	return 0
}

// answered says code is one a fault answers with: such a request is
// counted under that fault, not under one that only slowed it.
func answered(code string) bool {
	switch code {
	case device.CodeGatewayOffline, device.CodeDeviceUnreachable, device.CodeInjectedFault, device.CodeStorageUnavailable:
		return true
	}
	return false
}

// outranks says f is the one of two faults of one kind that gwsim's
// merge kept: the higher error rate or the longer latency, the latest
// started when equal.
func (f *Fault) outranks(g *Fault) bool {
	if f.Rate != g.Rate {
		return f.Rate > g.Rate
	}
	if f.Latency != g.Latency {
		return f.Latency > g.Latency
	}
	return !f.Start.Before(g.Start)
}

// maxPhaseDevices bounds the devices a phase counts requests against.
const maxPhaseDevices = 32

// phase counts one hit in the client's phases.
func (c *client) phase(h phaseHit, at, done time.Time, status int, code string, early bool) {
	ps := c.phases[h.label]
	if ps == nil {
		if len(c.phases) >= maxPhases {
			return
		}
		ps = &phaseStat{codes: map[string]uint64{}}
		c.phases[h.label] = ps
		c.phaseOrder = append(c.phaseOrder, h.label)
	}
	if h.recovered {
		if !ps.recovered {
			ps.recovered, ps.recoveredAfter = true, h.after
		}
		return
	}
	ps.requests++
	if early {
		ps.early++
	}
	if status != 200 {
		ps.errors++
		if _, ok := ps.codes[code]; ok || len(ps.codes) < maxCodes {
			ps.codes[code]++
		}
	}
	if h.target != "" {
		if ps.devices == nil {
			ps.devices = map[string]uint64{}
		}
		if _, ok := ps.devices[h.target]; ok || len(ps.devices) < maxPhaseDevices {
			ps.devices[h.target]++
		}
	}
	if d := done.Sub(at); d >= 0 {
		if ps.latN == 0 || d < ps.latMin {
			ps.latMin = d
		}
		if d > ps.latMax {
			ps.latMax = d
		}
		ps.latN++
		ps.latSum += d
	}
}

// Latency is how long the requests of a phase took, from arrival to
// answer, in milliseconds.
type Latency struct {
	MinMS float64 `json:"min_ms"`
	AvgMS float64 `json:"avg_ms"`
	MaxMS float64 `json:"max_ms"`
}

// Recovery says whether the app recovered after a fault ended: a request
// to the fault's target (its gateway, its device, its operation) that
// succeeded, and how long after the end it came.
type Recovery struct {
	Ended     bool   `json:"ended"`
	Recovered bool   `json:"recovered"`
	AfterMS   int64  `json:"after_ms,omitempty"`
	Text      string `json:"text"`
}

// report is ps as the report says it; whether the fault ended is added
// by the Recorder (recoveries), which knows the faults.
func (ps *phaseStat) report(name string) Phase {
	p := Phase{Phase: name, Requests: ps.requests, Errors: ps.errors, RetriedEarly: ps.early, Codes: cloneCounts(ps.codes),
		Devices: cloneCounts(ps.devices)}
	if ps.latN > 0 {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		p.Latency = &Latency{MinMS: ms(ps.latMin), AvgMS: ms(ps.latSum / time.Duration(ps.latN)), MaxMS: ms(ps.latMax)}
	}
	if ps.recovered {
		p.Recovery = &Recovery{Ended: true, Recovered: true, AfterMS: ps.recoveredAfter.Milliseconds(),
			Text: "recovered: its first request to what the fault hit succeeded " + ps.recoveredAfter.Round(time.Millisecond).String() + " after the fault ended"}
	}
	return p
}

func cloneCounts(m map[string]uint64) map[string]uint64 {
	if m == nil {
		return nil
	}
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// phaseLine is a phase as the text report says it.
func phaseLine(p Phase) string {
	var b strings.Builder
	b.WriteString("  during " + p.Phase + ": " + count(p.Requests, "request") + ", " + count(p.Errors, "error") + ", " +
		strconv.FormatUint(p.RetriedEarly, 10) + " sent before Retry-After ended")
	if len(p.Devices) > 0 {
		b.WriteString("; against ")
		for i, k := range sortedCounts(p.Devices) {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(k + " ×" + strconv.FormatUint(p.Devices[k], 10))
		}
	}
	if l := p.Latency; l != nil {
		b.WriteString("; took " + strconv.FormatFloat(l.MinMS, 'f', 1, 64) + " to " + strconv.FormatFloat(l.MaxMS, 'f', 1, 64) +
			" ms (average " + strconv.FormatFloat(l.AvgMS, 'f', 1, 64) + ")")
	}
	if r := p.Recovery; r != nil {
		b.WriteString("; " + r.Text)
	}
	b.WriteString("\n")
	return b.String()
}

func sortedCounts(m map[string]uint64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && (m[keys[j]] > m[keys[j-1]] || m[keys[j]] == m[keys[j-1]] && keys[j] < keys[j-1]); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}
