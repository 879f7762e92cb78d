package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/check"
)

// VerdictPartial: no MUST check failed, but the run did not cover the
// whole interface: it was filtered, ran no check, or skipped checks of a
// device type, format, operation or rule. Document.NotCovered says what.
const VerdictPartial = "PARTIAL"

// Gap is one thing a run did not cover.
type Gap struct {
	// What is the part not covered: "device type Thermostat", "format xml",
	// "rule CONTRACT-3.enum-case", "filter", "checks".
	What string `json:"what"`
	// Why says why, from the skip reasons or the filter.
	Why string `json:"why"`
	// Checks is how many checks of it did not run.
	Checks int `json:"checks,omitempty"`
}

func (g Gap) String() string {
	s := g.What + ": " + g.Why
	if g.Checks > 0 {
		s += fmt.Sprintf(" (%d checks not run)", g.Checks)
	}
	return s
}

// RuleTag is the tag prefix that ties a check to a rule of the rules list.
const RuleTag = "rule:"

// counted says whether a skipped check leaves a gap. The simulator-only
// state checks (tag sim) need gwsim's admin API: against another target
// they cannot exist, so their skip is no gap, unless the admin API is there
// and wants a token the run did not give.
func counted(r Result) bool {
	if !r.IsCheck() || r.Level == string(check.Info) {
		return false
	}
	if strings.HasPrefix(r.Reason, check.NoSample) {
		// The form cannot be made from the fleet's own value (an id
		// with fewer than two letters has no mixed case): the skip is
		// named among the skip reasons, and is no gap of the target's.
		return false
	}
	if Unobserved(r) {
		// A MUST effect check not run for want of an observer is a gap:
		// exit 0 says everything was covered. --no-observer accepts it on
		// purpose, and the verdict names what it left out.
		return true
	}
	for _, t := range r.Tags {
		if t == "sim" || t == "effect" {
			// Not observed is said in one line of its own (Effects);
			// an observer that wants a token the run did not give is a gap.
			return strings.Contains(r.Reason, "--admin-token")
		}
	}
	return true
}

// NotObservedPrefix starts the reason of a check skipped because the run
// observed no effects (conformance.NotObservedPrefix).
const NotObservedPrefix = "effects not observed"

// NoObserverFlag is the flag that runs without an observer on purpose.
const NoObserverFlag = "--no-observer"

// Unobserved says r is a MUST effect check that did not run for want of
// an observer, and the run was not told to leave such checks out
// (--no-observer) nor only listing them (a dry run).
func Unobserved(r Result) bool {
	return unobservedMust(r) && !strings.Contains(r.Reason, NoObserverFlag) && !strings.Contains(r.Reason, "dry run")
}

// unobservedMust says r is a MUST effect check skipped because the run
// observed no effects, for whatever reason.
func unobservedMust(r Result) bool {
	if r.Level != string(check.Must) || r.Outcome != Skipped || !strings.HasPrefix(r.Reason, NotObservedPrefix) {
		return false
	}
	for _, t := range r.Tags {
		if t == "effect" {
			return true
		}
	}
	return false
}

// UnobservedMust counts the MUST effect checks of d that did not run for
// want of an observer, accepted (--no-observer) or not.
func UnobservedMust(d Document) int {
	n := 0
	for _, r := range d.Results {
		if unobservedMust(r) {
			n++
		}
	}
	return n
}

// gaps lists what a run did not cover: the filter or the checks the run
// did not reach, a run in which no check ran, then each skip reason, then
// each device type, format, operation and rule of which no check ran.
func gaps(d Document, cfg types.SuiteConfig) []Gap {
	filters := filterFlags(cfg)
	ranIDs := ranSomewhere(d)
	c := tallyCoverage(d, ranIDs, len(filters) > 0)
	var out []Gap
	out = append(out, unrunGaps(d, filters, ranIDs, c.ran)...)
	// The skip reasons first: they are few and say why.
	out = append(out, c.reasonGaps()...)
	out = append(out, c.dimensionGaps()...)
	return out
}

