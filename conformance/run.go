package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/formatter"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"

	"github.com/gwdmi/gwtools/conformance/client"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/fleet"
)

// Exit codes of gwconform (CONTRACT 6).
const (
	ExitPass   = 0
	ExitFail   = 1
	ExitConfig = 2
)

// Options are gwconform run's flags.
type Options struct {
	Target     string
	FleetFile  string
	ReportDir  string
	FailOn     string
	Rate       float64
	DryRun     bool
	Timeout    time.Duration
	AdminToken string
	Seed       int64
	// AllowPartial: a PARTIAL run (filtered, or a device type, format,
	// operation or rule not covered) exits 0 instead of 1.
	AllowPartial bool
	// SkipPreflight runs the checks even when the target's answers to the
	// pre-flight requests are not this interface's.
	SkipPreflight bool
	// Cert is the bundle and mode (--bundle, --mode, --product...).
	Cert        Certification
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
}

// failer is the testing.T that RunSpecs needs: a value with Fail().
type failer struct{ failed bool }

func (f *failer) Fail() { f.failed = true }

// outcome is what the report step leaves for Run.
var outcome struct {
	doc    report.Document
	err    error
	target string
	dir    string
	opts   report.WriteOptions
	// workers are the other processes of a --parallel run;
	// workerReport is where this process, a worker, writes its results.
	workers      []*worker
	workerReport string
}

var _ = ginkgo.ReportAfterEach(func(ginkgo.SpecReport) {
	if env != nil {
		env.done.Add(1)
	}
})

// Every device the run changed is put back once, after the last check.
var _ = ginkgo.AfterSuite(func(ctx ginkgo.SpecContext) {
	if env != nil {
		putBackAll(ctx)
	}
})

var _ = ginkgo.ReportAfterSuite("gwconform reports", func(r ginkgo.Report) {
	if outcome.workerReport != "" {
		// A worker of a --parallel run: its results go to the run that
		// started it, which writes the reports.
		b, err := json.Marshal(r)
		if err == nil {
			err = os.WriteFile(outcome.workerReport, b, 0o600)
		}
		outcome.err = err
		return
	}
	if len(outcome.workers) > 0 {
		r = mergeWorkers(r, outcome.workers)
	}
	// The catalog is known once the tree is built, which it is by now.
	outcome.opts.Catalog = report.CatalogID{Harness: HarnessInfo().Version, Version: CatalogVersion, Hash: CatalogHash()}
	outcome.doc, outcome.err = report.WriteAllWith(outcome.dir, r, outcome.target, outcome.opts)
})

const runUsage = `Usage: gwconform run [--target URL] [--fleet FILE] [--report-dir DIR] [--fail-on must|should]
                     [--rate R] [--dry-run] [--timeout D] [--admin-token T] [--seed N]
                     [--allow-partial] [--skip-preflight] [--ginkgo.* flags]

Runs the conformance checks against URL, or against the simulator started
in-process when no --target is given. Exit 0: no check failed at the
--fail-on level and the run covered the whole interface; 1: some check
failed, or the run was PARTIAL (filtered, or a device type, format,
operation or rule not covered) without --allow-partial; 2: bad arguments,
unreadable fleet, unreachable target, or a target whose answers are not
this interface's (pre-flight).

Ginkgo's own flags work with the ginkgo. prefix, for example
--ginkgo.label-filter='level:MUST && format:xml' or --ginkgo.focus=dimming.
`

