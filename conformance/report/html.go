package report

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/rules"
	"github.com/gwdmi/gwtools/gatewayapi/client"
)

// RenderHTML writes d as one self-contained HTML page: inline CSS and
// script, no external asset. It opens on the verdict and the failure
// cards (the first MaxCards of them); the other failures, the INFO
// observations and the catalog of every check are packed (gzip, base64)
// into the page and drawn when the reader opens them, so that the page
// stays small whatever the catalog's size.
func RenderHTML(w io.Writer, d Document) error {
	p, err := pageBase.Clone()
	if err != nil {
		return err
	}
	// The replay line names this report's path and the run's fleet file.
	p.Funcs(template.FuncMap{"replayLine": func(id string) string { return ReplayLine(d, id) }})
	v, err := newView(d, p)
	if err != nil {
		return err
	}
	return p.Execute(w, v)
}

// MaxCards is how many failure cards report.html draws at once; the others
// are drawn when the reader asks for them.
const MaxCards = 20

type levelRow struct {
	Level, Meaning string
	Info           bool
	Counts
}

// Percentages for the bar of a level row.
func (l levelRow) Pct(n int) string {
	if l.Total == 0 {
		return "0"
	}
	return strconv.FormatFloat(100*float64(n)/float64(l.Total), 'f', 2, 64)
}

type exchangeView struct {
	N     int
	Check string
	client.Exchange
	CurlCmd string
}

type view struct {
	Document
	Started       string
	Took          string
	VerdictReason string
	Levels        []levelRow
	// Failures are every failed check, MUST first; Cards the first
	// MaxCards of them, drawn at once; More the others, packed.
	Failures []Result
	Cards    []Result
	More     packed
	NMore    int
	Known    []Result
	Infos    packed
	NInfos   int
	// CatalogTable is the "All checks" table without its rows, packed;
	// CatalogRows its rows as packed JSON (catalogData), which the page's
	// script draws: some 4,000 rows take two thirds of what they took as
	// packed HTML.
	CatalogTable packed
	CatalogRows  packed
	Skipped      int
	// Outcomes, Types and Sections are what the results have, for the
	// filters of the "All checks" table.
	Outcomes, Types, SectionNumbers []string
}

// packed is a part of the page as gzip in base64, which the page's script
// unpacks and draws when the reader opens it.
type packed = template.HTML

// pack renders the named template of the page p with data, packed.
func pack(p *template.Template, name string, data any) (packed, error) {
	var html bytes.Buffer
	if err := p.ExecuteTemplate(&html, name, data); err != nil {
		return "", err
	}
	return packBytes(html.Bytes())
}

// packBytes is b as gzip in base64.
func packBytes(b []byte) (packed, error) {
	var z bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	gz.Write(b)
	if err := gz.Close(); err != nil {
		return "", err
	}
	// Base64 needs no escaping in the page.
	return packed(base64.StdEncoding.EncodeToString(z.Bytes())), nil
}

// catalogRow is one row of the "All checks" table and its details, as the
// page's script draws it (drawRows): every value is text, which the script
// escapes. Short names, and nothing the script can derive (the anchor
// c-ID, the outcome's colour, the sections' titles): the page carries
// some 4,000 of them.
type catalogRow struct {
	// Anchor names the check's card (#Anchor), when it is not c-ID; its
	// row is r-Anchor.
	Anchor string `json:"a,omitempty"`
	ID     string `json:"id,omitempty"`
	Level  string `json:"l,omitempty"`
	// Section is the section's number (catalogData.Sections has its
	// title), Contract the CONTRACT section.
	Section  string `json:"s,omitempty"`
	Contract string `json:"ct,omitempty"`
	// Title is a check's title, a plain spec's text.
	Title  string `json:"t"`
	Format string `json:"f,omitempty"`
	Type   string `json:"d,omitempty"`
	// Outcome filters and colours the row; OutcomeText says it when it
	// says more ("observed 200, 400").
	Outcome     string `json:"o"`
	OutcomeText string `json:"ot,omitempty"`
	Time        string `json:"ms"`
	// The details: the assertion of a check that did not pass, operation,
	// skip reason, settle lines, the failure's first line (and whether a
	// card shows it), what an INFO probe saw, tags.
	Assertion string   `json:"as,omitempty"`
	Operation string   `json:"op,omitempty"`
	Reason    string   `json:"r,omitempty"`
	Settle    []string `json:"st,omitempty"`
	Failure   string   `json:"fl,omitempty"`
	Card      bool     `json:"cd,omitempty"`
	Seen      *string  `json:"sn,omitempty"`
	Tags      string   `json:"g,omitempty"`
}

// catalogData is what the page's script draws the catalog's rows from.
type catalogData struct {
	// Sections are the titles of the sections the rows name.
	Sections map[string]string `json:"sections"`
	Rows     []catalogRow      `json:"rows"`
}

// catalog is the data of the "All checks" table: a row per result.
func catalog(results []Result) catalogData {
	c := catalogData{Sections: map[string]string{}, Rows: make([]catalogRow, 0, len(results))}
	for _, r := range results {
		row := catalogRow{Anchor: anchor(r), ID: r.ID, Level: r.Level, Section: r.Section, Contract: r.Contract, Title: r.Title,
			Format: r.Format, Type: r.DeviceType, Outcome: r.Outcome, OutcomeText: outcomeText(r),
			Time:      roundDuration(time.Duration(r.DurationMS * float64(time.Millisecond))),
			Operation: r.Operation, Reason: r.Reason, Settle: r.Settle, Tags: strings.Join(r.Tags, ", ")}
		if row.Anchor == "c-"+r.ID {
			row.Anchor = ""
		}
		if row.OutcomeText == r.Outcome {
			row.OutcomeText = ""
		}
		if r.ID == "" {
			row.Title = r.Text
		}
		if r.Assertion != "" && r.Outcome != Passed {
			row.Assertion = r.Assertion
		}
		if r.Section != "" {
			c.Sections[r.Section] = check.SectionTitle(r.Section)
		}
		if r.Failure != "" {
			row.Failure = firstLine(r.Failure)
			row.Card = r.Outcome == Failed || r.Outcome == Interrupted
		}
		if r.Level == string(check.Info) && len(r.Exchanges) > 0 {
			seen := strings.Join(r.Observations, " ")
			row.Seen = &seen
		}
		c.Rows = append(c.Rows, row)
	}
	return c
}

