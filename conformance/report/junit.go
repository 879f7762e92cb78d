package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/gatewayapi/junit"
)

// The JUnit file is written from the Document, as report.json and
// report.html are: one test case per check (and per suite-level node that
// failed), so that it says what the other reports say. Its verdicts agree
// with gwconform run's exit code (ExitCode):
//   - a failed MUST check is a failure, a panicked or interrupted one an
//     error;
//   - a failed SHOULD check is a failure only with --fail-on should;
//     otherwise it is skipped, with a message that says it failed and the
//     property check.outcome=failed, so that CI shows it without going red;
//   - a failure the baseline expects, an inconclusive check and an INFO
//     probe that could not complete are skipped, with check.outcome saying
//     which;
//   - a PARTIAL run gets one more test case, "[gwconform.coverage]",
//     failed with what was not covered (skipped with --allow-partial).
//
// A check's test case is named by its ID (the catalog has its title). One
// that did not pass says why once, in its failure's (or error's) text, or
// in its system-err when skipped: what it expected, its rule, each
// exchange (bodies shortened to maxJUnitBody; an exchange another check
// made too is named, not repeated) and the gwconform replay line. A passed
// one is one line: its name, class and time. So a run's file grows by some
// 100 bytes a check and 1 KB a failure.
//
// The suite carries the verdict, seed, catalog and target (without
// credentials) as properties. The document is gatewayapi/junit's; this
// file decides what goes in it and encodes it compactly (one-space
// indent, empty elements closed in themselves).

// JUnitClass is the classname of a test case that is no check (and the
// suite's name); a check's is its family (JUnitFamily).
const JUnitClass = "gwconform"

// JUnitFamily is a check's classname: gwconform and the first two parts
// of its ID (gwconform.command.sign, gwconform.effect.update_name,
// gwconform.command.light-dimmer), so that a CI's test view groups a
// family's checks together.
func JUnitFamily(r Result) string {
	if r.ID == "" {
		return JUnitClass
	}
	parts := strings.SplitN(r.ID, ".", 3)
	if len(parts) > 2 {
		parts = parts[:2]
	}
	return JUnitClass + "." + strings.Join(parts, ".")
}

// coverageCase names the test case of a PARTIAL run.
const coverageCase = "[gwconform.coverage] the run covers the whole interface"

// JUnitName is the name of a result's test case: the ID for a check (its
// title is the catalog's, and a failure's message says it), the spec's
// text otherwise. gwconform verify finds each check by it.
func JUnitName(r Result) string {
	if r.IsCheck() {
		return r.ID
	}
	return r.Text
}

// WriteJUnit writes d as a JUnit XML file at path (see above).
func WriteJUnit(path string, d Document, o WriteOptions) error {
	b, err := marshalJUnit(d, o)
	if err != nil {
		return fmt.Errorf("report: encode %s: %w", path, err)
	}
	return writeFile(path, b)
}

func marshalJUnit(d Document, o WriteOptions) ([]byte, error) {
	s := junit.Suite{Name: JUnitClass, Time: new(d.DurationMS / 1000), Properties: suiteProperties(d)}
	if !d.StartedAt.IsZero() {
		s.Timestamp = d.StartedAt.UTC().Format("2006-01-02T15:04:05")
	}
	same := sameExchanges(d.Results)
	for i, r := range d.Results {
		s.Cases = append(s.Cases, junitCaseOf(d, r, same[i], o))
	}
	if d.Verdict == VerdictPartial {
		var gaps []string
		for _, g := range d.NotCovered {
			gaps = append(gaps, g.String())
		}
		msg := "the run was PARTIAL: not covered: " + strings.Join(gaps, "; ")
		// No check's: it takes no time of its own.
		c := junit.Case{Name: coverageCase, Classname: JUnitClass, Time: new(0.0)}
		if o.AllowPartial {
			c.Status, c.Skipped = Skipped, &junit.Message{Message: msg + " (allowed by --allow-partial)"}
		} else {
			c.Status, c.Failure = Failed, &junit.Message{Message: msg, Type: Failed, Text: cdata(msg)}
		}
		s.Cases = append(s.Cases, c)
	}
	var disabled, skipped, errored int
	for _, c := range s.Cases {
		s.Tests++
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Error != nil:
			errored++
		case c.Skipped != nil && c.Status == Pending:
			disabled++
		case c.Skipped != nil:
			skipped++
		}
	}
	s.Disabled, s.Skipped, s.Errors = new(disabled), new(skipped), new(errored)
	all := junit.Suites{Tests: new(s.Tests), Disabled: new(disabled), Errors: new(errored), Failures: new(s.Failures), Time: s.Time, Suites: []junit.Suite{s}}
	b, err := xml.MarshalIndent(all, "", " ")
	if err != nil {
		return nil, err
	}
	// A test case with nothing in it closes itself: a passing run's file
	// is mostly such lines.
	b = bytes.ReplaceAll(b, []byte("></testcase>"), []byte("/>"))
	b = bytes.ReplaceAll(b, []byte("></property>"), []byte("/>"))
	return append(append([]byte(xml.Header), b...), '\n'), nil
}

