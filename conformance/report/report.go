// Package report turns a Ginkgo run of the conformance suite into the three
// files a run leaves behind: junit.xml for CI systems, report.json for tools
// and report.html for people, plus a short summary for the terminal.
//
// The suite records every HTTP exchange of a check with
//
//	ginkgo.AddReportEntry("exchange", ex, ginkgo.ReportEntryVisibilityNever)
//
// where ex is a client.Exchange; Build reads them back from the raw value
// in-process, or from the entry's JSON when the report was loaded from a
// file.
package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// ExchangeEntry is the name of the report entries that carry a
// client.Exchange.
const ExchangeEntry = "exchange"

// ObservationEntry is the report entry name under which an INFO probe
// records, in a sentence, what it saw.
const ObservationEntry = "observation"

// ReadEntry is the report entry of a read of the observer a check made
// (an ObserverRead): an effect failure shows what the observer showed
// before and after the request, each read with its curl line.
const ReadEntry = "gwconform.read"

// ObserverRead is one read of a device at the observer (CONTRACT 7).
type ObserverRead struct {
	// When is "before" (no request of the check answered yet) or "after".
	When string `json:"when,omitempty"`
	URL  string `json:"url"`
	// Device is what the observer showed: the device's name and state.
	Device string `json:"device"`
	// Token says the read needs the observer's bearer token, which the
	// curl line takes from $GWSIM_ADMIN_TOKEN (never written).
	Token bool `json:"token,omitempty"`
}

// Curl is a shell command that reads the same again.
func (o ObserverRead) Curl() string {
	s := "curl -sS"
	if o.Token {
		s += ` -H "Authorization: Bearer $GWSIM_ADMIN_TOKEN"`
	}
	return s + " '" + strings.ReplaceAll(o.URL, "'", `'\''`) + "'"
}

// readOf reads an ObserverRead from a report entry, as exchange does.
func readOf(e types.ReportEntry) (ObserverRead, bool) {
	if v, ok := e.GetRawValue().(ObserverRead); ok {
		return v, true
	}
	var o ObserverRead
	if e.Value.AsJSON != "" && json.Unmarshal([]byte(e.Value.AsJSON), &o) == nil {
		return o, true
	}
	return o, false
}

// Outcomes of a result. A spec that failed, panicked, timed out or was
// aborted is "failed"; Result.State keeps Ginkgo's exact state.
const (
	Passed      = "passed"
	Failed      = "failed"
	Skipped     = "skipped"
	Pending     = "pending"
	Interrupted = "interrupted"
	// Inconclusive: a check that expects a refusal, whose control (the
	// same request made valid, sent to the same target in the same run)
	// was refused too: the refusal proves nothing, so the check neither
	// passed nor failed. The suite skips such a check after adding an
	// InconclusiveEntry to its report.
	Inconclusive = "inconclusive"
)

// Entries a spec adds to its own report to say what its outcome means, so
// that the report never reads it back from a message's wording.
const (
	// InconclusiveEntry marks a skipped refusal check as inconclusive;
	// its value says why.
	InconclusiveEntry = "gwconform.inconclusive"
	// StopEntry marks the check at which the run stopped itself
	// (ginkgo.AbortSuite): its value is why. What the run did not reach
	// is not judged, so the verdict is INCOMPLETE.
	StopEntry = "gwconform.stop"
	// SettleEntry says how long the change a check waited for took to
	// appear at the observer ("changed after 312 ms", "never changed
	// within 2s"): an asynchronous device is judged on what it shows once
	// it has settled (--settle).
	SettleEntry = "gwconform.settle"
)

// Verdicts of a run.
const (
	// VerdictPass: every MUST check that ran passed, at least one ran, and
	// the run was complete.
	VerdictPass = "PASS"
	// VerdictFail: at least one MUST check failed.
	VerdictFail = "FAIL"
	// VerdictIncomplete: no MUST check failed, but the run cannot certify
	// anything: it was interrupted or timed out, a suite-level node
	// failed, or no MUST check ran at all.
	VerdictIncomplete = "INCOMPLETE"
	// VerdictPassKnown: it would be PASS, but the run's baseline excused
	// failures: never a plain PASS (VerdictText says how many).
	VerdictPassKnown = "PASS_WITH_KNOWN_FAILURES"
)

// ObserverNone is Document.Observer when no observer showed the effects of
// the run's requests.
const ObserverNone = "none"

