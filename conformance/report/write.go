package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/printable"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
)

// File names of the reports (Writers), in the report directory and in a
// bundle.
const (
	JUnitFile = "junit.xml"
	JSONFile  = "report.json"
	HTMLFile  = "report.html"
)

// marshalLines writes d as JSON with each result on a line of its own.
//
// A passed MUST or SHOULD check is written abridged: its title, assertion,
// section, operation, format, device type and tags are the catalog's
// (gwconform checks --format json, docs/checks.md), which the ID names, so
// that a run's report stays small whatever the catalog's size. Most such
// checks have nothing else to say: they are listed under "passed", by
// level, as their ID and time ({"MUST": {"ID": ms, ...}}), one a line; one
// with settle lines or sampled exchanges is a line of "results" with its
// ID, level, outcome, time and those. A skipped or inconclusive check is
// written without what the catalog says of it (abridgedLine). Every other
// result is written whole
// in "results", but for its curl lines, which its exchanges give (gwconform
// replay sends them again; report.html shows them), and for the sentence
// of the texts its assertion quotes when other assertions quote it too:
// "sentences" lists each such sentence once, and the result names it
// ("sentence": n, from 1). The sections give their counts, not their
// checks, which each result names. Reading the file
// (Document.UnmarshalJSON) puts every result back whole, in order, what
// the catalog says of a check included.
func marshalLines(d Document) ([]byte, error) {
	results, sections := d.Results, d.Sections
	d.Results, d.Sections = nil, nil
	var hb bytes.Buffer
	enc := json.NewEncoder(&hb)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	head := bytes.TrimSuffix(hb.Bytes(), []byte("\n"))
	lines := make([]any, 0, len(results))
	passed := map[string][]passedTime{}
	same := sameExchanges(results)
	sentences, sentence := quotedSentences(results)
	for i, r := range results {
		r.DurationMS = math.Round(r.DurationMS*100) / 100
		r.Curl = nil
		if r.State == r.Outcome {
			r.State = "" // the outcome says it
		}
		if refs, ok := same[i]; ok {
			var own []client.Exchange
			for n, ref := range refs {
				if ref == "" {
					own = append(own, r.Exchanges[n])
				}
			}
			r.Exchanges, r.SameExchangesAs = own, refs
		}
		r.Exchanges = cutBodies(r.Exchanges)
		// A passed check that reported what it does not judge (a detail
		// no sentence states) is written whole, its observations with it.
		if r.IsCheck() && r.Outcome == Passed && r.Level != string(check.Info) && len(r.Observations) == 0 {
			if len(r.Settle) == 0 && len(r.Reads) == 0 && len(r.Exchanges) == 0 && len(r.SameExchangesAs) == 0 {
				passed[r.Level] = append(passed[r.Level], passedTime{r.ID, r.DurationMS})
				continue
			}
			line := abridged(r)
			line.ExchangesOmitted = 0 // "passed" and the catalog's sample say it
			lines = append(lines, line)
			continue
		}
		if r.IsCheck() && (r.Outcome == Skipped || r.Outcome == Inconclusive) && fromCatalog(r, d.checks) {
			if r.Outcome == Inconclusive && r.State == inconclusiveState {
				r.State = "" // reading puts it back
			}
			lines = append(lines, abridged(r))
			continue
		}
		line := resultLine{Result: r}
		if before, quote, ok := quotedSentence(r.Assertion); ok && sentence[quote] > 0 {
			line.Assertion, line.Sentence = before, sentence[quote]
		}
		lines = append(lines, line)
	}
	if len(sentences) > 0 {
		// "sentences" comes before "results", which name them.
		var b bytes.Buffer
		b.WriteString(`"sentences": [`)
		for i, q := range sentences {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("\n    ")
			if err := encodeJSON(&b, q); err != nil {
				return nil, err
			}
		}
		b.WriteString("\n  ],\n  \"results\": null")
		head = bytes.Replace(head, []byte(`"results": null`), b.Bytes(), 1)
	}
	sections = append([]SectionCoverage(nil), sections...)
	for i := range sections {
		sections[i].Checks = nil
	}
	// "passed" follows "results".
	list, err := passedList(passed)
	if err != nil {
		return nil, err
	}
	head, err = placeLines(head, `"results": null`, lines, list...)
	if err != nil {
		return nil, err
	}
	return placeLines(head, `"sections": null`, sections)
}

