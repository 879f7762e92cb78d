package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/formatter"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance"
	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/checks"
	"github.com/gwdmi/gwtools/conformance/engine"
	"github.com/gwdmi/gwtools/conformance/link"
	"github.com/gwdmi/gwtools/conformance/observer"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
	"github.com/gwdmi/gwtools/simulator"
)

// runOptions are gwconform run's flags.
type runOptions struct {
	Target string
	// base is Target as check read it: what the run's client, console
	// and reports use.
	base       client.BaseURL
	FleetFile  string
	ReportDir  string
	FailOn     string
	Rate       float64
	DryRun     bool
	Timeout    time.Duration
	AdminToken string
	// Observer is the base URL of a service answering the CONTRACT 7
	// reads (--observer; default: the target, when it answers them);
	// NoObserver runs without one on purpose (--no-observer).
	Observer   string
	NoObserver bool
	Seed       int64
	// KeepExchanges keeps every check's exchanges (internal, for replay).
	KeepExchanges bool
	// AllowPartial: a PARTIAL run (filtered, or a device type, format,
	// operation or rule not covered) exits 0 instead of 1.
	AllowPartial bool
	// SkipPreflight runs the checks even when the target's answers to the
	// pre-flight requests are not this interface's.
	SkipPreflight bool
	// Cert is the bundle and mode (--bundle, --mode, --product...).
	Cert        certification
	ProductFile string
	// BaselineFile lists known failures (--baseline).
	BaselineFile string
	// Parallel is how many workers share the checks (--parallel); Worker,
	// Workers and WorkerReport are set by the run that starts a worker.
	Parallel        int
	Worker, Workers int
	WorkerReport    string
	// Color is auto, always or never; Verbose shows every observation.
	Color   string
	Verbose bool
	// Checks and Skips select checks by ID or glob (--check, --skip).
	Checks, Skips listFlag
	// MaxRequests caps the run's requests (--max-requests).
	MaxRequests int
	// RatePerOp limits each operation's requests per second (--rate-per-op).
	RatePerOp float64
	// RerunFailed is a report.json or bundle whose failed checks are run
	// again, alone, with its seed (--rerun-failed).
	RerunFailed string
	// ReportCredentials writes api_keys whole in the reports; by default
	// they show their first four characters and "…".
	ReportCredentials bool
	// Concurrency is the most requests in flight at once (--concurrency).
	Concurrency int
	// Settle is how long a change may take to appear at the observer
	// (--settle).
	Settle time.Duration
	// ModelOperations, ModelTime and ModelSeed are the model-based
	// phase's budget and seed (--model-operations, --model-time,
	// --model-seed).
	ModelOperations int
	ModelTime       time.Duration
	ModelSeed       int64
}

// Embedded is a target started in this process: its base URL, serving
// the interface and gwsim's admin API.
type Embedded interface {
	URL() string
	Close() error
}

// startSimulator starts the embedded target: gwsim, with the run's fleet,
// on a free loopback port.
func startSimulator(f *fleet.Fleet) (Embedded, error) {
	return simulator.Start("127.0.0.1:0", simulator.Options{Fleet: f,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// runMain is gwconform run: ParseFlags reads and checks the command line,
// Open prepares the target (the fleet, the embedded simulator when there
// is no --target, reachability, gwsim's admin API, the pre-flight), Run
// runs the suite and says the exit code, Close stops what Open started.
type runMain struct {
	Stdout, Stderr io.Writer
	opts           runOptions
	// StartEmbedded starts the target when there is no --target
	// (startSimulator; the tests start a simulator with a deviation).
	StartEmbedded func(*fleet.Fleet) (Embedded, error)

	suite    types.SuiteConfig
	reporter types.ReporterConfig
	env      *engine.Env
	// model is the model-based phase's budget (checks.ModelBudget).
	model    checks.ModelBudget
	embedded Embedded
	target   string
	// ledger keeps every request of the run (client.Ledger).
	ledger   *client.Ledger
	baseline *report.Baseline
	console  bytes.Buffer
	// cleanups run at Close, last first.
	cleanups []func()
	// rerunIDs is how many checks --rerun-failed runs again; userSuite is
	// Ginkgo's configuration as its own flags set it, before --check,
	// --skip and --rerun-failed add to its focus.
	rerunIDs  int
	userSuite types.SuiteConfig
	// token is the admin token and where it came from (adminToken.to).
	token adminToken
	// terminal: stdout is a terminal, where the progress line is
	// rewritten in place.
	terminal bool
	// preflight are the pre-flight's refused valid requests, one line
	// each: failures of the target, which the run judges.
	preflight []string
}

// runCmd is gwconform run with its exit code: 0 pass, 1 failed or
// PARTIAL, 2 bad arguments, unreadable fleet, unreachable target, failed
// pre-flight.
func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return lifecycle(ctx, "gwconform", &runMain{Stdout: stdout, Stderr: stderr, StartEmbedded: startSimulator}, args, stderr)
}

// flagSet is gwconform run's flag set, bound to m.opts; Ginkgo's own
// flags (ginkgo.*) are bound through ginkgoValue.
func (m *runMain) flagSet(ginkgoValue func(flag.Value) flag.Value) *flag.FlagSet {
	fs := flag.NewFlagSet("gwconform run", flag.ContinueOnError)
	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "ginkgo.") {
			fs.Var(ginkgoValue(f.Value), f.Name, f.Usage)
		}
	})
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprint(m.Stderr, runUsage, "\nFlags:\n")
		fs.VisitAll(func(f *flag.Flag) {
			// Ginkgo's own flags are named in the text above; the
			// hidden worker flags are for the run that starts workers.
			if !strings.HasPrefix(f.Name, "ginkgo.") && !strings.HasPrefix(f.Name, "test.") && !strings.HasPrefix(f.Usage, "internal:") {
				if f.DefValue == "" || f.DefValue == "0" || f.DefValue == "false" {
					fmt.Fprintf(m.Stderr, "  --%s\t%s\n", f.Name, f.Usage)
				} else {
					fmt.Fprintf(m.Stderr, "  --%s\t%s (default %q)\n", f.Name, f.Usage, f.DefValue)
				}
			}
		})
	}
	m.opts.define(fs)
	return fs
}