// Result is one check's (or plain spec's) outcome.
type Result struct {
	// ID and the fields up to Tags are the check's metadata; all are empty
	// (Level "") for a spec that is not a check.
	ID         string   `json:"id,omitempty"`
	Level      string   `json:"level"`
	Section    string   `json:"section,omitempty"`
	Contract   string   `json:"contract,omitempty"`
	Title      string   `json:"title"`
	Assertion  string   `json:"assertion,omitempty"`
	Operation  string   `json:"operation,omitempty"`
	Format     string   `json:"format,omitempty"`
	DeviceType string   `json:"device_type,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	// Text is the spec's full Ginkgo text (containers and leaf).
	Text string `json:"text,omitempty"`
	// Node is the Ginkgo node type when it is not an It (a failed
	// BeforeSuite, for instance).
	Node string `json:"node,omitempty"`
	// Outcome is one of Passed, Failed, Skipped, Pending, Interrupted;
	// State is Ginkgo's exact spec state ("panicked", "timedout", ...).
	Outcome string `json:"outcome"`
	State   string `json:"state,omitempty"`
	// Failure is the failure message, if any, and the suite-level node it
	// happened in; never a source location.
	Failure string `json:"failure,omitempty"`
	// Reason is why the spec was skipped or is pending, if given.
	Reason string `json:"reason,omitempty"`
	// Stop is why the run stopped itself at this check (see StopEntry).
	Stop string `json:"stop,omitempty"`
	// Settle says, for each change the check waited for, how long it took
	// to appear at the observer, or that it never did (SettleEntry).
	Settle []string `json:"settle,omitempty"`
	// Reads are the observer's reads of a failed effect check, before and
	// after its request.
	Reads []ObserverRead `json:"reads,omitempty"`
	// DurationMS is the check's own time: where it sent requests, the
	// time they took one after another (their exchanges' durations, those
	// left out of the reports included), since a check run ahead of its
	// place takes no time when Ginkgo reaches it and the check Ginkgo
	// waits at would take the others' time; else Ginkgo's run time.
	DurationMS float64           `json:"duration_ms"`
	Exchanges  []client.Exchange `json:"exchanges,omitempty"`
	// ExchangesOmitted counts the exchanges of a passed or inconclusive
	// check left out of the reports (see PassedSample, InconclusiveSample).
	ExchangesOmitted int `json:"exchanges_omitted,omitempty"`
	// SameExchangesAs, in report.json only, says for each exchange "" when
	// it is written in Exchanges, or "ID#n" when it repeats, request and
	// answer alike (times aside), the n-th exchange of check ID, where it
	// is written once. Reading the file fills Exchanges.
	SameExchangesAs []string `json:"same_exchanges_as,omitempty"`
	// Curl holds one command per exchange, in the same order.
	Curl []string `json:"curl,omitempty"`
	// Observations are what an INFO probe reported seeing.
	Observations []string `json:"observations,omitempty"`
	Labels       []string `json:"labels,omitempty"`
}

// IsCheck tells a check from a plain spec.
func (r Result) IsCheck() bool { return r.Level != "" }

// Statuses lists the HTTP status of each exchange ("no answer" when none
// came), which is what an INFO check reports.
func (r Result) Statuses() []string {
	out := make([]string, 0, len(r.Exchanges))
	for _, e := range r.Exchanges {
		if e.Status == 0 {
			out = append(out, "no answer")
			continue
		}
		out = append(out, strconv.Itoa(e.Status))
	}
	return out
}

// Counts are outcomes counted over a set of results.
type Counts struct {
	Total       int `json:"total"`
	Passed      int `json:"passed"`
	Failed      int `json:"failed"`
	Skipped     int `json:"skipped"`
	Pending     int `json:"pending,omitempty"`
	Interrupted int `json:"interrupted,omitempty"`
	// Inconclusive are refusal checks whose control was refused too.
	Inconclusive int `json:"inconclusive,omitempty"`
	// Expected are failures the run's baseline lists.
	Expected int `json:"expected_failures,omitempty"`
}

func (c *Counts) add(outcome string) {
	c.Total++
	switch outcome {
	case Passed:
		c.Passed++
	case Failed:
		c.Failed++
	case Skipped:
		c.Skipped++
	case Pending:
		c.Pending++
	case Interrupted:
		c.Interrupted++
	case ExpectedFailure:
		c.Expected++
	case Inconclusive:
		c.Inconclusive++
	}
}

// Ran is the number of results that ran to an outcome.
func (c Counts) Ran() int { return c.Passed + c.Failed }

// Summary counts the results.
type Summary struct {
	// Counts are over every result, checks and plain specs.
	Counts
	// ByLevel counts the checks of each level ("MUST", "SHOULD", "INFO");
	// every level is present.
	ByLevel map[string]Counts `json:"by_level"`
	// Other counts the results that are not checks.
	Other Counts `json:"other"`
	// FailedChecks are the IDs of the MUST and SHOULD checks that failed
	// or were interrupted, in ID order. INFO checks never fail a run.
	FailedChecks []string `json:"failed_checks"`
}

// CheckRef names a check in the section table.
type CheckRef struct {
	ID      string `json:"id"`
	Level   string `json:"level"`
	Title   string `json:"title,omitempty"`
	Outcome string `json:"outcome"`
}

// SectionCoverage is one published section and the checks that trace to it.
type SectionCoverage struct {
	check.Section
	// Published is false for a section that checks name but that the
	// interface does not have.
	Published bool `json:"published"`
	// HasSubsections: the section's checks are mostly under its
	// subsections (2 has 2.1 to 2.5).
	HasSubsections bool `json:"has_subsections,omitempty"`
	// Counts are the outcomes of the checks that trace to it.
	Counts Counts `json:"counts"`
	// Checks are those checks; report.json leaves them out (each result
	// names its section).
	Checks []CheckRef `json:"checks,omitempty"`
}

// Cell is one device type × format cell of the grid. It counts MUST and
// SHOULD checks only: INFO checks judge nothing.
type Cell struct {
	Format string `json:"format"`
	Counts
	FailedIDs []string `json:"failed_ids,omitempty"`
}

// Status is "failed" if any check failed, "passed" if some ran and all that
// ran passed, "none" if none ran.
func (c Cell) Status() string {
	switch {
	case c.Failed+c.Interrupted > 0:
		return Failed
	case c.Passed > 0:
		return Passed
	default:
		return "none"
	}
}

// Row is one device type of the grid.
type Row struct {
	DeviceType string `json:"device_type"`
	Cells      []Cell `json:"cells"`
}

// Formats are the grid's columns.
var Formats = []string{"json", "xml"}

// Files are where WriteAll put the reports.
type Files struct {
	Dir, JUnit, JSON, HTML string
}

// Document is everything report.json holds and report.html shows.
type Document struct {
	Target string `json:"target"`
	Suite  string `json:"suite,omitempty"`
	// Catalog is the harness version, catalog version and catalog hash.
	Catalog CatalogID `json:"catalog"`
	Seed    int64     `json:"seed"`
	// LabelFilter is the --ginkgo.label-filter the run used, if any.
	LabelFilter string    `json:"label_filter,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	DurationMS  float64   `json:"duration_ms"`
	Verdict     string    `json:"verdict"`
	// VerdictLine is the verdict in words, as the console says it ("PASS
	// with 3 known failures").
	VerdictLine string `json:"verdict_text"`
	// KnownFailures counts the failures the run's baseline excused.
	KnownFailures int `json:"known_failures,omitempty"`
	// SuiteSucceeded is Ginkgo's own verdict; SuiteFailureReasons its
	// special reasons ("Interrupted by User", ...).
	SuiteSucceeded      bool              `json:"suite_succeeded"`
	SuiteFailureReasons []string          `json:"suite_failure_reasons,omitempty"`
	Summary             Summary           `json:"summary"`
	Sections            []SectionCoverage `json:"sections"`
	Grid                []Row             `json:"grid"`
	// Results: checks in ID order, then plain specs in run order.
	Results []Result `json:"results"`
	// checks is the catalog the results were built from (Build) or are
	// read with (Read): report.json leaves out of a skipped or passed
	// check what the catalog says of it.
	checks check.Catalog
	// NotCovered lists what the run did not cover; a run that would
	// otherwise PASS is PARTIAL when it is not empty.
	NotCovered []Gap `json:"not_covered,omitempty"`
	// BaselineProblems says what is wrong with the run's baseline: an entry
	// whose checks pass, an expired entry, one naming no check. Each fails
	// the run.
	BaselineProblems []string `json:"baseline_problems,omitempty"`
	// Observer is the base URL of the service that showed the effects of
	// the run's requests (CONTRACT 7 reads), or ObserverNone.
	Observer string `json:"observer"`
	// Effects is the one line saying that the run did not observe the
	// effects of its requests, and why ("effects not observed: ..."); empty
	// when an observer showed them.
	Effects string `json:"effects,omitempty"`
	// LeftChanged are the devices the run changed and could not put back
	// (interrupted, refused, or read otherwise afterwards), each in one
	// line with its name and state before the run.
	LeftChanged []string `json:"left_changed,omitempty"`
	// Findings are failures that share a cause, stated once (Findings).
	Findings []Finding `json:"findings,omitempty"`
	// Preflight names each valid request of the pre-flight that the
	// target refused, or answered with something other than the success
	// body, and its answer: a conformance failure, which the run goes on
	// to judge check by check (the console's first lines say it too).
	Preflight []string `json:"preflight,omitempty"`
	// Schedule is how the run sent its requests: how many at once, and
	// its critical path (gwconform run only; a --parallel run's is its
	// first process's).
	Schedule *Schedule `json:"schedule,omitempty"`
	// Model is the model-based phase: its seed and budget, what it did,
	// how much of the space the fleet opens it reached, and its findings
	// (gwconform run only; nil when it did not run).
	Model *ModelPhase `json:"model_phase,omitempty"`
	// FleetFile is the fleet file the run read, made absolute (empty: the
	// demo fleet); a path, never its content.
	FleetFile string `json:"fleet_file,omitempty"`
	// FailOn is "should" when the run fails on SHOULD checks too
	// (--fail-on should): the verdict then says FAIL for a SHOULD failure,
	// as the exit code does.
	FailOn string `json:"fail_on,omitempty"`
	// Stopped is why the run stopped itself before the end (a target
	// that stopped answering or answered 5xx, --max-requests): what it
	// did not reach is not judged, so the verdict is INCOMPLETE.
	Stopped string `json:"stopped,omitempty"`
	// Files is set by WriteAll.
	Files Files `json:"-"`
}