var levelMeaning = map[string]string{
	string(check.Must):   "follows from the published interface",
	string(check.Should): "follows only from our CONTRACT",
	string(check.Info):   "probes a gap; reports what the target did, judges nothing",
}

func newView(d Document, p *template.Template) (view, error) {
	v := view{Document: d, Started: "unknown", Took: roundDuration(d.Duration())}
	if !d.StartedAt.IsZero() {
		v.Started = d.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	for _, l := range check.Levels {
		v.Levels = append(v.Levels, levelRow{Level: string(l), Meaning: levelMeaning[string(l)], Info: l == check.Info, Counts: d.Summary.ByLevel[string(l)]})
	}
	if d.Summary.Other.Total > 0 {
		v.Levels = append(v.Levels, levelRow{Level: "other", Meaning: "specs that are not checks", Counts: d.Summary.Other})
	}
	rank := map[string]int{string(check.Must): 0, string(check.Should): 1, "": 2, string(check.Info): 3}
	var infos []Result
	for _, r := range d.Results {
		switch {
		case r.Outcome == Failed || r.Outcome == Interrupted:
			v.Failures = append(v.Failures, r)
		case r.Outcome == ExpectedFailure:
			v.Known = append(v.Known, r)
		}
		if r.Level == string(check.Info) && len(r.Exchanges) > 0 {
			infos = append(infos, r)
		}
	}
	sort.SliceStable(v.Failures, func(i, j int) bool { return rank[v.Failures[i].Level] < rank[v.Failures[j].Level] })
	v.Cards = v.Failures
	var err error
	if len(v.Failures) > MaxCards {
		v.Cards, v.NMore = v.Failures[:MaxCards], len(v.Failures)-MaxCards
		if v.More, err = pack(p, "cards", v.Failures[MaxCards:]); err != nil {
			return v, err
		}
	}
	seenOutcome, seenType, seenSection := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, r := range d.Results {
		if !seenOutcome[r.Outcome] {
			seenOutcome[r.Outcome] = true
			v.Outcomes = append(v.Outcomes, r.Outcome)
		}
		if r.DeviceType != "" && !seenType[r.DeviceType] {
			seenType[r.DeviceType] = true
			v.Types = append(v.Types, r.DeviceType)
		}
		if r.Section != "" && !seenSection[r.Section] {
			seenSection[r.Section] = true
			v.SectionNumbers = append(v.SectionNumbers, r.Section)
		}
	}
	sort.Strings(v.Outcomes)
	sort.Strings(v.Types)
	sort.Slice(v.SectionNumbers, func(i, j int) bool { return naturalLess(v.SectionNumbers[i], v.SectionNumbers[j]) })

	v.VerdictReason = VerdictReason(d)
	if v.NInfos = len(infos); v.NInfos > 0 {
		if v.Infos, err = pack(p, "infos", infos); err != nil {
			return v, err
		}
	}
	if v.CatalogTable, err = pack(p, "catalog", v); err != nil {
		return v, err
	}
	rows, err := json.Marshal(catalog(d.Results))
	if err != nil {
		return v, err
	}
	if v.CatalogRows, err = packBytes(rows); err != nil {
		return v, err
	}
	return v, nil
}

// ruleView is a rule a check traces to, as a failure card shows it.
type ruleView struct {
	ID, Source, Text string
}

// rulesOf are the rules of the rule table a check traces to (its rule:
// tags), with their text.
func rulesOf(r Result) []ruleView {
	var out []ruleView
	for _, t := range r.Tags {
		id, ok := strings.CutPrefix(t, RuleTag)
		if !ok {
			continue
		}
		rv := ruleView{ID: id}
		if rule, ok := rules.Lookup(id); ok {
			rv.Source, rv.Text = rule.Source, rule.Text
		}
		out = append(out, rv)
	}
	return out
}

// textEscaper escapes text for an element's content: quotes, which are
// frequent in bodies and titles, stay as they are (html/template writes
// each as five bytes).
var textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// txt is s as the text of an element (never of an attribute).
func txt(s string) template.HTML { return template.HTML(textEscaper.Replace(s)) }

// VerdictReason says in words why the run got its verdict: what failed,
// why it is INCOMPLETE (stopped, interrupted, the suite itself failed, no
// MUST check ran) or PARTIAL (how much was not covered).
func VerdictReason(d Document) string {
	must := d.Summary.ByLevel[string(check.Must)]
	switch {
	case d.Verdict == VerdictFail && must.Failed > 0:
		return plural(must.Failed, "MUST check") + " failed"
	case d.Verdict == VerdictFail && d.FailOn == FailOnShould && d.FailedAt(string(check.Should)) > 0:
		return plural(d.FailedAt(string(check.Should)), "SHOULD check") + " failed, and the run fails on SHOULD checks (--fail-on should)"
	case d.Verdict == VerdictFail:
		return "the baseline has " + plural(len(d.BaselineProblems), "problem")
	case d.Verdict == VerdictIncomplete && d.Stopped != "":
		return "the run stopped: " + d.Stopped
	case d.Verdict == VerdictIncomplete && len(d.SuiteFailureReasons) > 0:
		return "the run was cut short: " + strings.Join(d.SuiteFailureReasons, "; ")
	case d.Verdict == VerdictIncomplete && d.Summary.Interrupted > 0:
		return "the run was interrupted"
	case d.Verdict == VerdictIncomplete && d.Summary.Other.Failed > 0:
		return "the suite itself failed (see the failures)"
	case d.Verdict == VerdictIncomplete && must.Inconclusive > 0:
		return plural(must.Inconclusive, "MUST check") + " inconclusive: the valid request was refused too"
	case d.Verdict == VerdictIncomplete:
		return "no MUST check ran"
	case d.Verdict == VerdictPartial:
		for _, g := range d.NotCovered {
			if g.What == "filter" {
				return "no MUST check failed, but the run was filtered"
			}
		}
		return "no MUST check failed, but " + plural(len(d.NotCovered), "part") + " of the interface not covered"
	case d.Verdict == VerdictPassKnown:
		return "all " + plural(must.Passed, "MUST check") + " that ran passed; " + plural(d.KnownFailures, "known failure") + " excused by the baseline"
	}
	s := "all " + plural(must.Passed, "MUST check") + " that ran passed"
	if must.Skipped > 0 {
		s += "; " + strconv.Itoa(must.Skipped) + " skipped"
	}
	if n := UnobservedMust(d); n > 0 {
		s += "; " + plural(n, "MUST effect check") + " not run: no observer (" + NoObserverFlag + ")"
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func anchor(r Result) string {
	if r.ID != "" {
		return "c-" + check.Slug(r.ID)
	}
	return "s-" + check.Slug(r.Text)
}

// outcomeClass colours a result: INFO checks in a neutral colour unless
// they could not complete.
func outcomeClass(level, outcome string) string {
	if level == string(check.Info) && (outcome == Passed || outcome == Failed) {
		return "o-info"
	}
	return "o-" + outcome
}

func outcomeText(r Result) string {
	if r.Level == string(check.Info) && r.Outcome == Passed {
		if s := r.Statuses(); len(s) > 0 {
			return "observed " + strings.Join(s, ", ")
		}
		return "ran"
	}
	if r.Level == string(check.Info) && r.Outcome == Failed {
		return "could not complete"
	}
	if r.State != r.Outcome && r.State != "" {
		return r.Outcome + " (" + r.State + ")"
	}
	return r.Outcome
}

func headerText(h map[string]string) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + ": " + h[k] + "\n")
	}
	return b.String()
}

