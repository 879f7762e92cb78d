package explore

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/junit"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
)

// FileKind marks a JSON file as an explore report, which gwconform replay
// runs again.
const FileKind = "gwconform-explore"

// File is explore.json: the report with the seed, the shrunk sequence and
// what the fleet, target and observer were; gwconform replay reads it.
type File struct {
	Kind string `json:"kind"`
	Report
	// Reset says whether sequences started from POST /_sim/reset.
	Reset bool `json:"reset"`
}

// Files written into the report directory.
const (
	JSONName    = "explore.json"
	JUnitName   = "explore-junit.xml"
	HTMLName    = "explore.html"
	ScriptName  = "explore-repro.sh"
	PictureName = "explore-linearizability.html"
)

// WriteReports writes explore.json, the JUnit and HTML reports and, for
// each finding, a curl script (explore-repro-N.sh, and explore-repro.sh for
// the one that stopped the run), into dir. Every api_key is masked.
func WriteReports(dir string, rep *Report, reset bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, f := range rep.Findings {
		if len(f.Steps) > 0 || len(f.Concurrent) > 0 {
			f.Script = fmt.Sprintf("explore-repro-%d.sh", i+1)
			if err := writeFile(filepath.Join(dir, f.Script), func(w io.Writer) error { return writeScript(w, rep, f, reset) }); err != nil {
				return err
			}
		}
	}
	rep = rep.Masked()
	b, err := json.MarshalIndent(File{Kind: FileKind, Report: *rep, Reset: reset}, "", "  ")
	if err != nil {
		return err
	}
	if err := safefile.WriteFile(filepath.Join(dir, JSONName), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, JUnitName), func(w io.Writer) error { return WriteJUnit(w, rep) }); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, HTMLName), func(w io.Writer) error { return WriteHTML(w, rep) }); err != nil {
		return err
	}
	if rep.Found != nil && (len(rep.Found.Steps) > 0 || len(rep.Found.Concurrent) > 0) {
		return writeFile(filepath.Join(dir, ScriptName), func(w io.Writer) error { return WriteScript(w, rep, reset) })
	}
	return nil
}

func writeFile(path string, fn func(io.Writer) error) error { return safefile.Write(path, 0o644, fn) }

// ReadFile reads an explore.json.
func ReadFile(path string) (*File, error) {
	b, err := safefile.ReadFile(path, safefile.MaxInput)
	if err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil || f.Kind != FileKind {
		return nil, fmt.Errorf("%s is not an explore report", path)
	}
	return &f, nil
}

// IsFile reports whether the JSON document b is an explore report.
func IsFile(b []byte) bool {
	var k struct {
		Kind string `json:"kind"`
	}
	return json.Unmarshal(b, &k) == nil && k.Kind == FileKind
}

