package clients

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/junit"
	"github.com/gwdmi/gwtools/gatewayapi/printable"
)

// Report is the client report: GET /_sim/clients and gwsim clients.
type Report struct {
	Generated time.Time `json:"generated"`
	// WindowSeconds is the timestamp window the clock is judged by (0:
	// none).
	WindowSeconds int64 `json:"window_seconds"`
	// Clients, by masked api_key; OtherClients last when there are more
	// keys than the bound.
	Clients []Client `json:"clients"`
	// Service, from gwsim proxy only: what the upstream's answers broke.
	Service *Service `json:"service,omitempty"`
	// Scope says whose requests the report covers: ScopeProcess (this
	// process's: the report is kept in its memory) or ScopeReplicas
	// (every replica sharing a Redis store); Replicas names those merged
	// and ScopeNote says more.
	Scope     string   `json:"scope"`
	Replicas  []string `json:"replicas,omitempty"`
	ScopeNote string   `json:"scope_note,omitempty"`
}

// Client is the report of one api_key.
type Client struct {
	// Client is the api_key's first four characters and "…"; ID tells
	// apart keys that look alike (a hash, never the key).
	Client   string    `json:"client"`
	ID       string    `json:"id,omitempty"`
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
	Requests uint64    `json:"requests"`
	// Coverage is each operation × device type × format it sent.
	Coverage   []Coverage   `json:"coverage"`
	Errors     []ErrorCount `json:"errors"`
	Judgements []Judgement  `json:"judgements"`
	// Skew is its timestamps less the clock of gwsim at arrival.
	Skew          *Skew   `json:"skew,omitempty"`
	SignFailures  uint64  `json:"sign_failures"`
	ForeignFields uint64  `json:"foreign_fields"`
	Phases        []Phase `json:"phases"`
	// Untried is what the app never sent and the errors it never met:
	// what its tests do not cover.
	Untried Untried `json:"untried"`
}

// Untried is what an app's requests never covered: operations, device
// types (commands) and formats it never sent, and the errors a service
// answers well-formed requests with (ReadyFor) that it never met.
type Untried struct {
	Operations []string `json:"operations"`
	Types      []string `json:"types"`
	Formats    []string `json:"formats"`
	Errors     []string `json:"errors"`
}

// ReadyFor are the errors an app must be ready for, which a service
// answers requests with however well formed they are (status and code),
// and which gwsim can give it: by a rate limit, fault injection, a
// scenario, a fleet without the device, --reject-replays, a clock.
var ReadyFor = []string{
	"401 stale_timestamp", "401 replayed_request", "404 gateway_not_found", "404 device_not_found",
	"409 type_mismatch", "429 rate_limited", "503 injected_fault", "504 gateway_offline", "504 device_unreachable",
}

// fillUntried sets c.Untried from its coverage and errors.
func (c *Client) fillUntried() {
	ops, types, formats, codes := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, v := range c.Coverage {
		if v.Sent == 0 {
			continue
		}
		ops[v.Operation], formats[v.Format] = true, true
		if v.Type != "" {
			types[v.Type] = true
		}
	}
	for _, e := range c.Errors {
		codes[strconv.Itoa(e.Status)+" "+e.Code] = true
	}
	u := Untried{Operations: []string{}, Types: []string{}, Formats: []string{}, Errors: []string{}}
	for _, op := range device.Operations {
		if !ops[op.Name()] {
			u.Operations = append(u.Operations, op.Name())
		}
	}
	for _, t := range device.Types {
		if !types[t.Name] {
			u.Types = append(u.Types, t.Name)
		}
	}
	for _, f := range []device.Format{device.JSON, device.XML} {
		if !formats[f.String()] {
			u.Formats = append(u.Formats, f.String())
		}
	}
	for _, code := range ReadyFor {
		if !codes[code] {
			u.Errors = append(u.Errors, code)
		}
	}
	c.Untried = u
}

// Coverage counts the requests of one operation, device type (commands
// only) and format, and how many succeeded.
type Coverage struct {
	Operation string `json:"operation"`
	Type      string `json:"type,omitempty"`
	Format    string `json:"format"`
	Sent      uint64 `json:"sent"`
	Succeeded uint64 `json:"succeeded"`
}

// ErrorCount is one error code the client received: how often, and the
// latest example.
type ErrorCount struct {
	Code   string  `json:"code"`
	Status int     `json:"status"`
	Count  uint64  `json:"count"`
	Latest Example `json:"latest"`
}