// Run is `gwconform run`. It may be called once per process: Ginkgo runs a
// suite once.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// Ginkgo's flags live on flag.CommandLine with the ginkgo. prefix; they
	// are parsed here through their own values, so that Ginkgo sees their
	// settings but not our --parallel as go test's -parallel.
	fs := flag.NewFlagSet("gwconform run", flag.ContinueOnError)
	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "ginkgo.") {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, runUsage, "\nFlags:\n")
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.HasPrefix(f.Name, "ginkgo.") && !strings.HasPrefix(f.Name, "test.") {
				if f.DefValue == "" || f.DefValue == "0" || f.DefValue == "false" {
					fmt.Fprintf(stderr, "  --%s\t%s\n", f.Name, f.Usage)
				} else {
					fmt.Fprintf(stderr, "  --%s\t%s (default %q)\n", f.Name, f.Usage, f.DefValue)
				}
			}
		})
	}
	var o Options
	o.define(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitPass
		}
		return ExitConfig
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gwconform: unexpected argument %q\n", fs.Arg(0))
		return ExitConfig
	}
	if o.AdminToken == "" {
		o.AdminToken = os.Getenv("GWSIM_ADMIN_TOKEN")
	}
	// A dry run sends nothing and overwrites no real report: it writes
	// reports only where --report-dir says.
	reportDirSet := false
	fs.Visit(func(f *flag.Flag) { reportDirSet = reportDirSet || f.Name == "report-dir" })
	if o.DryRun && !reportDirSet {
		dir, err := os.MkdirTemp("", "gwconform-dry-run")
		if err != nil {
			fmt.Fprintln(stderr, "gwconform:", err)
			return ExitConfig
		}
		defer os.RemoveAll(dir)
		o.ReportDir = dir
	}
	// The console goes into a bundle as it was shown.
	var console bytes.Buffer
	if o.Cert.Bundle != "" {
		stdout, stderr = io.MultiWriter(stdout, &console), io.MultiWriter(stderr, &console)
	}
	if err := checkCert(&o); err != nil {
		fmt.Fprintln(stderr, "gwconform:", err)
		return ExitConfig
	}
	e, cleanup, err := prepare(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "gwconform:", err)
		return ExitConfig
	}
	defer cleanup()

	suiteConfig, reporterConfig := ginkgo.GinkgoConfiguration()
	if o.Seed != 0 {
		suiteConfig.RandomSeed = o.Seed
	}
	switch o.Color {
	case "always":
	case "never":
		reporterConfig.NoColor = true
	case "auto":
		reporterConfig.NoColor = reporterConfig.NoColor || !colorful(stdout)
	default:
		fmt.Fprintf(stderr, "gwconform: --color must be auto, always or never, not %q\n", o.Color)
		return ExitConfig
	}
	if o.Verbose {
		reporterConfig.Verbose = true
	}
	if len(o.Checks) > 0 {
		suiteConfig.FocusStrings = append(suiteConfig.FocusStrings, FocusOnGlobs(o.Checks))
	}
	if len(o.Skips) > 0 {
		suiteConfig.SkipStrings = append(suiteConfig.SkipStrings, FocusOnGlobs(o.Skips))
	}
	if suiteConfig.LabelFilter != "" {
		if _, err := types.ParseLabelFilter(suiteConfig.LabelFilter); err != nil {
			fmt.Fprintln(stderr, "gwconform: --ginkgo.label-filter:", err)
			return ExitConfig
		}
	}
	if o.RerunFailed != "" {
		ids, seed, err := FailedIn(o.RerunFailed)
		if err != nil {
			fmt.Fprintln(stderr, "gwconform: --rerun-failed:", err)
			return ExitConfig
		}
		if o.Seed == 0 {
			suiteConfig.RandomSeed = seed
		}
		suiteConfig.FocusStrings = append(suiteConfig.FocusStrings, FocusOnGlobs(ids))
		// A rerun is partial by design: it passes when its checks do.
		o.AllowPartial = true
		fmt.Fprintf(stdout, "gwconform: running again the %d check(s) that failed in %s, seed %d\n", len(ids), o.RerunFailed, suiteConfig.RandomSeed)
	}
	if o.Cert.Mode == "certified" {
		var extra []string
		if o.RerunFailed != "" {
			extra = append(extra, "--mode certified runs every check: drop --rerun-failed")
		}
		if refusals := CertifiedRefusals(suiteConfig, o.AllowPartial && o.RerunFailed == "", e.Fleet, extra); len(refusals) > 0 {
			for _, r := range refusals {
				fmt.Fprintln(stderr, "gwconform:", r)
			}
			return ExitConfig
		}
	}
	e.Seed = suiteConfig.RandomSeed
	if o.Workers > 1 {
		// A worker: its own devices, its share of the checks.
		e.Worker, e.Workers = o.Worker, o.Workers
		e.Target = workerTarget(e.Fleet, e.Target, o.Worker)
		outcome.workerReport = o.WorkerReport
	} else if n := parallelism(o, e.Fleet, stderr); n > 1 {
		dir, err := os.MkdirTemp("", "gwconform-workers")
		if err != nil {
			fmt.Fprintln(stderr, "gwconform:", err)
			return ExitConfig
		}
		defer os.RemoveAll(dir)
		e.Worker, e.Workers = 0, n
		ws, err := startWorkers(ctx, o, e, n, dir)
		outcome.workers = ws
		if err != nil {
			fmt.Fprintln(stderr, "gwconform:", err)
			for _, w := range ws {
				w.cmd.Process.Kill()
			}
			return ExitConfig
		}
		fmt.Fprintf(stdout, "gwconform: %d workers, each on its own devices\n", n)
	}
	env = e
	outcome.target, outcome.dir = e.BaseURL, o.ReportDir
	outcome.opts = report.WriteOptions{FailOnShould: o.FailOn == "should", AllowPartial: o.AllowPartial, Today: time.Now()}
	if o.BaselineFile != "" {
		b, err := os.ReadFile(o.BaselineFile)
		if err != nil {
			fmt.Fprintln(stderr, "gwconform: --baseline:", err)
			return ExitConfig
		}
		if outcome.opts.Baseline, err = report.ParseBaseline(b); err != nil {
			fmt.Fprintf(stderr, "gwconform: %s: %v\n", o.BaselineFile, err)
			return ExitConfig
		}
		o.Cert.Baseline = b
	}
	if e.Embedded {
		outcome.target = e.BaseURL + " (embedded gwsim)"
	}
	// Failures read as sentences: what was expected, what came.
	gomega.RegisterFailHandler(failInWords)
	if !o.Verbose {
		reporterConfig.Succinct, reporterConfig.SilenceSkips = true, true
	}
	// Off a terminal (a CI log) a line every few seconds says the run is
	// alive; on a terminal Ginkgo's own progress does.
	if !colorful(stdout) || os.Getenv("NO_COLOR") != "" {
		stop := progress(stdout, e, 5*time.Second)
		defer stop()
		if !o.Verbose {
			// Ginkgo's dot per passing check says nothing in a log;
			// failures and the summary still come through.
			formatter.ColorableStdOut = dotless{os.Stdout}
		}
	}
	fmt.Fprintf(stdout, "gwconform: %s against %s, seed %d\n", map[bool]string{true: "dry run", false: "checking"}[o.DryRun], outcome.target, e.Seed)
	t := &failer{}
	ginkgo.RunSpecs(t, "gwconform", suiteConfig, reporterConfig)
	if outcome.err != nil {
		fmt.Fprintln(stderr, "gwconform: writing reports:", outcome.err)
		return ExitConfig
	}
	report.WriteSummary(stdout, outcome.doc)
	if o.DryRun {
		printDryRun(stdout, outcome.doc)
		return ExitPass
	}
	code := report.ExitCode(outcome.doc, o.FailOn, o.AllowPartial)
	if o.Cert.Bundle != "" {
		if err := WriteBundle(o.Cert, outcome.doc, o.ReportDir, console.Bytes(), e.Fleet, o.FailOn, time.Now()); err != nil {
			fmt.Fprintln(stderr, "gwconform: writing the bundle:", err)
			return ExitConfig
		}
		kind := "bundle"
		if o.Cert.Mode == "certified" {
			kind = "certification bundle"
		}
		fmt.Fprintf(stdout, "%s: %s (check it with: gwconform verify %s)\n", kind, o.Cert.Bundle, o.Cert.Bundle)
	}
	// A run cut short (interrupted, suite timeout) proves nothing about the
	// checks it did not reach; a PARTIAL one covered less than the
	// interface.
	return code
}