// filterFlags are the filters the run was given, as the flags that set
// them: a filtered run is partial by choice, and the gap says so.
func filterFlags(cfg types.SuiteConfig) []string {
	var filters []string
	if len(cfg.FocusStrings) > 0 {
		filters = append(filters, "--ginkgo.focus="+strings.Join(cfg.FocusStrings, ","))
	}
	if len(cfg.SkipStrings) > 0 {
		filters = append(filters, "--ginkgo.skip="+strings.Join(cfg.SkipStrings, ","))
	}
	if len(cfg.FocusFiles) > 0 || len(cfg.SkipFiles) > 0 {
		filters = append(filters, "file filters")
	}
	if cfg.LabelFilter != "" {
		filters = append(filters, "--ginkgo.label-filter="+cfg.LabelFilter)
	}
	return filters
}

// ranSomewhere are the IDs of the checks that ran: a check that ran
// somewhere is covered, even if another worker of a split run (one report
// merged from several) skipped its twin.
func ranSomewhere(d Document) map[string]bool {
	ranIDs := map[string]bool{}
	for _, r := range d.Results {
		if r.ID != "" && r.Outcome != Skipped {
			ranIDs[r.ID] = true
		}
	}
	return ranIDs
}

// dimTally counts the checks of one device type, format, operation or
// rule that ran and that were skipped.
type dimTally struct{ ran, skipped int }

// coverageTally is what the counted checks of a run covered: how many
// ran, how many were skipped for each reason, and, for each device type,
// format, operation and rule, how many ran and why the others were
// skipped.
type coverageTally struct {
	ran       int
	reasons   map[string]int
	dims      map[string]*dimTally
	dimReason map[string]map[string]int
}

// tallyCoverage counts the checks that leave a gap when skipped (counted),
// leaving out a skipped check that ran elsewhere (ranIDs). filtered says
// the run was filtered: a check skipped without a reason was then left out
// by the filter, else the run did not reach it.
func tallyCoverage(d Document, ranIDs map[string]bool, filtered bool) *coverageTally {
	c := &coverageTally{reasons: map[string]int{}, dims: map[string]*dimTally{}, dimReason: map[string]map[string]int{}}
	for _, r := range d.Results {
		if !counted(r) || r.Outcome == Skipped && ranIDs[r.ID] {
			continue
		}
		if r.Outcome != Skipped {
			c.ran++
		}
		why := reasonOf(r)
		if r.Reason == "" && !filtered {
			why = unreached(d)
		}
		for _, key := range dimensionsOf(r) {
			c.add(key, r, why)
		}
		if r.Outcome == Skipped && r.Reason != "" {
			c.reasons[r.Reason]++
		}
	}
	return c
}

// dimensionsOf are the parts of the interface a check is about: its
// device type, format, operation and rules.
func dimensionsOf(r Result) []string {
	var keys []string
	if r.DeviceType != "" {
		keys = append(keys, "device type "+r.DeviceType)
	}
	if r.Format != "" {
		keys = append(keys, "format "+r.Format)
	}
	if r.Operation != "" {
		keys = append(keys, "operation "+r.Operation)
	}
	for _, t := range r.Tags {
		if strings.HasPrefix(t, RuleTag) {
			keys = append(keys, "rule "+strings.TrimPrefix(t, RuleTag))
		}
	}
	return keys
}

// add counts check r under the part key: as run, or as skipped for why.
func (c *coverageTally) add(key string, r Result, why string) {
	t := c.dims[key]
	if t == nil {
		t = &dimTally{}
		c.dims[key] = t
	}
	if r.Outcome != Skipped {
		t.ran++
		return
	}
	t.skipped++
	if c.dimReason[key] == nil {
		c.dimReason[key] = map[string]int{}
	}
	c.dimReason[key][why]++
}