// Example is one request that got an error.
type Example struct {
	Time      time.Time `json:"time"`
	Operation string    `json:"operation"`
	Field     string    `json:"field,omitempty"`
	Message   string    `json:"message,omitempty"`
}

// Judgement is one rule of using the interface, passed or broken, with the
// latest breach.
type Judgement struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Passed     bool   `json:"passed"`
	Violations uint64 `json:"violations"`
	Latest     string `json:"latest,omitempty"`
	LatestTime string `json:"latest_time,omitempty"`
}

// Skew is the client's clock against gwsim's, in seconds (positive: the
// client is ahead).
type Skew struct {
	Samples     uint64 `json:"samples"`
	LastSeconds int64  `json:"last_seconds"`
	MinSeconds  int64  `json:"min_seconds"`
	MaxSeconds  int64  `json:"max_seconds"`
}

// Phase is how the client fared with one fault: the requests the fault
// answered (or, without Config.Faults, every request while it was in
// force), the devices they went to and how long they took, and whether
// the app recovered once the fault ended.
type Phase struct {
	Phase        string            `json:"phase"`
	Requests     uint64            `json:"requests"`
	Errors       uint64            `json:"errors"`
	RetriedEarly uint64            `json:"retried_before_retry_after"`
	Codes        map[string]uint64 `json:"codes"`
	Devices      map[string]uint64 `json:"devices,omitempty"`
	Latency      *Latency          `json:"latency,omitempty"`
	Recovery     *Recovery         `json:"recovery,omitempty"`
}

// Service is gwsim proxy's report of the upstream's answers.
type Service struct {
	Upstream   string      `json:"upstream"`
	Answers    uint64      `json:"answers"`
	Judgements []Judgement `json:"judgements"`
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// Failed is how many judgements failed, over every client and the
// service.
func (r *Report) Failed() int {
	n := 0
	for _, c := range r.Clients {
		for _, j := range c.Judgements {
			if !j.Passed {
				n++
			}
		}
	}
	if r.Service != nil {
		for _, j := range r.Service.Judgements {
			if !j.Passed {
				n++
			}
		}
	}
	return n
}

// Client is the report of the client shown as name (Mask of its key).
func (r *Report) Client(name string) (Client, bool) {
	for _, c := range r.Clients {
		if c.Client == name {
			return c, true
		}
	}
	return Client{}, false
}

// Judgement is the judgement id of the client's report.
func (c Client) Judgement(id string) Judgement {
	for _, j := range c.Judgements {
		if j.ID == id {
			return j
		}
	}
	return Judgement{ID: id}
}

// Handler serves the report as JSON (GET /_sim/clients) and forgets every
// client on DELETE.
func (r *Recorder) Handler() http.Handler {
	return r.HandlerWith(nil)
}

// HandlerWith is Handler with a service report added (gwsim proxy).
func (r *Recorder) HandlerWith(service func() *Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.Method {
		case http.MethodGet, http.MethodHead:
			rep := r.Report()
			if service != nil {
				rep.Service = service()
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			enc.Encode(rep)
		case http.MethodDelete:
			r.Reset()
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			io.WriteString(w, `{"status":"ok"}`+"\n")
		default:
			w.Header().Set("Allow", "GET, HEAD, DELETE")
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusMethodNotAllowed)
			io.WriteString(w, `{"status":"error","error":{"code":"method_not_allowed","field":"","message":"use GET or DELETE on /_sim/clients"}}`+"\n")
		}
	})
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	if len(r.Clients) == 0 {
		b.WriteString("no client has sent a request yet\n")
	}
	for _, c := range r.Clients {
		fmt.Fprintf(&b, "client %s", c.Client)
		if c.ID != "" {
			fmt.Fprintf(&b, " (id %s)", c.ID)
		}
		fmt.Fprintf(&b, ": %s, %s to %s\n", count(c.Requests, "request"), c.First.Format(time.RFC3339), c.Last.Format(time.RFC3339))
		b.WriteString("  exercised:\n")
		for _, v := range c.Coverage {
			what := v.Operation
			if v.Type != "" {
				what += " " + v.Type
			}
			fmt.Fprintf(&b, "    %-40s %-4s %d sent, %d succeeded\n", what, v.Format, v.Sent, v.Succeeded)
		}
		if len(c.Errors) > 0 {
			b.WriteString("  errors received:\n")
			for _, e := range c.Errors {
				fmt.Fprintf(&b, "    %d %s ×%d, latest: %s", e.Status, e.Code, e.Count, e.Latest.Operation)
				if e.Latest.Field != "" {
					fmt.Fprintf(&b, " (%s)", e.Latest.Field)
				}
				if e.Latest.Message != "" {
					fmt.Fprintf(&b, ": %s", e.Latest.Message)
				}
				b.WriteString("\n")
			}
		}
		if c.Skew != nil {
			fmt.Fprintf(&b, "  clock skew: last %+ds, from %+ds to %+ds over %s\n", c.Skew.LastSeconds, c.Skew.MinSeconds, c.Skew.MaxSeconds, count(c.Skew.Samples, "request"))
		}
		for _, p := range c.Phases {
			b.WriteString(phaseLine(p))
		}
		if u := c.Untried; len(u.Operations)+len(u.Types)+len(u.Formats) > 0 {
			var parts []string
			for _, part := range [][2]string{{"operations", strings.Join(u.Operations, ", ")}, {"device types", strings.Join(u.Types, ", ")}, {"formats", strings.Join(u.Formats, ", ")}} {
				if part[1] != "" {
					parts = append(parts, part[0]+" "+part[1])
				}
			}
			b.WriteString("  never sent: " + strings.Join(parts, "; ") + "\n")
		}
		if len(c.Untried.Errors) > 0 {
			fmt.Fprintf(&b, "  never met: %s\n", strings.Join(c.Untried.Errors, ", "))
		}
		writeJudgements(&b, c.Judgements)
	}
	if s := r.Service; s != nil {
		fmt.Fprintf(&b, "service %s: %d answers\n", s.Upstream, s.Answers)
		writeJudgements(&b, s.Judgements)
	}
	if n := r.Failed(); n > 0 {
		fmt.Fprintf(&b, "%d judgements failed\n", n)
	} else if len(r.Clients) > 0 {
		b.WriteString("every judgement passed\n")
	}
	_, err := io.WriteString(w, printable.Lines(b.String()))
	return err
}