// Summary is the outcome in a few lines, the important one last.
func (r *Report) Summary() string {
	var b strings.Builder
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	fmt.Fprintf(&b, "explore: seed %d, %d operations in %d sequences against %s in %s (%.0f operations/s)\n",
		r.Seed, r.Operations, r.Rounds, r.Target, r.Elapsed, r.OpsPerSec)
	var listed []*Finding
	for _, f := range r.Findings {
		if f != r.Found {
			listed = append(listed, f)
		}
	}
	if len(listed) > 0 {
		fmt.Fprintf(&b, "%d distinct disagreement(s) that did not stop the run (--fail-on %s):\n", len(listed), strings.ToLower(r.FailOn))
		for i, f := range listed {
			known := ""
			if f.Known != "" {
				known = " — known failure (baseline): " + f.Known
			}
			why := ""
			if f.Disagreement != nil {
				why = f.Disagreement.Why
			}
			fmt.Fprintf(&b, "  %d. %s %s, %d time(s): %s%s\n     %s\n", i+1, f.Level, f.Rule, f.Count, oneLine(why), known, oneLine(f.Quote))
			if len(f.Ops) > 0 {
				fmt.Fprintf(&b, "     shrunk to %d operation(s), last: %s", len(f.Ops), oneLine(f.Ops[len(f.Ops)-1].String()))
				if f.Script != "" {
					fmt.Fprintf(&b, "; reproduce: sh %s", f.Script)
				}
				b.WriteString("\n")
			}
		}
	}
	for _, rule := range sortedKeys(r.Skipped) {
		fmt.Fprintf(&b, "skipped: %d disagreement(s) of rule %s (--skip)\n", r.Skipped[rule], rule)
	}
	f := r.Found
	if f == nil {
		if r.Failed() {
			b.WriteString("FAIL: disagreements at or above --fail-on " + strings.ToLower(r.FailOn) + " (listed above)\n")
		} else if len(listed) > 0 {
			fmt.Fprintf(&b, "PASS at --fail-on %s: no disagreement at or above it, the ones listed above are below it or known\n", strings.ToLower(r.FailOn))
		} else {
			b.WriteString("PASS: the target agreed with the model on every answer and every observed state\n")
		}
		return b.String()
	}
	fmt.Fprintf(&b, "shrunk %d operations to %d on %d device(s) in %d runs (%s)%s:\n", f.Original, len(f.Ops), f.Devices, f.ShrinkRuns, f.ShrinkTime,
		map[bool]string{true: "", false: " — NOT reproduced when run again: the bug may be timing-dependent"}[f.Reproducible])
	if len(f.Steps) > 0 {
		for i, s := range f.Steps {
			mark := " "
			if s.Disagrees {
				mark = "!"
			}
			fmt.Fprintf(&b, "%s %2d. %s\n       expected %s\n       got      %s\n", mark, i+1, s.Op, s.Expected, s.Got)
		}
	} else {
		for i, op := range f.Ops {
			fmt.Fprintf(&b, "  %2d. %s\n", i+1, op)
		}
	}
	for _, l := range f.History {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	if f.Picture != "" {
		fmt.Fprintf(&b, "Porcupine's picture of the history: %s\n", f.Picture)
	}
	what := "the target and the model disagree"
	if f.Kind == "linearizability" {
		what = "a concurrent history is not linearizable"
	}
	if f.Level != "" {
		fmt.Fprintf(&b, "%s, rule %s: %s\n", f.Level, f.Rule, f.Quote)
	}
	if d := f.Disagreement; d != nil {
		fmt.Fprintf(&b, "FAIL: %s at operation %d: %s (seed %d)\n", what, d.Index+1, d.Why, r.Seed)
	} else {
		fmt.Fprintf(&b, "FAIL: %s (seed %d)\n", what, r.Seed)
	}
	return b.String()
}

// curl is a shell line that sends op again: POSTs signed afresh through
// gwconform sign, reads with the admin token from the environment.
func curl(op Op, r Result) string {
	if op.IsRead() {
		line := "curl -sS"
		if _, ok := r.Exchange.RequestHeaders["Authorization"]; ok {
			line += ` -H "Authorization: Bearer $GWCONFORM_ADMIN_TOKEN"`
		}
		return line + " '" + r.Exchange.URL + "'"
	}
	if r.Exchange.URL == "" {
		return ""
	}
	line := curlPOST(op, r)
	if r.Exchange.Method == "GET" && r.Exchange.RequestBody != "" {
		// curl sends a body with POST unless told the method.
		line = strings.Replace(line, "curl -sS -i", "curl -sS -i -X GET", 1)
	}
	return line
}

// curlPOST is curl's line for an operation sent as a request of the
// interface.
func curlPOST(op Op, r Result) string {
	switch {
	case r.redact && !wireOf(op).spoilsSign():
		return r.Exchange.Redacted().Masked().Curl()
	case (op.BadSign || wireOf(op).spoilsSign()) && r.known:
		// A fleet key with a sign nobody can make: the line signs afresh
		// (which finds the masked key) and then spoils the sign.
		line := r.Exchange.Redacted().Masked().Curl()
		return strings.Replace(line, "| gwconform sign | ", "| gwconform sign | "+spoilSign+" | ", 1)
	}
	return r.Exchange.Masked().Curl()
}

// spoilSign replaces a body's sign with a well-formed sign that
// authenticates nothing.
const spoilSign = `sed -e 's/"sign":"[0-9a-fA-F]*"/"sign":"0123456789abcdef0123456789abcdef"/' -e 's#<sign>[0-9a-fA-F]*</sign>#<sign>0123456789abcdef0123456789abcdef</sign>#'`

// maskKeys is ops with each api_key masked (client.MaskAPIKey): reports
// name a key by its first four characters, as gwconform run's do; the
// target finds the fleet's key again when the sequence is replayed.
func maskKeys(ops []Op) []Op {
	if ops == nil {
		return nil
	}
	out := make([]Op, len(ops))
	for i, op := range ops {
		if op.Key != "" && !strings.HasSuffix(op.Key, client.MaskSuffix) {
			op.Key = client.MaskAPIKey(op.Key)
		}
		out[i] = op
	}
	return out
}

func maskSteps(steps []Step) []Step {
	if steps == nil {
		return nil
	}
	out := append([]Step(nil), steps...)
	for i := range out {
		out[i].Op = maskKeys([]Op{out[i].Op})[0]
	}
	return out
}

func (f *Finding) masked() *Finding {
	g := *f
	g.Ops, g.Steps, g.Concurrent = maskKeys(f.Ops), maskSteps(f.Steps), maskSteps(f.Concurrent)
	if f.Disagreement != nil {
		d := *f.Disagreement
		d.Op = maskKeys([]Op{d.Op})[0]
		g.Disagreement = &d
	}
	return &g
}

// Masked is the report with every api_key masked, as it is written.
func (r *Report) Masked() *Report {
	m := *r
	m.Findings = make([]*Finding, len(r.Findings))
	for i, f := range r.Findings {
		m.Findings[i] = f.masked()
		if f == r.Found {
			m.Found = m.Findings[i]
		}
	}
	if m.Found == r.Found && r.Found != nil {
		m.Found = r.Found.masked()
	}
	return &m
}

// WriteScript writes the shrunk sequence of the finding that stopped the
// run as a shell script of curl lines.
func WriteScript(w io.Writer, rep *Report, reset bool) error {
	return writeScript(w, rep, rep.Found, reset)
}

func writeScript(w io.Writer, rep *Report, f *Finding, reset bool) error {
	fmt.Fprintf(w, "#!/bin/sh\n# gwconform explore: the shrunk reproduction of seed %d (round %d), %d operation(s).\n", rep.Seed, f.Round, len(f.Ops))
	if f.Level != "" {
		fmt.Fprintf(w, "# %s, rule %s: %s\n", f.Level, f.Rule, oneLine(f.Quote))
	}
	fmt.Fprintln(w, "# Each POST is signed afresh by gwconform sign (fleet: $GWCONFORM_FLEET, else the demo fleet);")
	fmt.Fprintln(w, "# reads send $GWCONFORM_ADMIN_TOKEN when the run used an admin token.")
	fmt.Fprintln(w, "set -u")
	if reset && rep.Observer != "" {
		fmt.Fprintf(w, "\n# Start from the fleet as loaded.\ncurl -sS -X POST -H \"Authorization: Bearer ${GWCONFORM_ADMIN_TOKEN:-}\" '%s/_sim/reset'; echo\n", rep.Observer)
	}
	for i, s := range f.Steps {
		fmt.Fprintf(w, "\n# %d. %s\n#    expected: %s\n#    got in the run: %s\n", i+1, oneLine(s.Op.String()), oneLine(s.Expected), oneLine(s.Got))
		if s.Curl != "" {
			fmt.Fprintf(w, "%s; echo\n", s.Curl)
		}
	}
	if len(f.Concurrent) == 0 {
		return nil
	}
	// Each client's requests in order, the clients at once; then the
	// final reads. A race may need a few runs to show.
	last := f.Concurrent[len(f.Concurrent)-1].Op.Client
	client := -1
	for _, s := range f.Concurrent {
		if s.Op.Client != client {
			if client != -1 {
				fmt.Fprintln(w, ") &")
			}
			client = s.Op.Client
			if client == last {
				fmt.Fprintln(w, "\nwait\n# After every client: the final reads.")
			} else {
				fmt.Fprintf(w, "\n# client %d\n(\n", client)
			}
		}
		fmt.Fprintf(w, "# %s\n#    got in the run: %s\n", oneLine(s.Op.String()), oneLine(s.Got))
		if s.Curl != "" {
			fmt.Fprintf(w, "%s; echo\n", s.Curl)
		}
	}
	return nil
}

func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// WriteJUnit writes the exploration as one JUnit test case, failed with
// the shrunk sequence when something disagreed; the seed is a property.
func WriteJUnit(w io.Writer, rep *Report) error {
	c := junit.Case{Name: fmt.Sprintf("explore seed %d", rep.Seed), Classname: "gwconform.explore", SystemOut: &junit.Text{Chars: rep.Summary()}}
	s := junit.Suite{Name: "gwconform explore", Tests: 1, Properties: []junit.Property{
		{Name: "seed", Value: fmt.Sprint(rep.Seed)}, {Name: "target", Value: rep.Target}, {Name: "observer", Value: rep.Observer},
		{Name: "operations", Value: fmt.Sprint(rep.Operations)}, {Name: "clients", Value: fmt.Sprint(rep.Clients)}}}
	if f := rep.Found; f != nil {
		s.Failures = 1
		msg := "a concurrent history is not linearizable"
		if f.Disagreement != nil {
			msg = f.Disagreement.Why
		}
		c.Failure = &junit.Message{Message: oneLine(msg), Type: f.Kind, Text: junit.Text{Chars: rep.Summary()}}
	}
	s.Cases = []junit.Case{c}
	for i, f := range rep.Findings {
		if f == rep.Found {
			continue
		}
		why := ""
		if f.Disagreement != nil {
			why = f.Disagreement.Why
		}
		out := junit.Text{Chars: fmt.Sprintf("%s\n%s\nseen %d time(s); shrunk to %d operation(s); %s", why, f.Quote, f.Count, len(f.Ops), f.Script)}
		fc := junit.Case{Name: fmt.Sprintf("explore finding %d: %s %s", i+1, f.Level, f.Rule), Classname: "gwconform.explore", SystemOut: &out}
		if f.Known == "" && atLeast(f.Level, rep.FailOn) {
			fc.Failure = &junit.Message{Message: oneLine(why), Type: f.Level, Text: out}
			s.Failures++
		}
		s.Cases = append(s.Cases, fc)
		s.Tests++
	}
	return junit.Write(w, s)
}

var htmlPage = template.Must(template.New("explore").Funcs(template.FuncMap{"inc": func(i int) int { return i + 1 }}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>gwconform explore, seed {{.Seed}}</title>
<style>body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:70em}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:.3em .5em;vertical-align:top;text-align:left}
tr.bad{background:#fde2e1}pre{white-space:pre-wrap}code{font-size:12px;word-break:break-all}.pass{color:#116611}.fail{color:#aa1111}</style></head>
<body><h1>gwconform explore</h1>
<p>Seed <b>{{.Seed}}</b> · target {{.Target}}{{if .Observer}} · observer {{.Observer}}{{end}}{{if .Clients}} · {{.Clients}} clients{{end}} ·
{{.Operations}} operations in {{.Rounds}} sequences, {{.Elapsed}}</p>
{{range .Notes}}<p>Note: {{.}}</p>{{end}}
{{with .Found}}
<h2 class="fail">FAIL: {{if eq .Kind "linearizability"}}a concurrent history is not linearizable{{else}}the target and the model disagree{{end}}</h2>
<p>Shrunk from {{.Original}} operations to {{len .Ops}} on {{.Devices}} device(s) in {{.ShrinkRuns}} runs ({{.ShrinkTime}}).
{{if not .Reproducible}}<b>Not reproduced when run again: the bug may be timing-dependent.</b>{{end}}
Run it again with <code>gwconform replay explore.json</code>{{if or .Steps .Concurrent}}, or <code>sh explore-repro.sh</code>{{end}}.</p>
{{with .Disagreement}}<p><b>Operation {{inc .Index}}:</b> {{.Why}}</p>{{end}}
{{if .Steps}}<table><tr><th>#</th><th>operation</th><th>expected</th><th>got</th></tr>
{{range $i, $s := .Steps}}<tr{{if $s.Disagrees}} class="bad"{{end}}><td>{{inc $i}}</td><td>{{$s.Op}}</td><td>{{$s.Expected}}</td><td>{{$s.Got}}</td></tr>
{{end}}</table>{{else}}<ol>{{range .Ops}}<li>{{.}}</li>{{end}}</ol>{{end}}
{{if .History}}<h3>History</h3><pre>{{range .History}}{{.}}
{{end}}</pre>{{end}}
{{if .Picture}}<p>Porcupine's picture: <a href="explore-linearizability.html">explore-linearizability.html</a></p>{{end}}
{{if .Level}}<p><b>{{.Level}}</b>, rule <code>{{.Rule}}</code>: {{.Quote}}</p>{{end}}
{{else}}<h2 class="pass">PASS{{if .Findings}} at --fail-on {{.FailOn}}{{end}}: no disagreement {{if .Findings}}at or above {{.FailOn}} that is not known{{else}}with the model on any answer or observed state{{end}}</h2>{{end}}
{{if .Findings}}<h2>Every distinct disagreement</h2>
<table id="findings"><tr><th>#</th><th>level</th><th>rule and sentence</th><th>times</th><th>what</th><th>shrunk sequence</th><th>reproduce</th></tr>
{{range $i, $f := .Findings}}<tr{{if not $f.Known}}{{if eq $f.Level "MUST"}} class="bad"{{end}}{{end}}><td>{{inc $i}}</td><td>{{$f.Level}}{{if $f.Known}} (known: {{$f.Known}}){{end}}</td><td><code>{{$f.Rule}}</code><br>{{$f.Quote}}</td><td>{{$f.Count}}</td><td>{{with $f.Disagreement}}{{.Why}}{{end}}</td>
<td><ol>{{range $f.Ops}}<li>{{.}}</li>{{end}}</ol></td><td>{{if $f.Script}}<code>sh {{$f.Script}}</code>{{end}}</td></tr>
{{end}}</table>{{end}}
{{if .Skipped}}<p>Skipped (--skip): {{range $r, $n := .Skipped}}{{$r}} ×{{$n}} {{end}}</p>{{end}}
</body></html>
`))

// WriteHTML writes the exploration as a page.
func WriteHTML(w io.Writer, rep *Report) error { return htmlPage.Execute(w, rep) }
