package server

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/simulator/clients"
)

// Faults set by hand (PUT and DELETE /_sim/faults) as the client report
// judges the app by them, each in a section of its own as a scenario's
// steps have: every fault a PUT turns on (a gateway offline, a device
// unreachable or slow, an error rate, a latency) starts when it is set and
// ends when a later PUT or DELETE turns it off. The same fault set again
// later is a new section.

// maxHandFaults bounds the faults set by hand the report follows (the
// report keeps 32 phases per app); the oldest ended go first.
const maxHandFaults = 32

type handFaults struct {
	mu   sync.Mutex
	on   map[string]int // a fault's key → its place in list, while in force
	list []clients.Fault
	snap atomic.Pointer[[]clients.Fault]
}

// get is the faults set by hand so far, as one immutable slice.
func (h *handFaults) get() []clients.Fault {
	if p := h.snap.Load(); p != nil {
		return *p
	}
	return nil
}

// set records f as the faults now set by hand, at now.
func (h *handFaults) set(f Faults, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	next := map[string]clients.Fault{}
	suffix := ""
	switch f.RetryAfter {
	case "":
	case NoRetryAfter:
		suffix = ", no Retry-After"
	default:
		suffix = ", Retry-After " + f.RetryAfter + "s"
	}
	add := func(cf clients.Fault, what string) {
		cf.Label = "set by hand at " + now.UTC().Format("15:04:05") + ": " + what + suffix
		next[what+suffix] = cf
	}
	for _, mac := range f.OfflineGateways {
		add(clients.Fault{Kind: clients.FaultGatewayOffline, MAC: mac}, "gateway "+mac+" offline")
	}
	for _, d := range f.UnreachableDevices {
		add(clients.Fault{Kind: clients.FaultDeviceUnreachable, MAC: d.MAC, SN: d.SN}, "device "+d.MAC+"/"+d.SN+" unreachable")
	}
	for _, d := range f.SlowDevices {
		add(clients.Fault{Kind: clients.FaultDeviceSlow, MAC: d.MAC, SN: d.SN, Latency: d.Latency.Duration},
			"device "+d.MAC+"/"+d.SN+" slow by "+d.Latency.String())
	}
	if f.ErrorRate > 0 {
		add(clients.Fault{Kind: clients.FaultErrorRate, Rate: f.ErrorRate}, fmt.Sprintf("%g%% errors", f.ErrorRate*100))
	}
	for op, rate := range f.OperationErrorRates {
		if rate > 0 {
			add(clients.Fault{Kind: clients.FaultErrorRate, Operation: op, Rate: rate}, fmt.Sprintf("%g%% errors on %s", rate*100, op))
		}
	}
	if f.Latency.Duration > 0 {
		add(clients.Fault{Kind: clients.FaultLatency, Latency: f.Latency.Duration}, "latency "+f.Latency.String())
	}
	if h.on == nil {
		h.on = map[string]int{}
	}
	list := slices.Clone(h.list)
	for key, i := range h.on {
		if _, ok := next[key]; !ok {
			list[i].End = now
			delete(h.on, key)
		}
	}
	keys := make([]string, 0, len(next))
	for key := range next {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		if _, ok := h.on[key]; ok {
			continue
		}
		cf := next[key]
		cf.Start = now
		list = append(list, cf)
		h.on[key] = len(list) - 1
	}
	for len(list) > maxHandFaults {
		i := slices.IndexFunc(list, func(cf clients.Fault) bool { return !cf.End.IsZero() })
		if i < 0 {
			break
		}
		list = slices.Delete(list, i, i+1)
		for key, j := range h.on {
			if j > i {
				h.on[key] = j - 1
			}
		}
	}
	h.list = list
	h.snap.Store(&list)
}

// HandFaults are the faults set by hand through the admin API so far
// (PUT and DELETE /_sim/faults), as the client report counts the app's
// requests under them; a scenario's steps are the scenario's own.
func (s *Server) HandFaults() []clients.Fault { return s.hand.get() }

// SetHandFaults is SetFaults for faults set by hand outside the admin
// API (gwsimtest): the client report gives them sections of their own.
func (s *Server) SetHandFaults(f Faults) error {
	if err := s.SetFaults(f); err != nil {
		return err
	}
	s.hand.set(s.faults.get(), time.Now())
	return nil
}