// check checks the options once parsed: each value in its range, the
// URLs, the flags that exclude each other.
func (o *runOptions) check() error {
	if o.FailOn != "must" && o.FailOn != "should" {
		return fmt.Errorf("--fail-on must be must or should, not %q", o.FailOn)
	}
	switch o.Color {
	case "auto", "always", "never":
	default:
		return fmt.Errorf("--color must be auto, always or never, not %q", o.Color)
	}
	for _, c := range []struct {
		bad  bool
		name string
		v    any
	}{{o.Rate < 0, "--rate", o.Rate}, {o.RatePerOp < 0, "--rate-per-op", o.RatePerOp}, {o.MaxRequests < 0, "--max-requests", o.MaxRequests},
		{o.Parallel < 0, "--parallel", o.Parallel}} {
		if c.bad {
			return fmt.Errorf("%s must be 0 or more, not %v", c.name, c.v)
		}
	}
	if o.ModelOperations < 0 || o.ModelTime < 0 {
		return fmt.Errorf("--model-operations and --model-time must not be negative")
	}
	if o.Concurrency < 1 || o.Concurrency > 256 {
		return fmt.Errorf("--concurrency must be from 1 to 256, not %d", o.Concurrency)
	}
	if o.Settle < 0 {
		return fmt.Errorf("--settle must be 0 or more, not %v", o.Settle)
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout must be more than 0, not %v", o.Timeout)
	}
	if o.ReportDir == "" {
		return errors.New("--report-dir must not be empty")
	}
	if t := os.Getenv(workerTargetEnv); o.Worker > 0 && t != "" {
		// A worker's command line names its target without the user
		// information; the whole URL comes by the environment
		// (startWorkers).
		o.Target = t
	}
	if o.Target != "" {
		b, err := client.ParseBaseURL(o.Target)
		if err != nil {
			return fmt.Errorf("--target %w", err)
		}
		o.base = b
	}
	if o.Observer != "" {
		b, err := client.ParseBaseURL(o.Observer)
		if err != nil {
			return fmt.Errorf("--observer %w", err)
		}
		if b.URL().User != nil {
			// The URL is printed and recorded in the certificate.
			return errors.New("--observer carries credentials in its URL: give the token with --admin-token (or $GWSIM_ADMIN_TOKEN) instead")
		}
	}
	if o.Observer != "" && o.NoObserver {
		return errors.New("--observer and --no-observer exclude each other")
	}
	return nil
}

// ParseFlags reads gwconform run's flags (Ginkgo's, with the ginkgo.
// prefix, included) and checks them.
func (m *runMain) ParseFlags(args []string) error {
	// Ginkgo's flags live on flag.CommandLine with the ginkgo. prefix; they
	// are parsed here through their own values, so that Ginkgo sees their
	// settings but not our --parallel as go test's -parallel.
	fs := m.flagSet(func(v flag.Value) flag.Value { return v })
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o := &m.opts
	// The token's default is read after parsing, so that no usage text
	// ever shows it.
	m.token = adminTokenOf(o.AdminToken, os.Getenv("GWSIM_ADMIN_TOKEN"))
	o.AdminToken = m.token.value
	if err := o.check(); err != nil {
		return err
	}
	if err := checkCert(o); err != nil {
		return err
	}
	if err := m.configureGinkgo(); err != nil {
		return err
	}
	if err := m.readRerun(); err != nil {
		return err
	}
	if err := m.readBaseline(); err != nil {
		return err
	}
	// A dry run sends nothing and overwrites no real report: it writes
	// reports only where --report-dir says.
	reportDirSet := false
	fs.Visit(func(f *flag.Flag) { reportDirSet = reportDirSet || f.Name == "report-dir" })
	if o.DryRun && !reportDirSet {
		dir, err := os.MkdirTemp("", "gwconform-dry-run")
		if err != nil {
			return err
		}
		m.cleanups = append(m.cleanups, func() { os.RemoveAll(dir) })
		o.ReportDir = dir
	}
	// The console goes into a bundle as it was shown.
	if o.Cert.Bundle != "" {
		m.Stdout, m.Stderr = io.MultiWriter(m.Stdout, &m.console), io.MultiWriter(m.Stderr, &m.console)
	}
	return nil
}

