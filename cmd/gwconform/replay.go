package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/conformance/explore"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/printable"
	"github.com/gwdmi/gwtools/gatewayapi/tokenrule"
)

const replayUsage = `Usage: gwconform replay REPORT.json|BUNDLE.tar.gz CHECK-ID [--target URL] [--fleet FILE] [--observer URL] [--admin-token T]
       gwconform replay explore.json [--target URL] [--fleet FILE] [--observer URL] [--admin-token T]

Runs one check of a report again, as the run ran it: the same request, built
from the run's seed, with only the parts the check left valid made afresh (a
sign, timestamp or api_key that is wrong on purpose stays wrong), the
observer read before and after where the check reads it, and the same
judgement. Credentials come from --fleet, else $GWCONFORM_FLEET, else the
demo fleet. It prints every exchange (signs never), then:
  REPRODUCED (exit 0)   the check fails again as it failed in the run
  CHANGED (exit 1)      the check passes now (or fails where it passed)
  NOT JUDGED (exit 2)   the check could not be judged now (skipped, inconclusive,
                        the target or observer not there, bad usage); the line says why
--target sends to another base URL (the recorded one by default; a run
against the embedded simulator starts one again). --observer is where an
effect check reads the devices (default: the recorded observer when the
target is the recorded one).

With the explore.json of gwconform explore, runs its shrunk sequence again
from a reset (when the observer answers one) and the state read afresh,
prints each step with the model's expectation, and exits 0 when the
target still disagrees with the model (reproduced), 1 when it agrees now.
A check of the run's model-based phase (model.answers, model.effects,
model.isolation, model.contract) is replayed the same way: the shrunk
sequence of its first finding, from report.json, with the model.

Flags:
`

// replayCmd is gwconform replay with its exit code.
func replayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return lifecycle(ctx, "gwconform replay", &replayMain{Stdout: stdout, Stderr: stderr}, args, stderr)
}

// replayMain is gwconform replay: ParseFlags reads the command line, Open
// reads what to replay (a check of a report, or a shrunk sequence of
// explore or of the model-based phase, whose target it then opens), Run
// replays it and judges, Close releases the target.
type replayMain struct {
	Stdout, Stderr io.Writer
	opts           replayOptions
	// path is the report, bundle or explore file; id the check to
	// replay, "" for an explore file.
	path, id string

	// doc and res are the report and the check to run again; or x is
	// explore's target and model, opened for ef's shrunk sequence.
	doc report.Document
	res report.Result
	x   *exploreMain
	ef  *explore.File
}

