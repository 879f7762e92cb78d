package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/conformance/catalog"
	"github.com/gwdmi/gwtools/conformance/diff"
	"github.com/gwdmi/gwtools/conformance/explore"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/printable"
)

const diffUsage = `Usage: gwconform diff --target A --target B [--fleet FILE | --fleet-a FILE --fleet-b FILE]
                      [--observer-a URL] [--observer-b URL] [--duration D | --operations N] [--seed S]
                      [--clients N] [--calibrate] [--read-only] [--probe-open] [--report-dir DIR]

Sends the same generated operations (commands, messages and renames, valid
and broken, in both formats, across the fleet) to two implementations, in
the same order, and compares the answers (status code, status, error code
and field; never the wording) and what each observer shows of every device
and gateway the operations touch. Every difference is shrunk to the
shortest sequence that still shows it; distinct differences are grouped by
rule and operation, each shown once with its count, and each says which
side the harness's rule table agrees with: A, B, both (a form the texts
leave open) or neither.

--calibrate first sends the same operations to A twice, from two resets,
and ignores what differed there (the report says what and why).
--read-only sends only requests the rule table says change nothing, and
reads, and never resets: for comparing staging with production.
--probe-open also sends the forms the texts leave open (0051, " Auto"):
where the two read one apart, the verdict is both (each reading allowed);
gwsim serve --open-forms refuse|accept takes either reading.

Reports in DIR: diff.json, diff.html (both exchanges side by side, the
shrunk sequence, a replay command), diff-junit.xml (one case per
difference) and diff-repro-N.sh (the shrunk sequence against both). See
docs/diff.md.

Examples:
  gwconform diff --target http://v1.internal:8080 --target http://v2.internal:8080 --fleet fleet.yaml --duration 5m
  gwconform diff --target http://127.0.0.1:18101 --target https://gw.example.com --fleet-a sim.yaml --fleet-b prod.yaml --calibrate
  gwconform diff --target https://staging.example.com --target https://gw.example.com --fleet fleet.yaml --read-only

Exit 0: no difference; 1: differences; 2: bad arguments or a target that
fails the pre-flight (unreachable, every operation 404, credentials refused).

Flags:
`

// diffMain is gwconform diff.
type diffMain struct {
	Stdout, Stderr io.Writer

	targets                         listFlag
	fleetFile, fleetA, fleetB       string
	observerA, observerB            string
	adminToken, adminTokenA, tokenB string
	// tokenFromEnv: A's and B's token came from $GWSIM_ADMIN_TOKEN.
	tokenFromEnv        [2]bool
	reportDir           string
	timeout             time.Duration
	noReset, seedSet    bool
	readOnly, calibrate bool
	skipPreflight       bool
	calibrateOps        int
	cfg                 diff.Config
	fleetPaths          [2]string
	tgts                [2]*explore.Target
}

func diffCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return lifecycle(ctx, "gwconform diff", &diffMain{Stdout: stdout, Stderr: stderr}, args, stderr)
}

