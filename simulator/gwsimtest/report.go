package gwsimtest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/simulator/clients"
)

// Judgement identifiers of the client report (docs/clients.md), for
// AssertJudgement and ClientReport.Judgement. They are the ids of the
// report's JSON and JUnit cases.
const (
	// ValidRequests: no request that breaks the interface's rules
	// (Content-Type, body, a field's value, a missing or unknown field).
	ValidRequests = "valid_requests"
	// NoForeignFields: no command with a field of another device type.
	NoForeignFields = "no_foreign_fields"
	// SignsCorrectly: no sign that does not match (401 bad_signature).
	SignsCorrectly = "signs_correctly"
	// ClockInWindow: no timestamp outside the fleet's window (default
	// ±300 s).
	ClockInWindow = "clock_in_window"
	// WaitsOutRetryAfter: nothing sent again before a Retry-After of
	// 429, 503 or 504 had ended.
	WaitsOutRetryAfter = "waits_out_retry_after"
	// NoResentRefusedRequest: no request refused with 400 sent again
	// unchanged (same operation, fields, timestamp and sign).
	NoResentRefusedRequest = "no_resent_refused_request"
	// NoReplayedRequest: no accepted request sent again (same operation,
	// fields, timestamp and sign).
	NoReplayedRequest = "no_replayed_request"
	// BacksOffWithoutRetryAfter: an error without Retry-After (faults with
	// RetryAfter "none") retried no sooner than the floor the
	// judgement's Name states (500ms).
	BacksOffWithoutRetryAfter = "backs_off_without_retry_after"
	// KnownDevicesOnly: no request to a gateway or device the fleet does
	// not have (404).
	KnownDevicesOnly = "known_devices_only"
	// MatchesDeviceTypes: no command with a type other than its
	// device's (409 type_mismatch).
	MatchesDeviceTypes = "matches_device_types"
	// OwnAccountOnly: no unknown api_key (401 unknown_api_key), no
	// myservice_id of another account (403 account_mismatch).
	OwnAccountOnly = "own_account_only"
)

// judgements are the identifiers AssertJudgement takes, in the report's
// order.
var judgements = []string{ValidRequests, NoForeignFields, SignsCorrectly, ClockInWindow, WaitsOutRetryAfter,
	NoResentRefusedRequest, NoReplayedRequest, BacksOffWithoutRetryAfter, KnownDevicesOnly, MatchesDeviceTypes, OwnAccountOnly}

func knownJudgement(id string) bool { return slices.Contains(judgements, id) }

// Report is the client report (docs/clients.md): per api_key, how many
// requests it sent, which rules of using the interface it broke, and how
// it fared under each fault.
type Report struct {
	// Clients are the apps that sent requests, one per api_key, ordered
	// by name.
	Clients []ClientReport
	// Text is the whole report as gwsim clients prints it, with what it
	// holds beyond these fields (each operation, type and format sent,
	// the errors received, the clock's skew, what was never tried): for a
	// test's log.
	Text string
}

// ClientReport is the report of one api_key.
type ClientReport struct {
	// Client is the api_key's first four characters and "…" (the key,
	// its secret, signs and bodies are never kept); ID, 8 hex of the
	// key's SHA-256, tells apart keys that start alike.
	Client, ID string
	// Requests is how many requests it sent.
	Requests uint64
	// Judgements are the rules of using the interface, one per
	// identifier (ValidRequests...), in the order of the constants.
	Judgements []Judgement
	// Phases are how it fared under each fault of a scenario or set by
	// hand, in the order the faults met its requests.
	Phases []Phase
}

// Judgement is one rule of using the interface, passed or broken.
type Judgement struct {
	ID         string // ValidRequests...
	Name       string // the rule in words: "app sent only valid requests"
	Passed     bool
	Violations uint64 // how often it was broken
	Latest     string // the latest breach in words; "" when none
}

// Judgement is the judgement id of the client's report; a zero Judgement
// but for its ID (not Passed) when the report has none of that id.
func (c ClientReport) Judgement(id string) Judgement {
	for _, j := range c.Judgements {
		if j.ID == id {
			return j
		}
	}
	return Judgement{ID: id}
}