// define puts gwconform run's own flags on fs.
func (o *Options) define(fs *flag.FlagSet) {
	fs.StringVar(&o.Target, "target", "", "base URL of the implementation under test; empty: the simulator, in-process")
	fs.StringVar(&o.FleetFile, "fleet", "", "fleet file with the target's credentials, gateway and devices; default: the demo fleet")
	fs.StringVar(&o.ReportDir, "report-dir", "reports/latest", "where junit.xml, report.json and report.html are written")
	fs.StringVar(&o.FailOn, "fail-on", "must", "exit 1 when a check fails at this level: must or should")
	fs.Float64Var(&o.Rate, "rate", 0, "at most this many requests per second (0: no limit)")
	fs.BoolVar(&o.DryRun, "dry-run", false, "list the checks and the requests they would send, without sending")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Second, "time limit of one request, reading the answer included")
	fs.StringVar(&o.AdminToken, "admin-token", "", "bearer token of a gwsim target's admin API (default: from $GWSIM_ADMIN_TOKEN)")
	fs.Int64Var(&o.Seed, "seed", 0, "seed of the values drawn and the spec order (0: Ginkgo picks one and reports it)")
	fs.BoolVar(&o.AllowPartial, "allow-partial", false, "exit 0 on a PARTIAL run (filtered, or a device type, format, operation or rule not covered)")
	fs.BoolVar(&o.SkipPreflight, "skip-preflight", false, "run the checks even when the target's answers are not this interface's")
	fs.StringVar(&o.Cert.Bundle, "bundle", "", "also write a certification bundle (FILE.tar.gz): reports, console log, manifest, fleet without secrets, hashes")
	fs.StringVar(&o.Cert.Mode, "mode", "ordinary", "ordinary, or certified: every check, a full fleet, no filter; only such a bundle says certified")
	fs.StringVar(&o.Cert.Product, "product", "", "name of the product under test, for the bundle's manifest")
	fs.StringVar(&o.Cert.ProductVersion, "product-version", "", "version of the product under test, for the bundle's manifest")
	fs.IntVar(&o.Parallel, "parallel", 0, "run the checks in this many worker processes, each on its own devices (default: up to 8, as many\n"+
		"as the fleet has devices of every type on the tested gateway; 1 with the demo fleet)")
	fs.IntVar(&o.Worker, "worker", 0, "internal: this process is worker N of a --parallel run")
	fs.IntVar(&o.Workers, "workers", 0, "internal: the number of workers of a --parallel run")
	fs.StringVar(&o.WorkerReport, "worker-report", "", "internal: where a worker writes its results for the run that started it")
	fs.StringVar(&o.Color, "color", "auto", "colour on the console: auto (only on a terminal, not with NO_COLOR or TERM=dumb), always or never")
	fs.BoolVar(&o.Verbose, "v", false, "verbose: every check and every INFO observation on the console (the reports always have them)")
	fs.Var(&o.Checks, "check", "run only this check (an ID, or a glob such as 'command.light-dimmer.*'); repeatable")
	fs.Var(&o.Skips, "skip", "do not run this check (an ID or a glob); repeatable")
	fs.IntVar(&o.MaxRequests, "max-requests", 0, "send at most this many requests; a run that reaches it stops, INCOMPLETE (0: no limit)")
	fs.Float64Var(&o.RatePerOp, "rate-per-op", 0, "at most this many requests per second to each operation's path, besides --rate overall (0: no limit)")
	fs.StringVar(&o.RerunFailed, "rerun-failed", "", "run exactly the checks that failed in this report.json or bundle, with its seed")
	fs.StringVar(&o.BaselineFile, "baseline", "", "YAML file of known failures (check, reason, owner, link, expires): shown as expected failures, not counted; an entry that passes, expired or names no check fails the run")
	fs.StringVar(&o.ProductFile, "product-file", "", "file with name: and version: lines, instead of --product and --product-version")
}