// ParseFlags reads and checks gwconform diff's flags.
func (m *diffMain) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("gwconform diff", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Var(&m.targets, "target", "base URL of an implementation; give it twice: A, then B (several URLs separated by commas are replicas of one)")
	fs.StringVar(&m.fleetFile, "fleet", "", "fleet file of both targets (default: the demo fleet)")
	fs.StringVar(&m.fleetA, "fleet-a", "", "fleet file of A, when the two differ (same shape: accounts, gateways, devices and types in the same order)")
	fs.StringVar(&m.fleetB, "fleet-b", "", "fleet file of B")
	fs.StringVar(&m.observerA, "observer-a", "", "base URL of A's CONTRACT 7 reads (default: A, when it answers them)")
	fs.StringVar(&m.observerB, "observer-b", "", "base URL of B's CONTRACT 7 reads (default: B, when it answers them)")
	fs.StringVar(&m.adminToken, "admin-token", "", "bearer token of both observers (default: from $GWSIM_ADMIN_TOKEN)")
	fs.StringVar(&m.adminTokenA, "admin-token-a", "", "bearer token of A's observer (default: --admin-token)")
	fs.StringVar(&m.tokenB, "admin-token-b", "", "bearer token of B's observer (default: --admin-token)")
	fs.DurationVar(&m.cfg.Duration, "duration", 0, "compare for this long (default: --operations)")
	fs.IntVar(&m.cfg.Operations, "operations", 0, fmt.Sprintf("compare this many operations (default %d when no --duration)", explore.DefaultOperations))
	fs.Int64Var(&m.cfg.Seed, "seed", 0, "seed of the operations (default: from the clock, printed and in the reports)")
	fs.IntVar(&m.cfg.Clients, "clients", 1, "concurrent clients, the same on both sides")
	fs.IntVar(&m.cfg.RoundLength, "sequence-length", 0, "operations of one sequence, each from a reset (default 100; 20 a client)")
	fs.DurationVar(&m.cfg.ShrinkBudget, "shrink-time", 20*time.Second, "most time spent shrinking one difference")
	fs.BoolVar(&m.calibrate, "calibrate", false, "first send the same operations to A twice, from two resets, and ignore what differed")
	fs.IntVar(&m.calibrateOps, "calibrate-operations", 0, "operations calibration sends to A, twice (default: a tenth of --operations, at least 500)")
	fs.BoolVar(&m.readOnly, "read-only", false, "send only requests the rule table says change nothing, and reads; never reset")
	fs.BoolVar(&m.cfg.ProbeOpen, "probe-open", false, "also send forms the texts leave open (0051, \" Auto\", 2.1e1): where the two read one apart, the verdict is both")
	fs.BoolVar(&m.noReset, "no-reset", false, "never send POST /_sim/reset (default: before each sequence, to observers that answer it)")
	fs.BoolVar(&m.skipPreflight, "skip-preflight", false, "compare even when a target fails the pre-flight")
	fs.StringVar(&m.reportDir, "report-dir", "reports/diff", "where diff.json, diff.html, diff-junit.xml and diff-repro-N.sh are written")
	fs.DurationVar(&m.timeout, "timeout", 10*time.Second, "time limit of one request")
	fs.Usage = func() { io.WriteString(m.Stderr, diffUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	fs.Visit(func(f *flag.Flag) { m.seedSet = m.seedSet || f.Name == "seed" })
	if len(m.targets) != 2 {
		return fmt.Errorf("give --target twice (A, then B); got %d", len(m.targets))
	}
	if m.fleetFile != "" && (m.fleetA != "" || m.fleetB != "") {
		return errors.New("--fleet, or --fleet-a and --fleet-b: not both")
	}
	if m.cfg.Duration > 0 && m.cfg.Operations > 0 {
		return errors.New("--duration and --operations: give one")
	}
	if m.cfg.Duration < 0 || m.cfg.Operations < 0 || m.cfg.Clients < 1 || m.cfg.RoundLength < 0 || m.timeout <= 0 || m.cfg.ShrinkBudget <= 0 || m.calibrateOps < 0 {
		return errors.New("--duration, --operations, --sequence-length, --calibrate-operations must not be negative, --clients must be at least 1, --timeout and --shrink-time positive")
	}
	if m.calibrate && m.readOnly {
		return errors.New("--calibrate needs two resets of A, which --read-only never sends: give one")
	}
	if !m.seedSet {
		m.cfg.Seed = time.Now().UnixNano() % 1_000_000_000
	}
	fromEnv := false
	if m.adminToken == "" {
		m.adminToken = os.Getenv("GWSIM_ADMIN_TOKEN")
		fromEnv = m.adminToken != ""
	}
	if m.adminTokenA == "" {
		m.adminTokenA, m.tokenFromEnv[0] = m.adminToken, fromEnv
	}
	if m.tokenB == "" {
		m.tokenB, m.tokenFromEnv[1] = m.adminToken, fromEnv
	}
	m.cfg.ReadOnly, m.cfg.Calibrate, m.cfg.CalibrateOperations = m.readOnly, m.calibrate, m.calibrateOps
	m.fleetPaths = [2]string{m.fleetA, m.fleetB}
	if m.fleetFile != "" {
		m.fleetPaths = [2]string{m.fleetFile, m.fleetFile}
	}
	return nil
}

// Open loads both fleets, reaches both targets, finds their observers and
// runs the pre-flight on each.
func (m *diffMain) Open(ctx context.Context) error {
	names := [2]string{"A", "B"}
	observers := [2]string{m.observerA, m.observerB}
	tokens := [2]string{m.adminTokenA, m.tokenB}
	var sides [2]diff.Side
	for i := range 2 {
		f := fleet.Demo()
		if p := m.fleetPaths[i]; p != "" {
			var err error
			if f, err = fleet.Load(p); err != nil {
				return fmt.Errorf("fleet of %s: %w", names[i], err)
			}
		}
		w, err := explore.NewWorld(f)
		if err != nil {
			return fmt.Errorf("fleet of %s: %w", names[i], err)
		}
		base := m.targets[i]
		for _, u := range strings.Split(base, ",") {
			u = strings.TrimRight(strings.TrimSpace(u), "/")
			if err := reachable(ctx, u, m.timeout); err != nil {
				return fmt.Errorf("pre-flight: %s: --target %s unreachable: %v", names[i], explore.RedactURLs(u), err)
			}
		}
		var signer client.Signer
		if len(f.SignCommand) > 0 || f.Scheme() != auth.MD5 {
			signer, _ = catalog.SignerFor(f, m.fleetPaths[i])
		}
		t, err := explore.NewTarget(base, f, signer, nil, m.timeout)
		if err != nil {
			return fmt.Errorf("--target %s: %w", names[i], err)
		}
		m.tgts[i] = t
		// A token from the environment goes to a target only on loopback.
		tok := adminToken{value: tokens[i], fromEnv: m.tokenFromEnv[i]}
		for _, b := range t.Bases() {
			if tok.to(b, false, m.Stderr, "gwconform diff") == "" {
				tok.value = ""
			}
		}
		t.AdminToken, t.Reset = tok.value, !m.noReset && !m.readOnly
		if observers[i] != "" {
			if !t.ProbeObserver(ctx, w, observers[i]) {
				return fmt.Errorf("pre-flight: %s: --observer-%s %s does not answer GET /_sim/gateways/{mac}/devices/{sn} for the fleet's first device",
					names[i], strings.ToLower(names[i]), explore.RedactURLs(observers[i]))
			}
		} else {
			t.ProbeObserver(ctx, w, t.Bases()[0])
		}
		sides[i] = diff.Side{Target: t, World: w}
		if !m.skipPreflight {
			if err := diff.Preflight(ctx, names[i], sides[i], nil); err != nil {
				return fmt.Errorf("pre-flight: %w", err)
			}
		}
	}
	m.cfg.A, m.cfg.B = sides[0], sides[1]
	m.cfg.Progress = m.Stderr
	return nil
}

// Run compares, writes the reports and returns the exit code.
func (m *diffMain) Run(ctx context.Context) int {
	d, err := diff.New(m.cfg)
	if err != nil {
		fmt.Fprintln(m.Stderr, "gwconform diff:", shown(err))
		return report.ExitConfig
	}
	mode := ""
	if m.readOnly {
		mode = ", read-only"
	}
	fmt.Fprintf(m.Stderr, "gwconform diff: seed %d%s\n  A: %s (observer: %s)\n  B: %s (observer: %s)\n", m.cfg.Seed, mode,
		explore.RedactURLs(m.tgts[0].BaseURL), observerName(explore.RedactURLs(m.tgts[0].Observer)),
		explore.RedactURLs(m.tgts[1].BaseURL), observerName(explore.RedactURLs(m.tgts[1].Observer)))
	rep, err := d.Run(ctx)
	if err != nil {
		fmt.Fprintln(m.Stderr, "gwconform diff:", shown(err))
		return report.ExitConfig
	}
	for i, f := range m.fleetPaths {
		if f != "" {
			rep.Fleets[i] = filepath.Base(f)
		}
	}
	if err := diff.WriteReports(m.reportDir, rep); err != nil {
		fmt.Fprintln(m.Stderr, "gwconform diff: writing the reports:", shown(err))
		return report.ExitConfig
	}
	// The targets' answers are in it: shown with control characters
	// escaped, as every console shows what a target sent.
	io.WriteString(m.Stdout, printable.Lines(rep.Summary()))
	fmt.Fprintf(m.Stdout, "reports in %s\n", m.reportDir)
	if len(rep.Differences) > 0 {
		return report.ExitFail
	}
	return report.ExitPass
}

// observerName is an observer as the console names it.
func observerName(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Close releases the targets' connections.
func (m *diffMain) Close() error {
	for _, t := range m.tgts {
		if t != nil {
			t.Close()
		}
	}
	return nil
}
