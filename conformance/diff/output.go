package diff

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/junit"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
)

// FileKind marks a JSON file as a diff report.
const FileKind = "gwconform-diff"

// Files written into the report directory.
const (
	JSONName  = "diff.json"
	JUnitName = "diff-junit.xml"
	HTMLName  = "diff.html"
)

// Report is the outcome of a comparison.
type Report struct {
	Kind     string `json:"kind"`
	Seed     int64  `json:"seed"`
	A        string `json:"a"`
	B        string `json:"b"`
	Clients  int    `json:"clients,omitempty"`
	ReadOnly bool   `json:"read_only,omitempty"`
	// ProbeOpen says the forms the texts leave open were sent too.
	ProbeOpen bool `json:"probe_open,omitempty"`
	// Reset says whether sequences started from POST /_sim/reset on both
	// observers.
	Reset bool `json:"reset"`
	// Dir is where WriteReports wrote the files: the summary names each
	// script by its path from there.
	Dir string `json:"-"`
	// Fleets are the base names of the fleet files of A and B ("": the
	// demo fleet): a script stops, naming them, where the variables that
	// give their paths are not set.
	Fleets     [2]string `json:"-"`
	Rounds     int       `json:"rounds"`
	Operations int       `json:"operations"`
	Elapsed    string    `json:"elapsed"`
	OpsPerSec  float64   `json:"operations_per_second"`
	// Calibrated is how many operations calibration sent to A (twice).
	Calibrated int `json:"calibrated_operations,omitempty"`
	// Differences are the distinct differences, by rule and operation.
	Differences []*Difference `json:"differences"`
	// Ignored is what calibration found to differ between two runs of A.
	Ignored []Ignored `json:"ignored,omitempty"`
	Notes   []string  `json:"notes,omitempty"`
}

// ReadFile reads a diff.json.
func ReadFile(path string) (*Report, error) {
	b, err := safefile.ReadFile(path, safefile.MaxInput)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil || r.Kind != FileKind {
		return nil, fmt.Errorf("%s is not a diff report", path)
	}
	return &r, nil
}

// masked is the report with every api_key masked.
func (r *Report) masked() *Report {
	m := *r
	m.Differences = make([]*Difference, len(r.Differences))
	for i, x := range r.Differences {
		y := *x
		y.Op = maskOp(x.Op)
		y.Ops = maskOps(x.Ops)
		y.Steps = append([]Step(nil), x.Steps...)
		for j := range y.Steps {
			y.Steps[j].Op = maskOp(y.Steps[j].Op)
		}
		m.Differences[i] = &y
	}
	return &m
}

// WriteReports writes diff.json, diff.html, diff-junit.xml and a
// reproduction script per difference (diff-repro-N.sh) into dir.
func WriteReports(dir string, rep *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rep.Kind = FileKind
	rep.Dir = dir
	for i, x := range rep.Differences {
		x.Script = fmt.Sprintf("diff-repro-%d.sh", i+1)
		if err := writeFile(filepath.Join(dir, x.Script), func(w io.Writer) error { return writeScript(w, rep, x) }); err != nil {
			return err
		}
	}
	m := rep.masked()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := safefile.WriteFile(filepath.Join(dir, JSONName), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, HTMLName), func(w io.Writer) error { return WriteHTML(w, m) }); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, JUnitName), func(w io.Writer) error { return WriteJUnit(w, m) })
}

// times is "1 time", "3 times".
func times(n int) string {
	if n == 1 {
		return "1 time"
	}
	return fmt.Sprintf("%d times", n)
}

// writeFile writes a report file whole through safefile: a planted
// symlink at its name is replaced, never followed.
func writeFile(path string, fn func(io.Writer) error) error { return safefile.Write(path, 0o644, fn) }

