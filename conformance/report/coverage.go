package report

import (
	"encoding/xml"
	"fmt"
	"os"
	"sort"
	"strconv"
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

// NoSample starts the reason of a check skipped because the form it sends
// cannot be derived from the fleet's value.
const NoSample = "no sample "

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
	if strings.HasPrefix(r.Reason, NoSample) {
		// The form cannot be made from the fleet's own value (an id
		// with fewer than two letters has no mixed case): the skip is
		// named among the skip reasons, and is no gap of the target's.
		return false
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

// gaps lists what a run did not cover.
func gaps(d Document, cfg types.SuiteConfig) []Gap {
	var out []Gap
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
	filtered := 0
	reasons := map[string]int{}
	type tally struct{ ran, skipped int }
	dims := map[string]*tally{}
	dimReason := map[string]map[string]int{}
	add := func(key string, r Result) {
		t := dims[key]
		if t == nil {
			t = &tally{}
			dims[key] = t
		}
		if r.Outcome == Skipped {
			t.skipped++
			if dimReason[key] == nil {
				dimReason[key] = map[string]int{}
			}
			why := reasonOf(r)
			if r.Reason == "" && len(filters) == 0 {
				why = unreached(d)
			}
			dimReason[key][why]++
		} else {
			t.ran++
		}
	}
	// A check that ran somewhere is covered, even if another worker of a
	// split run (one report merged from several) skipped its twin.
	ranIDs := map[string]bool{}
	for _, r := range d.Results {
		if r.ID != "" && r.Outcome != Skipped {
			ranIDs[r.ID] = true
		}
	}
	ran := 0
	for _, r := range d.Results {
		if !counted(r) || r.Outcome == Skipped && ranIDs[r.ID] {
			continue
		}
		if r.Outcome != Skipped {
			ran++
		}
		if r.DeviceType != "" {
			add("device type "+r.DeviceType, r)
		}
		if r.Format != "" {
			add("format "+r.Format, r)
		}
		if r.Operation != "" {
			add("operation "+r.Operation, r)
		}
		for _, t := range r.Tags {
			if strings.HasPrefix(t, RuleTag) {
				add("rule "+strings.TrimPrefix(t, RuleTag), r)
			}
		}
		if r.Outcome == Skipped {
			if r.Reason == "" {
				filtered++
			} else {
				reasons[r.Reason]++
			}
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
	// The skip reasons first: they are few and say why; then each device
	// type, format, operation and rule of which no check ran.
	rs := make([]string, 0, len(reasons))
	for r := range reasons {
		rs = append(rs, r)
	}
	sort.Strings(rs)
	for _, r := range rs {
		out = append(out, Gap{What: "checks skipped", Why: r, Checks: reasons[r]})
	}
	keys := make([]string, 0, len(dims))
	for k, t := range dims {
		if t.ran == 0 && t.skipped > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, Gap{What: k, Why: "no check of it ran: " + topReason(dimReason[k]), Checks: dims[k].skipped})
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

// Exit codes a Document calls for (CONTRACT 6).
const (
	exitPass = 0
	exitFail = 1
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
		return exitFail
	case d.Verdict == VerdictPartial && !allowPartial:
		return exitFail
	}
	return exitPass
}

// junitAgrees rewrites a report so that its JUnit form agrees with the exit
// code: a failed SHOULD check fails the JUnit report only with --fail-on
// should; otherwise it is written as skipped, with a message that says it
// failed and a property check.outcome, so that CI shows it without going
// red.
func junitAgrees(r types.Report, failOnShould bool) types.Report {
	if failOnShould {
		return r
	}
	r.SpecReports = append(types.SpecReports(nil), r.SpecReports...)
	for i, sr := range r.SpecReports {
		m, ok := meta(sr)
		if !ok || m.Level != check.Should || !sr.State.Is(types.SpecStateFailed|types.SpecStatePanicked|types.SpecStateTimedout) {
			continue
		}
		sr.State = types.SpecStateSkipped
		sr.Failure.Message = "SHOULD check failed (the run fails on it only with --fail-on should): " + sr.Failure.Message
		sr.ReportEntries = append([]types.ReportEntry{entry("check.outcome", "failed")}, sr.ReportEntries...)
		r.SpecReports[i] = sr
	}
	return r
}

// addSuiteProperties adds the verdict and what was not covered to every
// test suite of a JUnit file written by Ginkgo.
//
// A PARTIAL run that fails (no allowPartial) gets one more test case,
// "[gwconform.coverage]", failed with what was not covered, so that the
// JUnit report fails exactly when the exit code is 1; with allowPartial it
// is skipped with the same message.
func addSuiteProperties(path string, d Document, allowPartial bool) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	// Ginkgo writes one testsuite; the properties and the coverage case
	// are spliced in as text, which is much cheaper than decoding and
	// encoding a report of a few thousand test cases.
	esc := func(s string) string {
		var buf strings.Builder
		xml.EscapeText(&buf, []byte(s))
		return buf.String()
	}
	var props strings.Builder
	fmt.Fprintf(&props, "\n      <property name=\"gwconform.verdict\" value=\"%s\"></property>", esc(d.Verdict))
	fmt.Fprintf(&props, "\n      <property name=\"gwconform.harness_version\" value=\"%s\"></property>", esc(d.Catalog.Harness))
	fmt.Fprintf(&props, "\n      <property name=\"gwconform.catalog_version\" value=\"%s\"></property>", esc(d.Catalog.Version))
	fmt.Fprintf(&props, "\n      <property name=\"gwconform.catalog_hash\" value=\"%s\"></property>", esc(d.Catalog.Hash))
	fmt.Fprintf(&props, "\n      <property name=\"gwconform.inconclusive\" value=\"%d\"></property>", d.Summary.Inconclusive)
	if d.Effects != "" {
		fmt.Fprintf(&props, "\n      <property name=\"gwconform.effects\" value=\"%s\"></property>", esc(d.Effects))
	}
	var gaps []string
	for i, g := range d.NotCovered {
		fmt.Fprintf(&props, "\n      <property name=\"gwconform.not_covered.%d\" value=\"%s\"></property>", i+1, esc(g.String()))
		gaps = append(gaps, g.String())
	}
	s := string(b)
	i := strings.Index(s, "<properties>")
	j := strings.LastIndex(s, "</testsuite>")
	if i < 0 || j < 0 || j < i {
		return fmt.Errorf("report: %s: no testsuite with properties", path)
	}
	var tc string
	if d.Verdict == VerdictPartial {
		msg := esc("the run was PARTIAL: not covered: " + strings.Join(gaps, "; "))
		name := "[gwconform.coverage] the run covers the whole interface"
		if allowPartial {
			tc = fmt.Sprintf("  <testcase name=%q classname=\"gwconform\" status=\"skipped\" time=\"0\">\n      <skipped message=\"%s (allowed by --allow-partial)\"></skipped>\n    </testcase>\n  ", name, msg)
			s = bumpCount(s, "disabled", "skipped")
		} else {
			tc = fmt.Sprintf("  <testcase name=%q classname=\"gwconform\" status=\"failed\" time=\"0\">\n      <failure message=\"%s\" type=\"failed\">%s</failure>\n    </testcase>\n  ", name, msg, msg)
			s = bumpCount(s, "failures", "failures")
		}
		s = bumpCount(s, "tests", "tests")
		j = strings.LastIndex(s, "</testsuite>")
		i = strings.Index(s, "<properties>")
	}
	s = s[:i+len("<properties>")] + props.String() + s[i+len("<properties>"):j] + tc + s[j:]
	return writeFile(path, []byte(s))
}

// bumpCount adds one to the testsuites attribute top and the first
// testsuite's attribute suite.
func bumpCount(s, top, suite string) string {
	for _, at := range []struct{ elem, attr string }{{"<testsuites", top}, {"<testsuite ", suite}} {
		e := strings.Index(s, at.elem)
		if e < 0 {
			continue
		}
		end := e + strings.Index(s[e:], ">")
		key := " " + at.attr + "=\""
		k := strings.Index(s[e:end], key)
		if k < 0 {
			continue
		}
		k += e + len(key)
		q := k + strings.Index(s[k:], "\"")
		n, err := strconv.Atoi(s[k:q])
		if err != nil {
			continue
		}
		s = s[:k] + strconv.Itoa(n+1) + s[q:]
	}
	return s
}