// maxHTMLBody is how much of a body report.html shows (the body-size
// checks send 64 KiB); report.json has it whole.
const maxHTMLBody = 4096

func requestText(e client.Exchange) string {
	s := e.Method + " " + e.URL + "\n" + headerText(e.RequestHeaders)
	if e.RequestBody != "" {
		s += "\n" + cut(e.RequestBody, maxHTMLBody)
	}
	return s
}

func responseText(e client.Exchange) string {
	if e.Status == 0 && e.ResponseBody == "" && len(e.ResponseHeaders) == 0 {
		return "(no answer)"
	}
	s := "HTTP " + strconv.Itoa(e.Status) + "\n" + headerText(e.ResponseHeaders)
	if e.ResponseBody != "" {
		s += "\n" + cut(e.ResponseBody, maxHTMLBody)
	}
	return s
}

func exchanges(r Result) []exchangeView {
	out := make([]exchangeView, 0, len(r.Exchanges))
	for i, e := range r.Exchanges {
		c := e.Curl()
		if i < len(r.Curl) {
			c = r.Curl[i]
		}
		if len(e.RequestBody) > maxHTMLBody {
			// A line too long to paste: replay sends the body whole.
			c = ""
		}
		out = append(out, exchangeView{N: i + 1, Check: r.ID, Exchange: e, CurlCmd: c})
	}
	return out
}

// roundDuration keeps two or three significant digits: 1.234s, 12ms, 85µs.
func roundDuration(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond).String()
	case d >= 10*time.Microsecond:
		return d.Round(time.Microsecond).String()
	default:
		return d.String()
	}
}

func levelCounts(checks []CheckRef) string {
	n := map[string]int{}
	for _, c := range checks {
		n[c.Level]++
	}
	var parts []string
	for _, l := range check.Levels {
		if n[string(l)] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[string(l)], l))
		}
	}
	return strings.Join(parts, " · ")
}

var funcs = template.FuncMap{
	"txt":          txt,
	"rulesOf":      rulesOf,
	"replayLine":   func(id string) string { return "gwconform replay " + JSONFile + " " + id },
	"anchor":       anchor,
	"outcomeClass": outcomeClass,
	"outcomeText":  outcomeText,
	"requestText":  requestText,
	"responseText": responseText,
	"exchanges":    exchanges,
	"anyFailed": func(cs []CheckRef) bool {
		for _, c := range cs {
			if c.Outcome == Failed || c.Outcome == Interrupted {
				return true
			}
		}
		return false
	},
	"levelCounts": levelCounts,
	"failedRefs": func(cs []CheckRef) []CheckRef {
		var out []CheckRef
		for _, c := range cs {
			if (c.Outcome == Failed || c.Outcome == Interrupted) && c.Level != string(check.Info) {
				out = append(out, c)
			}
		}
		return out
	},
	"sectionTitle": check.SectionTitle,
	"slug":         check.Slug,
	"ms":           func(f float64) string { return roundDuration(time.Duration(f * float64(time.Millisecond))) },
	"dur":          roundDuration,
	"join":         strings.Join,
	"formats":      func() []string { return Formats },
	"upper":        strings.ToUpper,
	"firstLine":    firstLine,
	"countsText":   countsText,
}

// pageBase is the parsed page, never executed itself: each report clones
// it to bind the functions that need its document (replayLine).
var pageBase = template.Must(template.New("report").Funcs(funcs).Parse(pageTemplate))

