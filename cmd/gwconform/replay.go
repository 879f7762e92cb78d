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
	"github.com/gwdmi/gwtools/gatewayapi/printable"
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
	// Flags may come after the two arguments.
	var pos []string
	for len(args) > 0 {
		if err := parseFlags(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return report.ExitPass
			}
			return report.ExitConfig
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) == 1 && isExploreFile(pos[0]) {
		return replayExplore(ctx, pos[0], exploreReplayArgs{target: *target, fleetFile: *fleetFile, observer: *observer,
			adminToken: *adminToken, timeout: *timeout}, stdout, stderr)
	}
	if len(pos) != 2 {
		fs.Usage()
		return report.ExitConfig
	}
	doc, err := loadReport(pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "gwconform replay:", shown(err))
		return report.ExitConfig
	}
	res, ok := doc.Result(pos[1])
	if !ok {
		fmt.Fprintf(stderr, "gwconform replay: %s has no check %s\n", pos[0], pos[1])
		return report.ExitConfig
	}
	if len(res.Exchanges) == 0 {
		fmt.Fprintf(stderr, "gwconform replay: check %s recorded no exchange (outcome %s)\n", res.ID, res.Outcome)
		return report.ExitConfig
	}
	f, signer, err := resigner(*fleetFile)
	if err != nil {
		fmt.Fprintln(stderr, "gwconform replay: fleet:", shown(err))
		return report.ExitConfig
	}
	recordedBase := strings.TrimSuffix(doc.Target, " (embedded gwsim)")
	hc := &http.Client{Timeout: *timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	fmt.Fprintf(stdout, "Replaying [%s] %s (%s, %s in the run)\n", res.ID, res.Title, res.Level, res.Outcome)
	if res.Assertion != "" {
		fmt.Fprintf(stdout, "  asserts: %s\n", res.Assertion)
	}
	same := true
	for i, ex := range res.Exchanges {
		if ex.RetriedAfter > 0 {
			continue // an answer that asked to retry; the retry follows
		}
		url := ex.URL
		if *target != "" {
			url = strings.TrimRight(*target, "/") + strings.TrimPrefix(ex.URL, recordedBase)
		}
		if strings.Contains(ex.RequestBody, report.BodyCut) {
			fmt.Fprintf(stderr, "gwconform replay: exchange %d: the report keeps only the start of its body; run the check again: gwconform run --target URL --check %s\n", i+1, res.ID)
			return report.ExitConfig
		}
		body := []byte(ex.RequestBody)
		if strings.Contains(ex.RequestBody, client.SignMarker) || strings.Contains(ex.RequestBody, "&lt;SIGNATURE&gt;") || strings.Contains(ex.RequestBody, "SIGNATURE_REDACTED") {
			if body, err = client.Resign(ctx, body, f, signer, time.Now(), f.Location()); err != nil {
				fmt.Fprintf(stderr, "gwconform replay: exchange %d: %s\n", i+1, shown(err))
				return report.ExitConfig
			}
		}
		req, err := http.NewRequestWithContext(ctx, ex.Method, url, strings.NewReader(string(body)))
		if err != nil {
			fmt.Fprintf(stderr, "gwconform replay: exchange %d: %s\n", i+1, shown(err))
			return report.ExitConfig
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
		fmt.Fprintf(stdout, "\n> %s %s\n", ex.Method, url)
		for _, k := range sortedKeys(ex.RequestHeaders) {
			fmt.Fprintf(stdout, "> %s: %s\n", k, ex.RequestHeaders[k])
		}
		fmt.Fprintf(stdout, ">\n%s\n", client.MaskAPIKeys(client.RedactSign(string(body))))
		resp, err := hc.Do(req)
		if err != nil {
			fmt.Fprintf(stdout, "< no answer: %s\n", shown(err))
			if ex.Error == "" {
				same = false
			}
			continue
		}
		rb, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		fmt.Fprintf(stdout, "< %s\n", printable.String(resp.Status))
		for _, k := range sortedHeader(resp.Header) {
			fmt.Fprintf(stdout, "< %s: %s\n", printable.String(k), printable.String(strings.Join(resp.Header[k], ", ")))
		}
		fmt.Fprintf(stdout, "<\n%s\n", printable.Lines(string(rb)))
		if resp.StatusCode != ex.Status {
			same = false
			fmt.Fprintf(stdout, "! recorded %d in the run, now %d\n", ex.Status, resp.StatusCode)
		}
	}
	if same {
		fmt.Fprintf(stdout, "\nREPRODUCED: the target answers as it did in the run (check %s)\n", res.Outcome)
		return report.ExitPass
	}
	fmt.Fprintln(stdout, "\nCHANGED: the target no longer answers as it did in the run")
	return report.ExitFail
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