func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// writeScript writes a difference's shrunk sequence as curl lines: against
// A, then against B, each from a reset when the run reset.
func writeScript(w io.Writer, rep *Report, x *Difference) error {
	fmt.Fprintf(w, "#!/bin/sh\n# gwconform diff: difference %q, shrunk to %d operation(s) (seed %d).\n", x.Rule+" "+x.Operation+" "+x.Kind, len(x.Ops), rep.Seed)
	fmt.Fprintf(w, "# A: %s\n# B: %s\n# The rule table agrees with: %s (%s)\n", rep.A, rep.B, x.Verdict, oneLine(x.VerdictWhy))
	fmt.Fprintln(w, "# Each POST is signed afresh by gwconform sign with $GWCONFORM_FLEET_A for A and $GWCONFORM_FLEET_B for B")
	fmt.Fprintln(w, "# (else $GWCONFORM_FLEET, else the demo fleet); reads send $GWCONFORM_ADMIN_TOKEN_A / _B when set.")
	fmt.Fprintln(w, "# The run started each sequence from a reset; this script resets only with GWCONFORM_RESET=1")
	fmt.Fprintln(w, "# (POST /_sim/reset puts the whole fleet of that observer back as loaded). After the steps it")
	fmt.Fprintln(w, "# reads the whole state (GET /_sim/state), so that a change that landed on another device shows.")
	fmt.Fprintln(w, "set -u")
	for k, side := range []string{"A", "B"} {
		fmt.Fprintf(w, "\necho '=== %s ==='\nexport GWCONFORM_FLEET=\"${GWCONFORM_FLEET_%s:-${GWCONFORM_FLEET:-}}\"\nGWCONFORM_ADMIN_TOKEN=\"${GWCONFORM_ADMIN_TOKEN_%s:-${GWCONFORM_ADMIN_TOKEN:-}}\"\n", side, side, side)
		if name := rep.Fleets[k]; name != "" {
			fmt.Fprintf(w, "[ -n \"$GWCONFORM_FLEET\" ] || { echo 'set GWCONFORM_FLEET_%s (or GWCONFORM_FLEET) to the fleet file the run read for %s (%s)' >&2; exit 2; }\n",
				side, side, strings.ReplaceAll(name, "'", ""))
		}
		obs := observerOf(rep.A)
		if side == "B" {
			obs = observerOf(rep.B)
		}
		if rep.Reset && !rep.ReadOnly {
			fmt.Fprintf(w, "if [ \"${GWCONFORM_RESET:-}\" = 1 ]; then curl -sS -X POST -H \"Authorization: Bearer $GWCONFORM_ADMIN_TOKEN\" '%s/_sim/reset'; echo; "+
				"else echo 'not reset: the steps start from the state as it is (GWCONFORM_RESET=1 resets first, as the run did)'; fi\n", obs)
		}

		for i, s := range x.Steps {
			o := s.A
			if side == "B" {
				o = s.B
			}
			fmt.Fprintf(w, "\n# %d. %s\n#    got in the run: %s %s\n", i+1, oneLine(s.Op.String()), oneLine(o.Answer), oneLine(o.State))
			if o.Curl != "" {
				fmt.Fprintf(w, "%s; echo\n", o.Curl)
			}
			if o.ReadCurl != "" {
				fmt.Fprintf(w, "%s; echo\n", o.ReadCurl)
			}
		}
		fmt.Fprintf(w, "\n# The whole state of %s after the steps.\ncurl -sS -H \"Authorization: Bearer $GWCONFORM_ADMIN_TOKEN\" '%s/_sim/state'; echo\n", side, obs)
	}
	return nil
}

// observerOf is the observer of a side as the report describes it.
func observerOf(side string) string {
	if i := strings.Index(side, " (observer "); i >= 0 {
		return strings.TrimSuffix(side[i+len(" (observer "):], ")")
	}
	return strings.Split(side, ",")[0]
}