// CheckRunArgs parses gwconform run's flags (Ginkgo's included) as Run
// would and checks what can be checked without running anything: the
// recipes and manifests of deploy/ and docs/ are kept honest with it.
func CheckRunArgs(args []string) error {
	fs := flag.NewFlagSet("gwconform run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o Options
	o.define(fs)
	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "ginkgo.") {
			fs.Var(discardValue{f.Value}, f.Name, f.Usage)
		}
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.FailOn != "must" && o.FailOn != "should" {
		return fmt.Errorf("--fail-on must be must or should, not %q", o.FailOn)
	}
	switch o.Color {
	case "auto", "always", "never":
	default:
		return fmt.Errorf("--color must be auto, always or never, not %q", o.Color)
	}
	if o.ProductFile != "" {
		o.Cert.Product, o.Cert.ProductVersion = "from", "file" // read at run time
		o.ProductFile = ""
	}
	return checkCert(&o)
}

// discardValue parses like the flag it wraps but keeps nothing, so that
// checking a command line changes none of Ginkgo's settings.
type discardValue struct{ v flag.Value }

func (d discardValue) String() string { return d.v.String() }
func (d discardValue) Set(s string) error {
	if bf, ok := d.v.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
		_, err := strconv.ParseBool(s)
		return err
	}
	return nil
}
func (d discardValue) IsBoolFlag() bool {
	bf, ok := d.v.(interface{ IsBoolFlag() bool })
	return ok && bf.IsBoolFlag()
}

