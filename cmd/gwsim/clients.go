package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/printable"
	"github.com/gwdmi/gwtools/gatewayapi/tokenrule"
	"github.com/gwdmi/gwtools/simulator/clients"
)

const clientsUsage = `Usage:
  gwsim clients [--target URL] [--format text|json|junit|html] [--admin-token T] [--fail]

Prints the client report of a running gwsim serve or gwsim proxy: per
api_key (shown as its first four characters), what the app exercised, the
errors it received and whether it used the interface as expected.
  gwsim clients --target http://127.0.0.1:8080 --format junit > gwsim-clients.xml
The target comes from --target, else $GWSIM_URL, else http://127.0.0.1:8080;
the admin token from --admin-token or $GWSIM_ADMIN_TOKEN, which goes only to
a target on loopback or named with --target (never to a $GWSIM_URL beyond
loopback); where it goes is said once on stderr.
Exit 0: the report was printed (with --fail: and every judgement passed);
1: with --fail, some judgement failed; 2: bad usage, or no report could be
read from the target.

Flags:
`

// clientsMain is gwsim clients.
type clientsMain struct {
	Stdout, Stderr io.Writer

	target, format, token string
	// named: the target was given with --target (not $GWSIM_URL or the
	// default), so a token from the environment may go there.
	named   bool
	fail    bool
	timeout time.Duration
}

func (m *clientsMain) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("gwsim clients", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() { fmt.Fprint(m.Stderr, clientsUsage); fs.PrintDefaults() }
	fs.StringVar(&m.target, "target", "", "base URL of gwsim serve or gwsim proxy (default: $GWSIM_URL, else "+defaultTarget+")")
	fs.StringVar(&m.format, "format", "text", "text, json, junit or html")
	fs.StringVar(&m.token, "admin-token", "", "the admin token (default: from $GWSIM_ADMIN_TOKEN)")
	fs.BoolVar(&m.fail, "fail", false, "exit 1 when any judgement failed")
	fs.DurationVar(&m.timeout, "timeout", 10*time.Second, "time limit of the request")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch m.format {
	case "text", "json", "junit", "html":
	default:
		return fmt.Errorf("--format %q: use text, json, junit or html", m.format)
	}
	target, from := targetOf(m.target)
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q must be a URL such as http://127.0.0.1:8080", from, tokenrule.Redact(target))
	}
	m.target, m.named = target, m.target != ""
	return nil
}

// settleToken decides, by the rule every command follows (package
// tokenrule), whether the admin token goes to the target, and says once
// on stderr where it goes: one from $GWSIM_ADMIN_TOKEN only to a target
// on loopback or named with --target, never to one of $GWSIM_URL beyond
// loopback.
func (m *clientsMain) settleToken() {
	m.token = tokenrule.Of(m.token, os.Getenv("GWSIM_ADMIN_TOKEN")).
		To(m.target, m.named, m.Stderr, "gwsim clients", "give --target URL or --admin-token to send a token there")
}

// shownTarget is the target as printed: no user information, escaped.
func (m *clientsMain) shownTarget() string { return printable.String(tokenrule.Redact(m.target)) }

// defaultTarget is where gwsim send and gwsim clients go without
// --target and $GWSIM_URL: gwsim serve's default address.
const defaultTarget = "http://127.0.0.1:8080"

// targetOf is the target of gwsim send and gwsim clients: flag when
// given, else $GWSIM_URL, else defaultTarget; and where it came from, to
// name it in an error.
func targetOf(flag string) (target, from string) {
	if flag != "" {
		return flag, "--target"
	}
	if v := strings.TrimSpace(os.Getenv("GWSIM_URL")); v != "" {
		return v, "GWSIM_URL"
	}
	return defaultTarget, "--target"
}

// Fetch reads GET /_sim/clients of the target.
func (m *clientsMain) Fetch(ctx context.Context) (*clients.Report, error) {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(m.target, "/")+"/_sim/clients", nil)
	if err != nil {
		return nil, err
	}
	if m.token != "" {
		req.Header.Set("Authorization", "Bearer "+m.token)
	}
	// A redirect is not followed: the token would go where the target says.
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", m.shownTarget(), printable.String(err.Error()))
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: reading the report: %s", m.shownTarget(), printable.String(err.Error()))
	}
	switch res.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return nil, errors.New("the target needs the admin token: --admin-token or $GWSIM_ADMIN_TOKEN")
	case http.StatusNotFound:
		return nil, fmt.Errorf("%s has no client report (GET /_sim/clients answered 404): is it gwsim serve or gwsim proxy, with the client report on?", m.shownTarget())
	default:
		return nil, fmt.Errorf("GET /_sim/clients answered %d: %s", res.StatusCode, printable.String(strings.TrimSpace(string(b[:min(len(b), 300)]))))
	}
	var r clients.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("GET /_sim/clients: not a client report: %s", printable.String(err.Error()))
	}
	return &r, nil
}

func clientsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	m := &clientsMain{Stdout: stdout, Stderr: stderr}
	if err := m.ParseFlags(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "gwsim clients:", err)
		return 2
	}
	m.settleToken()
	r, err := m.Fetch(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "gwsim clients:", err)
		return 2
	}
	switch m.format {
	case "json":
		err = r.WriteJSON(stdout)
	case "junit":
		err = r.WriteJUnit(stdout)
	case "html":
		err = r.WriteHTML(stdout)
	default:
		err = r.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "gwsim clients:", err)
		return 2
	}
	if m.fail && r.Failed() > 0 {
		fmt.Fprintf(stderr, "gwsim clients: %d judgements failed\n", r.Failed())
		return 1
	}
	return 0
}