// Summary is the outcome in a few lines, the verdict last.
func (r *Report) Summary() string {
	var b strings.Builder
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, ig := range r.Ignored {
		fmt.Fprintf(&b, "ignored: %s: %s (e.g. %s)\n", ig.What, ig.Why, oneLine(ig.Example))
	}
	mode := ""
	if r.ReadOnly {
		mode = ", read-only"
	}
	if r.ProbeOpen {
		mode += ", open forms probed"
	}
	fmt.Fprintf(&b, "diff: seed %d, %d operations in %d sequences compared in %s (%.0f/s%s)\n  A: %s\n  B: %s\n",
		r.Seed, r.Operations, r.Rounds, r.Elapsed, r.OpsPerSec, mode, r.A, r.B)
	for i, x := range r.Differences {
		fmt.Fprintf(&b, "%d. %s %s (%s), %s; the rule table agrees with: %s\n", i+1, x.Rule, x.Operation, x.Kind, times(x.Count), x.Verdict)
		fmt.Fprintf(&b, "   A: %s\n   B: %s\n", oneLine(x.A.Answer+" "+x.A.State), oneLine(x.B.Answer+" "+x.B.State))
		fmt.Fprintf(&b, "   %s\n", oneLine(x.VerdictWhy))
		fmt.Fprintf(&b, "   shrunk from %d to %d operation(s)%s:\n", x.Original, len(x.Ops),
			map[bool]string{true: "", false: " (NOT shown again when run last)"}[x.Reproducible])
		for j, op := range x.Ops {
			fmt.Fprintf(&b, "     %d. %s\n", j+1, oneLine(op.String()))
		}
		if x.Script != "" {
			fmt.Fprintf(&b, "   replay against both: sh %s\n", filepath.Join(r.Dir, x.Script))
		}
	}
	if len(r.Differences) == 0 {
		b.WriteString("SAME: no difference in answers or observed state\n")
	} else {
		fmt.Fprintf(&b, "DIFFERENT: %d distinct difference(s), %d in all\n", len(r.Differences), r.Total())
	}
	return b.String()
}

// WriteJUnit writes one failed test case per distinct difference (one
// passed case when there is none).
func WriteJUnit(w io.Writer, rep *Report) error {
	s := junit.Suite{Name: "gwconform diff", Properties: []junit.Property{{Name: "seed", Value: fmt.Sprint(rep.Seed)}, {Name: "a", Value: rep.A}, {Name: "b", Value: rep.B},
		{Name: "operations", Value: fmt.Sprint(rep.Operations)}, {Name: "read_only", Value: fmt.Sprint(rep.ReadOnly)}}}
	for i, x := range rep.Differences {
		text := fmt.Sprintf("A: %s %s\nB: %s %s\nthe rule table agrees with: %s (%s)\n%s\nshrunk sequence:\n", x.A.Answer, x.A.State, x.B.Answer, x.B.State, x.Verdict, x.VerdictWhy, x.Quote)
		for j, op := range x.Ops {
			text += fmt.Sprintf("  %d. %s\n", j+1, op)
		}
		text += "replay: sh " + x.Script + "\n"
		s.Cases = append(s.Cases, junit.Case{Name: fmt.Sprintf("difference %d: %s %s %s (%s)", i+1, x.Rule, x.Operation, x.Kind, times(x.Count)),
			Classname: "gwconform.diff", Failure: &junit.Message{Message: oneLine(fmt.Sprintf("A %s / B %s; agrees with: %s", x.A.Answer+x.A.State, x.B.Answer+x.B.State, x.Verdict)), Type: x.Verdict, Text: junit.Text{Chars: text}}})
	}
	if len(s.Cases) == 0 {
		s.Cases = []junit.Case{{Name: "no difference", Classname: "gwconform.diff", SystemOut: &junit.Text{Chars: rep.Summary()}}}
	}
	s.Tests, s.Failures = len(s.Cases), len(rep.Differences)
	return junit.Write(w, s)
}