func writeJudgements(b *strings.Builder, js []Judgement) {
	for _, j := range js {
		if j.Passed {
			fmt.Fprintf(b, "  PASS %s\n", j.Name)
			continue
		}
		fmt.Fprintf(b, "  FAIL %s: %s; latest %s: %s\n", j.Name, times(j.Violations), j.LatestTime, j.Latest)
	}
}

// WriteJSON writes the report as GET /_sim/clients does.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteJUnit writes one test suite per client (and one for the service
// behind gwsim proxy) with one test case per judgement, so that an app's
// CI fails on the judgement its app broke. The document is
// gatewayapi/junit's, as gwconform's are; it states the tests and
// failures of the whole and of each suite.
func (r *Report) WriteJUnit(w io.Writer) error {
	out := junit.Suites{Name: "gwsim clients", Tests: new(0), Failures: new(0)}
	add := func(name string, js []Judgement) {
		s := junit.Suite{Name: name, Timestamp: r.Generated.Format(time.RFC3339)}
		for _, j := range js {
			c := junit.Case{Name: j.Name, Classname: name + "." + j.ID}
			if !j.Passed {
				c.Failure = &junit.Message{Type: j.ID, Message: fmt.Sprintf("%s: %s", j.Name, times(j.Violations)),
					Text: junit.Text{Chars: "latest, " + j.LatestTime + ": " + j.Latest}}
				s.Failures++
			}
			s.Cases = append(s.Cases, c)
			s.Tests++
		}
		*out.Tests += s.Tests
		*out.Failures += s.Failures
		out.Suites = append(out.Suites, s)
	}
	for _, c := range r.Clients {
		name := "client " + c.Client
		if c.ID != "" {
			name += " " + c.ID
		}
		add(name, c.Judgements)
		// One case per fault that ended: did the app recover after it.
		var rec []Judgement
		for _, p := range c.Phases {
			if r := p.Recovery; r != nil && r.Ended {
				rec = append(rec, Judgement{ID: "recovers", Name: "app recovered after " + p.Phase, Passed: r.Recovered, Latest: r.Text, Violations: map[bool]uint64{true: 0, false: 1}[r.Recovered]})
			}
		}
		if len(rec) > 0 {
			add(name+" faults", rec)
		}
	}
	if r.Service != nil {
		add("service "+r.Service.Upstream, r.Service.Judgements)
	}
	return junit.WriteSuites(w, out)
}