// configureGinkgo sets Ginkgo's suite and reporter from the options: the
// seed, colour, verbosity, and the checks chosen or skipped.
func (m *runMain) configureGinkgo() error {
	o := &m.opts
	m.suite, m.reporter = ginkgo.GinkgoConfiguration()
	m.userSuite = m.suite
	m.terminal = isTerminal(m.Stdout)
	if o.Seed != 0 {
		m.suite.RandomSeed = o.Seed
	}
	switch o.Color {
	case "never":
		m.reporter.NoColor = true
	case "auto":
		m.reporter.NoColor = m.reporter.NoColor || !colorful(m.Stdout)
	}
	if o.Verbose {
		m.reporter.Verbose = true
	} else {
		m.reporter.Succinct, m.reporter.SilenceSkips = true, true
	}
	if len(o.Checks) > 0 {
		if err := checksMatch(o.Checks); err != nil {
			return err
		}
		m.suite.FocusStrings = append(m.suite.FocusStrings, focusOnGlobs(o.Checks))
	}
	if len(o.Skips) > 0 {
		m.suite.SkipStrings = append(m.suite.SkipStrings, focusOnGlobs(o.Skips))
	}
	if m.suite.LabelFilter != "" {
		if _, err := types.ParseLabelFilter(m.suite.LabelFilter); err != nil {
			return fmt.Errorf("--ginkgo.label-filter: %w", err)
		}
	}
	return nil
}

// readRerun focuses the run on the checks that failed in --rerun-failed's
// report, with its seed unless --seed is given.
func (m *runMain) readRerun() error {
	o := &m.opts
	if o.RerunFailed == "" {
		return nil
	}
	ids, seed, err := failedIn(o.RerunFailed)
	if err != nil {
		return fmt.Errorf("--rerun-failed: %w", err)
	}
	if o.Seed == 0 {
		m.suite.RandomSeed = seed
	}
	m.suite.FocusStrings = append(m.suite.FocusStrings, focusOnGlobs(ids))
	// A rerun is PARTIAL by design, and exits 1 as any PARTIAL run does
	// unless --allow-partial.
	m.rerunIDs = len(ids)
	fmt.Fprintf(m.Stdout, "gwconform: running again the %d check(s) that failed in %s, seed %d\n", len(ids), o.RerunFailed, m.suite.RandomSeed)
	return nil
}

// readBaseline reads --baseline, the known failures, into the run and
// into its certificate.
func (m *runMain) readBaseline() error {
	o := &m.opts
	if o.BaselineFile == "" {
		return nil
	}
	b, err := safefile.ReadFile(o.BaselineFile, safefile.MaxInput)
	if err != nil {
		return fmt.Errorf("--baseline: %w", err)
	}
	if m.baseline, err = report.ParseBaseline(b); err != nil {
		return fmt.Errorf("%s: %w", o.BaselineFile, err)
	}
	if o.Cert.Mode == "certified" {
		if err := mustCovered(m.baseline); err != nil {
			return err
		}
	}
	o.Cert.Baseline = b
	return nil
}

// Open loads the fleet, starts the embedded simulator when there is no
// target, makes the client, and checks that the target answers: it can be
// connected to, whether it has gwsim's admin API, and the pre-flight.
func (m *runMain) Open(ctx context.Context) error {
	o := m.opts
	f := fleet.Demo()
	if o.FleetFile != "" {
		var err error
		if f, err = fleet.Load(o.FleetFile); err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
	}
	tgt, err := f.Target()
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	// A certification that cannot be one is refused before anything is
	// sent.
	if o.Cert.Mode == "certified" {
		if refusals := m.certifiedRefusals(f); len(refusals) > 0 {
			for _, r := range refusals {
				fmt.Fprintln(m.Stderr, "gwconform:", r)
			}
			return errUsage
		}
	}
	e := &engine.Env{Bench: catalog.Bench{Fleet: f, Target: tgt, Location: f.Location(), Now: time.Now},
		DryRun: o.DryRun, AdminToken: o.AdminToken, MaxRequests: o.MaxRequests, Settle: o.Settle, Concurrency: o.Concurrency}
	m.model = checks.ModelBudget{Operations: modelOperations(o.ModelOperations), Time: o.ModelTime, Seed: o.ModelSeed, Baseline: m.baseline}
	base := o.base
	if o.Target == "" {
		sim, err := m.StartEmbedded(f)
		if err != nil {
			return fmt.Errorf("starting the embedded simulator: %w", err)
		}
		m.embedded = sim
		if base, err = client.ParseBaseURL(sim.URL()); err != nil {
			return fmt.Errorf("the embedded simulator's URL %w", err)
		}
		e.Embedded = true
		if o.Observer == "" && !o.NoObserver {
			e.Observer, e.ObserverCounts = sim.URL(), true
		}
	}
	// A password in --target is sent (user information is the target's
	// own business) but printed and stored nowhere: the console, the
	// reports and the bundle's manifest name the target without it.
	m.target = base.Redacted()
	if e.Embedded {
		m.target += " (embedded gwsim)"
	}
	e.Signer, e.KnownSign = catalog.SignerFor(f, o.FleetFile)
	// No request of the run repeats another by accident (CONTRACT 1): a
	// timestamp moves at most half the window to avoid one (the window's
	// own checks send half the window away and expect it taken). A run
	// sends its commonest request (the first device's valid command)
	// some 130 times, each accepted one in a second of its own.
	shift := client.DefaultMaxShift
	if w := f.Window(); w > 0 {
		shift = max(min(w/2, shift), time.Nanosecond)
	}
	m.ledger = client.NewLedger(shift)
	if e.Client, err = client.NewAt(base, client.Config{Signer: e.Signer, Timeout: o.Timeout, Rate: o.Rate, RatePerPath: o.RatePerOp, SharedBackoff: true, Ledger: m.ledger}); err != nil {
		return err
	}
	if !o.DryRun && !e.Embedded {
		if err := e.Client.Reach(ctx); err != nil {
			if cause := engine.TransportCause(base, err); cause != "" {
				return errors.New(cause)
			}
			return fmt.Errorf("target unreachable: %v", err)
		}
	}
	if err := m.openObserver(ctx, e); err != nil {
		return err
	}
	if o.Workers <= 1 {
		// The fleet's devices as they are before anything is sent, to
		// find those the target changes unasked.
		e.WatchDevices(ctx)
	}
	if !o.DryRun && !o.SkipPreflight {
		// As many requests in flight as the run has workers, and at
		// least --concurrency.
		refused, err := engine.Preflight(ctx, e, parallelism(o, e.Fleet, io.Discard))
		if err != nil {
			return err
		}
		// A refused valid request is the target's failure, judged by the
		// run: the console's first lines name it and its answer.
		for _, line := range refused {
			fmt.Fprintln(m.Stdout, "gwconform:", shown(line))
		}
		m.preflight = refused
	}
	m.env = e
	return nil
}