// Duration is the run's wall time.
func (d Document) Duration() time.Duration {
	return time.Duration(d.DurationMS * float64(time.Millisecond))
}

// FailedAt is the number of checks of exactly that level ("MUST",
// "SHOULD") that failed or were interrupted. INFO never fails a run: it
// is always 0 for INFO.
func (d Document) FailedAt(level string) int {
	if level == string(check.Info) {
		return 0
	}
	n := 0
	for _, r := range d.Results {
		if r.Level == level && (r.Outcome == Failed || r.Outcome == Interrupted) {
			n++
		}
	}
	return n
}

// Result returns the result of the check with that ID.
func (d Document) Result(id string) (Result, bool) {
	for _, r := range d.Results {
		if r.ID == id && id != "" {
			return r, true
		}
	}
	return Result{}, false
}

// Build makes a Document from a Ginkgo report. Check metadata comes from
// cat; for a check cat does not know (a report of another catalog) it is
// read back from the spec's labels. Suite-level nodes (BeforeSuite,
// ReportAfterSuite, ...) appear only when they failed.
func Build(r types.Report, target string, cat check.Catalog) Document {
	return build(r, target, false, cat)
}

// build is Build; keepAll keeps every check's exchanges whatever its
// outcome (WriteOptions.KeepEveryExchange).
func build(r types.Report, target string, keepAll bool, cat check.Catalog) Document {
	d := Document{
		checks:              cat,
		Target:              target,
		Suite:               r.SuiteDescription,
		Seed:                r.SuiteConfig.RandomSeed,
		LabelFilter:         r.SuiteConfig.LabelFilter,
		StartedAt:           r.StartTime,
		DurationMS:          ms(r.RunTime),
		SuiteSucceeded:      r.SuiteSucceeded,
		SuiteFailureReasons: r.SpecialSuiteFailureReasons,
	}
	if d.DurationMS == 0 && !r.EndTime.IsZero() {
		d.DurationMS = ms(r.EndTime.Sub(r.StartTime))
	}
	var checks, plain []Result
	for _, sr := range r.SpecReports {
		if !sr.LeafNodeType.Is(types.NodeTypeIt) && !sr.State.Is(types.SpecStateFailureStates) {
			continue
		}
		res := result(sr, keepAll, cat)
		if res.IsCheck() {
			checks = append(checks, res)
		} else {
			plain = append(plain, res)
		}
	}
	sort.SliceStable(checks, func(i, j int) bool { return naturalLess(checks[i].ID, checks[j].ID) })
	d.Results = append(checks, plain...)
	d.Summary = summarize(d.Results)
	d.Stopped = stopped(d.Results)
	d.Sections = coverage(d.Results)
	d.Grid = grid(d.Results)
	d.NotCovered = gaps(d, r.SuiteConfig)
	setVerdict(&d)
	return d
}