var page = template.Must(template.New("clients").Funcs(template.FuncMap{
	"join": func(s []string) string { return strings.Join(s, ", ") },
	"what": func(c Coverage) string {
		if c.Type == "" {
			return c.Operation
		}
		return c.Operation + " " + c.Type
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gwsim client report</title>
<style>body{font:14px system-ui,sans-serif;margin:1.5em;max-width:70em}table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}.fail{color:#a00;font-weight:bold}.pass{color:#070}</style></head>
<body><h1>gwsim client report</h1><p>Generated {{.Generated.Format "2006-01-02 15:04:05 UTC"}}{{if .WindowSeconds}}; timestamp window ±{{.WindowSeconds}} s{{end}}.</p>
{{if not .Clients}}<p>No client has sent a request yet.</p>{{end}}
{{range .Clients}}<section><h2>Client {{.Client}} {{if .ID}}<small>(id {{.ID}})</small>{{end}}</h2>
<p>{{.Requests}} requests{{if .Skew}}; clock skew last {{.Skew.LastSeconds}} s (from {{.Skew.MinSeconds}} to {{.Skew.MaxSeconds}} s){{end}}.</p>
<table><tr><th>judgement</th><th>result</th><th>latest breach</th></tr>
{{range .Judgements}}<tr><td>{{.Name}}</td>{{if .Passed}}<td class="pass">pass</td><td></td>{{else}}<td class="fail">FAIL ×{{.Violations}}</td><td>{{.LatestTime}} {{.Latest}}</td>{{end}}</tr>
{{end}}</table>
<table><tr><th>exercised</th><th>format</th><th>sent</th><th>succeeded</th></tr>
{{range .Coverage}}<tr><td>{{what .}}</td><td>{{.Format}}</td><td>{{.Sent}}</td><td>{{.Succeeded}}</td></tr>
{{end}}</table>
{{if .Errors}}<table><tr><th>error received</th><th>status</th><th>count</th><th>latest</th></tr>
{{range .Errors}}<tr><td>{{.Code}}</td><td>{{.Status}}</td><td>{{.Count}}</td><td>{{.Latest.Operation}}{{if .Latest.Field}} ({{.Latest.Field}}){{end}}: {{.Latest.Message}}</td></tr>
{{end}}</table>{{end}}
{{with .Untried}}{{if or .Operations .Types .Formats .Errors}}<table class="untried"><tr><th colspan="2">what the app's tests never tried</th></tr>
{{if .Operations}}<tr><td>operations never sent</td><td>{{join .Operations}}</td></tr>{{end}}
{{if .Types}}<tr><td>device types never commanded</td><td>{{join .Types}}</td></tr>{{end}}
{{if .Formats}}<tr><td>formats never sent</td><td>{{join .Formats}}</td></tr>{{end}}
{{if .Errors}}<tr><td>errors never met</td><td>{{join .Errors}}</td></tr>{{end}}
</table>{{end}}{{end}}
{{if .Phases}}<table><tr><th>fault</th><th>requests it answered</th><th>errors</th><th>sent before Retry-After ended</th><th>against</th><th>latency (ms)</th><th>after it ended</th></tr>
{{range .Phases}}<tr><td>{{.Phase}}</td><td>{{.Requests}}</td><td>{{.Errors}}</td><td>{{.RetriedEarly}}</td><td>{{range $k, $v := .Devices}}{{$k}} ×{{$v}} {{end}}</td><td>{{with .Latency}}{{printf "%.1f" .MinMS}}–{{printf "%.1f" .MaxMS}} (avg {{printf "%.1f" .AvgMS}}){{end}}</td><td>{{with .Recovery}}<span class="{{if .Recovered}}pass{{else if .Ended}}fail{{end}}">{{.Text}}</span>{{end}}</td></tr>
{{end}}</table>{{end}}
</section>{{end}}
{{with .Service}}<section><h2>Service {{.Upstream}}</h2><p>{{.Answers}} answers.</p>
<table><tr><th>judgement</th><th>result</th><th>latest breach</th></tr>
{{range .Judgements}}<tr><td>{{.Name}}</td>{{if .Passed}}<td class="pass">pass</td><td></td>{{else}}<td class="fail">FAIL ×{{.Violations}}</td><td>{{.LatestTime}} {{.Latest}}</td>{{end}}</tr>
{{end}}</table></section>{{end}}
</body></html>
`))

// WriteHTML writes the report as one self-contained page.
func (r *Report) WriteHTML(w io.Writer) error { return page.Execute(w, r) }

// times is "1 time", "2 times".
func times(n uint64) string {
	if n == 1 {
		return "1 time"
	}
	return fmt.Sprintf("%d times", n)
}

// count is "1 request", "2 requests".
func count(n uint64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