// openObserver finds who shows the effects of the run's requests: the
// --observer given, else the target itself when it answers the CONTRACT 7
// reads. An --observer that does not answer them is a bad argument; a
// target that does not is run without effects, which the reports say in
// one line. --mode certified needs an observer or --no-observer.
func (m *runMain) openObserver(ctx context.Context, e *engine.Env) error {
	o := m.opts
	switch {
	case o.NoObserver:
		e.Observer, e.NotObserved = "", engine.NoObserverFlag
	case e.Observer != "":
		// The embedded simulator shows its own effects.
	case o.DryRun:
		e.Observer = o.Observer
		if e.Observer == "" {
			e.NotObserved = engine.NotObservedPrefix + ": a dry run reads nothing"
		}
	default:
		base, explicit := strings.TrimRight(o.Observer, "/"), o.Observer != ""
		if !explicit {
			base = e.Client.Base().String()
		}
		// Bounded by the run's timeout: a target that never answers must
		// not hold the run here for the observer's own 10 s.
		actx, cancel := context.WithTimeout(ctx, o.Timeout)
		token := m.token.to(base, explicit, m.Stdout, "gwconform")
		p := observer.ProbeAt(actx, base, token, e.Target.MAC, e.AnyDeviceSN())
		cancel()
		e.AdminToken = token
		switch {
		case p.OK:
			e.Observer, e.ObserverCounts = base, p.Counts
		case explicit && p.NeedsToken:
			return fmt.Errorf("--observer %s answered 401: give its token with --admin-token (or $GWSIM_ADMIN_TOKEN)", base)
		case explicit:
			return fmt.Errorf("--observer %s does not answer the CONTRACT 7 reads: %s (docs/observer.md)", base, p.Why)
		case p.NeedsToken:
			e.NotObserved = engine.NotObservedPrefix + ": the target's reads of CONTRACT 7 answered 401: needs --admin-token"
		default:
			e.NotObserved = engine.NotObservedPrefix + ": the target does not answer the reads of CONTRACT 7; give --observer URL (docs/observer.md)"
		}
	}
	if o.Cert.Mode == "certified" && e.Observer == "" && !o.NoObserver {
		return fmt.Errorf("--mode certified observes the effects of every request: give --observer URL (docs/observer.md), or --no-observer to certify without them, which the certificate records (%s)", e.NotObserved)
	}
	return nil
}

// Close stops the embedded simulator and removes temporary files.
func (m *runMain) Close() error {
	for i := len(m.cleanups) - 1; i >= 0; i-- {
		m.cleanups[i]()
	}
	m.cleanups = nil
	if m.embedded != nil {
		if m.env != nil {
			m.env.CloseIdleConnections()
		}
		err := m.embedded.Close()
		m.embedded = nil
		return err
	}
	return nil
}

