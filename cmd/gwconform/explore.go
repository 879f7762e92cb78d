package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/explore"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/load"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/printable"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
	"github.com/gwdmi/gwtools/gatewayapi/tokenrule"
)

const exploreUsage = `Usage: gwconform explore [--target URL] [--fleet FILE] [--observer URL] [--admin-token T]
                         [--duration D | --operations N] [--seed S] [--clients N] [--report-dir DIR]
                         [--fail-on must|should] [--skip RULE]... [--baseline FILE] [--no-restore]

Sends random sequences of commands, messages and renames, valid and
invalid, in both formats, across the fleet's devices, gateways and
accounts, with reads of the observer (CONTRACT 7) between them. A model
built from the harness's own reading of the texts predicts every answer and
every observed state. The first disagreement is shrunk to a minimal
sequence and written to DIR as explore.json (gwconform replay runs it
again), explore-repro.sh (curl, each request signed afresh), and JUnit and
HTML reports, all with the seed. --clients N sends from N concurrent
clients to shared devices and checks each device's history for
linearizability; a violation's picture goes to
DIR/explore-linearizability.html.

Each disagreement has a level (MUST: the published interface decides it;
SHOULD: only the CONTRACT does), a rule of docs/checks.md and its sentence.
Explore stops at the first disagreement at or above --fail-on (must by
default); one below it is listed once, with its count and its own
reproduction (explore-repro-N.sh), and the run goes on. --skip RULE (an ID
or glob, repeatable) leaves a rule's disagreements out; a --baseline entry
(as gwconform run reads it) whose check or rule matches makes them known
failures, listed but not failing. Every device the run sent a request to is
put back as it was before the run (its name and state as the observer
showed them, else as the fleet gives them). See docs/explore.md.

Examples:
  gwconform explore --operations 20000 --seed 42
  gwconform explore --target http://127.0.0.1:8080 --fleet fleet.yaml --duration 5m --clients 8
  gwconform explore --target http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083 --clients 8

Exit 0: nothing disagreed; 1: something did; 2: bad arguments, unreadable
fleet, target or observer unreachable.

Flags:
`

// exploreMain is gwconform explore: ParseFlags reads the command line,
// Open loads the fleet, starts the embedded simulator when there is no
// --target and finds the observer, Run explores and writes the reports,
// Close stops what Open started.
type exploreMain struct {
	Stdout, Stderr io.Writer
	// StartEmbedded starts the target when there is no --target.
	StartEmbedded func(*fleet.Fleet) (Embedded, error)

	target, fleetFile, observer, adminToken, reportDir string
	// tokenFromEnv: adminToken came from $GWSIM_ADMIN_TOKEN (adminToken.to).
	tokenFromEnv bool
	// observerNamed: observer was given on the command line (not read
	// from an explore file); replaying: this is gwconform replay.
	observerNamed, replaying bool
	cfg                      explore.Config
	timeout                  time.Duration
	noReset                  bool
	seedSet                  bool
	baselineFile             string
	noRestore                bool
	skips                    listFlag

	embedded Embedded
	tgt      *explore.Target
}

func exploreCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return lifecycle(ctx, "gwconform explore", &exploreMain{Stdout: stdout, Stderr: stderr, StartEmbedded: startSimulator}, args, stderr)
}