func ms(t time.Duration) float64 { return float64(t) / float64(time.Millisecond) }

func result(sr types.SpecReport, keepAll bool, cat check.Catalog) Result {
	res := Result{
		Text:       sr.FullText(),
		Title:      sr.LeafNodeText,
		State:      sr.State.String(),
		Outcome:    outcome(sr.State),
		DurationMS: ms(sr.RunTime),
		Labels:     sr.Labels(),
	}
	if len(res.Labels) == 0 {
		res.Labels = nil
	}
	if res.Text == "" {
		res.Text = sr.LeafNodeType.String()
		res.Title = res.Text
	}
	if !sr.LeafNodeType.Is(types.NodeTypeIt) {
		res.Node = sr.LeafNodeType.String()
	}
	if m, ok := meta(sr, cat); ok {
		res.ID, res.Level, res.Section, res.Contract = m.ID, string(m.Level), m.Section, m.Contract
		res.Title, res.Assertion = m.Title, m.Assertion
		res.Operation, res.Format, res.DeviceType, res.Tags = m.Operation, m.Format, m.DeviceType, m.Tags
		// The spec text and labels say again what the metadata says.
		res.Text, res.Labels = "", nil
	}
	switch {
	case sr.State.Is(types.SpecStateSkipped | types.SpecStatePending):
		res.Reason = sr.Failure.Message
		if res.IsCheck() && hasEntry(sr, InconclusiveEntry) {
			res.Outcome = Inconclusive
		}
	case sr.State.Is(types.SpecStateFailureStates):
		res.Failure = failureText(sr)
	}
	keep := keepAll || KeepsExchanges(res.ID, res.Level, res.Outcome)
	sent := 0.0 // ms in the check's own requests
	// A read is "before" when a request of the check follows it.
	var readAt []int
	lastExchange := -1
	for i, e := range sr.ReportEntries {
		switch e.Name {
		case ObservationEntry:
			res.Observations = append(res.Observations, e.StringRepresentation())
			continue
		case SettleEntry:
			res.Settle = append(res.Settle, e.StringRepresentation())
			continue
		case StopEntry:
			if res.Outcome == Interrupted {
				res.Stop = e.StringRepresentation()
			}
			continue
		case ReadEntry:
			if o, ok := readOf(e); ok && keep && (res.Outcome != Passed || keepAll) {
				res.Reads = append(res.Reads, o)
				readAt = append(readAt, i)
			}
			continue
		case ExchangeEntry:
			lastExchange = i
		default:
			continue
		}
		ex, ok := exchange(e)
		if ok {
			sent += float64(ex.Duration) / float64(time.Millisecond)
		}
		if !keep {
			res.ExchangesOmitted++
			continue
		}
		if ok {
			res.Exchanges = append(res.Exchanges, ex)
			res.Curl = append(res.Curl, ex.Curl())
		}
	}
	if sent > 0 {
		res.DurationMS = math.Round(sent*1000) / 1000
	}
	for k, at := range readAt {
		res.Reads[k].When = "after"
		if at < lastExchange {
			res.Reads[k].When = "before"
		}
	}
	return res
}

// PassedSample is one in how many passed checks keep their exchanges in
// the reports. A failed, interrupted or expected failure and every INFO
// probe keep all of theirs; a passed check is kept as a sample, chosen by
// its ID so that runs keep the same ones, which bounds what a passing
// run's reports spend on them (some 4,000 checks, one or two exchanges
// each) to a few tens of KB.
const PassedSample = 200

// inconclusiveState is Ginkgo's state of an inconclusive check: it is
// skipped, with the reason it proves nothing.
const inconclusiveState = "skipped"