// Run runs the suite (with its workers when --parallel) and returns the
// exit code.
func (m *runMain) Run(ctx context.Context) int {
	o, e := m.opts, m.env
	e.Seed = m.suite.RandomSeed
	cfg := engine.Config{Env: e, Suite: m.suite, Reporter: m.reporter, Target: m.target, ReportDir: o.ReportDir,
		Write: report.WriteOptions{FailOnShould: o.FailOn == "should", AllowPartial: o.AllowPartial, Today: time.Now(),
			Catalog: report.CatalogID{Harness: harnessInfo().Version}}}
	cfg.Write.Baseline = m.baseline
	cfg.Write.FleetFile = o.FleetFile
	cfg.Write.Effects = e.NotObserved
	cfg.Write.KeepEveryExchange = o.KeepExchanges
	cfg.Write.Observer = e.Observer
	cfg.Write.Preflight = m.preflight
	cfg.Write.Filters = m.filters()
	e.ReportCredentials = o.ReportCredentials
	if o.Workers > 1 {
		// A worker: its own devices, its share of the checks.
		e.Worker, e.Workers = o.Worker, o.Workers
		m.ledger.Share(o.Worker, o.Workers)
		e.Target = engine.WorkerTarget(e.Fleet, e.Target, o.Worker)
		cfg.WorkerReport = o.WorkerReport
	} else if n := parallelism(o, e.Fleet, m.Stderr); n > 1 {
		dir, err := os.MkdirTemp("", "gwconform-workers")
		if err != nil {
			fmt.Fprintln(m.Stderr, "gwconform:", shown(err))
			return report.ExitConfig
		}
		defer os.RemoveAll(dir)
		e.Worker, e.Workers = 0, n
		m.ledger.Share(0, n)
		ws, cmds, err := m.startWorkers(ctx, n, dir)
		if err != nil {
			fmt.Fprintln(m.Stderr, "gwconform:", shown(err))
			for _, c := range cmds {
				c.Process.Kill()
			}
			return report.ExitConfig
		}
		cfg.Workers = ws
		fmt.Fprintf(m.Stdout, "gwconform: %d workers, each on its own devices\n", n)
	}
	// The console is ours: a progress line (on a terminal rewritten in
	// place, in a CI log a line every few seconds), then each failure once
	// and the summary. Ginkgo's own report, with its decorations and
	// source paths, shows only with -v (and goes into the bundle's
	// console.log too).
	flushLive := func() {}
	if o.Verbose {
		// Ginkgo's lines carry what targets answered: masked by value
		// as they go (the reports are masked when written).
		live := &maskedLines{w: m.Stdout, mask: engine.ConsoleMask(e)}
		flushLive = live.Flush
		formatter.ColorableStdOut = live
	} else {
		formatter.ColorableStdOut = io.Discard
	}
	if cfg.WorkerReport == "" && !o.Verbose {
		cfg.Progress, cfg.ProgressEvery, cfg.ProgressInPlace = m.Stdout, 5*time.Second, m.terminal
		if m.terminal {
			cfg.ProgressEvery = time.Second
		}
	}
	fmt.Fprintf(m.Stdout, "gwconform: %s against %s, seed %d\n", map[bool]string{true: "dry run", false: "checking"}[o.DryRun], m.target, e.Seed)
	doc, err := conformance.Execute(ctx, cfg, m.model)
	flushLive()
	if err != nil {
		fmt.Fprintln(m.Stderr, "gwconform: writing reports:", shown(err))
		return report.ExitConfig
	}
	if cfg.WorkerReport != "" {
		return report.ExitPass // the run that started this worker judges
	}
	report.WriteConsole(m.Stdout, doc, report.ConsoleOptions{Color: !m.reporter.NoColor, Filters: m.filters()})
	if o.DryRun {
		printDryRun(m.Stdout, doc)
		return report.ExitPass
	}
	// A run cut short (interrupted, suite timeout) proves nothing about the
	// checks it did not reach; a PARTIAL one covered less than the
	// interface.
	code := report.ExitCode(doc, o.FailOn, o.AllowPartial)
	if o.Cert.Bundle != "" {
		cert := o.Cert
		cert.Observer, cert.NoObserver = e.Observer, o.NoObserver
		// Its line is printed first, so that the bundle's console.log
		// holds all the console showed.
		kind := "bundle"
		if o.Cert.Mode == "certified" {
			kind = "certification bundle"
		}
		fmt.Fprintf(m.Stdout, "%s: %s (check it with: gwconform verify %s %s)\n", kind, o.Cert.Bundle, o.Cert.Bundle, verifyHint(o.Cert))
		if err := writeBundle(cert, doc, o.ReportDir, m.console.Bytes(), e.Fleet, o.FailOn, time.Now()); err != nil {
			fmt.Fprintln(m.Stderr, "gwconform: writing the bundle:", shown(err))
			return report.ExitConfig
		}
	}
	return code
}

// startWorkers starts workers 1..n-1: this program again, as gwconform
// run with the hidden --worker flags, on the same target, fleet and seed;
// each writes its Ginkgo report as JSON into dir.
// workerTargetEnv carries a --parallel worker's target whole, user
// information included, from the run that starts it: a worker reads it
// only with --worker.
const workerTargetEnv = "GWCONFORM_WORKER_TARGET"

func (m *runMain) startWorkers(ctx context.Context, n int, dir string) ([]*engine.Worker, []*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("--parallel: cannot find this program to start workers: %w", err)
	}
	var (
		ws   []*engine.Worker
		cmds []*exec.Cmd
	)
	for i := 1; i < n; i++ {
		done := make(chan error, 1)
		w := &engine.Worker{N: i, Report: filepath.Join(dir, fmt.Sprintf("worker-%d.json", i)),
			Log: filepath.Join(dir, fmt.Sprintf("worker-%d.log", i)), Done: done}
		args, env := m.workerCommand(i, n, dir, w)
		logf, err := safefile.CreateLog(w.Log, 0o644)
		if err != nil {
			return ws, cmds, err
		}
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			logf.Close()
			return ws, cmds, fmt.Errorf("--parallel: starting worker %d: %w", i, err)
		}
		go func() { done <- cmd.Wait(); logf.Close() }()
		ws = append(ws, w)
		cmds = append(cmds, cmd)
	}
	return ws, cmds, nil
}