// dotless drops Ginkgo's succinct progress (a dot per passed check, its
// header and closing line) and passes everything else through.
type dotless struct{ w io.Writer }

var succinctNoise = regexp.MustCompile(`^(\x1b\[[0-9;]*m)*(\[\d+\] gwconform |- \d+/\d+ specs |•+| ?SUCCESS! \S+ |\s+)(\x1b\[[0-9;]*m)*$`)

func (d dotless) Write(p []byte) (int, error) {
	if succinctNoise.Match(p) {
		return len(p), nil
	}
	return d.w.Write(p)
}

// progress prints how many checks are done every interval until stopped.
func progress(w io.Writer, e *Env, every time.Duration) func() {
	done := make(chan struct{})
	start := time.Now()
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(w, "gwconform: %d checks done, %s\n", e.done.Load(), time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() { close(done) }
}

// parallelism is how many workers a run uses: --parallel, or up to
// maxParallel, never more than the fleet has devices of every type on the
// tested gateway, and 1 for a dry run.
func parallelism(o Options, f *fleet.Fleet, stderr io.Writer) int {
	if o.DryRun {
		return 1
	}
	c := capacity(f)
	if o.Parallel == 0 {
		return min(maxParallel, c)
	}
	if o.Parallel > c {
		fmt.Fprintf(stderr, "gwconform: --parallel %d: the fleet has %d device(s) of some type on the tested gateway, so %d worker(s) run\n", o.Parallel, c, c)
		return c
	}
	return o.Parallel
}

// checkCert checks the bundle and mode flags.
func checkCert(o *Options) error {
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
	return nil
}

// prepare checks the options, loads the fleet, starts the embedded
// simulator when there is no target, and checks that the target answers.
func prepare(ctx context.Context, o Options) (*Env, func(), error) {
	noop := func() {}
	if o.FailOn != "must" && o.FailOn != "should" {
		return nil, noop, fmt.Errorf("--fail-on must be must or should, not %q", o.FailOn)
	}
	if o.Rate < 0 || o.RatePerOp < 0 || o.Timeout <= 0 || o.MaxRequests < 0 || o.Parallel < 0 {
		return nil, noop, errors.New("--rate, --rate-per-op, --max-requests and --parallel must be >= 0 and --timeout > 0")
	}
	if o.ReportDir == "" {
		return nil, noop, errors.New("--report-dir must not be empty")
	}
	f := fleet.Demo()
	if o.FleetFile != "" {
		var err error
		if f, err = fleet.Load(o.FleetFile); err != nil {
			return nil, noop, fmt.Errorf("fleet: %w", err)
		}
	}
	tgt, err := f.Target()
	if err != nil {
		return nil, noop, fmt.Errorf("fleet: %w", err)
	}
	e := &Env{Fleet: f, Target: tgt, Location: f.Location(), DryRun: o.DryRun, Now: time.Now, AdminToken: o.AdminToken, MaxRequests: o.MaxRequests}
	cleanup := noop
	if o.Target == "" {
		sim, err := simulator.Start("127.0.0.1:0", simulator.Options{Fleet: f,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			return nil, noop, fmt.Errorf("starting the embedded simulator: %w", err)
		}
		cleanup = func() { sim.Close() }
		e.BaseURL, e.Admin, e.Embedded = sim.URL(), sim.URL(), true
	} else {
		u, err := url.Parse(o.Target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, noop, fmt.Errorf("--target %q is not an http(s) URL", o.Target)
		}
		e.BaseURL = strings.TrimRight(o.Target, "/")
	}
	e.Signer, e.KnownSign = SignerFor(f, o.FleetFile)
	e.Client, err = client.New(client.Config{BaseURL: e.BaseURL, Signer: e.Signer, Timeout: o.Timeout, Rate: o.Rate, RatePerPath: o.RatePerOp})
	if err != nil {
		cleanup()
		return nil, noop, err
	}
	if !o.DryRun && !e.Embedded {
		if err := reachable(ctx, e.BaseURL, o.Timeout); err != nil {
			return nil, noop, fmt.Errorf("target unreachable: %v", err)
		}
		// Bounded by the run's timeout: a target that never answers must
		// not hold the run here for the admin API's own 10 s.
		actx, cancel := context.WithTimeout(ctx, o.Timeout)
		admin, needsToken := probeAdmin(actx, e.BaseURL, o.AdminToken)
		cancel()
		if admin {
			e.Admin = e.BaseURL
		}
		e.AdminNeedsToken = needsToken
	}
	if !o.DryRun && !o.SkipPreflight {
		if err := Preflight(ctx, e.Client, PreflightRequests(e)); err != nil {
			cleanup()
			return nil, noop, err
		}
	}
	return e, cleanup, nil
}

// reachable reports whether the target can be connected to, within the
// run's timeout. It sends a HEAD and is content once a connection (TLS
// included) is made: what the target then does with a request (never
// answer, answer garbage, close the connection) is its behaviour, which the
// checks judge one by one, failing with a reason in the reports (exit 1).
// Unreachable (exit 2) is kept for a target that cannot be connected to at
// all: refused, unknown host, no route, dial or TLS handshake timed out.
func reachable(ctx context.Context, base string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var connected atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodHead, base+"/", nil)
	if err != nil {
		return err
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		if connected.Load() {
			return nil
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			return ue.Err
		}
		return err
	}
	resp.Body.Close()
	return nil
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

// FocusOnGlobs is a Ginkgo focus (or skip) expression selecting the
// checks whose ID matches one of the globs (* any run of characters, ?
// one).
func FocusOnGlobs(globs []string) string {
	parts := make([]string, len(globs))
	for i, g := range globs {
		q := regexp.QuoteMeta(g)
		q = strings.ReplaceAll(q, `\*`, `[^\]]*`)
		parts[i] = strings.ReplaceAll(q, `\?`, `[^\]]`)
	}
	return `\[(` + strings.Join(parts, "|") + `)\]`
}

// colorful says whether colour suits w: a terminal, with neither NO_COLOR
// nor TERM=dumb in the environment (clig.dev).
func colorful(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