// suiteProperties are the run's: what judged it, on what, and its verdict.
func suiteProperties(d Document) []junit.Property {
	p := []junit.Property{
		{Name: "gwconform.verdict", Value: d.Verdict},
		{Name: "gwconform.target", Value: withoutCredentials(d.Target)},
		{Name: "gwconform.seed", Value: strconv.FormatInt(d.Seed, 10)},
		{Name: "gwconform.harness_version", Value: d.Catalog.Harness},
		{Name: "gwconform.catalog_version", Value: d.Catalog.Version},
		{Name: "gwconform.catalog_hash", Value: d.Catalog.Hash},
		{Name: "gwconform.inconclusive", Value: strconv.Itoa(d.Summary.Inconclusive)},
	}
	if d.LabelFilter != "" {
		p = append(p, junit.Property{Name: "gwconform.label_filter", Value: d.LabelFilter})
	}
	if d.Effects != "" {
		p = append(p, junit.Property{Name: "gwconform.effects", Value: d.Effects})
	}
	if d.Stopped != "" {
		p = append(p, junit.Property{Name: "gwconform.stopped", Value: d.Stopped})
	}
	for i, reason := range d.SuiteFailureReasons {
		p = append(p, junit.Property{Name: "gwconform.suite_failure." + strconv.Itoa(i+1), Value: reason})
	}
	for i, g := range d.NotCovered {
		p = append(p, junit.Property{Name: "gwconform.not_covered." + strconv.Itoa(i+1), Value: g.String()})
	}
	return p
}

// withoutCredentials is a target as the JUnit file names it: a URL's user
// and password are left out.
func withoutCredentials(target string) string {
	first, rest, _ := strings.Cut(target, " ")
	u, err := url.Parse(first)
	if err != nil || u.User == nil {
		return target
	}
	u.User = nil
	if rest != "" {
		return u.String() + " " + rest
	}
	return u.String()
}