// InconclusiveSample is one in how many inconclusive checks keep their
// exchanges, chosen by ID as PassedSample's are. Such a check proves
// nothing because the target refused its valid request too; its reason
// says how ("HTTP 409, status error, error busy"), and that refusal is a
// failure of its own, written with all its exchanges. A target that
// refuses every message makes nearly a thousand of them: with their
// exchanges, 2.2 MB of reports.
const InconclusiveSample = 20

// KeepsExchanges says whether a result's exchanges go into the reports.
func KeepsExchanges(id, level, outcome string) bool {
	switch {
	case level == string(check.Info):
		return true
	case outcome == Passed:
		return sampled(id, PassedSample)
	case outcome == Inconclusive:
		return sampled(id, InconclusiveSample)
	}
	return true
}

// sampled says id is one of the one in n that a sample keeps.
func sampled(id string, n uint32) bool {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32()%n == 0
}

func outcome(s types.SpecState) string {
	switch {
	case s.Is(types.SpecStatePassed):
		return Passed
	case s.Is(types.SpecStateSkipped):
		return Skipped
	case s.Is(types.SpecStatePending):
		return Pending
	case s.Is(types.SpecStateInterrupted | types.SpecStateAborted):
		// Aborted: the run stopped itself (a silent or failing target,
		// --max-requests): what was not reached is not judged.
		return Interrupted
	case s.Is(types.SpecStateFailureStates):
		return Failed
	default:
		// Invalid: the spec never ran to a state.
		return Skipped
	}
}

func failureText(sr types.SpecReport) string {
	f := sr.Failure
	var b strings.Builder
	msg := f.Message
	if f.ForwardedPanic != "" {
		msg = strings.TrimSpace(msg + "\npanic: " + f.ForwardedPanic)
	}
	// No source location: a report is read by people who have the
	// check's ID, not the harness's source.
	b.WriteString(msg)
	if f.FailureNodeType != types.NodeTypeInvalid && f.FailureNodeType != types.NodeTypeIt {
		b.WriteString("\nin " + f.FailureNodeType.String())
	}
	for _, af := range sr.AdditionalFailures {
		b.WriteString("\n\nalso " + af.State.String() + ": " + af.Failure.Message)
	}
	return strings.TrimSpace(b.String())
}

// hasEntry says whether a spec added a report entry of that name.
func hasEntry(sr types.SpecReport, name string) bool {
	for _, e := range sr.ReportEntries {
		if e.Name == name {
			return true
		}
	}
	return false
}

// meta finds a spec's check metadata by the ID among its labels: from
// cat, else from the labels check.Meta.Labels gave it. The spec's display
// text is never read.
func meta(sr types.SpecReport, cat check.Catalog) (check.Meta, bool) {
	if !sr.LeafNodeType.Is(types.NodeTypeIt) {
		return check.Meta{}, false
	}
	id := check.IDFromLabels(sr.Labels())
	if id == "" {
		return check.Meta{}, false
	}
	if m, ok := cat.Lookup(id); ok {
		return m, true
	}
	// Not in this process's catalog: the title is the display text
	// without the "[ID] " that check.Meta.Text put before it.
	m := check.Meta{ID: id, Title: strings.TrimPrefix(sr.LeafNodeText, "["+id+"] ")}
	for _, l := range sr.Labels() {
		k, v, ok := strings.Cut(l, ":")
		switch {
		case l == check.IDLabel+id:
		case ok && k == "level":
			m.Level = check.Level(v)
		case ok && k == "section":
			m.Section = v
		case ok && k == "op":
			m.Operation = v
		case ok && k == "format":
			m.Format = v
		case ok && k == "type":
			m.DeviceType = v
			for _, t := range device.Types {
				if check.Slug(t.Name) == v {
					m.DeviceType = t.Name
				}
			}
		default:
			m.Tags = append(m.Tags, l)
		}
	}
	if m.Level == "" {
		return check.Meta{}, false
	}
	return m, true
}

// exchange reads a client.Exchange from a report entry: the raw value
// in-process, the JSON form after a round trip through a file.
func exchange(e types.ReportEntry) (client.Exchange, bool) {
	switch v := e.GetRawValue().(type) {
	case client.Exchange:
		return v, true
	case *client.Exchange:
		if v != nil {
			return *v, true
		}
	}
	var ex client.Exchange
	if e.Value.AsJSON != "" {
		if err := json.Unmarshal([]byte(e.Value.AsJSON), &ex); err == nil {
			return ex, true
		}
	}
	if raw := e.GetRawValue(); raw != nil {
		if b, err := json.Marshal(raw); err == nil {
			if err := json.Unmarshal(b, &ex); err == nil {
				return ex, true
			}
		}
	}
	return client.Exchange{}, false
}

func summarize(results []Result) Summary {
	s := Summary{ByLevel: map[string]Counts{}, FailedChecks: []string{}}
	for _, l := range check.Levels {
		s.ByLevel[string(l)] = Counts{}
	}
	for _, r := range results {
		s.Counts.add(r.Outcome)
		if !r.IsCheck() {
			s.Other.add(r.Outcome)
			continue
		}
		c := s.ByLevel[r.Level]
		c.add(r.Outcome)
		s.ByLevel[r.Level] = c
		if r.Level != string(check.Info) && (r.Outcome == Failed || r.Outcome == Interrupted) {
			s.FailedChecks = append(s.FailedChecks, r.ID)
		}
	}
	return s
}