var htmlPage = template.Must(template.New("diff").Funcs(template.FuncMap{"inc": func(i int) int { return i + 1 }, "times": times}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>gwconform diff, seed {{.Seed}}</title>
<style>body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:90em}
table{border-collapse:collapse;width:100%;table-layout:fixed}td,th{border:1px solid #ccc;padding:.3em .5em;vertical-align:top;text-align:left;overflow-wrap:anywhere}
tr.bad{background:#fde2e1}pre{white-space:pre-wrap;margin:0;font-size:12px}code{font-size:12px;overflow-wrap:anywhere}
.same{color:#116611}.diff{color:#aa1111}.card{border:1px solid #bbb;border-radius:6px;padding:.5em 1em;margin:1em 0}
.verdict{display:inline-block;padding:.1em .5em;border-radius:4px;background:#eef}.v-A,.v-B{background:#fde8c8}.v-both{background:#e0f2e0}.v-neither{background:#fde2e1}</style></head>
<body><h1>gwconform diff</h1>
<p>Seed <b>{{.Seed}}</b>{{if .Clients}} · {{.Clients}} clients{{end}}{{if .ReadOnly}} · <b>read-only</b>{{end}}{{if .ProbeOpen}} · open forms probed{{end}} · {{.Operations}} operations in {{.Rounds}} sequences, {{.Elapsed}}</p>
<table id="sides"><tr><th>A</th><th>B</th></tr><tr><td><code>{{.A}}</code></td><td><code>{{.B}}</code></td></tr></table>
{{range .Notes}}<p>Note: {{.}}</p>{{end}}
{{if .Ignored}}<h2>Ignored after calibration</h2><ul id="ignored">{{range .Ignored}}<li><b>{{.What}}</b>: {{.Why}}; e.g. {{.Example}}</li>{{end}}</ul>{{end}}
{{if .Differences}}<h2 class="diff" id="verdict">DIFFERENT: {{len .Differences}} distinct difference(s)</h2>
<table id="summary"><tr><th>#</th><th>rule</th><th>operation</th><th>what</th><th>times</th><th>the rule table agrees with</th></tr>
{{range $i, $x := .Differences}}<tr><td><a href="#d{{inc $i}}">{{inc $i}}</a></td><td><code>{{$x.Rule}}</code></td><td>{{$x.Operation}}</td><td>{{$x.Kind}}</td><td>{{$x.Count}}</td><td><span class="verdict v-{{$x.Verdict}}">{{$x.Verdict}}</span></td></tr>
{{end}}</table>
{{range $i, $x := .Differences}}<div class="card" id="d{{inc $i}}"><h3>{{inc $i}}. {{$x.Rule}} — {{$x.Operation}} ({{$x.Kind}}), {{times $x.Count}}</h3>
<p>The rule table agrees with: <span class="verdict v-{{$x.Verdict}}">{{$x.Verdict}}</span> — {{$x.VerdictWhy}}</p>
{{if $x.Quote}}<p><b>{{$x.Level}}</b> {{$x.Quote}}</p>{{end}}
<p>At: <code>{{$x.Op}}</code></p>
<table class="exchanges"><tr><th>A</th><th>B</th></tr>
<tr><td>{{$x.A.Answer}} {{$x.A.State}}</td><td>{{$x.B.Answer}} {{$x.B.State}}</td></tr>
{{if or $x.A.Request $x.B.Request}}<tr><td><pre>POST {{$x.A.URL}}
{{$x.A.Request}}</pre></td><td><pre>POST {{$x.B.URL}}
{{$x.B.Request}}</pre></td></tr>
<tr><td><pre>{{$x.A.Response}}</pre></td><td><pre>{{$x.B.Response}}</pre></td></tr>{{end}}</table>
<h4>Shrunk sequence: {{len $x.Ops}} operation(s), from {{$x.Original}}{{if not $x.Reproducible}} (not shown again when run last){{end}}</h4>
<table class="steps"><tr><th style="width:3em">#</th><th>operation</th><th>A</th><th>B</th></tr>
{{range $j, $s := $x.Steps}}<tr{{if $s.Differs}} class="bad"{{end}}><td>{{inc $j}}</td><td><code>{{$s.Op}}</code></td><td>{{$s.A.Answer}} {{$s.A.State}}</td><td>{{$s.B.Answer}} {{$s.B.State}}</td></tr>
{{end}}</table>
<p>Replay against both: <code>sh {{$x.Script}}</code></p></div>
{{end}}{{else}}<h2 class="same" id="verdict">SAME: no difference in answers or observed state</h2>{{end}}
</body></html>
`))

// WriteHTML writes the comparison as a page.
func WriteHTML(w io.Writer, rep *Report) error { return htmlPage.Execute(w, rep) }