// unrunGaps are the checks the filter left out, or, in a run that was not
// filtered, those it did not reach; and a run in which no check ran.
func unrunGaps(d Document, filters []string, ranIDs map[string]bool, ran int) []Gap {
	var out []Gap
	// What the filter left out is every check skipped without a reason,
	// of any level, so that the count agrees with the skipped checks the
	// summary counts (SkipReasons).
	filtered := 0
	for _, r := range d.Results {
		if r.IsCheck() && r.Outcome == Skipped && r.Reason == "" && !ranIDs[r.ID] {
			filtered++
		}
	}
	switch {
	case len(filters) > 0:
		out = append(out, Gap{What: "filter", Why: "the run was filtered (" + strings.Join(filters, " ") + ")", Checks: filtered})
	case filtered > 0:
		// Nothing was filtered: the run ended before these checks.
		out = append(out, Gap{What: "checks", Why: unreached(d), Checks: filtered})
	}
	if ran == 0 {
		out = append(out, Gap{What: "checks", Why: "no check ran"})
	}
	return out
}

// reasonGaps are the skip reasons, in order, each with how many counted
// checks it skipped.
func (c *coverageTally) reasonGaps() []Gap {
	var out []Gap
	rs := make([]string, 0, len(c.reasons))
	for r := range c.reasons {
		rs = append(rs, r)
	}
	sort.Strings(rs)
	for _, r := range rs {
		why := r
		if strings.HasPrefix(r, NotObservedPrefix) && !strings.Contains(r, NoObserverFlag) {
			// The reason itself is among the skip reasons, once.
			why = "the MUST effect checks did not run, no observer read the devices; these MUST checks need an observer: give --observer URL, or " +
				NoObserverFlag + " to run without them on purpose (the verdict then names them)"
		}
		out = append(out, Gap{What: "checks skipped", Why: why, Checks: c.reasons[r]})
	}
	return out
}

// dimensionGaps are the device types, formats, operations and rules of
// which no check ran, in order, each with the reason that skipped most of
// its checks.
func (c *coverageTally) dimensionGaps() []Gap {
	var out []Gap
	keys := make([]string, 0, len(c.dims))
	for k, t := range c.dims {
		if t.ran == 0 && t.skipped > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, Gap{What: k, Why: "no check of it ran: " + topReason(c.dimReason[k]), Checks: c.dims[k].skipped})
	}
	return out
}

func reasonOf(r Result) string {
	if r.Reason == "" {
		return "filtered out"
	}
	return r.Reason
}

// stoppedEarly says the run ended before its end: it stopped itself, was
// interrupted, or a suite-level node failed.
func stoppedEarly(d Document) bool {
	return d.Stopped != "" || d.Summary.Interrupted > 0 || len(d.SuiteFailureReasons) > 0 || d.Summary.Other.Failed > 0
}

// unreached says why checks skipped without a reason in a run that was
// not filtered did not run.
func unreached(d Document) string {
	if stoppedEarly(d) {
		return "not reached: the run stopped before them"
	}
	return "not run, for no reason given"
}

func topReason(m map[string]int) string {
	best, n := "", -1
	for r, c := range m {
		if c > n || c == n && r < best {
			best, n = r, c
		}
	}
	return best
}

// Exit codes of gwconform (CONTRACT 6), defined here once: ExitCode gives
// the first two for a finished run.
const (
	// ExitPass: the run passed.
	ExitPass = 0
	// ExitFail: a check failed at the --fail-on level, or the run could
	// not certify (INCOMPLETE, or PARTIAL without --allow-partial).
	ExitFail = 1
	// ExitConfig: the run could not start (bad flags, fleet or target),
	// or a command failed for a reason of its own.
	ExitConfig = 2
)

// ExitCode is gwconform run's exit code for a finished run: 1 when a check
// failed at the failOn level ("must" or "should"), when the run was cut
// short or ran nothing to certify (INCOMPLETE), or when it was PARTIAL and
// allowPartial is false; 0 otherwise.
func ExitCode(d Document, failOn string, allowPartial bool) int {
	failed := d.FailedAt(string(check.Must))
	if failOn == "should" {
		failed += d.FailedAt(string(check.Should))
	}
	switch {
	case failed > 0, len(d.SuiteFailureReasons) > 0, len(d.BaselineProblems) > 0, d.Verdict == VerdictFail, d.Verdict == VerdictIncomplete:
		return ExitFail
	case d.Verdict == VerdictPartial && !allowPartial:
		return ExitFail
	}
	return ExitPass
}