func verdict(d Document) string {
	must := d.Summary.ByLevel[string(check.Must)]
	switch {
	case d.Stopped != "":
		return VerdictIncomplete
	case must.Failed > 0, len(d.BaselineProblems) > 0, d.FailOn == FailOnShould && d.FailedAt(string(check.Should)) > 0:
		return VerdictFail
	case d.Summary.Interrupted > 0, d.Summary.Other.Failed > 0, len(d.SuiteFailureReasons) > 0, must.Inconclusive > 0:
		// A MUST refusal whose valid twin was refused proves nothing:
		// the run cannot certify it.
		return VerdictIncomplete
	case len(d.NotCovered) > 0:
		return VerdictPartial
	case must.Passed == 0:
		return VerdictIncomplete
	case d.Summary.Expected > 0:
		return VerdictPassKnown
	default:
		return VerdictPass
	}
}

// ModelPhase is a run's model-based phase: random operation sequences over
// the space the fleet opens, judged by a model of the two texts.
type ModelPhase struct {
	// Seed draws the sequences; BudgetOperations and BudgetSeconds bound
	// them (shrinking not counted).
	Seed             int64   `json:"seed"`
	BudgetOperations int     `json:"budget_operations"`
	BudgetSeconds    float64 `json:"budget_seconds"`
	// Operations were sent in Rounds sequences in Seconds, shrinking
	// included.
	Operations int     `json:"operations"`
	Rounds     int     `json:"rounds"`
	Seconds    float64 `json:"seconds"`
	// Coverage is how much of each projection of the space it reached.
	Coverage []ModelDimension `json:"coverage"`
	// Findings are its distinct disagreements, each shrunk.
	Findings []ModelFinding `json:"findings,omitempty"`
	Notes    []string       `json:"notes,omitempty"`
}

// ModelDimension is one projection of the space: operations × types ×
// field subsets, × where each identifier came from, types × fields ×
// valid or forbidden values.
type ModelDimension struct {
	Name       string   `json:"name"`
	Reached    int      `json:"reached"`
	Total      int      `json:"total"`
	NotReached []string `json:"not_reached,omitempty"`
}

// ModelFinding is one distinct disagreement of the phase, shrunk.
type ModelFinding struct {
	Level string `json:"level"`
	Rule  string `json:"rule"`
	Quote string `json:"quote"`
	Why   string `json:"why"`
	Count int    `json:"count"`
	// Original is how many operations the sequence had up to it;
	// Operations the shrunk sequence, api_keys masked.
	Original     int      `json:"original_operations"`
	Operations   []string `json:"operations"`
	Reproducible bool     `json:"reproducible"`
	// Check is the check that reports it; Sequence the shrunk sequence as
	// gwconform explore writes one (api_keys masked), which gwconform
	// replay report.json <check> runs again with the model.
	Check    string          `json:"check"`
	Sequence json.RawMessage `json:"sequence,omitempty"`
}

// Schedule is how a run sent its requests.
type Schedule struct {
	// Concurrency is the most requests in flight at once.
	Concurrency int `json:"concurrency"`
	// CriticalPath is the device whose round trips one after another were
	// the most: the run's wall time is bounded below by them.
	CriticalPath *Chain `json:"critical_path,omitempty"`
	// Ahead is what was run ahead of its place, devices side by side.
	Ahead *Ahead `json:"ahead,omitempty"`
}

// Ahead is the checks a run sent ahead of their place (a target across a
// network), in chains side by side, and how long that took.
type Ahead struct {
	Checks  int     `json:"checks"`
	Chains  int     `json:"chains"`
	Seconds float64 `json:"seconds"`
}

// Chain is one device's round trips one after another.
type Chain struct {
	Of         string  `json:"of"`
	RoundTrips int     `json:"round_trips"`
	Seconds    float64 `json:"seconds"`
}

// ReplayLine is the command that runs a check again (gwconform replay), as
// it can be pasted from any folder: the report's own path; for a run that
// read a fleet file, the credentials come from $GWCONFORM_FLEET and the
// line stops, naming the file, when it is not set (a path written here
// would be gone where a CI artefact is read).
func ReplayLine(d Document, id string) string {
	path := JSONFile
	if d.Files.JSON != "" {
		path = d.Files.JSON
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
	}
	line := "gwconform replay " + shellWord(path) + " " + shellWord(id)
	if d.FleetFile != "" {
		line = `: "${GWCONFORM_FLEET:?` + fleetNeed(filepath.Base(d.FleetFile)) + `}" && ` + line
	}
	return line
}

// fleetNeed is what a replay line says where $GWCONFORM_FLEET is not set:
// the fleet file it needs, by a name that holds nothing a shell would
// read inside ${...:?...}.
func fleetNeed(name string) string {
	if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.+,@") != "" {
		name = "its fleet file"
	}
	return "set GWCONFORM_FLEET to the fleet file the run read (" + name + ")"
}

// shellWord is s as one word of a POSIX shell: as it is when it holds
// nothing the shell reads, else in single quotes.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:@+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// FailOnShould is Document.FailOn for a run that fails on SHOULD checks.
const FailOnShould = "should"

// VerdictText is a verdict in words: "PASS with 3 known failures" for
// VerdictPassKnown, the verdict itself otherwise.
func VerdictText(verdict string, known int) string {
	if verdict == VerdictPassKnown {
		if known == 1 {
			return "PASS with 1 known failure"
		}
		return "PASS with " + strconv.Itoa(known) + " known failures"
	}
	return verdict
}

