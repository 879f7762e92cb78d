package engine

import (
	"context"
	"io"
	"math"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/gwdmi/gwtools/conformance/check"
	"github.com/gwdmi/gwtools/conformance/internal/trial"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
)

// Config is one run of the suite as the command line set it up: the
// prepared Env (target, fleet, client, signer), the checks, Ginkgo's
// settings, where the reports go, and, in a --parallel run, the other
// workers.
type Config struct {
	Env *Env
	// Checks are the suite's checks, declared on Env.
	Checks   Checks
	Suite    types.SuiteConfig
	Reporter types.ReporterConfig
	// Target names the target in the reports and on the console.
	Target    string
	ReportDir string
	Write     report.WriteOptions
	// WorkerReport, when set, makes this process a worker of a --parallel
	// run: its results go there, for the run that started it, and no
	// report is written.
	WorkerReport string
	// Workers are the other processes of a --parallel run this process
	// leads (Env.Worker 0); their results are merged into the reports.
	Workers []*Worker
	// Progress, when not nil, gets a line every ProgressEvery saying how
	// many checks of how many are done, and the time left; with
	// ProgressInPlace (a terminal) the line is rewritten in place.
	Progress        io.Writer
	ProgressEvery   time.Duration
	ProgressInPlace bool
}

// Checks is what a run runs: a suite's checks, declared on the run's Env,
// and what the reports say of the suite.
type Checks struct {
	// Declare declares every check on the run's Env, in the order a
	// serial run runs them (It, ItAbout, ItPlanned).
	Declare func()
	// Catalog is every check of the suite, whichever this process
	// declares; Version names the catalog and Hash pins its content (the
	// reports and bundles carry both).
	Catalog func() check.Catalog
	Version string
	Hash    func() string
	// Model is the model-based phase as it ran, for the reports (nil when
	// it did not run).
	Model func() *report.ModelPhase
}

// Worker is another process of a --parallel run, started by the command
// line: it writes its Ginkgo report as JSON to Report, its console to Log,
// and sends its exit on Done.
type Worker struct {
	N           int
	Report, Log string
	Done        <-chan error
}

// execution is what one run's hooks share: set up by Execute, read and
// written by the tree's report nodes. It lives as long as the run.
type execution struct {
	cfg Config
	doc report.Document
	err error
	// hash is the catalog's (Checks.Hash), for the reports.
	hash chan string
	// leftChanged are the devices the run changed and could not put back
	// (putback.Left), each in one line.
	leftChanged []string
}

// failer is the testing.T that RunSpecs needs: a value with Fail().
type failer struct{ failed bool }

func (f *failer) Fail() { f.failed = true }

// Execute declares the suite's tree for cfg.Env, runs it with Ginkgo and
// returns the report document, written to cfg.ReportDir (a worker's
// results go to cfg.WorkerReport instead, and the document is empty).
// Ginkgo runs one suite per process: Execute is called once per process,
// by gwconform run; all the run's state is in cfg and the values it makes.
func Execute(ctx context.Context, cfg Config) (report.Document, error) {
	env := cfg.Env
	env.started = time.Now()
	env.catalog = cfg.Checks.Catalog
	x := &execution{cfg: cfg, hash: make(chan string, 1)}
	if cfg.WorkerReport == "" {
		// The catalog's hash declares every check once more, as a list;
		// the run's checks go one at a time, so it is worked out beside
		// them, and is ready by the time the reports are written.
		go func() { x.hash <- cfg.Checks.Hash() }()
	}
	env.filter = newFilter(cfg.Suite)
	// The run's flags as they are now (a --parallel worker's, the
	// reports' credentials): the pre-flight may have spoken to the target
	// before they were all set.
	env.Link().Configure(env.linkConfig())
	// Unless the pre-flight took it, the message count before the first
	// check sends anything (package link).
	env.Link().CountLog(ctx)
	declareChecks(cfg.Checks.Declare)
	// Every device the run changed is put back once, after the last check.
	// Those it could not put back are named in the console and reports.
	ginkgo.AfterSuite(func(ctx ginkgo.SpecContext) {
		for _, l := range env.devices().All(ctx) {
			x.leftChanged = append(x.leftChanged, l.String())
		}
	})
	ginkgo.ReportAfterSuite("gwconform reports", x.writeReports)
	// Failures read as sentences: what was expected, what came.
	trial.RegisterFailHandler(failInWords)
	stop := func() {}
	switch {
	case cfg.WorkerReport != "":
		stop = startWorkerProgress(workerProgress(cfg.WorkerReport), env.catalog(), cfg.Write.Baseline)
	case cfg.Progress != nil:
		var others []string
		for _, w := range cfg.Workers {
			others = append(others, workerProgress(w.Report))
		}
		note := func() string {
			var parts []string
			for _, n := range []string{env.AheadNote(), env.ChainNote(), env.Batch().SlowNote()} {
				if n != "" {
					parts = append(parts, n)
				}
			}
			return strings.Join(parts, "; ")
		}
		stop = startProgress(cfg.Progress, cfg.ProgressInPlace, cfg.ProgressEvery, env.catalog(), cfg.Write.Baseline, note, env.ahead.Running, env.ahead.Left, others)
	}
	ginkgo.RunSpecs(&failer{}, "gwconform", cfg.Suite, cfg.Reporter)
	stop()
	return x.doc, x.err
}

// writeReports is the run's ReportAfterSuite: a worker hands its results
// to the run that started it; the run merges its workers' and writes the
// reports.
func (x *execution) writeReports(r ginkgo.Report) {
	// Checks run ahead that the run never reached keep their results.
	r = x.cfg.Env.keepAhead(r)
	if x.cfg.WorkerReport != "" {
		// The signs this worker computed are known here only: masked
		// before the report goes to the run that merges it.
		maskWorkerReport(&r, secretsMask(x.cfg.Env))
		b, err := encodeWorkerReport(r)
		if err == nil {
			err = safefile.WriteFile(x.cfg.WorkerReport, b, 0o600)
		}
		x.err = err
		return
	}
	if len(x.cfg.Workers) > 0 {
		r = mergeWorkers(r, x.cfg.Workers)
	}
	// The catalog's hash was worked out beside the run (Execute); the
	// harness's version is the command line's (Config.Write.Catalog).
	opts := x.cfg.Write
	opts.Catalog.Version, opts.Catalog.Hash = x.cfg.Checks.Version, <-x.hash
	env := x.cfg.Env
	opts.Schedule = &report.Schedule{Concurrency: env.InFlight()}
	if who, trips, took := env.CriticalPath(); who != "" && env.Batch().SentAhead() {
		opts.Schedule.CriticalPath = &report.Chain{Of: who, RoundTrips: trips, Seconds: math.Round(took.Seconds()*100) / 100}
	}
	opts.Schedule.Ahead = env.aheadRun()
	opts.Checks = env.catalog()
	opts.Mask = secretsMask(env)
	if x.cfg.Checks.Model != nil {
		opts.Model = x.cfg.Checks.Model()
	}
	opts.LeftChanged = x.leftChanged
	x.doc, x.err = report.WriteAll(x.cfg.ReportDir, r, x.cfg.Target, opts)
}