// resultLine is a result written whole in report.json; Sentence, when
// set, is the number (from 1) of the sentence in "sentences" that ends its
// assertion, which Assertion then leaves out.
type resultLine struct {
	Result
	Sentence int `json:"sentence,omitempty"`
}

// quotedSentence splits an assertion that ends with a sentence quoting
// the texts ("... MUST NOT be answered with success. The sentence that
// forbids it (published): “| sign | ... |”") into what comes before it and
// that sentence: head + " " + tail is the assertion.
func quotedSentence(a string) (head, tail string, ok bool) {
	open := strings.Index(a, "“")
	if open < 0 || !strings.HasSuffix(a, "”") {
		return "", "", false
	}
	end := strings.LastIndex(a[:open], ". ")
	if end < 0 {
		return "", "", false
	}
	head, tail = a[:end+1], a[end+2:]
	return head, tail, head+" "+tail == a
}

// quotedSentences are the quoting sentences (quotedSentence) that end the
// assertions of more than one result report.json writes whole, in the
// order they first come, and the number (from 1) of each: report.json
// writes each once (a refusal's sentence is quoted by its JSON, XML,
// .contract, .sim and parity checks alike).
func quotedSentences(results []Result) ([]string, map[string]int) {
	count := map[string]int{}
	var order []string
	for _, r := range results {
		// A passed check that reported what it does not judge (a detail
		// no sentence states) is written whole, its observations with it.
		if r.IsCheck() && r.Outcome == Passed && r.Level != string(check.Info) && len(r.Observations) == 0 {
			continue // written without its assertion
		}
		if _, tail, ok := quotedSentence(r.Assertion); ok {
			if count[tail] == 0 {
				order = append(order, tail)
			}
			count[tail]++
		}
	}
	var list []string
	number := map[string]int{}
	for _, q := range order {
		if count[q] > 1 {
			list = append(list, q)
			number[q] = len(list)
		}
	}
	return list, number
}

// passedTime is a passed check in report.json's "passed": its ID and
// time.
type passedTime struct {
	ID         string
	DurationMS float64
}

// passedList is report.json's "passed": for each level, in check.Levels'
// order, its passed checks as "ID": ms, one a line, in the run's order.
func passedList(passed map[string][]passedTime) ([]byte, error) {
	if len(passed) == 0 {
		return nil, nil
	}
	levels := make([]string, 0, len(passed))
	for l := range passed {
		levels = append(levels, l)
	}
	rank := func(l string) int {
		for i, c := range check.Levels {
			if string(c) == l {
				return i
			}
		}
		return len(check.Levels)
	}
	sort.Slice(levels, func(i, j int) bool {
		if rank(levels[i]) != rank(levels[j]) {
			return rank(levels[i]) < rank(levels[j])
		}
		return levels[i] < levels[j]
	})
	var b bytes.Buffer
	b.WriteString(",\n  \"passed\": {")
	for i, l := range levels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    ")
		if err := encodeJSON(&b, l); err != nil {
			return nil, err
		}
		b.WriteString(": {")
		for j, p := range passed[l] {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
			if err := encodeJSON(&b, p.ID); err != nil {
				return nil, err
			}
			b.WriteByte(':')
			if err := encodeJSON(&b, p.DurationMS); err != nil {
				return nil, err
			}
		}
		b.WriteString("\n    }")
	}
	b.WriteString("\n  }")
	return b.Bytes(), nil
}

// MaxJSONBody is the longest body report.json keeps whole. A longer one
// (the body-size checks send 64 KiB) keeps its first KeptBody bytes and
// BodyCut, which says how long it was: gwconform replay refuses such an
// exchange and names the run that sends it again (gwconform run --check
// ID).
const (
	MaxJSONBody = 16 << 10
	KeptBody    = 2 << 10
	BodyCut     = "…[gwconform: body cut in the report"
)