// workerCommand is the command line and environment of worker i of n:
// the run's flags, its share of the rates and requests, its own report
// and console in dir.
// What is secret (the admin token, the target's user information) goes
// by the environment, which only the user's own processes can read.
func (m *runMain) workerCommand(i, n int, dir string, w *engine.Worker) (args, env []string) {
	o, e := m.opts, m.env
	base := e.Client.Base()
	args = []string{"run", "--target", base.Redacted(), "--seed", strconv.FormatInt(e.Seed, 10),
		"--worker", strconv.Itoa(i), "--workers", strconv.Itoa(n), "--worker-report", w.Report,
		"--report-dir", filepath.Join(dir, strconv.Itoa(i)), "--skip-preflight", "--allow-partial", "--color", "never",
		"--timeout", o.Timeout.String(), "--fail-on", o.FailOn, "--settle", o.Settle.String(), "--concurrency", strconv.Itoa(o.Concurrency)}
	if o.FleetFile != "" {
		args = append(args, "--fleet", o.FleetFile)
	}
	switch {
	case o.NoObserver:
		args = append(args, "--no-observer")
	case e.Observer != "":
		args = append(args, "--observer", e.Observer)
	}
	if o.Rate > 0 {
		args = append(args, "--rate", strconv.FormatFloat(o.Rate/float64(n), 'f', -1, 64))
	}
	if o.RatePerOp > 0 {
		args = append(args, "--rate-per-op", strconv.FormatFloat(o.RatePerOp/float64(n), 'f', -1, 64))
	}
	if o.MaxRequests > 0 {
		args = append(args, "--max-requests", strconv.Itoa(max(o.MaxRequests/n, 1)))
	}
	for _, c := range o.Checks {
		args = append(args, "--check", c)
	}
	for _, s := range o.Skips {
		args = append(args, "--skip", s)
	}
	if o.RerunFailed != "" {
		args = append(args, "--rerun-failed", o.RerunFailed)
	}
	if o.ReportCredentials {
		args = append(args, "--report-credentials")
	}
	if m.suite.LabelFilter != "" {
		args = append(args, "--ginkgo.label-filter", m.suite.LabelFilter)
	}
	// Focus and skip as the user gave them (--check and --skip are
	// passed as such above and become focus again in the worker).
	cfg, _ := ginkgo.GinkgoConfiguration()
	for _, f := range cfg.FocusStrings {
		args = append(args, "--ginkgo.focus", f)
	}
	for _, s := range cfg.SkipStrings {
		args = append(args, "--ginkgo.skip", s)
	}
	// The admin token and the target's user information go by the
	// environment, never the command line (which any user of the
	// machine can read).
	env = append(os.Environ(), "GWSIM_ADMIN_TOKEN="+e.AdminToken, workerTargetEnv+"="+e.Client.Base().String(), "NO_COLOR=1")
	if os.Getenv("GOMAXPROCS") == "" {
		// A worker sends one request at a time: one thread each
		// spares the machine the handoffs between threads.
		env = append(env, "GOMAXPROCS=1")
	}
	if os.Getenv("GOGC") == "" {
		// A worker holds little (its own checks' results) and
		// lives seconds: collecting less often spares the shared
		// cores some of the eight workers' garbage collection (a
		// sixth of a worker's CPU against a 20 ms target).
		env = append(env, "GOGC=400")
	}
	return args, env
}

const runUsage = `Usage: gwconform run [--target URL] [--fleet FILE] [--report-dir DIR] [--fail-on must|should]
         [--check ID|GLOB]... [--skip ID|GLOB]... [--rerun-failed REPORT] [--baseline FILE]
         [--parallel N] [--concurrency N] [--rate R] [--rate-per-op R] [--max-requests N] [--timeout D] [--settle D]
         [--observer URL] [--no-observer] [--admin-token T] [--seed N] [--allow-partial] [--skip-preflight] [--dry-run]
         [--bundle FILE.tar.gz] [--mode ordinary|certified] [--sign-key KEY] [--product NAME]
         [--product-version V] [--product-file FILE] [--report-credentials]
         [--model-operations N] [--model-time D] [--model-seed S]
         [--color auto|always|never] [-v] [--ginkgo.* flags]

Runs the conformance checks against URL, or against the simulator started
in-process when no --target is given. Exit 0: no check failed at the
--fail-on level and the run covered the whole interface (the MUST effect
checks left out only with --no-observer, which the verdict names); 1: some
check failed, or the run was PARTIAL (filtered, a device type, format,
operation or rule not covered, or MUST effect checks not run for want of an
observer) without --allow-partial; 2: bad arguments,
unreadable fleet, unreachable target, or a pre-flight that found a cause
in the set-up, with one line naming it: a target that does not speak HTTP
or this interface, every operation 404 at the base URL, every request
refused for its credentials or the fleet's gateway, a device of the fleet
the target does not have, or an api key of the fleet refused for its
credentials. A valid request the target refuses for any other reason is
the target's failure: the console's first lines name it, and the run goes
on and judges it.

Ginkgo's own flags work with the ginkgo. prefix, for example
--ginkgo.label-filter='level:MUST && format:xml' or --ginkgo.focus=dimming.
`