// Phase is how an app fared under one fault (docs/scenarios.md, In the
// client report): the requests that fault answered, each request under
// one fault only.
type Phase struct {
	// Fault names it: "gateway a4c138f0e2b1 offline (10s for 30s)", or
	// "set by hand at 12:40:01: …".
	Fault string
	// Requests the fault answered, Errors among them, and RetriedEarly:
	// those sent before a Retry-After had ended.
	Requests, Errors, RetriedEarly uint64
	// Codes counts the errors by code ("gateway_offline").
	Codes map[string]uint64
	// Ended: the fault is over. Recovered: since it ended, a request of
	// the app to what it hit (the gateway, the device, the operation)
	// has succeeded, RecoveredAfter its end.
	Ended, Recovered bool
	RecoveredAfter   time.Duration
}

// reportOf is the simulator's client report as this package gives it,
// without its Text.
func reportOf(r *clients.Report) *Report {
	out := &Report{}
	for _, c := range r.Clients {
		cr := ClientReport{Client: c.Client, ID: c.ID, Requests: c.Requests}
		for _, j := range c.Judgements {
			cr.Judgements = append(cr.Judgements, Judgement{ID: j.ID, Name: j.Name, Passed: j.Passed, Violations: j.Violations,
				Latest: j.Latest})
		}
		for _, p := range c.Phases {
			ph := Phase{Fault: p.Phase, Requests: p.Requests, Errors: p.Errors, RetriedEarly: p.RetriedEarly}
			if len(p.Codes) > 0 {
				ph.Codes = make(map[string]uint64, len(p.Codes))
				for k, v := range p.Codes {
					ph.Codes[k] = v
				}
			}
			if rc := p.Recovery; rc != nil {
				ph.Ended, ph.Recovered = rc.Ended, rc.Recovered
				ph.RecoveredAfter = time.Duration(rc.AfterMS) * time.Millisecond
			}
			cr.Phases = append(cr.Phases, ph)
		}
		out.Clients = append(out.Clients, cr)
	}
	return out
}

// Report is the client report now: per api_key, what it sent, the errors
// it got, and the rules of using the interface it broke.
func (s *Server) Report() *Report {
	r := s.sim.Clients.Report()
	out := reportOf(r)
	var b strings.Builder
	r.WriteText(&b)
	out.Text = b.String()
	return out
}

// ResetReport forgets every client (DELETE /_sim/clients): what follows
// is judged afresh.
func (s *Server) ResetReport() { s.sim.Clients.Reset() }

// AssertClean fails t unless some client sent a request and every client
// passed every judgement: valid requests only, no foreign field, correct
// signs, a clock in the window, Retry-After waited out (and a back-off
// where an error carried none), no refused request sent again, no replay,
// no request to a gateway or device the fleet does not have, commands
// with their device's type, its own account only. The failure lists each
// broken rule with its latest breach.
func (s *Server) AssertClean(t testing.TB) {
	t.Helper()
	rep := reportOf(s.sim.Clients.Report())
	if len(rep.Clients) == 0 {
		t.Errorf("gwsimtest: no client has sent a request to %s", s.URL)
		return
	}
	if msg := broken(rep, ""); msg != "" {
		t.Errorf("gwsimtest: the client report has broken rules:\n%s", msg)
	}
}

// AssertJudgement fails t when any client broke one rule (ValidRequests,
// SignsCorrectly...): "this app sent no invalid request". An id that is
// none of the constants fails t at once.
func (s *Server) AssertJudgement(t testing.TB, id string) {
	t.Helper()
	if !knownJudgement(id) {
		t.Fatalf("gwsimtest: %q is not a judgement of the client report (use the constants ValidRequests, SignsCorrectly...)", id)
	}
	if msg := broken(reportOf(s.sim.Clients.Report()), id); msg != "" {
		t.Errorf("gwsimtest: %s", strings.TrimSpace(msg))
	}
}

// Broken lists the rules broken so far, one line each ("" when none): the
// text AssertClean fails with, for tests that decide themselves.
func (s *Server) Broken() string { return broken(reportOf(s.sim.Clients.Report()), "") }

func broken(rep *Report, only string) string {
	var b strings.Builder
	for _, c := range rep.Clients {
		for _, j := range c.Judgements {
			if j.Passed || only != "" && j.ID != only {
				continue
			}
			fmt.Fprintf(&b, "client %s broke %q %s; latest: %s\n", c.Client, j.Name, times(j.Violations), j.Latest)
		}
	}
	return b.String()
}

// times is "1 time", "3 times".
func times(n uint64) string {
	if n == 1 {
		return "1 time"
	}
	return strconv.FormatUint(n, 10) + " times"
}
