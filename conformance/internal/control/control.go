// Package control keeps the controls of a run's refusal checks. No check
// passes by default: a check that expects a refusal proves something only
// if the target accepts the same request made valid. Each such check has
// a control, the valid request of its operation, in its format, about its
// device, sent to the same target in the same run; when the control is
// refused, the refusal check is inconclusive, not passed. A control is
// sent once per operation, format and device and its answer kept in the
// run's Store for the run's other checks.
//
// The package names a control (Of), keeps the answers (Store) and ends a
// refusal check by its control (Result.Conclude); it sends nothing: the
// run sends a control in the check that first needs it, or with a far
// device's other checks (package batch).
package control

import (
	"context"
	"fmt"
	"sync"

	"github.com/onsi/ginkgo/v2"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Key names a control: an operation, a format and a device ("" for send
// message).
type Key struct {
	Op device.Operation
	F  device.Format
	SN string
}

// Result is a control's answer: OK when accepted; else What came.
type Result struct {
	OK   bool
	What string
}

// Conclude ends a refusal check whose own assertions held: passed when its
// control was accepted, inconclusive when it was not.
func (r Result) Conclude(ctx context.Context) {
	trial.Helper()
	if !r.OK {
		why := "inconclusive: " + r.What + ": a refusal proves nothing while the valid request is refused too"
		trial.From(ctx).Entry(report.InconclusiveEntry, why, ginkgo.ReportEntryVisibilityNever)
		trial.From(ctx).Skip(why)
	}
}

// Of names the control of c in format f: its key, the device's type and
// the request in words; ok is false when the fleet has no device to send
// it to.
func Of(b *catalog.Bench, c catalog.Call, f device.Format) (key Key, typ, what string, ok bool) {
	sn, typ := c.SN, c.Type
	if c.Op == device.SendMessage {
		sn, typ = "", ""
	} else if _, ok := b.Target.Devices[typ]; !ok || sn == "" {
		d, ok := b.AnyDevice()
		if !ok {
			return Key{}, "", "", false
		}
		sn, typ = d.SN, d.Type
	}
	what = fmt.Sprintf("%s in %s", c.Op.Name(), f)
	if sn != "" {
		what += " to " + typ + " " + sn
	}
	return Key{Op: c.Op, F: f, SN: sn}, typ, what, true
}

// Store is a run's controls: each one's answer, and the exchanges of those
// sent ahead with other checks, to be recorded by the first check that
// uses each. The zero value is ready; it is safe for concurrent use.
type Store struct {
	mu      sync.Mutex
	results map[Key]Result
	ahead   map[Key]client.Exchange
}

// Known is a control's answer, when it was sent.
func (s *Store) Known(k Key) (Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.results[k]
	return r, ok
}

// Take is a control's answer, when it was sent, and the exchange of one
// sent ahead that no check has recorded yet (sentAhead), which it hands
// over once.
func (s *Store) Take(k Key) (r Result, done bool, ex client.Exchange, sentAhead bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, done = s.results[k]
	ex, sentAhead = s.ahead[k]
	delete(s.ahead, k)
	return r, done, ex, sentAhead
}

// Put keeps a control's answer.
func (s *Store) Put(k Key, r Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.results == nil {
		s.results = map[Key]Result{}
	}
	s.results[k] = r
}

// PutAhead keeps the answer of a control sent ahead, and its exchange for
// the first check that uses it (Take).
func (s *Store) PutAhead(k Key, r Result, ex client.Exchange) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.results == nil {
		s.results = map[Key]Result{}
	}
	if s.ahead == nil {
		s.ahead = map[Key]client.Exchange{}
	}
	s.results[k] = r
	s.ahead[k] = ex
}