// define puts gwconform run's own flags on fs.
func (o *runOptions) define(fs *flag.FlagSet) {
	fs.StringVar(&o.Target, "target", "", "base URL of the implementation under test; empty: the simulator, in-process")
	fs.StringVar(&o.FleetFile, "fleet", "", "fleet file with the target's credentials, gateway and devices; default: the demo fleet")
	fs.StringVar(&o.ReportDir, "report-dir", "reports/latest", "where the reports ("+reportFiles()+") are written")
	fs.StringVar(&o.FailOn, "fail-on", "must", "exit 1 when a check fails at this level: must or should")
	fs.Float64Var(&o.Rate, "rate", 0, "at most this many requests per second (0: no limit)")
	fs.BoolVar(&o.DryRun, "dry-run", false, "list the checks and the requests they would send, without sending")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Second, "time limit of one request, reading the answer included")
	fs.DurationVar(&o.Settle, "settle", link.DefaultSettle, "how long a change may take to appear at the observer after its answer (an asynchronous device);\n"+
		"the effect checks wait for it up to this long, and the report says how long each took (0: read at once)")
	fs.StringVar(&o.AdminToken, "admin-token", "", "bearer token of the observer (a gwsim target's admin API) (default: from $GWSIM_ADMIN_TOKEN)")
	fs.StringVar(&o.Observer, "observer", "", "base URL of a service answering the reads of CONTRACT 7 about the target's devices and messages,\n"+
		"through which the effect checks see what each request did (docs/observer.md); default: the target, when it answers them")
	fs.BoolVar(&o.NoObserver, "no-observer", false, "run without observing effects, on purpose (--mode certified needs an observer or this; the certificate records it)")
	fs.Int64Var(&o.Seed, "seed", 0, "seed of the values drawn and the spec order (0: Ginkgo picks one and reports it)")
	fs.BoolVar(&o.AllowPartial, "allow-partial", false, "exit 0 on a PARTIAL run (filtered, or a device type, format, operation or rule not covered)")
	fs.BoolVar(&o.SkipPreflight, "skip-preflight", false, "run the checks even when the target's answers are not this interface's")
	fs.StringVar(&o.Cert.Bundle, "bundle", "", "also write a certification bundle (FILE.tar.gz): reports, console log, manifest, fleet without secrets, hashes")
	fs.StringVar(&o.Cert.SignKeyFile, "sign-key", "", "sign the bundle with this private key (gwconform keygen): gwconform verify --key KEY.pub then shows who wrote it")
	fs.StringVar(&o.Cert.Mode, "mode", "ordinary", "ordinary, or certified: every check, a full fleet, no filter; only such a bundle says certified")
	fs.StringVar(&o.Cert.Product, "product", "", "name of the product under test, for the bundle's manifest")
	fs.StringVar(&o.Cert.ProductVersion, "product-version", "", "version of the product under test, for the bundle's manifest")
	fs.IntVar(&o.Concurrency, "concurrency", engine.DefaultConcurrency, "the most requests in flight at once: the checks of a device or a gateway's messages that judge only an\n"+
		"answer, or a refusal that must change nothing, are sent together; changes to one device stay in order;\n"+
		"1 sends every request alone, one after another")
	fs.IntVar(&o.Parallel, "parallel", 0, "run the checks in this many worker processes, each on its own devices (default: up to 8, as many\n"+
		"as the fleet has devices of every type on the tested gateway; 1 with the demo fleet)")
	fs.IntVar(&o.Worker, "worker", 0, "internal: this process is worker N of a --parallel run")
	fs.IntVar(&o.Workers, "workers", 0, "internal: the number of workers of a --parallel run")
	fs.StringVar(&o.WorkerReport, "worker-report", "", "internal: where a worker writes its results for the run that started it")
	fs.BoolVar(&o.KeepExchanges, "keep-exchanges", false, "internal: keep every check's exchanges in the reports, passed ones too (gwconform replay)")
	fs.StringVar(&o.Color, "color", "auto", "colour on the console: auto (only on a terminal, not with NO_COLOR or TERM=dumb), always or never")
	fs.BoolVar(&o.Verbose, "v", false, "verbose: every check and every INFO observation on the console (the reports always have them)")
	fs.Var(&o.Checks, "check", "run only this check (an ID, or a glob such as 'command.light-dimmer.*'); repeatable")
	fs.Var(&o.Skips, "skip", "do not run this check (an ID or a glob); repeatable")
	fs.IntVar(&o.MaxRequests, "max-requests", 0, "send at most this many requests; a run that reaches it stops, INCOMPLETE (0: no limit)")
	fs.Float64Var(&o.RatePerOp, "rate-per-op", 0, "at most this many requests per second to each operation's path, besides --rate overall (0: no limit)")
	fs.StringVar(&o.RerunFailed, "rerun-failed", "", "run exactly the checks that failed in this report.json or bundle, with its seed")
	fs.StringVar(&o.BaselineFile, "baseline", "", "YAML file of known failures (check, reason, owner, link, expires): shown as expected failures, not counted; an entry that passes, expired or names no check fails the run")
	fs.StringVar(&o.ProductFile, "product-file", "", "file with name: and version: lines, instead of --product and --product-version")
	fs.IntVar(&o.ModelOperations, "model-operations", checks.DefaultModelOperations, "the model-based phase's budget of operations: random sequences over every account, gateway,\n"+
		"device, field subset and identifier origin, judged by the model (0: no phase; --mode certified needs it)")
	fs.DurationVar(&o.ModelTime, "model-time", 0, "the model-based phase's budget of time (0: a fifth of the time the run took before it, at least 10s)")
	fs.Int64Var(&o.ModelSeed, "model-seed", 0, "seed of the model-based phase's sequences (0: the run's seed)")
	fs.BoolVar(&o.ReportCredentials, "report-credentials", false, "write api_keys whole in the reports (default: their first four characters and …); secrets and signs never are")
}

// certifiedRefusals lists why this run cannot be a certification, naming
// the flags as the user gave them.
func (m *runMain) certifiedRefusals(f *fleet.Fleet) []string {
	o := m.opts
	var extra []string
	if len(o.Checks) > 0 {
		extra = append(extra, "--mode certified runs every check: drop --check")
	}
	if len(o.Skips) > 0 {
		extra = append(extra, "--mode certified runs every check: drop --skip")
	}
	if o.RerunFailed != "" {
		extra = append(extra, "--mode certified runs every check: drop --rerun-failed")
	}
	if o.ModelOperations == 0 {
		extra = append(extra, "--mode certified runs the model-based phase: drop --model-operations 0")
	}
	return certifiedRefusals(m.userSuite, o.AllowPartial, f, extra)
}