// ParseFlags reads the flags, which may come after the positional
// arguments: a report (or bundle) and a check, or an explore file.
func (m *replayMain) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("gwconform replay", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	o := &m.opts
	fs.StringVar(&o.target, "target", "", "base URL to send to (default: the run's target)")
	fs.StringVar(&o.fleetFile, "fleet", "", "fleet file with the credentials (default: from $GWCONFORM_FLEET, else the demo fleet)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "time limit of one request")
	fs.StringVar(&o.observer, "observer", "", "base URL of the CONTRACT 7 reads (default: the recorded one when the target is the recorded one)")
	fs.StringVar(&o.adminToken, "admin-token", "", "bearer token of the observer (default: from $GWSIM_ADMIN_TOKEN)")
	fs.Usage = func() { io.WriteString(m.Stderr, replayUsage); fs.PrintDefaults() }
	var pos []string
	for len(args) > 0 {
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch {
	case len(pos) == 1 && isExploreFile(pos[0]):
		m.path = pos[0]
	case len(pos) == 2:
		m.path, m.id = pos[0], pos[1]
	default:
		fs.Usage()
		return errUsage
	}
	return nil
}

// Open reads the check or the shrunk sequence to replay; for a sequence,
// it opens the target as gwconform explore does.
func (m *replayMain) Open(ctx context.Context) error {
	var err error
	switch {
	case m.id == "":
		m.ef, err = explore.ReadFile(m.path)
	case strings.HasPrefix(m.id, "model."):
		m.ef, err = modelFinding(m.path, m.id)
	default:
		m.doc, m.res, err = loadReplayCheck(m.path, m.id)
		return err
	}
	if err != nil {
		return err
	}
	m.x, err = openExploreReplay(ctx, m.path, m.ef, m.opts, m.Stdout, m.Stderr)
	return err
}

// Run replays and judges: REPRODUCED 0, CHANGED 1, NOT JUDGED 2.
func (m *replayMain) Run(ctx context.Context) int {
	if m.x != nil {
		return m.x.replay(ctx, m.ef)
	}
	return replayCheck(ctx, m.doc, m.res, m.opts, m.Stdout, m.Stderr)
}

// Close releases the target of a replayed sequence.
func (m *replayMain) Close() error {
	if m.x == nil {
		return nil
	}
	return m.x.Close()
}

// replayOptions are gwconform replay's flags.
type replayOptions struct {
	target, fleetFile, observer, adminToken string
	timeout                                 time.Duration
}

// embeddedSuffix ends a report's target when the run started gwsim
// in-process.
const embeddedSuffix = " (embedded gwsim)"

// replayRunArgs are the gwconform run arguments that run check res of doc
// again as the options say, writing its reports to dir; observed is the
// observer the run will read ("" for none).
func replayRunArgs(doc report.Document, res report.Result, o replayOptions, dir string) (args []string, target, observed string) {
	recorded := strings.TrimSuffix(doc.Target, embeddedSuffix)
	embedded := recorded != doc.Target
	target = o.target
	if target == "" && !embedded {
		target = recorded
	}
	observed = o.observer
	sameTarget := o.target == "" || strings.TrimRight(o.target, "/") == strings.TrimRight(recorded, "/")
	// A report is input from outside: an observer it names is read only on
	// loopback, where a token from the environment may go; any other needs
	// --observer.
	if observed == "" && sameTarget && !embedded && doc.Observer != report.ObserverNone && doc.Observer != "" && tokenrule.OnLoopback(doc.Observer) {
		observed = doc.Observer
	}
	args = []string{"--check", res.ID, "--seed", strconv.FormatInt(doc.Seed, 10), "--report-dir", dir,
		"--allow-partial", "--color", "never", "--parallel", "1", "--keep-exchanges", "--timeout", o.timeout.String()}
	if target != "" {
		args = append(args, "--target", target)
	}
	fleetFile := o.fleetFile
	if fleetFile == "" {
		fleetFile = os.Getenv("GWCONFORM_FLEET")
	}
	if fleetFile != "" {
		args = append(args, "--fleet", fleetFile)
	}
	if observed != "" {
		args = append(args, "--observer", observed)
	}
	if o.adminToken != "" {
		args = append(args, "--admin-token", o.adminToken)
	}
	return args, target, observed
}

// replayCheck runs check res of doc again and judges it as the run did.
func replayCheck(ctx context.Context, doc report.Document, res report.Result, o replayOptions, stdout, stderr io.Writer) int {
	// A report is input from outside: its title, assertion and bodies are
	// shown escaped.
	fmt.Fprintf(stdout, "Replaying [%s] %s (%s, %s in the run)\n", printable.String(res.ID), printable.String(res.Title),
		printable.String(res.Level), printable.String(string(res.Outcome)))
	if res.Assertion != "" {
		fmt.Fprintf(stdout, "  asserts: %s\n", printable.String(res.Assertion))
	}
	if res.Failure != "" {
		fmt.Fprintf(stdout, "  the run said: %s\n", printable.String(res.Failure))
	}
	dir, err := os.MkdirTemp("", "gwconform-replay-")
	if err != nil {
		fmt.Fprintln(stderr, "gwconform replay:", shown(err))
		return report.ExitConfig
	}
	defer os.RemoveAll(dir)
	args, target, observed := replayRunArgs(doc, res, o, dir)
	if o.target == "" && target != "" && !tokenrule.OnLoopback(target) {
		// A report is input from outside: the fleet's api_key and fresh
		// signs go to a target it names only on loopback.
		fmt.Fprintf(stderr, "gwconform replay: the report's target %s is not on loopback: the fleet's signed requests go there "+
			"only when the command line says so: give --target URL\n", printable.String(tokenrule.Redact(target)))
		return report.ExitConfig
	}
	if o.observer == "" && doc.Observer != "" && doc.Observer != report.ObserverNone && observed == "" && !tokenrule.OnLoopback(doc.Observer) {
		fmt.Fprintf(stdout, "  the report's observer %s is not on loopback: give --observer URL to read the devices there\n",
			printable.String(tokenrule.Redact(doc.Observer)))
	}
	where := printable.String(tokenrule.Redact(target))
	if where == "" {
		where = "the embedded simulator (started again)"
	}
	fmt.Fprintf(stdout, "  running it again against %s with the run's seed %d", where, doc.Seed)
	if observed != "" {
		fmt.Fprintf(stdout, ", reading the devices at %s", printable.String(tokenrule.Redact(observed)))
	}
	fmt.Fprintln(stdout)
	var console bytes.Buffer
	code := runCmd(ctx, args, &console, &console)
	again, err := loadReport(filepath.Join(dir, report.JSONFile))
	now, found := again.Result(res.ID)
	if err != nil || !found {
		fmt.Fprintf(stdout, "\n%s", printable.Lines(console.String()))
		fmt.Fprintf(stdout, "\nNOT JUDGED: the check could not be run again (gwconform run exit %d)\n", code)
		return report.ExitConfig
	}
	printReplayed(stdout, now)
	verdict, exit := replayVerdict(res, now)
	fmt.Fprintln(stdout, "\n"+verdict)
	return exit
}

// printReplayed prints what check r sent and got when run again, and what
// it saw change.
func printReplayed(stdout io.Writer, r report.Result) {
	for _, ex := range r.Exchanges {
		fmt.Fprintf(stdout, "\n> %s %s\n", ex.Method, ex.URL)
		for _, k := range sortedKeys(ex.RequestHeaders) {
			fmt.Fprintf(stdout, "> %s: %s\n", k, ex.RequestHeaders[k])
		}
		fmt.Fprintf(stdout, ">\n%s\n", client.MaskAPIKeys(client.RedactSign(ex.RequestBody)))
		if ex.Tamper != nil {
			fmt.Fprintf(stdout, "  (%s)\n", ex.Tamper.Describe())
		}
		if ex.Status == 0 {
			fmt.Fprintf(stdout, "< no answer: %s\n", printable.String(ex.Error))
			continue
		}
		fmt.Fprintf(stdout, "< %d %s\n", ex.Status, http.StatusText(ex.Status))
		for _, k := range sortedKeys(ex.ResponseHeaders) {
			fmt.Fprintf(stdout, "< %s: %s\n", printable.String(k), printable.String(ex.ResponseHeaders[k]))
		}
		fmt.Fprintf(stdout, "<\n%s\n", printable.Lines(ex.ResponseBody))
	}
	for _, o := range r.Reads {
		fmt.Fprintf(stdout, "  observer, %s the request: %s\n    %s\n", o.When, printable.String(o.Device), printable.String(o.Curl()))
	}
	for _, s := range r.Settle {
		fmt.Fprintf(stdout, "  observer: %s\n", printable.String(s))
	}
	for _, s := range r.Observations {
		fmt.Fprintf(stdout, "  observed: %s\n", printable.String(s))
	}
}

// replayVerdict is the replay's last line and exit code: REPRODUCED only
// when the check reaches the judgement it reached in the run, CHANGED only
// when it reaches the other one, NOT JUDGED otherwise.
func replayVerdict(was, now report.Result) (string, int) {
	judged := func(o string) bool { return o == report.Passed || o == report.Failed || o == report.ExpectedFailure }
	failed := func(o string) bool { return o == report.Failed || o == report.ExpectedFailure }
	switch {
	case !judged(now.Outcome):
		why := now.Reason
		if why == "" {
			why = now.Failure
		}
		if why != "" {
			why = ": " + printable.String(why)
		}
		return fmt.Sprintf("NOT JUDGED: the check is %s now%s", now.Outcome, why), report.ExitConfig
	case !judged(was.Outcome):
		return fmt.Sprintf("NOT JUDGED: the check was %s in the run; now it %s", was.Outcome, now.Outcome), report.ExitConfig
	case failed(was.Outcome) && failed(now.Outcome):
		return "REPRODUCED: the check fails again: " + printable.String(now.Failure), report.ExitPass
	case failed(now.Outcome):
		return "CHANGED: the check passed in the run and fails now: " + printable.String(now.Failure), report.ExitFail
	case failed(was.Outcome):
		return "CHANGED: the check failed in the run and passes now", report.ExitFail
	}
	return "REPRODUCED: the check passes again, as in the run", report.ExitPass
}

// loadReplayCheck loads the report (or bundle) at path and the result of
// check id.
func loadReplayCheck(path, id string) (doc report.Document, res report.Result, err error) {
	if doc, err = loadReport(path); err != nil {
		return doc, res, err
	}
	res, found := doc.Result(id)
	if !found {
		return doc, res, fmt.Errorf("%s has no check %s", printable.String(path), printable.String(id))
	}
	return doc, res, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
