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
// credentials) as properties.

// junitSuites is a JUnit file: the schema CI systems read (the Ant/Surefire
// dialect that Jenkins, GitLab and GitHub actions take).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Disabled int          `xml:"disabled,attr"`
	Errors   int          `xml:"errors,attr"`
	Failures int          `xml:"failures,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Disabled   int             `xml:"disabled,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Errors     int             `xml:"errors,attr"`
	Failures   int             `xml:"failures,attr"`
	Time       float64         `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name       string           `xml:"name,attr"`
	Classname  string           `xml:"classname,attr"`
	Status     string           `xml:"status,attr,omitempty"`
	Time       float64          `xml:"time,attr"`
	Skipped    *junitMessage    `xml:"skipped,omitempty"`
	Error      *junitMessage    `xml:"error,omitempty"`
	Failure    *junitMessage    `xml:"failure,omitempty"`
	Properties *junitProperties `xml:"properties,omitempty"`
	// SystemErr is written as CDATA: bodies are full of quotes, which
	// escaped text would write as five bytes each.
	SystemErr *junitCDATA `xml:"system-err,omitempty"`
}

type junitCDATA struct {
	Text string `xml:",cdata"`
}

type junitProperties struct {
	Properties []junitProperty `xml:"property"`
}

// add adds a test case's property.
func (c *junitCase) add(name, value string) {
	if c.Properties == nil {
		c.Properties = &junitProperties{}
	}
	c.Properties.Properties = append(c.Properties.Properties, junitProperty{name, value})
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	// Text is CDATA: bodies are full of quotes, which escaped text would
	// write as five bytes each.
	Text string `xml:",cdata"`
}

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
	s := junitSuite{Name: JUnitClass, Time: d.DurationMS / 1000, Properties: suiteProperties(d)}
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
		c := junitCase{Name: coverageCase, Classname: JUnitClass}
		if o.AllowPartial {
			c.Status, c.Skipped = Skipped, &junitMessage{Message: msg + " (allowed by --allow-partial)"}
		} else {
			c.Status, c.Failure = Failed, &junitMessage{Message: msg, Type: Failed, Text: xmlChars(msg)}
		}
		s.Cases = append(s.Cases, c)
	}
	for _, c := range s.Cases {
		s.Tests++
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Error != nil:
			s.Errors++
		case c.Skipped != nil && c.Status == Pending:
			s.Disabled++
		case c.Skipped != nil:
			s.Skipped++
		}
	}
	all := junitSuites{Tests: s.Tests, Disabled: s.Disabled, Errors: s.Errors, Failures: s.Failures, Time: s.Time, Suites: []junitSuite{s}}
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
func suiteProperties(d Document) []junitProperty {
	p := []junitProperty{
		{"gwconform.verdict", d.Verdict},
		{"gwconform.target", withoutCredentials(d.Target)},
		{"gwconform.seed", strconv.FormatInt(d.Seed, 10)},
		{"gwconform.harness_version", d.Catalog.Harness},
		{"gwconform.catalog_version", d.Catalog.Version},
		{"gwconform.catalog_hash", d.Catalog.Hash},
		{"gwconform.inconclusive", strconv.Itoa(d.Summary.Inconclusive)},
	}
	if d.LabelFilter != "" {
		p = append(p, junitProperty{"gwconform.label_filter", d.LabelFilter})
	}
	if d.Effects != "" {
		p = append(p, junitProperty{"gwconform.effects", d.Effects})
	}
	if d.Stopped != "" {
		p = append(p, junitProperty{"gwconform.stopped", d.Stopped})
	}
	for i, reason := range d.SuiteFailureReasons {
		p = append(p, junitProperty{"gwconform.suite_failure." + strconv.Itoa(i+1), reason})
	}
	for i, g := range d.NotCovered {
		p = append(p, junitProperty{"gwconform.not_covered." + strconv.Itoa(i+1), g.String()})
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
func junitCaseOf(d Document, r Result, sameAs []string, o WriteOptions) junitCase {
	c := junitCase{Name: JUnitName(r), Classname: JUnitFamily(r), Status: r.State, Time: math.Round(r.DurationMS) / 1000}
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
		c.Skipped = &junitMessage{Message: r.Outcome}
		if r.Reason != "" {
			c.Skipped.Message += " - " + r.Reason
		}
	case Inconclusive:
		msg := r.Reason
		if !strings.HasPrefix(msg, Inconclusive) {
			msg = Inconclusive + " - " + msg // not "inconclusive - inconclusive: ..."
		}
		c.Skipped, outcome = &junitMessage{Message: msg}, Inconclusive
	case ExpectedFailure:
		c.Skipped, outcome = &junitMessage{Message: r.Reason}, ExpectedFailure
	case Failed, Interrupted:
		switch {
		case !failedLevel && r.Level == string(check.Info):
			c.Skipped, outcome = &junitMessage{Message: "INFO check could not complete (INFO never fails a run): " + r.Failure}, Failed
		case !failedLevel:
			c.Skipped, outcome = &junitMessage{Message: "SHOULD check failed (the run fails on it only with --fail-on should): " + r.Failure}, Failed
		case r.Outcome == Interrupted || r.State == "panicked":
			c.Error = &junitMessage{Message: r.Failure, Type: r.State, Text: xmlChars(r.Failure)}
		default:
			c.Failure = &junitMessage{Message: r.Failure, Type: r.State, Text: xmlChars(r.Failure)}
		}
	}
	if outcome != "" {
		c.Status = Skipped
		c.add("check.outcome", outcome)
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
		c.Failure.Text = xmlChars(errText.String())
	case c.Error != nil:
		c.Error.Text = xmlChars(errText.String())
	default:
		c.SystemErr = &junitCDATA{xmlChars(errText.String())}
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
	var all junitSuites
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