// junitCaseOf is one result's test case.
// sameAs, when set, says which exchanges repeat another check's (see
// sameExchanges).
func junitCaseOf(d Document, r Result, sameAs []string, o WriteOptions) junit.Case {
	c := junit.Case{Name: JUnitName(r), Classname: JUnitFamily(r), Status: r.State, Time: new(math.Round(r.DurationMS) / 1000)}
	if c.Status == "" || c.Status == Passed {
		// A test case without failure, error or skipped passed: the
		// status says it only when it says more.
		c.Status = ""
	}
	failedLevel := r.Level == string(check.Must) || r.Level == string(check.Should) && o.FailOnShould || !r.IsCheck()
	outcome := "" // check.outcome, when the test case's status does not say it
	switch r.Outcome {
	case Passed:
	case Skipped, Pending:
		c.Skipped = &junit.Message{Message: r.Outcome}
		if r.Reason != "" {
			c.Skipped.Message += " - " + r.Reason
		}
	case Inconclusive:
		msg := r.Reason
		if !strings.HasPrefix(msg, Inconclusive) {
			msg = Inconclusive + " - " + msg // not "inconclusive - inconclusive: ..."
		}
		c.Skipped, outcome = &junit.Message{Message: msg}, Inconclusive
	case ExpectedFailure:
		c.Skipped, outcome = &junit.Message{Message: r.Reason}, ExpectedFailure
	case Failed, Interrupted:
		switch {
		case !failedLevel && r.Level == string(check.Info):
			c.Skipped, outcome = &junit.Message{Message: "INFO check could not complete (INFO never fails a run): " + r.Failure}, Failed
		case !failedLevel:
			c.Skipped, outcome = &junit.Message{Message: "SHOULD check failed (the run fails on it only with --fail-on should): " + r.Failure}, Failed
		case r.Outcome == Interrupted || r.State == "panicked":
			c.Error = &junit.Message{Message: r.Failure, Type: r.State, Text: cdata(r.Failure)}
		default:
			c.Failure = &junit.Message{Message: r.Failure, Type: r.State, Text: cdata(r.Failure)}
		}
	}
	if outcome != "" {
		c.Status = Skipped
		c.Properties = append(c.Properties, junit.Property{Name: "check.outcome", Value: outcome})
	}
	if r.Outcome == Passed || r.Outcome == Skipped || r.Outcome == Pending || r.Outcome == Inconclusive {
		// A check that passed or was skipped is named; what explains a
		// failure is written where there is one, so that a passing run's
		// file stays small.
		return c
	}

	// What explains the failure, in words a CI log shows: the check's
	// title, what was observed, each exchange (request and answer), and how
	// to send it again; report.json keeps the exchanges whole and
	// report.html shows them.
	var errText bytes.Buffer
	if r.IsCheck() {
		// The test case's name is the ID; what it expects, at which
		// level, and the rule it judges are said here once.
		if r.Assertion != "" {
			errText.WriteString("expected: " + r.Assertion + "\n")
		}
		// The rules' IDs: their text is in report.html and docs/checks.md.
		errText.WriteString("rule: " + ruleOf(r) + "\n")
	}
	for _, ob := range r.Observations {
		errText.WriteString(ob + "\n")
	}
	for i, ex := range r.Exchanges {
		if i < len(sameAs) && sameAs[i] != "" {
			fmt.Fprintf(&errText, "exchange %d: the same request and answer as %s\n", i+1, sameAs[i])
			continue
		}
		fmt.Fprintf(&errText, "exchange %d: %s %s\n", i+1, ex.Method, ex.URL)
		if ex.RequestBody != "" {
			errText.WriteString("> " + cut(ex.RequestBody, maxJUnitBody) + "\n")
		}
		switch {
		case ex.Status == 0:
			errText.WriteString("< no answer")
			if ex.Error != "" {
				errText.WriteString(": " + ex.Error)
			}
			errText.WriteString("\n")
		default:
			fmt.Fprintf(&errText, "< %d %s\n", ex.Status, cut(ex.ResponseBody, maxJUnitBody))
		}
	}
	if r.IsCheck() && len(r.Exchanges) > 0 {
		errText.WriteString("reproduce: " + ReplayLine(d, r.ID) + "\n")
	}
	switch {
	case errText.Len() == 0:
	case c.Failure != nil:
		// The failure's text says what its message does not.
		c.Failure.Text = cdata(errText.String())
	case c.Error != nil:
		c.Error.Text = cdata(errText.String())
	default:
		c.SystemErr = new(cdata(errText.String()))
	}
	return c
}

// maxJUnitBody is how much of a body the JUnit file shows; report.json
// has it whole.
const maxJUnitBody = 600

// cut shortens a body to at most n bytes (on a rune boundary), saying how
// long it was.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("… (%d bytes in all: report.json has it whole)", len(s))
}

// cdata is s as a CDATA section, what XML cannot hold replaced
// (xmlChars): every text of the file is one, for its bodies are full of
// quotes (junit.Text).
func cdata(s string) junit.Text { return junit.Text{CDATA: xmlChars(s)} }

// xmlChars replaces what XML cannot hold, even as CDATA (control
// characters a hostile body may carry), by U+FFFD.
func xmlChars(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r >= 0xD800 && r <= 0xDFFF, r == 0xFFFE, r == 0xFFFF:
			return '\uFFFD'
		}
		return r
	}, s)
}

// checkJUnit says what is wrong with a JUnit file written for d: that it
// does not parse, or lacks a test case of one of d's checks.
func checkJUnit(b []byte, d Document) error {
	var all junit.Suites
	if err := xml.Unmarshal(b, &all); err != nil {
		return fmt.Errorf("%s does not parse: %w", JUnitFile, err)
	}
	names := map[string]bool{}
	for _, s := range all.Suites {
		for _, c := range s.Cases {
			names[c.Name] = true
		}
	}
	var missing []string
	for _, r := range d.Results {
		if r.IsCheck() && !names[JUnitName(r)] {
			missing = append(missing, r.ID)
		}
	}
	sort.Strings(missing)
	if n := len(missing); n > 0 {
		if n > 5 {
			missing = append(missing[:5], fmt.Sprintf("and %d more", n-5))
		}
		return fmt.Errorf("%s lacks %d check(s) that %s has: %s", JUnitFile, n, JSONFile, strings.Join(missing, ", "))
	}
	return nil
}