// The page: the header with the verdict, what was not covered, the failure
// cards with their exchanges, the known failures, counts per level, the
// device type × format grid, the sections, then, drawn on demand, the INFO
// observations and the catalog of all checks.
const pageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Conformance {{.VerdictLine}}: {{.Target}}</title>
<style>
:root{--pass:#1a7f37;--pass-bg:#dafbe1;--fail:#cf222e;--fail-bg:#ffebe9;--skip:#6e7781;--skip-bg:#eaeef2;--info:#0550ae;--info-bg:#ddf4ff;--warn:#9a6700;--warn-bg:#fff8c5;--line:#d0d7de;--ink:#1f2328;--mute:#59636e}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);margin:0;background:#f6f8fa}
main{max-width:1200px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:18px;margin:32px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:0 0 8px}
h5{font-size:12px;margin:8px 0 4px;text-transform:uppercase;letter-spacing:.04em;color:var(--mute)}
a{color:var(--info)}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:#fff;border:1px solid var(--line);border-radius:6px;padding:8px;margin:0;white-space:pre-wrap;word-break:break-all;max-height:420px;overflow:auto}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid var(--line);border-radius:6px}
th,td{padding:6px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:#f6f8fa;font-weight:600;font-size:12px;color:var(--mute)}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:var(--mute)}
header.top{display:flex;gap:24px;align-items:stretch;justify-content:space-between;flex-wrap:wrap;background:#fff;border:1px solid var(--line);border-radius:8px;padding:16px 20px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0 0}
dl.facts dt{color:var(--mute)}dl.facts dd{margin:0}
.verdict{min-width:220px;border-radius:8px;padding:12px 18px;text-align:center;display:flex;flex-direction:column;justify-content:center}
.verdict b{font-size:34px;letter-spacing:.06em}
.v-PASS_WITH_KNOWN_FAILURES b{font-size:20px}
.v-PASS{background:var(--pass-bg);color:var(--pass);border:2px solid var(--pass)}
.v-FAIL{background:var(--fail-bg);color:var(--fail);border:2px solid var(--fail)}
.v-PASS_WITH_KNOWN_FAILURES{background:var(--warn-bg);color:var(--warn);border:2px solid var(--warn)}
.v-PARTIAL{background:var(--warn-bg);color:var(--warn);border:2px solid var(--warn)}
.v-INCOMPLETE{background:var(--warn-bg);color:var(--warn);border:2px solid var(--warn)}
.bar{display:flex;height:10px;border-radius:5px;overflow:hidden;background:var(--skip-bg);min-width:160px}
.bar span{display:block;height:100%}
.b-pass{background:var(--pass)}.b-fail{background:var(--fail)}.b-skip{background:#afb8c1}.b-info{background:var(--info)}
.chip{display:inline-block;padding:1px 7px;margin:1px 2px;border-radius:10px;font:12px/1.5 ui-monospace,Menlo,Consolas,monospace;text-decoration:none;border:1px solid transparent;white-space:nowrap}
.chip small{font:10px system-ui,sans-serif;opacity:.8;margin-left:3px}
.o-passed{background:var(--pass-bg);color:var(--pass);border-color:#4ac26b}
.o-failed,.o-interrupted{background:var(--fail-bg);color:var(--fail);border-color:#ff8182}
.o-skipped,.o-pending{background:var(--skip-bg);color:var(--skip);border-color:#d0d7de}
.o-info{background:var(--info-bg);color:var(--info);border-color:#54aeff}
td.o-passed,td.o-failed,td.o-interrupted,td.o-skipped,td.o-pending,td.o-info{font-weight:600}
.lv{font:11px/1 system-ui,sans-serif;font-weight:700;padding:2px 6px;border-radius:4px;display:inline-block}
.lv-MUST{background:#ffd8b5;color:#762c00}.lv-SHOULD{background:#fff8c5;color:#7d4e00}.lv-INFO{background:var(--info-bg);color:var(--info)}
table.grid td.cell{text-align:center;font-size:18px;font-weight:700;width:30%}
table.grid td.cell small{display:block;font-size:11px;font-weight:400}
.c-passed{background:var(--pass-bg);color:var(--pass)}.c-failed{background:var(--fail-bg);color:var(--fail)}.c-none{background:var(--skip-bg);color:var(--skip)}
.note-gap{color:var(--mute);font-style:italic}.note-hole{color:var(--warn);font-weight:600}
.failure{background:#fff;border:1px solid var(--line);border-left:5px solid var(--fail);border-radius:6px;padding:12px 16px;margin:0 0 16px}
.failure.lvl-INFO{border-left-color:var(--info)}
.failure pre.msg{background:var(--fail-bg);border-color:#ff8182}
.ex{border-top:1px dashed var(--line);margin-top:10px;padding-top:6px}
.ex .cols{display:grid;grid-template-columns:1fr 1fr;gap:10px}
@media (max-width:800px){.ex .cols{grid-template-columns:1fr}}
.exhead{font-size:13px}
.err{color:var(--fail)}
td.o-failed a,td.o-interrupted a,td.o-info a{color:inherit}
details summary{cursor:pointer}
details.info{background:#fff;border:1px solid var(--line);border-left:5px solid var(--info);border-radius:6px;padding:8px 12px;margin:0 0 8px}
.legend span{margin-right:10px}
footer{margin:32px 0 8px;color:var(--mute);font-size:12px}
.o-expected_failure{background:var(--warn-bg);color:var(--warn);border-color:#d4a72c}
.filters{display:flex;flex-wrap:wrap;gap:8px 14px;align-items:center;margin:0 0 8px}
.filters label{font-size:12px;color:var(--mute)}
.filters select,.filters input{font:13px system-ui,sans-serif;margin-left:4px}
.filters input{width:220px}
table.all{table-layout:fixed}
table.all td{white-space:nowrap;overflow:hidden;text-overflow:ellipsis;vertical-align:middle}
table.all tr.r{cursor:pointer}
table.all tr.r:hover td{background:#f6f8fa}
table.all tr.d td{white-space:normal;background:#fbfcfd;font-size:13px}
table.all td[class^="o-"]{border-color:var(--line)}
table.all col.c-id{width:28%}table.all col.c-lv{width:7%}table.all col.c-sec{width:4%}table.all col.c-title{width:29%}
table.all col.c-fmt{width:5%}table.all col.c-type{width:11%}table.all col.c-out{width:9%}table.all col.c-time{width:7%}
.vcounts{margin:8px 0 0;font-size:12px;text-align:left}
.vcounts div{white-space:nowrap}
.rule{margin:6px 0;padding:6px 10px;border-left:3px solid var(--line);background:#f6f8fa}
details.lazy>summary{font-size:18px;font-weight:600;margin:32px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}
details.lazy>summary small{font-weight:400;font-size:13px;color:var(--mute)}
details.more>summary{margin:8px 0 16px;font-weight:600;color:var(--info)}
.known li{margin:2px 0}
</style>
</head>
<body>
<main>
<header class="top">
 <div>
  <h1>Gateway Device Management Interface: conformance report</h1>
  <dl class="facts">
   <dt>Target</dt><dd><code>{{if .Target}}{{.Target}}{{else}}(none given){{end}}</code></dd>
   {{- if and .Observer (ne .Observer "none")}}<dt>Observer</dt><dd id="observer"><code>{{.Observer}}</code></dd>
   {{- else if .Observer}}<dt>Observer</dt><dd id="observer">none{{if .Effects}} ({{.Effects}}){{end}}</dd>
   {{- else if .Effects}}<dt>Effects</dt><dd>{{.Effects}}</dd>{{end}}
   <dt>Date</dt><dd>{{.Started}}</dd>
   <dt>Seed</dt><dd><code>{{.Seed}}</code></dd>
   <dt>Duration</dt><dd>{{.Took}}</dd>
   {{- if .Catalog.Version}}<dt>Catalog</dt><dd>{{.Catalog.Version}} <span class="muted">(gwconform {{.Catalog.Harness}})</span></dd>{{end}}
   {{- if .LabelFilter}}<dt>Label filter</dt><dd><code>{{.LabelFilter}}</code></dd>{{end}}
   {{- range .SuiteFailureReasons}}<dt>Suite</dt><dd class="err">{{.}}</dd>{{end}}
   {{- range .Preflight}}<dt>Pre-flight</dt><dd class="err">{{.}}</dd>{{end}}
   {{- if .Summary.Inconclusive}}<dt>Inconclusive</dt><dd class="err">{{.Summary.Inconclusive}} refusal check(s) whose valid request was refused too: counted apart, neither passed nor failed</dd>{{end}}
  </dl>
 </div>
 <div class="verdict v-{{.Verdict}}" id="verdict"><b>{{.VerdictLine}}</b><span>{{.VerdictReason}}</span>
 <div class="vcounts">{{range .Levels}}<div>{{.Level}} {{.Total}}: {{countsText .Counts .Info}}</div>{{end}}</div></div>
</header>

{{if .LeftChanged}}<h2 id="left-changed">Devices left changed or changed unasked ({{len .LeftChanged}})</h2>
<p>Devices the run changed and could not put back, and devices the target changed though no check's change was meant for them; each with its state before the run. Set any not put back as it was.</p>
<ul>{{range .LeftChanged}}<li>{{.}}</li>{{end}}</ul>
{{end}}
{{if .NotCovered}}<h2 id="not-covered">Not covered ({{len .NotCovered}})</h2>
<ul>{{range .NotCovered}}<li><b>{{.What}}</b>: {{.Why}}{{if .Checks}} ({{.Checks}} checks not run){{end}}</li>{{end}}</ul>
{{end}}
{{if .Findings}}<h2 id="findings">Findings: failures that share a cause ({{len .Findings}})</h2>
<ul>{{range .Findings}}<li><b>{{.Cause}}</b><br><span class="muted">{{len .Checks}} checks:</span> {{range $i, $c := .Checks}}{{if $i}}, {{end}}<a href="#c-{{$c}}">{{$c}}</a>{{end}}</li>{{end}}</ul>
{{end}}
<h2 id="failures">Failures{{if .Failures}} ({{len .Failures}}){{end}}</h2>
{{- if not .Failures}}<p>No check failed.</p>{{end}}
{{- template "cards" .Cards}}
{{- if .More}}
<details class="more lazy" id="more-failures" data-blob="more-failures-data"><summary>Show the other {{.NMore}} failures</summary><div class="lazy-body"></div></details>
<script type="application/octet-stream" id="more-failures-data">{{.More}}</script>
{{- end}}
{{- if .Known}}
<h2 id="known">Known failures, excused by the baseline ({{len .Known}})</h2>
<ul class="known">{{range .Known}}<li><span class="lv lv-{{.Level}}">{{.Level}}</span> <code>{{.ID}}</code>: {{firstLine .Failure}} <span class="muted">{{.Reason}}</span></li>{{end}}</ul>
{{- end}}

<h2 id="levels">Results by level</h2>
<table>
<tr><th>Level</th><th>Meaning</th><th class="num">Checks</th><th class="num">Passed</th><th class="num">Failed</th><th class="num">Skipped</th>{{if or .Summary.Pending .Summary.Interrupted}}<th class="num">Pending</th><th class="num">Interrupted</th>{{end}}<th></th></tr>
{{- range .Levels}}
<tr><td>{{if .Info}}<span class="lv lv-INFO">INFO</span>{{else if eq .Level "other"}}other{{else}}<span class="lv lv-{{.Level}}">{{.Level}}</span>{{end}}</td><td class="muted">{{.Meaning}}</td>
<td class="num">{{.Total}}</td>
{{- if .Info}}<td class="num" title="INFO probes judge nothing: they ran">{{.Passed}} ran</td><td class="num" title="probes that could not complete">{{.Failed}}</td>{{else}}<td class="num">{{.Passed}}</td><td class="num">{{.Failed}}</td>{{end}}
<td class="num">{{.Skipped}}</td>{{if or $.Summary.Pending $.Summary.Interrupted}}<td class="num">{{.Pending}}</td><td class="num">{{.Interrupted}}</td>{{end}}
<td><div class="bar">{{if .Info}}<span class="b-info" style="width:{{.Pct .Ran}}%"></span>{{else}}<span class="b-pass" style="width:{{.Pct .Passed}}%"></span><span class="b-fail" style="width:{{.Pct .Failed}}%"></span>{{end}}<span class="b-skip" style="width:{{.Pct .Skipped}}%"></span></div></td></tr>
{{- end}}
</table>

<h2 id="grid">Device types × formats</h2>
<p class="muted">MUST and SHOULD checks about one device type in one format: passed / total. <span class="chip c-passed">all that ran passed</span><span class="chip c-failed">some failed</span><span class="chip c-none">none ran</span></p>
<table class="grid">
<tr><th>Device type</th>{{range formats}}<th style="text-align:center">{{upper .}}</th>{{end}}</tr>
{{- range .Grid}}
<tr><td>{{.DeviceType}}</td>{{range .Cells}}<td class="cell c-{{.Status}}">{{.Passed}}/{{.Total}}
{{- if .Skipped}}<small>{{.Skipped}} skipped</small>{{end}}
{{- if .FailedIDs}}<small>{{len .FailedIDs}} failed: {{range $i, $id := .FailedIDs}}{{if lt $i 5}}{{if $i}}, {{end}}<a href="#c-{{slug $id}}">{{$id}}</a>{{end}}{{end}}{{if gt (len .FailedIDs) 5}}, …{{end}}</small>{{end}}</td>{{end}}</tr>
{{- end}}
</table>

{{with .Model}}<h2 id="model">Model-based phase</h2>
<p class="muted">Random operation sequences over the space the fleet opens, each answer and each state the observer showed compared with the model of the two texts: seed {{.Seed}}, {{.Operations}} operations in {{.Rounds}} sequence(s), {{printf "%.1f" .Seconds}} s (budget {{.BudgetOperations}} operations, {{printf "%.1f" .BudgetSeconds}} s). Its findings are the checks tagged <code>model</code>.</p>
<table>
<tr><th>Space</th><th>Reached</th><th>Not reached</th></tr>
{{- range .Coverage}}
<tr><td>{{.Name}}</td><td class="num">{{.Reached}} of {{.Total}}</td><td>{{if .NotReached}}<details><summary>{{len .NotReached}}</summary><ul>{{range .NotReached}}<li><code>{{.}}</code></li>{{end}}</ul></details>{{else}}none{{end}}</td></tr>
{{- end}}
</table>
{{- if .Findings}}
<ol>{{range .Findings}}<li><span class="lv lv-{{.Level}}">{{.Level}}</span> {{.Rule}}, {{.Count}} time(s): {{.Why}}<br><span class="muted">{{.Quote}}</span><ol>{{range .Operations}}<li><code>{{.}}</code></li>{{end}}</ol></li>{{end}}</ol>
{{- end}}
{{end}}
<h2 id="sections">Published sections</h2>
<p class="muted">Every section of the published interface and how many checks trace to it; the failed ones are named. The catalog below lists every check of a section.</p>
<table>
<tr><th>§</th><th>Title</th><th>Checks</th><th>Note</th></tr>
{{- range .Sections}}
<tr><td><b>{{.Number}}</b></td><td>{{.Title}}</td>
<td>{{if .Checks}}<span class="muted" style="font-size:12px">{{levelCounts .Checks}}</span>{{with failedRefs .Checks}}<br><span class="o-failed">{{len .}} failed:</span> {{range $i, $c := .}}{{if lt $i 8}}<a class="chip {{outcomeClass $c.Level $c.Outcome}}" href="#c-{{slug $c.ID}}">{{$c.ID}}<small>{{$c.Level}}</small></a>{{end}}{{end}}{{if gt (len .) 8}} …{{end}}{{end}}{{end}}</td>
<td>{{if not .Published}}<span class="note-hole">{{.Title}}</span>{{else if .Gap}}<span class="note-gap">{{.Gap}}</span>{{else if .Checks}}{{else if .HasSubsections}}<span class="note-gap">see its subsections</span>{{else}}<span class="note-hole">no check</span>{{end}}</td></tr>
{{- end}}
</table>

{{- if .Infos}}
<details class="lazy" id="info" data-blob="info-data"><summary>INFO observations ({{.NInfos}}) <small>probes of gaps in the published interface: what the target answered; they judge nothing. Click to show.</small></summary><div class="lazy-body"></div></details>
<script type="application/octet-stream" id="info-data">{{.Infos}}</script>
{{- end}}

<details class="lazy" id="catalog" data-blob="catalog-data"><summary>All checks ({{len .Results}}) <small>the catalog, every check with its outcome, with filters. Click to show.</small></summary><div class="lazy-body"></div></details>
<script type="application/octet-stream" id="catalog-data">{{.CatalogTable}}</script>
<script type="application/octet-stream" id="catalog-rows">{{.CatalogRows}}</script>
<footer>Levels: MUST follows from the published interface; SHOULD only from our CONTRACT; INFO probes a gap. The verdict is PASS when no MUST check failed and the run covered every device type, format, operation and rule; PARTIAL when no MUST check failed but something was not covered. Machine-readable: report.json, junit.xml.</footer>
</main>
<script>
(function () {
  "use strict";
  var sel = function (id) { return document.getElementById(id); };
  // gunzip is the text of a packed part (gzip in base64), by its id.
  function gunzip(id) {
    var bin = atob(sel(id).textContent.trim()), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
  }
  // unpack draws a packed part into its details element; the catalog's
  // rows come as data (catalog-rows), drawn by drawRows.
  function unpack(d) {
    if (d.loading) { return d.loading; }
    var parts = [gunzip(d.dataset.blob)];
    if (d.id === "catalog") { parts.push(gunzip("catalog-rows")); }
    d.loading = Promise.all(parts).then(function (p) {
      d.querySelector(".lazy-body").innerHTML = p[0];
      if (d.id === "catalog") {
        sel("all-checks").tBodies[0].innerHTML = drawRows(JSON.parse(p[1]));
        table();
      }
      d.dataset.loaded = "yes";
    });
    return d.loading;
  }
  // esc is text as HTML: every value of a row is the report's text, the
  // target's words among it.
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) { return "&#" + c.charCodeAt(0) + ";"; });
  }
  // drawRows is the HTML of the catalog's rows (catalogData): a row a
  // result, then its details, hidden until the row is clicked.
  function drawRows(data) {
    return data.rows.map(function (r) {
      var facts = [], a = r.a || "c-" + r.id;
      var fact = function (name, html) { facts.push("<dt>" + name + "</dt><dd>" + html + "</dd>"); };
      if (r.as) { fact("Assertion", esc(r.as)); }
      if (r.s) { fact("Section", esc((r.s + " " + (data.sections[r.s] || "")).trim() + (r.ct ? " · CONTRACT " + r.ct : ""))); }
      if (r.op) { fact("Operation", esc(r.op)); }
      if (r.r) { fact("Reason", esc(r.r)); }
      (r.st || []).forEach(function (s) { fact("Settled", esc(s)); });
      if (r.fl) { fact("Failure", esc(r.fl) + (r.cd ? ' · <a href="#' + esc(a) + '">details and exchanges</a>' : "")); }
      if (r.sn !== undefined) { fact("Seen", esc(r.sn)); }
      if (r.g) { fact("Tags", esc(r.g)); }
      var cell = function (s) { return "<td>" + esc(s || "") + "</td>"; };
      // The outcome's colour, as outcomeClass gives it.
      var colour = r.l === "INFO" && (r.o === "passed" || r.o === "failed") ? "o-info" : "o-" + r.o;
      return '<tr class="r" id="r-' + esc(a) + '" data-outcome="' + esc(r.o) + '" data-level="' + esc(r.l || "") +
        '" data-section="' + esc(r.s || "") + '" data-type="' + esc(r.d || "-") + '" data-format="' + esc(r.f || "-") + '">' +
        "<td><code>" + esc(r.id || "-") + "</code></td><td>" + (r.l ? '<span class="lv lv-' + esc(r.l) + '">' + esc(r.l) + "</span>" : "") + "</td>" +
        cell(r.s) + cell(r.t) + cell(r.f) + cell(r.d) + '<td class="' + esc(colour) + '">' + esc(r.ot || r.o) + '</td><td class="num">' + esc(r.ms) + "</td></tr>\n" +
        '<tr class="d" hidden><td colspan="8"><dl class="facts">' + facts.join("") + "</dl></td></tr>";
    }).join("\n");
  }
  var lazies = Array.prototype.slice.call(document.querySelectorAll("details.lazy"));
  lazies.forEach(function (d) {
    d.addEventListener("toggle", function () { if (d.open) { unpack(d); } });
  });
  // The "All checks" table: filters, and a row's details on a click.
  function table() {
    var t = sel("all-checks");
    var rows = Array.prototype.slice.call(t.querySelectorAll("tr.r"));
    var text = rows.map(function (r) { return (r.textContent + " " + r.nextElementSibling.textContent).toLowerCase(); });
    function apply() {
      var o = sel("f-outcome").value, l = sel("f-level").value, ty = sel("f-type").value, f = sel("f-format").value, s = sel("f-section").value;
      var q = sel("f-text").value.trim().toLowerCase(), n = 0;
      rows.forEach(function (r, i) {
        var d = r.dataset;
        var show = (!o || d.outcome === o) && (!l || d.level === l) && (!ty || d.type === ty) && (!f || d.format === f) && (!s || d.section === s) && (!q || text[i].indexOf(q) >= 0);
        r.hidden = !show;
        if (!show) { r.nextElementSibling.hidden = true; } else { n++; }
      });
      sel("f-count").textContent = n + " of " + rows.length + " shown";
    }
    ["f-outcome", "f-level", "f-type", "f-format", "f-section"].forEach(function (id) { sel(id).addEventListener("change", apply); });
    sel("f-text").addEventListener("input", apply);
    t.addEventListener("click", function (e) {
      var r = e.target.closest("tr.r");
      if (r && !e.target.closest("a")) { r.nextElementSibling.hidden = !r.nextElementSibling.hidden; }
    });
  }
  // A link to a check (#c-…) shows its failure card, else its row of the
  // catalog, whatever the filters; either may have to be drawn first.
  function reveal() {
    var id = location.hash.slice(1);
    if (!id || sel(id)) { return; }
    var more = sel("more-failures"), cat = sel("catalog");
    var next = more ? unpack(more) : Promise.resolve();
    next.then(function () {
      var card = sel(id);
      if (card) { more.open = true; card.scrollIntoView(); return; }
      cat.open = true;
      return unpack(cat).then(function () {
        var r = sel("r-" + id);
        if (r) { r.hidden = false; r.nextElementSibling.hidden = false; r.scrollIntoView(); }
      });
    });
  }
  window.addEventListener("hashchange", reveal);
  reveal();
})();
</script>
</body>
</html>
{{define "cards"}}{{range .}}{{template "card" .}}{{end}}{{end}}
{{define "card"}}
<section class="failure lvl-{{.Level}}" id="{{anchor .}}">
<h3>{{if .ID}}<span class="lv lv-{{.Level}}">{{.Level}}</span> [{{.ID}}] {{txt .Title}}{{else}}{{.Text}}{{end}} <span class="chip {{outcomeClass .Level .Outcome}}">{{outcomeText .}}</span></h3>
{{- if .ID}}
<dl class="facts">
 <dt>Expected</dt><dd>{{txt .Assertion}}</dd>
 <dt>Section</dt><dd>{{.Section}} {{sectionTitle .Section}}{{if .Contract}} · CONTRACT {{.Contract}}{{end}}</dd>
 {{- range rulesOf .}}<dt>Rule</dt><dd><b>{{.ID}}</b>{{if .Source}} <span class="muted">({{.Source}})</span>{{end}}{{if .Text}}<div class="rule">{{txt .Text}}</div>{{end}}</dd>{{end}}
 {{- if .Operation}}<dt>Operation</dt><dd>{{.Operation}}{{if .Format}} · {{.Format}}{{end}}{{if .DeviceType}} · {{.DeviceType}}{{end}} · {{ms .DurationMS}}</dd>{{end}}
</dl>
{{- end}}
{{- if .Failure}}<h5>Got</h5><pre class="msg">{{txt .Failure}}</pre>{{end}}
{{- range exchanges .}}{{template "exchange" .}}{{end}}
{{- if .Reads}}<h5>What the observer showed</h5>{{range .Reads}}<div class="ex"><div class="exhead"><b>{{.When}} the request</b> · <code>GET {{.URL}}</code></div><pre>{{txt .Device}}</pre><h5>curl</h5><pre>{{txt .Curl}}</pre></div>{{end}}{{end}}
{{- if .Exchanges}}<h5>Reproduce</h5><pre>{{replayLine .ID}}</pre>{{end}}
</section>
{{- end}}
{{define "infos"}}{{range .}}
<details class="info" id="i-{{anchor .}}"><summary><b>[{{.ID}}] {{txt .Title}}</b> <span class="chip o-info">{{outcomeText .}}</span></summary>
<dl class="facts"><dt>Probe</dt><dd>{{txt .Assertion}}</dd><dt>Section</dt><dd>{{.Section}} {{sectionTitle .Section}}{{if .Contract}} · CONTRACT {{.Contract}}{{end}}</dd>{{if .Observations}}<dt>Seen</dt><dd><ul>{{range .Observations}}<li>{{txt .}}</li>{{end}}</ul></dd>{{end}}</dl>
{{- range exchanges .}}{{template "exchange" .}}{{end}}
{{- if .Reads}}<h5>What the observer showed</h5>{{range .Reads}}<div class="ex"><div class="exhead"><b>{{.When}} the request</b> · <code>GET {{.URL}}</code></div><pre>{{txt .Device}}</pre><h5>curl</h5><pre>{{txt .Curl}}</pre></div>{{end}}{{end}}
</details>
{{- end}}{{end}}
{{define "catalog"}}<div class="filters" id="filters">
 <label>Outcome<select id="f-outcome"><option value="">all</option>{{range .Outcomes}}<option value="{{.}}">{{.}}</option>{{end}}</select></label>
 <label>Level<select id="f-level"><option value="">all</option><option>MUST</option><option>SHOULD</option><option>INFO</option></select></label>
 <label>Section<select id="f-section"><option value="">all</option>{{range .SectionNumbers}}<option>{{.}}</option>{{end}}</select></label>
 <label>Device type<select id="f-type"><option value="">all</option>{{range .Types}}<option value="{{.}}">{{.}}</option>{{end}}<option value="-">none</option></select></label>
 <label>Format<select id="f-format"><option value="">all</option><option>json</option><option>xml</option><option value="-">none</option></select></label>
 <label>Text<input id="f-text" type="search" placeholder="ID, title, reason…"></label>
 <span class="muted" id="f-count">{{len .Results}} shown</span>
</div>
<p class="muted" style="font-size:12px;margin:0 0 6px">Click a row for its assertion, reason and links.</p>
<table class="all" id="all-checks">
<colgroup><col class="c-id"><col class="c-lv"><col class="c-sec"><col class="c-title"><col class="c-fmt"><col class="c-type"><col class="c-out"><col class="c-time"></colgroup>
<thead><tr><th>ID</th><th>Level</th><th>§</th><th>Title</th><th>Format</th><th>Device type</th><th>Outcome</th><th class="num">Time</th></tr></thead>
<tbody></tbody>
</table>{{end}}
{{define "exchange"}}<div class="ex">
<div class="exhead"><b>Exchange {{.N}}</b> · <code>{{.Method}} {{.URL}}</code> → {{if .Status}}<b>{{.Status}}</b>{{else}}<b class="err">no answer</b>{{end}} · {{dur .Duration}}{{if .Truncated}} · <span class="err">response body cut at the client's limit</span>{{end}}{{if .RetriedAfter}} · <span class="muted">the target asked to retry: sent again after {{dur .RetriedAfter}} as a new attempt, its timestamp renewed and signed afresh</span>{{end}}</div>
{{- if .Error}}<p class="err">{{txt .Error}}</p>{{end}}
{{- if .Tamper}}<p class="tamper">{{txt .Tamper.Describe}}</p>{{end}}
<div class="cols"><div><h5>Request</h5><pre>{{txt (requestText .Exchange)}}</pre></div><div><h5>Response</h5><pre>{{txt (responseText .Exchange)}}</pre></div></div>
{{if .CurlCmd}}<h5>curl</h5><pre>{{txt .CurlCmd}}</pre>{{else}}<p class="muted">The body is too long for a curl line or the reports: run the check again to send it, <code>gwconform run --target URL --check {{.Check}}</code>.</p>{{end}}
</div>{{end}}
`