// cutBodies shortens the bodies longer than MaxJSONBody (see BodyCut).
func cutBodies(exs []client.Exchange) []client.Exchange {
	var out []client.Exchange
	for i, e := range exs {
		if len(e.RequestBody) <= MaxJSONBody && len(e.ResponseBody) <= MaxJSONBody {
			continue
		}
		if out == nil {
			out = append([]client.Exchange(nil), exs...)
		}
		for _, b := range []*string{&out[i].RequestBody, &out[i].ResponseBody} {
			if len(*b) > MaxJSONBody {
				*b = strings.ToValidUTF8((*b)[:KeptBody], "") + fmt.Sprintf("%s: %d bytes in all]", BodyCut, len(*b))
			}
		}
	}
	if out == nil {
		return exs
	}
	return out
}

// abridgedLine is a check written in report.json without what the catalog
// says of it (see marshalLines): a passed check with settle lines or
// sampled exchanges, and every skipped or inconclusive one. A run that
// stops early, or whose valid requests are refused, has hundreds of the
// latter: written whole, a run refused every message made report.json
// 1.5 MB and its three files 2.5 MB.
type abridgedLine struct {
	ID      string `json:"id"`
	Level   string `json:"level"`
	Outcome string `json:"outcome"`
	State   string `json:"state,omitempty"`
	Failure string `json:"failure,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Stop    string `json:"stop,omitempty"`
	// DurationMS comes before Settle, as it did in a passed check's line.
	DurationMS float64 `json:"duration_ms"`
	// Settle: how long each change took to appear (see Result), kept for
	// a passed check too: "changed after 300 ms" is what a vendor with
	// asynchronous devices reads.
	Settle []string `json:"settle,omitempty"`
	// Reads: the observer's reads a check kept (see Result).
	Reads            []ObserverRead    `json:"reads,omitempty"`
	Exchanges        []client.Exchange `json:"exchanges,omitempty"`
	ExchangesOmitted int               `json:"exchanges_omitted,omitempty"`
	// SameExchangesAs: see Result.
	SameExchangesAs []string `json:"same_exchanges_as,omitempty"`
}

// abridged is r's line without the catalog's words.
func abridged(r Result) abridgedLine {
	return abridgedLine{ID: r.ID, Level: r.Level, Outcome: r.Outcome, State: r.State, Failure: r.Failure, Reason: r.Reason, Stop: r.Stop,
		DurationMS: r.DurationMS, Settle: r.Settle, Reads: r.Reads, Exchanges: r.Exchanges, ExchangesOmitted: r.ExchangesOmitted, SameExchangesAs: r.SameExchangesAs}
}

// fromCatalog says r's metadata is exactly its check's in this process's
// catalog, so that report.json may leave it out and reading it back
// (Document.UnmarshalJSON) put it back the same.
func fromCatalog(r Result, cat check.Catalog) bool {
	m, ok := cat.Lookup(r.ID)
	return ok && string(m.Level) == r.Level && m.Section == r.Section && m.Contract == r.Contract && m.Title == r.Title &&
		m.Assertion == r.Assertion && m.Operation == r.Operation && m.Format == r.Format && m.DeviceType == r.DeviceType &&
		slices.Equal(m.Tags, r.Tags) && r.Text == "" && r.Node == "" && len(r.Labels) == 0 && len(r.Observations) == 0 && len(r.Curl) == 0
}

// placeLines puts a list, one element a line, where slot stands in head,
// and after it what follows.
func placeLines[T any](head []byte, slot string, list []T, follows ...byte) ([]byte, error) {
	if bytes.Count(head, []byte(slot)) != 1 {
		return nil, errors.New("report: cannot place " + slot)
	}
	var b bytes.Buffer
	b.WriteString(slot[:strings.Index(slot, ":")+1] + " [")
	for i, v := range list {
		if i > 0 {
			b.WriteByte(',')
		}
		// A line is not indented: some 4,000 results, 4 bytes each.
		b.WriteByte('\n')
		if err := encodeJSON(&b, v); err != nil {
			return nil, err
		}
	}
	b.WriteString("\n  ]")
	b.Write(follows)
	return bytes.Replace(head, []byte(slot), b.Bytes(), 1), nil
}

// encodeJSON appends v to b as compact JSON, with <, > and & as they are:
// report.json is never read as HTML, and the XML bodies it holds are full
// of them (json.Marshal writes each as six bytes). U+2028 and U+2029 are
// still escaped, so that a result stays on its line.
func encodeJSON(b *bytes.Buffer, v any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	return nil
}

// WriteJSON writes d as JSON, one result a line.
func WriteJSON(path string, d Document) error {
	// One result a line: readable, diffable, and a third smaller than
	// indenting every field.
	b, err := marshalLines(d)
	if err != nil {
		return fmt.Errorf("report: encode %s: %w", path, err)
	}
	return writeFile(path, append(b, '\n'))
}

// WriteHTML writes d as one self-contained HTML page.
func WriteHTML(path string, d Document) error {
	var buf bytes.Buffer
	if err := RenderHTML(&buf, d); err != nil {
		return fmt.Errorf("report: render %s: %w", path, err)
	}
	return writeFile(path, buf.Bytes())
}

// WriteOptions are what the reports need to know of the run's flags.
type WriteOptions struct {
	// Checks is the suite's catalog: each check's metadata (Build).
	Checks check.Catalog
	// FailOnShould: the run fails on SHOULD checks too (--fail-on should),
	// so a failed SHOULD check is a JUnit failure.
	FailOnShould bool
	// Schedule is how the run sent its requests and its critical path.
	Schedule *Schedule
	// Model is the model-based phase (Document.Model).
	Model *ModelPhase
	// FleetFile is the fleet file the run read (empty: the demo fleet):
	// the reports' replay lines name it, so that they sign as the run did.
	FleetFile string
	// AllowPartial: a PARTIAL run exits 0 (--allow-partial), so its JUnit
	// report does not fail on coverage either.
	AllowPartial bool
	// Baseline, when set, turns the failures it lists into expected
	// failures (as of Today).
	Baseline *Baseline
	Today    time.Time
	// Catalog names the harness and catalog that judged the run.
	Catalog CatalogID
	// Effects is the run's "effects not observed" line, if it has one.
	Effects string
	// LeftChanged are the devices the run changed and could not put back,
	// each in one line with its state before the run.
	LeftChanged []string
	// KeepEveryExchange keeps every check's exchanges whatever its outcome
	// (gwconform replay shows what its one check sent and got, passed or
	// not).
	KeepEveryExchange bool
	// Observer is the base URL of the run's observer; empty for none.
	Observer string
	// Preflight are the pre-flight's refused valid requests (Document.Preflight).
	Preflight []string
	// Filters are the options that selected the run's checks as the user
	// gave them (--check 'command.*', --rerun-failed r.json): the reports
	// name them rather than the focus expression they became.
	Filters []string
	// Mask, when set, replaces every secret value it knows in every
	// string of the Document (the fleet's keys and secrets, the signs the
	// run computed, the target's user information), whatever a target
	// echoed: the reports, the console and the bundle are written from the
	// masked Document.
	Mask func(string) string
}

// CatalogID is the harness and catalog of checks behind a report.
type CatalogID struct {
	Harness string `json:"harness_version"`
	Version string `json:"catalog_version"`
	Hash    string `json:"catalog_hash"`
}

// A Writer writes one file of a run's reports from its Document.
type Writer struct {
	// File is the file's name in the report directory and in a bundle.
	File  string
	Write func(path string, d Document, o WriteOptions) error
	// Check, when set, says what is wrong with a file written for d (as
	// gwconform verify reads it from a bundle).
	Check func(b []byte, d Document) error
}

// Writers are every report file a run leaves, in the order the console
// names them (the first is the one it points to, the others follow
// "also"). WriteAll, the console, the bundle, gwconform verify and
// gwconform's usage all use this one list: a new format is added here.
var Writers = []Writer{
	{File: HTMLFile, Write: func(path string, d Document, _ WriteOptions) error { return WriteHTML(path, d) }},
	{File: JSONFile, Write: func(path string, d Document, _ WriteOptions) error { return WriteJSON(path, d) }},
	{File: JUnitFile, Write: WriteJUnit, Check: checkJUnit},
}

// WriteAll builds the Document of a Ginkgo report, creates dir if needed
// and writes every report of Writers into it. The Document it returns
// knows where (Files).
func WriteAll(dir string, r types.Report, target string, o WriteOptions) (Document, error) {
	d := build(r, target, o.KeepEveryExchange, o.Checks)
	if len(o.Filters) > 0 {
		for i, g := range d.NotCovered {
			if g.What == "filter" {
				d.NotCovered[i].Why = "the run was filtered (" + strings.Join(o.Filters, " ") + ")"
			}
		}
	}
	d = applyBaseline(d, o.Baseline, o.Today)
	if o.FailOnShould {
		d.FailOn = FailOnShould
		setVerdict(&d)
	}
	if o.FleetFile != "" {
		d.FleetFile = o.FleetFile
		if abs, err := filepath.Abs(o.FleetFile); err == nil {
			d.FleetFile = abs
		}
		for i := range d.Results {
			for j, ex := range d.Results[i].Exchanges {
				if j < len(d.Results[i].Curl) {
					d.Results[i].Curl[j] = ex.CurlSignedWith(filepath.Base(d.FleetFile))
				}
			}
		}
	}
	d.Catalog = o.Catalog
	d.Schedule = o.Schedule
	d.Model = o.Model
	d.Effects = o.Effects
	d.LeftChanged = o.LeftChanged
	d.Findings = Findings(d)
	d.Observer = o.Observer
	if d.Observer == "" {
		d.Observer = ObserverNone
	}
	d.Preflight = o.Preflight
	maskStrings(&d, o.Mask)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return d, fmt.Errorf("report: %w", err)
	}
	d.Files = Files{
		Dir:   dir,
		JUnit: filepath.Join(dir, JUnitFile),
		JSON:  filepath.Join(dir, JSONFile),
		HTML:  filepath.Join(dir, HTMLFile),
	}
	// Each file is written from d alone, none changes it: they are
	// written side by side, and the first error in the order of Writers
	// is the one told.
	errs := make([]error, len(Writers))
	var wg sync.WaitGroup
	for i, w := range Writers {
		wg.Go(func() { errs[i] = w.Write(filepath.Join(dir, w.File), d, o) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return d, err
		}
	}
	return d, nil
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := safefile.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// MaxListed is how many failed checks WriteSummary shows as a block of
// their own; MaxLines how many more it names in a line each.
const (
	MaxListed = 20
	MaxLines  = 200
)

// ConsoleOptions say how the console shows a run.
type ConsoleOptions struct {
	// Color marks the verdict and each failure's first line in colour.
	Color bool
	// Filters are the options that selected the run's checks, as the
	// user gave them (--check 'command.*', --rerun-failed r.json).
	Filters []string
}

// WriteSummary writes what the console shows once a run ends, plain (see
// WriteConsole).
func WriteSummary(w io.Writer, d Document) { WriteConsole(w, d, ConsoleOptions{}) }

// WriteConsole writes what the console shows once a run ends: each failed
// MUST and SHOULD check once, as a block (check ID, level, rule, what was
// expected, what came, where the report shows it; the first MaxListed as
// blocks, up to MaxLines more in a line each), then the summary: the
// verdict, counts per level, why checks were skipped (each reason once,
// with its count), what was not covered, the known failures the baseline
// excused, what is wrong with the baseline, and where the reports are.
// It names no source file.
func WriteConsole(w io.Writer, d Document, o ConsoleOptions) {
	paint := func(code, s string) string {
		if !o.Color {
			return s
		}
		return "\x1b[" + code + "m" + s + "\x1b[0m"
	}
	writeFindings(w, d.Findings)
	writeFailures(w, d, paint)
	writeVerdict(w, d, paint)
	writeRunNotes(w, d)
	writeNotCovered(w, d, o.Filters)
	writeKnownFailures(w, d)
	for _, p := range d.BaselineProblems {
		fmt.Fprintf(w, "Baseline: %s\n", p)
	}
	if d.Files.Dir != "" {
		also := make([]string, 0, len(Writers))
		for _, wr := range Writers[1:] {
			also = append(also, wr.File)
		}
		fmt.Fprintf(w, "Reports: %s (also %s)\n", filepath.Join(d.Files.Dir, Writers[0].File), strings.Join(also, ", "))
	}
}

// writeFailures writes each failed MUST and SHOULD check: the first
// MaxListed as blocks, up to MaxLines more in a line each. MUST failures
// come first: they decide the verdict; the rest keeps the reports' order.
func writeFailures(w io.Writer, d Document, paint func(code, s string) string) {
	var failed []Result
	for _, r := range d.Results {
		if (r.Outcome == Failed || r.Outcome == Interrupted) && r.Level != string(check.Info) {
			failed = append(failed, r)
		}
	}
	sort.SliceStable(failed, func(i, j int) bool {
		return failed[i].Level == string(check.Must) && failed[j].Level != string(check.Must)
	})
	for i, r := range failed {
		if i == MaxListed {
			fmt.Fprintf(w, "%d more failed:\n", len(failed)-MaxListed)
		}
		if i >= MaxListed+MaxLines {
			fmt.Fprintf(w, "  ... and %d more (see the reports)\n", len(failed)-i)
			break
		}
		if i >= MaxListed {
			fmt.Fprintf(w, "  %-6s %s: %s\n", levelOr(r), nameOf(r), firstLine(r.Failure))
			continue
		}
		writeBlock(w, d, r, paint)
	}
	if len(failed) > 0 {
		fmt.Fprintln(w)
	}
}

// writeVerdict writes the verdict and why, the seed and duration, the
// counts per level, where the run stopped and its critical path.
func writeVerdict(w io.Writer, d Document, paint func(code, s string) string) {
	colour := map[string]string{VerdictPass: "1;32", VerdictFail: "1;31"}[d.Verdict]
	if colour == "" {
		colour = "1;33"
	}
	fmt.Fprintf(w, "Conformance of %s: %s (%s)\n", orNone(d.Target), paint(colour, VerdictText(d.Verdict, d.KnownFailures)), VerdictReason(d))
	fmt.Fprintf(w, "  seed %d, %s", d.Seed, d.Duration().Round(time.Millisecond))
	if d.LabelFilter != "" {
		fmt.Fprintf(w, ", label filter %q", d.LabelFilter)
	}
	fmt.Fprintln(w)
	for _, l := range check.Levels {
		c := d.Summary.ByLevel[string(l)]
		fmt.Fprintf(w, "  %-6s %4d checks: %s\n", l, c.Total, countsText(c, l == check.Info))
	}
	if d.Summary.Other.Total > 0 {
		fmt.Fprintf(w, "  %-6s %4d specs:  %s\n", "other", d.Summary.Other.Total, countsText(d.Summary.Other, false))
	}
	if d.Stopped != "" {
		fmt.Fprintf(w, "  stopped: %s\n", d.Stopped)
	}
	if sc := d.Schedule; sc != nil && sc.CriticalPath != nil {
		fmt.Fprintf(w, "  critical path: %s, %d round trips one after another (%.1f s); up to %d requests in flight at once\n",
			sc.CriticalPath.Of, sc.CriticalPath.RoundTrips, sc.CriticalPath.Seconds, sc.Concurrency)
	}
	if sc := d.Schedule; sc != nil && sc.Ahead != nil {
		fmt.Fprintf(w, "  run ahead: %d checks in %d chains side by side (a device, or the tested gateway's messages, each), %.1f s; the others in their place\n",
			sc.Ahead.Checks, sc.Ahead.Chains, sc.Ahead.Seconds)
	}
	if m := d.Model; m != nil {
		// Its times are in the reports: the console's examples in the docs
		// are compared with real runs, durations aside.
		fmt.Fprintf(w, "  model-based phase: seed %d, %d of %d operations, %s\n",
			m.Seed, m.Operations, m.BudgetOperations, plural(len(m.Findings), "finding"))
		for _, c := range m.Coverage {
			fmt.Fprintf(w, "    reached %d of %d: %s\n", c.Reached, c.Total, c.Name)
		}
	}
}

// writeRunNotes writes the observer, the inconclusive checks, why the
// suite failed and why checks were skipped (each reason once, with its
// count).
func writeRunNotes(w io.Writer, d Document) {
	switch {
	case d.Observer != "" && d.Observer != ObserverNone:
		fmt.Fprintf(w, "  observer: %s\n", d.Observer)
	case d.Effects != "" && !effectsSkipped(d):
		// Otherwise the skipped checks' reasons say it, once.
		fmt.Fprintf(w, "  observer: none (%s)\n", d.Effects)
	case d.Observer == ObserverNone:
		fmt.Fprintf(w, "  observer: none\n")
	}
	if len(d.LeftChanged) > 0 {
		fmt.Fprintf(w, "  devices left changed or changed unasked: %s, each with its state before the run (set any not put back as it was):\n", plural(len(d.LeftChanged), "device"))
		for _, l := range d.LeftChanged {
			fmt.Fprintf(w, "    %s\n", printable.String(l))
		}
	}
	if n := d.Summary.Inconclusive; n > 0 {
		fmt.Fprintf(w, "  inconclusive: %d refusal check(s) whose valid request was refused too; they prove nothing (see the reports)\n", n)
	}
	for _, reason := range d.SuiteFailureReasons {
		fmt.Fprintf(w, "  suite: %s\n", reason)
	}
	if reasons, total := SkipReasons(d); total > 0 {
		fmt.Fprintf(w, "Skipped: %s\n", plural(total, "check"))
		for _, r := range reasons {
			fmt.Fprintf(w, "  %5d  %s\n", r.Checks, r.Why)
		}
	}
}

// writeNotCovered writes what the run did not cover. What a filter left
// out is one line, naming the filters: the rest follows from it.
func writeNotCovered(w io.Writer, d Document, filters []string) {
	var gaps []Gap
	filtered := false
	for _, g := range d.NotCovered {
		filtered = filtered || g.What == "filter"
	}
	for _, g := range d.NotCovered {
		if filtered && strings.HasSuffix(g.Why, ": filtered out") {
			continue // the filter says it
		}
		if g.What == "filter" && len(filters) > 0 {
			g.Why = "the run was filtered (" + strings.Join(filters, " ") + ")"
		}
		gaps = append(gaps, g)
	}
	if len(gaps) > 0 {
		fmt.Fprintln(w, "Not covered:")
		for i, g := range gaps {
			if i == MaxListed {
				fmt.Fprintf(w, "  ... and %d more (see the reports)\n", len(gaps)-MaxListed)
				break
			}
			fmt.Fprintf(w, "  %s\n", g)
		}
	}
}

// writeKnownFailures writes the failures the baseline excused, which are
// not counted.
func writeKnownFailures(w io.Writer, d Document) {
	var expected []Result
	for _, r := range d.Results {
		if r.Outcome == ExpectedFailure {
			expected = append(expected, r)
		}
	}
	if len(expected) > 0 {
		fmt.Fprintf(w, "Known failures (expected by the baseline), not counted: %d\n", len(expected))
		for i, r := range expected {
			if i == MaxListed+MaxLines {
				fmt.Fprintf(w, "  ... and %d more\n", len(expected)-i)
				break
			}
			fmt.Fprintf(w, "  %-6s [%s] %s\n", r.Level, r.ID, r.Reason)
		}
	}
}

// writeBlock writes one failure as a block.
func writeBlock(w io.Writer, d Document, r Result, paint func(code, s string) string) {
	head := "FAILED"
	if r.Outcome == Interrupted {
		head = "INTERRUPTED" // the summary's and the progress line's word
	}
	fmt.Fprintf(w, "%s %-6s %s\n", paint("1;31", head), levelOr(r), nameOf(r))
	if r.IsCheck() {
		fmt.Fprintf(w, "  title:    %s\n", r.Title)
		fmt.Fprintf(w, "  rule:     %s\n", ruleOf(r))
		if r.Assertion != "" {
			fmt.Fprintf(w, "  expected: %s\n", r.Assertion)
		}
	}
	got := strings.Split(strings.TrimSpace(r.Failure), "\n")
	fmt.Fprintf(w, "  got:      %s\n", printable.String(got[0]))
	for _, l := range got[1:] {
		if l = strings.TrimSpace(l); l != "" {
			fmt.Fprintf(w, "            %s\n", printable.String(l))
		}
	}
	// The device read after the request, and the same read before it (the
	// reports have every read, each with its curl line).
	for _, o := range r.Reads {
		if o.When != "after" {
			continue
		}
		for _, b := range r.Reads {
			if b.When == "before" && b.URL == o.URL {
				fmt.Fprintf(w, "  observer: before the request %s\n", printable.String(b.Device))
				break
			}
		}
		fmt.Fprintf(w, "  observer: after the request %s\n", printable.String(o.Device))
	}
	for _, ex := range r.Exchanges {
		if ex.Tamper != nil {
			// What the check made wrong on purpose: a test request's
			// sign digit is no secret.
			fmt.Fprintf(w, "  sent:     %s\n", printable.String(ex.Tamper.Describe()))
			break
		}
	}
	if d.Files.HTML != "" {
		fmt.Fprintf(w, "  report:   %s#%s\n", d.Files.HTML, anchor(r))
	}
}

func levelOr(r Result) string {
	if r.Level == "" {
		return "-"
	}
	return r.Level
}

func nameOf(r Result) string {
	if r.ID != "" {
		return "[" + r.ID + "]"
	}
	return r.Text
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return printable.String(l)
}

// ruleOf names what a check judges: its published section, the CONTRACT
// section when the CONTRACT sets the rule, and the rules of the rule table.
func ruleOf(r Result) string {
	parts := []string{"section " + r.Section}
	if t := check.SectionTitle(r.Section); t != "" {
		parts[0] += " (" + t + ")"
	}
	if r.Contract != "" {
		parts = append(parts, "CONTRACT "+r.Contract)
	}
	var rules []string
	for _, t := range r.Tags {
		if id, ok := strings.CutPrefix(t, RuleTag); ok {
			rules = append(rules, id)
		}
	}
	if len(rules) > 0 {
		parts = append(parts, "rule "+strings.Join(rules, ", "))
	}
	return strings.Join(parts, "; ")
}

// SkipReasons groups the skipped checks by their reason, most first, and
// counts them all. A check skipped without a reason was filtered out.
func SkipReasons(d Document) ([]Gap, int) {
	filtered := false
	for _, g := range d.NotCovered {
		filtered = filtered || g.What == "filter"
	}
	count := map[string]int{}
	total := 0
	for _, r := range d.Results {
		if r.Outcome != Skipped || !r.IsCheck() {
			continue
		}
		total++
		why := r.Reason
		switch {
		case why != "":
		case filtered:
			why = "filtered out: not selected by the run's filter"
		default:
			why = unreached(d)
		}
		count[why]++
	}
	out := make([]Gap, 0, len(count))
	for why, n := range count {
		out = append(out, Gap{What: "checks skipped", Why: why, Checks: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Checks != out[j].Checks {
			return out[i].Checks > out[j].Checks
		}
		return out[i].Why < out[j].Why
	})
	return out, total
}

func countsText(c Counts, info bool) string {
	var parts []string
	if info {
		parts = append(parts, fmt.Sprintf("%d ran", c.Ran()))
		if c.Failed > 0 {
			parts[0] += fmt.Sprintf(" (%d could not complete)", c.Failed)
		}
	} else {
		parts = append(parts, fmt.Sprintf("%d passed", c.Passed), fmt.Sprintf("%d failed", c.Failed))
	}
	if c.Skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", c.Skipped))
	}
	if c.Pending > 0 {
		parts = append(parts, fmt.Sprintf("%d pending", c.Pending))
	}
	if c.Interrupted > 0 {
		parts = append(parts, fmt.Sprintf("%d interrupted", c.Interrupted))
	}
	if c.Inconclusive > 0 {
		parts = append(parts, fmt.Sprintf("%d inconclusive", c.Inconclusive))
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "(no target)"
	}
	return s
}

// effectsSkipped says whether a check was skipped for the reason d.Effects
// gives, so that the console's list of skip reasons names it.
func effectsSkipped(d Document) bool {
	for _, r := range d.Results {
		if r.Outcome == Skipped && strings.HasPrefix(r.Reason, d.Effects) {
			return true
		}
	}
	return false
}