// setVerdict sets the verdict and the fields that say it.
func setVerdict(d *Document) {
	d.Verdict = verdict(*d)
	d.KnownFailures = d.Summary.Expected
	d.VerdictLine = VerdictText(d.Verdict, d.KnownFailures)
}

func coverage(results []Result) []SectionCoverage {
	out := make([]SectionCoverage, 0, len(check.Sections))
	index := map[string]int{}
	for _, s := range check.Sections {
		index[s.Number] = len(out)
		sub := false
		for _, o := range check.Sections {
			if strings.HasPrefix(o.Number, s.Number+".") {
				sub = true
			}
		}
		out = append(out, SectionCoverage{Section: s, Published: true, HasSubsections: sub, Checks: []CheckRef{}})
	}
	for _, r := range results {
		if !r.IsCheck() {
			continue
		}
		i, ok := index[r.Section]
		if !ok {
			i = len(out)
			index[r.Section] = i
			out = append(out, SectionCoverage{Section: check.Section{Number: r.Section, Title: "not a section of the published interface"}, Checks: []CheckRef{}})
		}
		out[i].Checks = append(out[i].Checks, CheckRef{ID: r.ID, Level: r.Level, Title: r.Title, Outcome: r.Outcome})
		out[i].Counts.add(r.Outcome)
	}
	return out
}

func grid(results []Result) []Row {
	var names []string
	seen := map[string]bool{}
	for _, t := range device.Types {
		names = append(names, t.Name)
		seen[t.Name] = true
	}
	var extra []string
	for _, r := range results {
		if r.DeviceType != "" && !seen[r.DeviceType] {
			seen[r.DeviceType] = true
			extra = append(extra, r.DeviceType)
		}
	}
	sort.Strings(extra)
	names = append(names, extra...)

	rows := make([]Row, 0, len(names))
	for _, t := range names {
		row := Row{DeviceType: t}
		for _, f := range Formats {
			c := Cell{Format: f}
			for _, r := range results {
				if r.DeviceType != t || !strings.EqualFold(r.Format, f) || r.Level == string(check.Info) || !r.IsCheck() {
					continue
				}
				c.add(r.Outcome)
				if r.Outcome == Failed || r.Outcome == Interrupted {
					c.FailedIDs = append(c.FailedIDs, r.ID)
				}
			}
			row.Cells = append(row.Cells, c)
		}
		rows = append(rows, row)
	}
	return rows
}

// naturalLess orders IDs with their numbers compared as numbers:
// "CMD.2" < "CMD.10".
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		ca, ra := chunk(a)
		cb, rb := chunk(b)
		if ca != cb {
			na, ea := strconv.ParseUint(ca, 10, 64)
			nb, eb := strconv.ParseUint(cb, 10, 64)
			if ea == nil && eb == nil && na != nb {
				return na < nb
			}
			return ca < cb
		}
		a, b = ra, rb
	}
	return len(a) < len(b)
}

// chunk splits off the leading run of digits or of non-digits.
func chunk(s string) (string, string) {
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	d := digit(s[0])
	i := 1
	for i < len(s) && digit(s[i]) == d {
		i++
	}
	return s[:i], s[i:]
}

// stopped is the reason the run stopped itself, if it did.
func stopped(results []Result) string {
	for _, r := range results {
		if r.Outcome == Interrupted && r.Stop != "" {
			return r.Stop
		}
	}
	return ""
}

// Recount recomputes a document's summary and verdict from its results
// alone, as gwconform verify does with a report it did not write: a count
// or verdict edited by hand no longer matches.
func Recount(d Document) Document {
	d.Summary = summarize(d.Results)
	d.Stopped = stopped(d.Results)
	setVerdict(&d)
	return d
}

// sameExchanges finds the exchanges that repeat, request and answer alike
// (their times aside), one of a result before them: a refusal judged at
// two levels (its MUST check and its .contract twin, its parity check)
// sends the same request again and gets the same answer. For each such
// result it gives, per exchange, "" for one written there or "ID#n" for
// the n-th exchange (from 1) of the check where it was written first. The
// reports write each exchange once.
func sameExchanges(results []Result) map[int][]string {
	first := map[string]string{}
	out := map[int][]string{}
	for i, r := range results {
		if r.ID == "" {
			continue
		}
		var refs []string
		repeated := false
		for n, e := range r.Exchanges {
			e.Duration = 0
			b, _ := json.Marshal(e)
			k := string(b)
			ref, ok := first[k]
			if !ok {
				first[k] = r.ID + "#" + strconv.Itoa(n+1)
			}
			repeated = repeated || ok
			refs = append(refs, ref)
		}
		if repeated {
			out[i] = refs
		}
	}
	return out
}

// exchangeRef splits "ID#n" into the ID and the index from 0.
func exchangeRef(ref string) (string, int, bool) {
	id, n, ok := strings.Cut(ref, "#")
	i, err := strconv.Atoi(n)
	if !ok || err != nil || i < 1 {
		return "", 0, false
	}
	return id, i - 1, true
}

// Read reads report.json as WriteJSON wrote it, each check that it wrote
// without its metadata (a passed, skipped or inconclusive check) given
// back what cat says of it. A check cat does not know keeps its ID, level
// and outcome.
func Read(b []byte, cat check.Catalog) (Document, error) {
	d := Document{checks: cat}
	err := json.Unmarshal(b, &d)
	return d, err
}

