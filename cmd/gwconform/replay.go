package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/printable"
	"github.com/gwdmi/gwtools/gatewayapi/tokenrule"
)

const replayUsage = `Usage: gwconform replay REPORT.json|BUNDLE.tar.gz CHECK-ID [--target URL] [--fleet FILE]
       gwconform replay explore.json [--target URL] [--fleet FILE] [--observer URL] [--admin-token T]

Sends a check's recorded requests again, each with a fresh timestamp and
sign (from --fleet, else $GWCONFORM_FLEET, else the demo fleet), prints
every exchange and compares each answer with the one recorded: exit 0 when
the target answers as it did in the run (a failure is reproduced), 1 when
an answer differs, 2 on bad usage. --target sends to another base URL (the
recorded one by default). Signs are never printed.

With the explore.json of gwconform explore, runs its shrunk sequence again
from a reset (when the observer answers one) and the state read afresh,
prints each step with the model's expectation, and exits 0 when the
target still disagrees with the model (reproduced), 1 when it agrees now.
A check of the run's model-based phase (model.answers, model.effects,
model.isolation, model.contract) is replayed the same way: the shrunk
sequence of its first finding, from report.json, with the model.

Flags:
`

// replayMain is gwconform replay.
func replayMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gwconform replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", "", "base URL to send to (default: the run's target)")
	fleetFile := fs.String("fleet", "", "fleet file with the credentials (default: from $GWCONFORM_FLEET, else the demo fleet)")
	timeout := fs.Duration("timeout", 10*time.Second, "time limit of one request")
	observer := fs.String("observer", "", "explore.json only: base URL of the CONTRACT 7 reads (default: the recorded one, or the target)")
	adminToken := fs.String("admin-token", "", "explore.json only: bearer token of the observer (default: from $GWSIM_ADMIN_TOKEN)")
	fs.Usage = func() { io.WriteString(stderr, replayUsage); fs.PrintDefaults() }
	pos, code, ok := replayArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) == 1 && isExploreFile(pos[0]) {
		return replayExplore(ctx, pos[0], exploreReplayArgs{target: *target, fleetFile: *fleetFile, observer: *observer,
			adminToken: *adminToken, timeout: *timeout}, stdout, stderr)
	}
	if len(pos) != 2 {
		fs.Usage()
		return report.ExitConfig
	}
	if strings.HasPrefix(pos[1], "model.") {
		return replayModel(ctx, pos[0], pos[1], exploreReplayArgs{target: *target, fleetFile: *fleetFile, observer: *observer,
			adminToken: *adminToken, timeout: *timeout}, stdout, stderr)
	}
	doc, res, ok := loadReplayCheck(pos[0], pos[1], stderr)
	if !ok {
		return report.ExitConfig
	}
	f, signer, err := resigner(*fleetFile)
	if err != nil {
		fmt.Fprintln(stderr, "gwconform replay: fleet:", shown(err))
		return report.ExitConfig
	}
	p := &replayer{ctx: ctx, stdout: stdout, stderr: stderr, target: *target, recordedBase: strings.TrimSuffix(doc.Target, " (embedded gwsim)"),
		fleet: f, signer: signer, checkID: res.ID,
		hc: &http.Client{Timeout: *timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	// A report is input from outside: its title, assertion and bodies are
	// shown escaped.
	fmt.Fprintf(stdout, "Replaying [%s] %s (%s, %s in the run)\n", printable.String(res.ID), printable.String(res.Title),
		printable.String(res.Level), printable.String(string(res.Outcome)))
	if res.Assertion != "" {
		fmt.Fprintf(stdout, "  asserts: %s\n", printable.String(res.Assertion))
	}
	same := true
	for i, ex := range res.Exchanges {
		if ex.RetriedAfter > 0 {
			continue // an answer that asked to retry; the retry follows
		}
		req, url, body, ok := p.request(i, ex)
		if !ok {
			return report.ExitConfig
		}
		if !p.send(req, url, body, ex) {
			same = false
		}
	}
	if same {
		fmt.Fprintf(stdout, "\nREPRODUCED: the target answers as it did in the run (check %s)\n", printable.String(string(res.Outcome)))
		return report.ExitPass
	}
	fmt.Fprintln(stdout, "\nCHANGED: the target no longer answers as it did in the run")
	return report.ExitFail
}

// replayArgs parses the flags, which may come after the positional
// arguments, and returns those; when ok is false, replay exits with code.
func replayArgs(fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	for len(args) > 0 {
		if err := parseFlags(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, report.ExitPass, false
			}
			return nil, report.ExitConfig, false
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return pos, 0, true
}

// loadReplayCheck loads the report (or bundle) at path and the result of
// check id, which must have recorded exchanges; it says why not on
// stderr.
func loadReplayCheck(path, id string, stderr io.Writer) (doc report.Document, res report.Result, ok bool) {
	doc, err := loadReport(path)
	if err != nil {
		fmt.Fprintln(stderr, "gwconform replay:", shown(err))
		return doc, res, false
	}
	res, found := doc.Result(id)
	if !found {
		fmt.Fprintf(stderr, "gwconform replay: %s has no check %s\n", printable.String(path), printable.String(id))
		return doc, res, false
	}
	if len(res.Exchanges) == 0 {
		fmt.Fprintf(stderr, "gwconform replay: check %s recorded no exchange (outcome %s)\n", printable.String(res.ID), printable.String(string(res.Outcome)))
		return doc, res, false
	}
	return doc, res, true
}

// replayer sends a check's recorded requests again.
type replayer struct {
	ctx            context.Context
	stdout, stderr io.Writer
	hc             *http.Client
	// target replaces recordedBase in the recorded URLs, when given.
	target, recordedBase string
	fleet                *fleet.Fleet
	signer               client.Signer
	checkID              string
}

// request rebuilds the i-th recorded request: to --target when given,
// signed afresh where the report redacted its sign, with the recorded
// headers but the redacted ones. It says on stderr why it cannot.
func (p *replayer) request(i int, ex client.Exchange) (req *http.Request, url string, body []byte, ok bool) {
	url = ex.URL
	if p.target != "" {
		url = strings.TrimRight(p.target, "/") + strings.TrimPrefix(ex.URL, p.recordedBase)
	} else if !tokenrule.OnLoopback(url) {
		// A report is input from outside: the fleet's api_key and a fresh
		// sign go to a URL it names only on loopback.
		fmt.Fprintf(p.stderr, "gwconform replay: exchange %d goes to %s, read from the report and not on loopback: "+
			"the fleet's signed requests go there only when the command line says so: give --target URL\n", i+1, printable.String(tokenrule.Redact(url)))
		return nil, "", nil, false
	}
	if strings.Contains(ex.RequestBody, report.BodyCut) {
		fmt.Fprintf(p.stderr, "gwconform replay: exchange %d: the report keeps only the start of its body; run the check again: gwconform run --target URL --check %s\n", i+1, p.checkID)
		return nil, "", nil, false
	}
	body = []byte(ex.RequestBody)
	if strings.Contains(ex.RequestBody, client.SignMarker) || strings.Contains(ex.RequestBody, "&lt;SIGNATURE&gt;") || strings.Contains(ex.RequestBody, "SIGNATURE_REDACTED") {
		var err error
		if body, err = client.Resign(p.ctx, body, p.fleet, p.signer, time.Now(), p.fleet.Location()); err != nil {
			fmt.Fprintf(p.stderr, "gwconform replay: exchange %d: %s\n", i+1, shown(err))
			return nil, "", nil, false
		}
	}
	req, err := http.NewRequestWithContext(p.ctx, ex.Method, url, strings.NewReader(string(body)))
	if err != nil {
		fmt.Fprintf(p.stderr, "gwconform replay: exchange %d: %s\n", i+1, shown(err))
		return nil, "", nil, false
	}
	for _, k := range sortedKeys(ex.RequestHeaders) {
		if strings.EqualFold(k, "Host") {
			req.Host = ex.RequestHeaders[k]
			continue
		}
		if v := ex.RequestHeaders[k]; v != "<REDACTED>" {
			req.Header.Set(k, v)
		}
	}
	return req, url, body, true
}

// send prints the request to url (sign redacted, api keys masked), sends
// it and prints the answer; it says whether the answer is the recorded
// one: the same status, or no answer where the run got none either.
func (p *replayer) send(req *http.Request, url string, body []byte, ex client.Exchange) (same bool) {
	stdout := p.stdout
	// What was sent is masked by value wherever it shows (the answer may
	// echo it), then by field.
	mask := p.masker(body)
	fmt.Fprintf(stdout, "\n> %s %s\n", printable.String(ex.Method), printable.String(tokenrule.Redact(url)))
	for _, k := range sortedKeys(ex.RequestHeaders) {
		fmt.Fprintf(stdout, "> %s: %s\n", printable.String(k), printable.String(ex.RequestHeaders[k]))
	}
	fmt.Fprintf(stdout, ">\n%s\n", printable.Lines(client.MaskAPIKeys(client.RedactSign(mask.Mask(string(body))))))
	resp, err := p.hc.Do(req)
	if err != nil {
		fmt.Fprintf(stdout, "< no answer: %s\n", shown(err))
		return ex.Error != ""
	}
	rb, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	fmt.Fprintf(stdout, "< %s\n", printable.String(resp.Status))
	for _, k := range sortedHeader(resp.Header) {
		fmt.Fprintf(stdout, "< %s: %s\n", printable.String(k), printable.String(strings.Join(resp.Header[k], ", ")))
	}
	fmt.Fprintf(stdout, "<\n%s\n", printable.Lines(client.MaskAPIKeys(client.RedactSign(mask.Mask(string(rb))))))
	if resp.StatusCode != ex.Status {
		fmt.Fprintf(stdout, "! recorded %d in the run, now %d\n", ex.Status, resp.StatusCode)
		return false
	}
	return true
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedHeader(h http.Header) []string {
	out := make([]string, 0, len(h))
	for k := range h {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// masker masks by value the sent body's api_keys and signs and the
// fleet's keys and secrets (up to maxMaskedKeys of them), wherever a
// printed request or answer holds them.
func (p *replayer) masker(body []byte) *client.ValueMasker {
	m := &client.ValueMasker{}
	keys, signs := client.Credentials(string(body))
	m.Add("key", keys...)
	m.Add("sign", signs...)
	if p.fleet != nil {
		n := 0
		for k, v := range p.fleet.Authenticator().Keys {
			if n++; n > maxMaskedKeys {
				break
			}
			m.Add("key", k)
			m.Add("secret", v.Secret)
		}
	}
	return m
}

// maxMaskedKeys bounds the fleet keys masked by value in a printed body.
const maxMaskedKeys = 10000