// filters are the options that select checks, as the user gave them.
func (m *runMain) filters() []string {
	o := m.opts
	var out []string
	for _, c := range o.Checks {
		out = append(out, "--check "+c)
	}
	for _, s := range o.Skips {
		out = append(out, "--skip "+s)
	}
	if o.RerunFailed != "" {
		out = append(out, fmt.Sprintf("--rerun-failed %s: %d check(s)", o.RerunFailed, m.rerunIDs))
	}
	for _, f := range m.userSuite.FocusStrings {
		out = append(out, "--ginkgo.focus "+f)
	}
	for _, f := range m.userSuite.SkipStrings {
		out = append(out, "--ginkgo.skip "+f)
	}
	if m.userSuite.LabelFilter != "" {
		out = append(out, "--ginkgo.label-filter "+m.userSuite.LabelFilter)
	}
	return out
}

// isTerminal says whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// mustCovered refuses, before anything is sent, a certified run's baseline
// that would excuse a MUST check: a certification admits no MUST failure.
func mustCovered(b *report.Baseline) error {
	levels := verifyExpect().Checks
	for _, e := range b.Entries {
		var must []string
		for id, l := range levels {
			if l == check.Must && e.Matches(id) {
				must = append(must, id)
			}
		}
		if len(must) > 0 {
			sort.Strings(must)
			return fmt.Errorf("--mode certified: baseline entry %q covers %d MUST check(s) (%s): a certification excuses no MUST failure", e.Check, len(must), must[0])
		}
	}
	return nil
}

// checkCert checks the bundle and mode flags.
func checkCert(o *runOptions) error {
	switch o.Cert.Mode {
	case "ordinary", "certified":
	default:
		return fmt.Errorf("--mode must be ordinary or certified, not %q", o.Cert.Mode)
	}
	if o.ProductFile != "" {
		name, version, err := productFile(o.ProductFile)
		if err != nil {
			return fmt.Errorf("--product-file: %w", err)
		}
		o.Cert.Product, o.Cert.ProductVersion = name, version
	}
	if o.Cert.Mode == "certified" {
		switch {
		case o.Cert.Bundle == "":
			return errors.New("--mode certified writes a bundle: give --bundle FILE.tar.gz")
		case o.Cert.Product == "" || o.Cert.ProductVersion == "":
			return errors.New("--mode certified names the product: give --product and --product-version (or --product-file)")
		case o.DryRun:
			return errors.New("--mode certified sends every check: drop --dry-run")
		}
	}
	if o.Cert.Bundle != "" && o.DryRun {
		return errors.New("--bundle records a run: a dry run sends nothing to bundle")
	}
	if o.Cert.SignKeyFile != "" {
		if o.Cert.Bundle == "" {
			return errors.New("--sign-key signs a bundle: give --bundle FILE.tar.gz")
		}
		k, err := readSignKey(o.Cert.SignKeyFile)
		if err != nil {
			return fmt.Errorf("--sign-key: %w", err)
		}
		o.Cert.SignKey = k
	}
	return nil
}

// reachable is client.Client.Reach for the commands whose clients are
// made inside their own packages (explore, diff, load): a client made as
// theirs are, with the same timeout, reaches base.
func reachable(ctx context.Context, base string, timeout time.Duration) error {
	c, err := client.New(client.Config{BaseURL: base, Timeout: timeout, RetryBudget: -1})
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	return c.Reach(ctx)
}

// printDryRun lists every check with the requests it would send.
func printDryRun(w io.Writer, d report.Document) {
	for _, r := range d.Results {
		if len(r.Exchanges) == 0 && !strings.Contains(r.Reason, "dry run") {
			continue // filtered out: it would not run
		}
		fmt.Fprintf(w, "%-7s %s\n", r.Level, r.ID)
		for _, ex := range r.Exchanges {
			fmt.Fprintf(w, "        %s %s (%d bytes)\n", ex.Method, ex.URL, len(ex.RequestBody))
			if ex.RequestBody != "" {
				fmt.Fprintf(w, "        %s\n", strings.ReplaceAll(ex.RequestBody, "\n", "\n        "))
			}
		}
	}
}

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// parallelism is how many workers a run uses: --parallel, or up to
// engine.MaxParallel, never more than the fleet has devices of every type on the
// tested gateway, and 1 for a dry run.
func parallelism(o runOptions, f *fleet.Fleet, stderr io.Writer) int {
	if o.DryRun {
		return 1
	}
	c := engine.Capacity(f)
	if o.Parallel == 0 {
		return min(engine.MaxParallel, c)
	}
	if o.Parallel > c {
		fmt.Fprintf(stderr, "gwconform: --parallel %d: the fleet has %d device(s) of some type on the tested gateway, so %d worker(s) run\n", o.Parallel, c, c)
		return c
	}
	return o.Parallel
}

// reportFiles names the files of report.Writers, for usage lines.
func reportFiles() string {
	names := make([]string, len(report.Writers))
	for i, w := range report.Writers {
		names[i] = w.File
	}
	return strings.Join(names, ", ")
}

// modelOperations is --model-operations as the phase takes it: 0 turns
// the phase off (below 0 for checks.ModelBudget).
func modelOperations(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// maskedLines writes to w each complete line masked (a secret is never cut
// in two between writes), and what is left at Flush.
type maskedLines struct {
	mu   sync.Mutex
	w    io.Writer
	mask func(string) string
	buf  []byte
}

func (l *maskedLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
		if _, err := io.WriteString(l.w, l.mask(string(l.buf[:i+1]))); err != nil {
			return 0, err
		}
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
	return len(p), nil
}

// Flush writes what is left, masked.
func (l *maskedLines) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		io.WriteString(l.w, l.mask(string(l.buf)))
		l.buf = l.buf[:0]
	}
}