// ParseFlags reads and checks gwconform explore's flags.
func (m *exploreMain) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("gwconform explore", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&m.target, "target", "", "base URL of the implementation under test, or several separated by commas (replicas sharing one state); empty: the simulator, in-process")
	fs.StringVar(&m.fleetFile, "fleet", "", "fleet file with the target's credentials, gateways and devices; default: the demo fleet")
	fs.StringVar(&m.observer, "observer", "", "base URL of the CONTRACT 7 reads (default: the target, when it answers them)")
	fs.StringVar(&m.adminToken, "admin-token", "", "bearer token of the observer (default: from $GWSIM_ADMIN_TOKEN)")
	fs.DurationVar(&m.cfg.Duration, "duration", 0, "explore for this long (default: --operations)")
	fs.IntVar(&m.cfg.Operations, "operations", 0, fmt.Sprintf("send this many operations (default %d when no --duration)", explore.DefaultOperations))
	fs.Int64Var(&m.cfg.Seed, "seed", 0, "seed of the sequences (default: from the clock, printed and in the reports)")
	fs.IntVar(&m.cfg.Clients, "clients", 1, "concurrent clients on shared devices; above 1 checks linearizability")
	fs.IntVar(&m.cfg.RoundLength, "sequence-length", 0, "operations of one sequence, each from a reset and fresh reads (default 100; 20 a client)")
	fs.DurationVar(&m.cfg.ShrinkBudget, "shrink-time", explore.DefaultShrinkBudget, "most time spent shrinking")
	fs.StringVar(&m.reportDir, "report-dir", "reports/explore", "where explore.json, explore-junit.xml, explore.html and explore-repro.sh are written")
	fs.DurationVar(&m.timeout, "timeout", 10*time.Second, "time limit of one request")
	fs.BoolVar(&m.noReset, "no-reset", false, "never send POST /_sim/reset to the observer (default: before each sequence, when it answers it)")
	fs.StringVar(&m.cfg.FailOn, "fail-on", "must", "the lowest level that stops and fails the run: must or should; a disagreement below it is listed and the run goes on")
	fs.Var(&m.skips, "skip", "leave out the disagreements of this rule (an ID or glob of docs/checks.md); repeatable")
	fs.StringVar(&m.baselineFile, "baseline", "", "YAML file of known failures (as gwconform run --baseline): a disagreement whose rule an entry's check or rule matches is listed as known and does not fail the run")
	fs.DurationVar(&m.cfg.Settle, "settle", link.DefaultSettle, "how long a change may take to appear at the observer after its answer (as gwconform run's --settle): a read that disagrees within it is read again; 0: the first read decides")
	fs.BoolVar(&m.noRestore, "no-restore", false, "leave the devices as the run left them (default: put each device the run changed back as it was)")
	fs.Usage = func() { io.WriteString(m.Stderr, exploreUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if m.cfg.Settle < 0 || m.cfg.Settle > time.Minute {
		return fmt.Errorf("--settle %s: from 0 to 1m", m.cfg.Settle)
	}
	fs.Visit(func(f *flag.Flag) { m.seedSet = m.seedSet || f.Name == "seed" })
	switch strings.ToLower(m.cfg.FailOn) {
	case "must", "should":
		m.cfg.FailOn = strings.ToUpper(m.cfg.FailOn)
	default:
		return fmt.Errorf("--fail-on %q: must or should", m.cfg.FailOn)
	}
	m.cfg.Skip = m.skips
	if m.baselineFile != "" {
		b, err := safefile.ReadFile(m.baselineFile, safefile.MaxInput)
		if err != nil {
			return fmt.Errorf("--baseline: %w", err)
		}
		bl, err := report.ParseBaseline(b)
		if err != nil {
			return fmt.Errorf("--baseline: %w", err)
		}
		m.cfg.Known = func(rule string) string { return bl.KnownRule(rule, time.Now()) }
	}
	if m.cfg.Duration > 0 && m.cfg.Operations > 0 {
		return errors.New("--duration and --operations: give one")
	}
	if m.cfg.Duration < 0 || m.cfg.Operations < 0 || m.cfg.Clients < 1 || m.cfg.RoundLength < 0 || m.timeout <= 0 || m.cfg.ShrinkBudget <= 0 {
		return errors.New("--duration, --operations, --sequence-length must not be negative, --clients must be at least 1, --timeout and --shrink-time positive")
	}
	if m.cfg.Clients > 1000 || m.cfg.RoundLength > 100000 {
		return fmt.Errorf("--clients must be at most 1000 and --sequence-length at most 100000, not %d and %d", m.cfg.Clients, m.cfg.RoundLength)
	}
	if !m.seedSet {
		m.cfg.Seed = time.Now().UnixNano() % 1_000_000_000
	}
	if m.adminToken == "" {
		m.adminToken = os.Getenv("GWSIM_ADMIN_TOKEN")
		m.tokenFromEnv = m.adminToken != ""
	}
	m.observerNamed = m.observer != ""
	return nil
}

// Open loads the fleet, starts the embedded simulator or checks that the
// target answers, and finds the observer.
func (m *exploreMain) Open(ctx context.Context) error {
	f := fleet.Demo()
	if m.fleetFile != "" {
		var err error
		if f, err = fleet.Load(m.fleetFile); err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
	}
	w, err := explore.NewWorld(f)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	base := m.target
	if base == "" {
		sim, err := m.StartEmbedded(f)
		if err != nil {
			return fmt.Errorf("starting the embedded simulator: %w", err)
		}
		m.embedded, base = sim, sim.URL()
	} else {
		for _, u := range strings.Split(base, ",") {
			u = strings.TrimRight(strings.TrimSpace(u), "/")
			if err := reachable(ctx, u, m.timeout); err != nil {
				return fmt.Errorf("--target %s unreachable: %v", load.RedactURL(u), err)
			}
		}
	}
	var signer client.Signer
	if len(f.SignCommand) > 0 || f.Scheme() != auth.MD5 {
		signer, _ = catalog.SignerFor(f, m.fleetFile)
	}
	m.tgt, err = explore.NewTarget(base, f, signer, nil, m.timeout)
	if err != nil {
		return fmt.Errorf("--target: %w", err)
	}
	// The token goes to the observer only (its reads and its reset): to
	// --observer when the command line names it, else to the first
	// target's admin API. One from the environment goes there only if the
	// user named it on the command line or it is on loopback; an observer
	// read from an explore file is never named.
	tok := adminToken{value: m.adminToken, fromEnv: m.tokenFromEnv}
	obs, named := m.observer, m.observerNamed
	if obs == "" {
		obs, named = m.tgt.Bases()[0], false
	}
	m.tgt.AdminToken, m.tgt.Reset = tok.to(obs, named, m.Stderr, m.prog()), !m.noReset
	switch {
	case m.observer != "":
		if !m.tgt.ProbeObserver(ctx, w, m.observer) {
			return fmt.Errorf("--observer %s does not answer GET /_sim/gateways/{mac}/devices/{sn} for the fleet's first device", load.RedactURL(m.observer))
		}
	default:
		m.tgt.ProbeObserver(ctx, w, m.tgt.Bases()[0])
	}
	m.cfg.Target, m.cfg.World, m.cfg.ReportDir = m.tgt, w, m.reportDir
	m.cfg.Progress = m.Stderr
	return nil
}

// prog is the command's name in what it prints.
func (m *exploreMain) prog() string {
	if m.replaying {
		return "gwconform replay"
	}
	return "gwconform explore"
}

// Run explores, writes the reports and returns the exit code.
func (m *exploreMain) Run(ctx context.Context) int {
	x, err := explore.New(m.cfg)
	if err != nil {
		fmt.Fprintln(m.Stderr, "gwconform explore:", shown(err))
		return report.ExitConfig
	}
	fmt.Fprintf(m.Stderr, "gwconform explore: seed %d against %s, --fail-on %s\n", m.cfg.Seed, explore.RedactURLs(m.tgt.BaseURL), strings.ToLower(m.cfg.FailOn))
	var saved []explore.Saved
	if !m.noRestore {
		saved = m.tgt.Snapshot(ctx, m.cfg.World)
	}
	rep, err := x.Run(ctx)
	if !m.noRestore {
		// Put back what the run changed, also after an error or an
		// interruption (with a context of its own).
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		n, rerr := m.tgt.Restore(rctx, saved, x.Touched())
		cancel()
		switch {
		case rerr != nil:
			fmt.Fprintf(m.Stderr, "gwconform explore: putting the devices back: %d put back; %s\n", n, shown(rerr))
		case n > 0:
			fmt.Fprintf(m.Stderr, "gwconform explore: %d device(s) put back as they were before the run\n", n)
		}
	}
	if err != nil {
		fmt.Fprintln(m.Stderr, "gwconform explore:", shown(err))
		return report.ExitConfig
	}
	if m.embedded != nil {
		rep.Target += " (embedded gwsim)"
	}
	if err := explore.WriteReports(m.reportDir, rep, m.tgt.Reset); err != nil {
		fmt.Fprintln(m.Stderr, "gwconform explore: writing the reports:", shown(err))
		return report.ExitConfig
	}
	io.WriteString(m.Stdout, printable.Lines(rep.Summary()))
	fmt.Fprintf(m.Stdout, "reports in %s\n", m.reportDir)
	if rep.Failed() {
		return report.ExitFail
	}
	return report.ExitPass
}

// Close stops the embedded simulator.
func (m *exploreMain) Close() error {
	if m.tgt != nil {
		m.tgt.Close()
		m.tgt = nil
	}
	if m.embedded != nil {
		err := m.embedded.Close()
		m.embedded = nil
		return err
	}
	return nil
}

// isExploreFile reports whether path is an explore.json.
func isExploreFile(path string) bool {
	b, err := safefile.ReadFile(path, safefile.MaxInput)
	return err == nil && explore.IsFile(b)
}

// modelFinding is the shrunk sequence of the first finding of check id
// (model.<check>) of the model-based phase in the report at path, as an
// explore file: gwconform replay runs it again as it runs explore's.
func modelFinding(path, id string) (*explore.File, error) {
	doc, err := loadReport(path)
	if err != nil {
		return nil, err
	}
	if doc.Model == nil {
		return nil, fmt.Errorf("%s has no model-based phase", path)
	}
	for _, mf := range doc.Model.Findings {
		if mf.Check != id || len(mf.Sequence) == 0 {
			continue
		}
		var ops []explore.Op
		if err := json.Unmarshal(mf.Sequence, &ops); err != nil || len(ops) == 0 {
			return nil, fmt.Errorf("%s: the sequence of %s cannot be read", path, id)
		}
		ef := &explore.File{Kind: explore.FileKind, Report: explore.Report{Seed: doc.Model.Seed, Target: doc.Target,
			Found: &explore.Finding{Kind: "disagreement", Ops: ops}}}
		if doc.Observer != report.ObserverNone {
			ef.Observer = doc.Observer
		}
		return ef, nil
	}
	return nil, fmt.Errorf("%s has no finding of %s to replay (seed %d)", path, id, doc.Model.Seed)
}

// openExploreReplay opens the target of ef's shrunk sequence: --target,
// else the recorded one when it is on loopback. The exploreMain comes
// back with an error of its Open too, for its Close.
func openExploreReplay(ctx context.Context, path string, ef *explore.File, o replayOptions, stdout, stderr io.Writer) (*exploreMain, error) {
	if ef.Found == nil || len(ef.Found.Ops) == 0 {
		return nil, fmt.Errorf("%s found nothing to replay (seed %d passed)", path, ef.Seed)
	}
	target := o.target
	if target == "" {
		if strings.HasSuffix(ef.Target, " (embedded gwsim)") {
			return nil, errors.New("the run was against the embedded simulator, which is gone; give --target URL")
		}
		target = ef.Target
		for _, u := range strings.Split(target, ",") {
			if !tokenrule.OnLoopback(strings.TrimSpace(u)) {
				// An explore file is input from outside: the fleet's signed
				// requests go to a target it names only on loopback.
				return nil, fmt.Errorf("%s names the target %s, which is not on loopback: the fleet's signed requests go there only when the command line says so: give --target URL",
					printable.String(path), printable.String(tokenrule.Redact(strings.TrimSpace(u))))
			}
		}
	}
	m := &exploreMain{Stdout: stdout, Stderr: stderr, target: target, fleetFile: o.fleetFile, observer: o.observer,
		adminToken: o.adminToken, timeout: o.timeout, noReset: !ef.Reset}
	if m.fleetFile == "" {
		m.fleetFile = os.Getenv("GWCONFORM_FLEET")
	}
	m.observerNamed, m.replaying = m.observer != "", true
	if m.observer == "" && ef.Observer != "" && o.target == "" {
		m.observer = ef.Observer // from the file: never sent a token from the environment unless on loopback
	}
	if m.adminToken == "" {
		m.adminToken = os.Getenv("GWSIM_ADMIN_TOKEN")
		m.tokenFromEnv = m.adminToken != ""
	}
	return m, m.Open(ctx)
}

// replay runs ef's shrunk sequence again with the model: REPRODUCED (exit
// 0) when the target still disagrees with it, CHANGED (1) when it agrees.
func (m *exploreMain) replay(ctx context.Context, ef *explore.File) int {
	m.cfg.Seed, m.cfg.Clients, m.cfg.Progress = ef.Seed, max(1, ef.Clients), nil
	x, err := explore.New(m.cfg)
	if err != nil {
		fmt.Fprintln(m.Stderr, "gwconform replay:", shown(err))
		return report.ExitConfig
	}
	fmt.Fprintf(m.Stdout, "Replaying the shrunk sequence of seed %d (%d operations) against %s\n", ef.Seed, len(ef.Found.Ops), explore.RedactURLs(m.tgt.BaseURL))
	again, err := x.Replay(ctx, ef.Found, m.Stdout)
	if err != nil {
		fmt.Fprintln(m.Stderr, "gwconform replay:", shown(err))
		return report.ExitConfig
	}
	if again {
		fmt.Fprintln(m.Stdout, "REPRODUCED: the target still disagrees with the model")
		return report.ExitPass
	}
	fmt.Fprintln(m.Stdout, "CHANGED: the target now agrees with the model")
	return report.ExitFail
}