// UnmarshalJSON reads a Document as WriteJSON wrote it, or as an earlier
// version did: an assertion gets back the quoting sentence it names in
// "sentences"; the passed checks listed under "passed" become results
// again, in their place among the checks (ID order); a result's exchanges
// written once, at another check (same_exchanges_as), are filled in; the
// metadata it left to the catalog comes from the catalog d holds (Read).
func (d *Document) UnmarshalJSON(b []byte) error {
	type plain Document
	var p struct {
		plain
		// Passed: level → ID → duration in ms (see marshalLines).
		Passed map[string]map[string]float64 `json:"passed"`
		// Sentences: the quoting sentences that end several assertions,
		// which each such result names by its number from 1
		// (resultLine.Sentence).
		Sentences []string `json:"sentences"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	cat := d.checks
	*d = Document(p.plain)
	d.checks = cat
	if len(p.Sentences) > 0 || bytes.Contains(b, []byte(`"sentence":`)) {
		var q struct {
			Results []struct {
				Sentence int `json:"sentence"`
			} `json:"results"`
		}
		if err := json.Unmarshal(b, &q); err != nil {
			return err
		}
		for i, r := range q.Results {
			switch {
			case r.Sentence == 0:
			case r.Sentence < 0 || r.Sentence > len(p.Sentences):
				return fmt.Errorf("report: %s: sentence %d is not one of the %d in sentences", d.Results[i].ID, r.Sentence, len(p.Sentences))
			default:
				d.Results[i].Assertion += " " + p.Sentences[r.Sentence-1]
			}
		}
	}
	if err := d.addPassed(p.Passed); err != nil {
		return err
	}
	for i := range d.Results {
		d.Results[i].fillFromCatalog(cat)
	}
	byID := map[string]int{}
	for i, r := range d.Results {
		if r.ID != "" {
			byID[r.ID] = i
		}
	}
	for i, r := range d.Results {
		if len(r.SameExchangesAs) == 0 {
			continue
		}
		own := r.Exchanges
		var all []client.Exchange
		for _, ref := range r.SameExchangesAs {
			if ref == "" {
				if len(own) == 0 {
					return fmt.Errorf("report: %s: fewer exchanges than same_exchanges_as says", r.ID)
				}
				all, own = append(all, own[0]), own[1:]
				continue
			}
			id, n, ok := exchangeRef(ref)
			j, known := byID[id]
			k, written := -1, false
			if ok && known {
				k, written = d.Results[j].writtenAt(n)
			}
			if !written {
				return fmt.Errorf("report: %s: same_exchanges_as %q names no exchange written", r.ID, ref)
			}
			all = append(all, d.Results[j].Exchanges[k])
		}
		d.Results[i].Exchanges = all
		d.Results[i].SameExchangesAs = nil
	}
	return nil
}

// writtenAt is where the n-th of a result's exchanges (from 0, counting
// those written at another check) is among those written with it: a
// reference names an exchange by its place in the whole list, and the
// result may not be filled in yet.
func (r Result) writtenAt(n int) (int, bool) {
	if len(r.SameExchangesAs) == 0 {
		return n, n >= 0 && n < len(r.Exchanges)
	}
	if n < 0 || n >= len(r.SameExchangesAs) || r.SameExchangesAs[n] != "" {
		return 0, false
	}
	k := 0
	for _, ref := range r.SameExchangesAs[:n] {
		if ref == "" {
			k++
		}
	}
	return k, k < len(r.Exchanges)
}

// fillFromCatalog puts back what cat says of a check that report.json
// wrote without it (a passed, skipped or inconclusive
// check: marshalLines); a result with its title, or not in the catalog,
// is left as it is.
func (r *Result) fillFromCatalog(cat check.Catalog) {
	if !r.IsCheck() || r.Title != "" {
		return
	}
	if r.Outcome == Inconclusive && r.State == "" {
		r.State = inconclusiveState
	}
	m, ok := cat.Lookup(r.ID)
	if !ok {
		return
	}
	r.Section, r.Contract, r.Title, r.Assertion = m.Section, m.Contract, m.Title, m.Assertion
	r.Operation, r.Format, r.DeviceType, r.Tags = m.Operation, m.Format, m.DeviceType, m.Tags
}

// addPassed puts the passed checks report.json lists by level and ID
// among d's results, each a passed check with its time: the checks in ID
// order, then the specs that are not checks, as Build orders them. A check
// listed twice is an error.
func (d *Document) addPassed(passed map[string]map[string]float64) error {
	if len(passed) == 0 {
		return nil
	}
	listed := map[string]bool{}
	var checks, plain []Result
	for _, r := range d.Results {
		if r.IsCheck() {
			checks = append(checks, r)
			listed[r.ID] = true
		} else {
			plain = append(plain, r)
		}
	}
	for level, ids := range passed {
		if level == "" {
			return errors.New(`report: "passed" has checks without a level`)
		}
		for id, ms := range ids {
			if id == "" || listed[id] {
				return fmt.Errorf("report: check %q is listed twice", id)
			}
			listed[id] = true
			checks = append(checks, Result{ID: id, Level: level, Outcome: Passed, DurationMS: ms})
		}
	}
	sort.SliceStable(checks, func(i, j int) bool { return naturalLess(checks[i].ID, checks[j].ID) })
	d.Results = append(checks, plain...)
	return nil
}
