package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/conformance/load"
	"github.com/gwdmi/gwtools/conformance/report"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/printable"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
)

const loadUsage = `Usage: gwconform load [--target URL]... [--fleet FILE] --rate R --duration D --concurrency C
                      [--requests N] [--format json|xml|both] [--mix command=8,message=1,rename=1]
                      [--timeout D] [--via raw|http|client] [--ack-log FILE] [--json] [--quiet] [--seed N]
                      [--shard I/N] [--report-dir DIR] [--concurrency-fit] [--max-not-sent P%]
       gwconform load merge [--report-dir DIR] [--json] [--expect N --wait D] [--max-not-sent P%] FILE|DIR...
       gwconform load check-acks ACKLOG --target URL [--fleet FILE] [--admin-token T]

Sends a mix of valid, freshly signed commands, messages and renames over
the fleet's devices to URL, or to the simulator started in-process when no
--target is given. One progress line a second goes to stderr; the result
(throughput, latency percentiles, status codes, errors) to stdout. Every
answer other than success counts as an error, since every request was valid.

--rate R is a ceiling: no one-second window holds more than R requests
started, outages included. A request not started within 250 ms of its
turn (every worker waited on a slow or stalled target) is not sent, and
counted as "not sent" in the result and the report, as k6's
constant-arrival-rate drops iterations: when a target answers again the
load goes on at R, with no burst to catch up. A target that answers
nothing for 1 s while requests to it are in flight is recorded as
stalled (an outage in the result, the summary and the report, even when
every request is answered in the end); --max-not-sent P% fails the run
when more than P percent of the schedule was not sent.

Several targets (--target repeated, or URLs separated by commas: replicas
of one implementation) get the requests round-robin; each must answer at
the start, and one that stops answering later counts its errors (shown per
target) while the load goes on to the others.

--ack-log FILE writes one JSON line per acknowledged change (200 success):
seq, status "acked", op, format, target, account, mac, sn, type, and the
values set (command: field name to value; rename: name; message: its type
and value), and one line with status "no_answer" per request that was sent
but got no complete answer (in flight when a target died: it may or may
not have been applied). Never an api key, timestamp or sign. With it, each
device is owned by one worker, so a device's requests are sequential and
its lines are in the order of its attempts (--concurrency must not exceed
the fleet's devices, or --concurrency-fit lowers it to them).

--shard I/N makes this process shard I (from 0) of N spreading one load
over N machines: it sends only to the devices whose index in the fleet is
I mod N (no two shards share a device, so each shard's ack log is
checkable), at --rate/N, and its share of --requests. Without --shard, a
Kubernetes Indexed Job sets it: JOB_COMPLETION_INDEX is I and
GWCONFORM_SHARDS (set it to the Job's completions) is N.

--report-dir DIR writes DIR/load.json (the result with full latency
histograms and per-second buckets: what "load merge" reads) and
DIR/report.html (charts over time, per operation, target and shard, with
the moments a target stopped answering marked; one file, nothing loaded
from elsewhere).

Exit 0: no error; 1: some (or the ack log could not be written, or more
not sent than --max-not-sent); 2: bad arguments, unreadable fleet or a
target unreachable at the start.

Flags:
`

// loadMain is gwconform load: ParseFlags reads and checks the command
// line, Open loads the fleet and starts the embedded simulator or checks
// that every target can be reached, Run sends the load and says the exit
// code, Close stops what Open started. It shares the embedded simulator's
// start-up, the fleet's loading, the reachability check and the exit codes
// with gwconform run.
type loadMain struct {
	Stdout, Stderr io.Writer
	// StartEmbedded starts the target when there is no --target.
	StartEmbedded func(*fleet.Fleet) (Embedded, error)

	cfg       load.Config
	targets   targetList
	fleetFile string
	ackFile   string
	reportDir string
	asJSON    bool
	quiet     bool
	embedded  Embedded
	ackFH     *os.File
	// maxNotSent is --max-not-sent.
	maxNotSent maxNotSent
}

// loadCmd is gwconform load with its exit code: 0 no error, 1 some, 2 bad
// arguments, unreadable fleet or a target unreachable at the start.
func loadCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "merge":
			return loadMergeCmd(ctx, args[1:], stdout, stderr)
		case "check-acks":
			return checkAcksCmd(ctx, args[1:], stdout, stderr)
		}
	}
	return lifecycle(ctx, "gwconform load", &loadMain{Stdout: stdout, Stderr: stderr, StartEmbedded: startSimulator}, args, stderr)
}

// loadFailed is the file a load that could not run writes in its
// --report-dir instead of load.json: the reason, one line. A merge
// waiting for the shards (--expect) stops at once on it rather than
// waiting out --wait for a result that will never come.
const loadFailed = "load.failed"

// failed says why the load could not run, on stderr and, with
// --report-dir, in DIR/load.failed.
func (m *loadMain) failed(err error) {
	msg := shown(err)
	fmt.Fprintln(m.Stderr, "gwconform load:", msg)
	if m.reportDir == "" {
		return
	}
	werr := os.MkdirAll(m.reportDir, 0o755)
	if werr == nil {
		werr = safefile.WriteFile(filepath.Join(m.reportDir, loadFailed), []byte(msg+"\n"), 0o644)
	}
	if werr != nil {
		fmt.Fprintf(m.Stderr, "gwconform load: --report-dir %s: %s\n", m.reportDir, shown(werr))
	}
}

// ParseFlags reads and checks gwconform load's flags.
func (m *loadMain) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("gwconform load", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprint(m.Stderr, loadUsage)
		fs.PrintDefaults()
	}
	var (
		formatFlag, mixFlag, shardFlag string
		seed                           int64
	)
	cfg := &m.cfg
	fs.Var(&m.targets, "target", "base `URL` of the implementation; repeat it, or separate URLs by commas, to spread the requests round-robin over several (replicas); none: the simulator, in-process")
	fs.StringVar(&m.fleetFile, "fleet", "", "fleet file with the target's credentials, gateways and devices; default: the demo fleet")
	fs.Float64Var(&cfg.Rate, "rate", 0, "requests per second across all workers, a ceiling never exceeded in any one second (turns not started in time are counted as not sent, never sent later in a burst); 0: as fast as the target answers")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long to send (0 with --requests: until that many are sent)")
	fs.Int64Var(&cfg.Requests, "requests", 0, "stop after this many requests (0: no limit)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 4, "workers, each with one request in flight and its own connection")
	fs.StringVar(&formatFlag, "format", "both", "body format: json, xml or both (drawn at random per request)")
	fs.StringVar(&mixFlag, "mix", load.DefaultMix.String(), "weights of the operations")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "time limit of one answer")
	fs.StringVar(&cfg.Via, "via", "", "how to send: raw (HTTP/1.1 spoken directly, fastest), http (net/http), client (conformance/client, as the checks send); default raw for http://, http for https://")
	fs.StringVar(&m.ackFile, "ack-log", "", "write one JSON line per acknowledged change, per change answered 503 (uncertain) and per request sent that got no answer, to `FILE` (its folder is made)")
	fs.Var(&m.maxNotSent, "max-not-sent", "fail the run (exit 1) when more than `P` percent of the rate's schedule was not sent (a stalled or slow target), as a k6 threshold does; default: no limit")
	fs.BoolVar(&cfg.FitConcurrency, "concurrency-fit", false, "with --ack-log, lower --concurrency to the fleet's devices (over the shards) rather than refuse to start; the result gives the workers used")
	fs.StringVar(&shardFlag, "shard", "", "send shard `I/N` of the load (I from 0): the devices whose index is I mod N, at rate/N; default from $JOB_COMPLETION_INDEX and $GWCONFORM_SHARDS")
	fs.StringVar(&m.reportDir, "report-dir", "", "write load.json and report.html into `DIR`")
	fs.BoolVar(&m.asJSON, "json", false, "write the result as JSON")
	fs.BoolVar(&m.quiet, "quiet", false, "no progress lines")
	fs.Int64Var(&seed, "seed", 1, "seed of the devices and values drawn")
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.Concurrency < 1 || cfg.Concurrency > 10000 {
		return fmt.Errorf("--concurrency must be from 1 to 10000, not %d", cfg.Concurrency)
	}
	if cfg.Duration <= 0 && cfg.Requests <= 0 {
		return errors.New("set --duration or --requests")
	}
	switch formatFlag {
	case "both":
		cfg.Formats = []device.Format{device.JSON, device.XML}
	default:
		f, ok := device.ParseFormat(formatFlag)
		if !ok {
			return fmt.Errorf("--format must be json, xml or both, not %q", formatFlag)
		}
		cfg.Formats = []device.Format{f}
	}
	mix, err := load.ParseMix(mixFlag)
	if err != nil {
		return fmt.Errorf("--%v", err)
	}
	cfg.Mix, cfg.Seed = mix, uint64(seed)
	if v := cfg.Via; v != "" && v != load.ViaRaw && v != load.ViaHTTP && v != load.ViaClient {
		return fmt.Errorf("--via must be raw, http or client, not %q", v)
	}
	for _, t := range m.targets {
		if _, err := client.ParseBaseURL(t); err != nil {
			return fmt.Errorf("--target %w", err)
		}
	}
	shard, shards, err := shardOf(shardFlag)
	if err != nil {
		return err
	}
	cfg.Shard, cfg.Shards = shard, shards
	return nil
}

// Environment variables that set --shard in a Kubernetes Indexed Job.
const (
	envJobIndex = "JOB_COMPLETION_INDEX"
	envShards   = "GWCONFORM_SHARDS"
)

// shardOf reads --shard, or without it the Indexed Job's variables; 0, 0
// when the load is not spread.
func shardOf(flagValue string) (i, n int, err error) {
	if flagValue != "" {
		i, n, err = load.ParseShard(flagValue)
		if err != nil {
			return 0, 0, fmt.Errorf("--%v", err)
		}
		return i, n, nil
	}
	idx, hasIdx := os.LookupEnv(envJobIndex)
	total, hasTotal := os.LookupEnv(envShards)
	switch {
	case !hasIdx && !hasTotal:
		return 0, 0, nil
	case !hasTotal:
		return 0, 0, fmt.Errorf("$%s is %q but $%s is not set: set it to the Job's completions (the number of shards), or give --shard I/N", envJobIndex, idx, envShards)
	case !hasIdx:
		return 0, 0, fmt.Errorf("$%s is %q but $%s is not set: run as a Kubernetes Indexed Job, or give --shard I/N", envShards, total, envJobIndex)
	}
	i, n, err = load.ParseShard(strings.TrimSpace(idx) + "/" + strings.TrimSpace(total))
	if err != nil {
		return 0, 0, fmt.Errorf("$%s and $%s: %v", envJobIndex, envShards, err)
	}
	return i, n, nil
}

// Open loads the fleet, opens the ack log, and starts the embedded
// simulator or checks that each target can be reached. Why it could not
// is said by failed, in --report-dir too.
func (m *loadMain) Open(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			m.failed(err)
			err = errUsage
		}
	}()
	f := fleet.Demo()
	if m.fleetFile != "" {
		var err error
		if f, err = fleet.Load(m.fleetFile); err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
	}
	m.cfg.Fleet = f
	if m.ackFile != "" {
		// Its folder is made, as --report-dir's is.
		if err := os.MkdirAll(filepath.Dir(m.ackFile), 0o755); err != nil {
			return fmt.Errorf("--ack-log: %w", err)
		}
		fh, err := safefile.CreateLog(m.ackFile, 0o644)
		if err != nil {
			return fmt.Errorf("--ack-log: %w", err)
		}
		m.ackFH, m.cfg.AckLog = fh, fh
	}
	if len(m.targets) == 0 {
		sim, err := m.StartEmbedded(f)
		if err != nil {
			return fmt.Errorf("starting the simulator: %w", err)
		}
		m.embedded = sim
		m.targets = targetList{sim.URL()}
		if !m.quiet {
			fmt.Fprintf(m.Stderr, "load: the simulator, in-process at %s (%s)\n", sim.URL(), f.Describe())
		}
	} else {
		for _, t := range m.targets {
			if err := reachable(ctx, t, m.cfg.Timeout); err != nil {
				return fmt.Errorf("--target %s unreachable: %v", load.RedactURL(t), err)
			}
		}
	}
	m.cfg.Targets = m.targets
	if !m.quiet {
		m.cfg.Progress = m.Stderr
	}
	return nil
}

// Run sends the load, writes the result and returns the exit code.
func (m *loadMain) Run(ctx context.Context) int {
	if m.cfg.Shards > 1 && !m.quiet {
		fmt.Fprintf(m.Stderr, "load: shard %d/%d: the devices whose index is %d mod %d\n", m.cfg.Shard, m.cfg.Shards, m.cfg.Shard, m.cfg.Shards)
	}
	res, err := load.Run(ctx, m.cfg)
	if err != nil {
		switch {
		case errors.Is(err, load.ErrOwnedDevices) && m.cfg.Shards > 1:
			err = fmt.Errorf("--concurrency %d with --ack-log over %d shards: %w", m.cfg.Concurrency, m.cfg.Shards, err)
		case errors.Is(err, load.ErrOwnedDevices):
			err = fmt.Errorf("--concurrency %d with --ack-log: %w", m.cfg.Concurrency, err)
		}
		m.failed(err)
		return report.ExitConfig
	}
	if m.cfg.FitConcurrency && res.Concurrency != m.cfg.Concurrency && !m.quiet {
		fmt.Fprintf(m.Stderr, "load: --concurrency %d lowered to %d by --concurrency-fit: each device is owned by one worker\n", m.cfg.Concurrency, res.Concurrency)
	}
	if code, ok := writeLoadResult(m.Stdout, m.Stderr, res, m.asJSON, m.reportDir); !ok {
		return code
	}
	if res.AckLogError != "" {
		fmt.Fprintf(m.Stderr, "gwconform load: --ack-log %s: %s\n", m.ackFile, res.AckLogError)
		return report.ExitFail
	}
	if res.Requests == 0 {
		fmt.Fprintln(m.Stderr, "gwconform load: no request finished")
		return report.ExitFail
	}
	if !res.OK() || !m.maxNotSent.holds(res, m.Stderr, "gwconform load") {
		return report.ExitFail
	}
	return report.ExitPass
}

// maxNotSent is --max-not-sent: the share of the rate's schedule a run
// may leave unsent (a stalled or slow target) and still pass, as a k6
// threshold fails a run on a metric. Unset, any share passes (the result
// shows it).
type maxNotSent struct {
	set   bool
	share float64 // 0 to 1
}

func (m *maxNotSent) String() string {
	if !m.set {
		return ""
	}
	return strconv.FormatFloat(100*m.share, 'g', -1, 64) + "%"
}

func (m *maxNotSent) Set(v string) error {
	f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), "%"), 64)
	if err != nil || f < 0 || f > 100 {
		return fmt.Errorf("a percentage from 0%% to 100%%, such as 1%%, not %q", v)
	}
	m.set, m.share = true, f/100
	return nil
}

// holds says whether res keeps to the threshold, and says why not on w.
func (m *maxNotSent) holds(res *load.Result, w io.Writer, prog string) bool {
	if !m.set || res.NotSentShare() <= m.share {
		return true
	}
	fmt.Fprintf(w, "%s: %.1f%% of the schedule not sent (%d turns), above --max-not-sent %s\n", prog, 100*res.NotSentShare(), res.NotSent, m)
	return false
}

// Close closes the ack log and stops the embedded simulator.
func (m *loadMain) Close() error {
	var err error
	if m.ackFH != nil {
		err = m.ackFH.Close()
		m.ackFH = nil
	}
	if m.embedded != nil {
		err = errors.Join(err, m.embedded.Close())
		m.embedded = nil
	}
	return err
}

// targetList is --target: repeatable, each value one URL or several
// separated by commas.
type targetList []string

func (l *targetList) String() string { return strings.Join(*l, ",") }

func (l *targetList) Set(v string) error {
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t == "" {
			return errors.New("empty URL")
		}
		*l = append(*l, t)
	}
	return nil
}

// writeLoadResult writes the result as text or JSON on stdout, and the
// report directory if asked; false when the report could not be written.
func writeLoadResult(stdout, stderr io.Writer, res *load.Result, asJSON bool, reportDir string) (int, bool) {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	} else {
		res.WriteText(stdout)
	}
	if reportDir != "" {
		if err := load.WriteReport(reportDir, res); err != nil {
			fmt.Fprintln(stderr, "gwconform load: --report-dir:", shown(err))
			return report.ExitFail, false
		}
		os.Remove(filepath.Join(reportDir, loadFailed)) // an earlier run's
		if !asJSON {
			fmt.Fprintf(stdout, "  report      %s\n", filepath.Join(reportDir, load.ReportHTML))
		}
	}
	return 0, true
}

const mergeUsage = `Usage: gwconform load merge [--report-dir DIR] [--json] [--expect N --wait D] [--max-not-sent P%] FILE|DIR...

Combines the results of the shards of one load (gwconform load --shard I/N
--report-dir DIR, each shard's DIR/load.json) into one: counts add up and
the percentiles are those of all requests together (the histograms merge
exactly). A DIR argument stands for every load.json in it and in its
subdirectories one level down. The summary goes to stdout; --report-dir
writes the merged load.json and report.html, with each shard as a series.

--expect N is for a merge started beside the shards (as the Kubernetes
recipe does): it waits (up to --wait) until N results have been written
since it started, and leaves out older ones (an earlier load's, on a
volume the loads share). A shard that could not run (bad arguments, a
fleet too small, a target unreachable) writes load.failed in its
--report-dir instead: the merge then stops at once with its reason.

Exit 0: no request of any shard failed; 1: some did, a shard of the load
is missing, or more of the schedule was not sent than --max-not-sent; 2:
bad arguments, or a result that cannot be read or merged.

Flags:
`

// mergeOpts is gwconform load merge's command line.
type mergeOpts struct {
	maxNotSent maxNotSent
	reportDir  string
	asJSON     bool
	expect     int
	wait       time.Duration
	paths      []string
}

// parseMergeFlags reads and checks load merge's command line.
func parseMergeFlags(args []string, stderr io.Writer) (*mergeOpts, error) {
	o := &mergeOpts{}
	fs := flag.NewFlagSet("gwconform load merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, mergeUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.reportDir, "report-dir", "", "write the merged load.json and report.html into `DIR`")
	fs.BoolVar(&o.asJSON, "json", false, "write the merged result as JSON")
	fs.IntVar(&o.expect, "expect", 0, "wait until `N` results are found (see --wait)")
	fs.Var(&o.maxNotSent, "max-not-sent", "fail (exit 1) when more than `P` percent of the whole load's schedule was not sent; default: no limit")
	fs.DurationVar(&o.wait, "wait", 10*time.Minute, "how long --expect waits")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, errUsage
	}
	o.paths = fs.Args()
	if len(o.paths) == 0 {
		return nil, errors.New("name the shards' results (files, or directories holding load.json)")
	}
	if o.expect < 0 || o.wait < 0 {
		return nil, errors.New("--expect and --wait must not be negative")
	}
	return o, nil
}

// loadMergeCmd is gwconform load merge.
func loadMergeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseMergeFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return report.ExitPass
		}
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(stderr, "gwconform load merge:", shown(err))
		}
		return report.ExitConfig
	}
	reportDir, asJSON, expect, wait := o.reportDir, o.asJSON, o.expect, o.wait
	started := time.Now()
	deadline := started.Add(wait)
	var files []string
	for {
		var err error
		files, err = resultFiles(o.paths)
		if expect > 0 {
			// Beside the shards, only what they write now: results left
			// on a shared volume by an earlier load are not this load's.
			files = slices.DeleteFunc(files, func(f string) bool {
				st, err := os.Stat(f)
				return err == nil && st.ModTime().Before(started.Add(-time.Second))
			})
		}
		if err != nil {
			fmt.Fprintln(stderr, "gwconform load merge:", shown(err))
			return report.ExitConfig
		}
		if len(files) >= expect {
			break
		}
		if expect > 0 {
			// A shard that could not run says so in its report dir: the
			// merge ends now, with its reason, not after --wait.
			if why := failedShards(o.paths, started); len(why) > 0 {
				for _, w := range why {
					fmt.Fprintln(stderr, "gwconform load merge:", w)
				}
				fmt.Fprintf(stderr, "gwconform load merge: %d of the %d results expected will not come; not waiting out --wait %s\n", len(why), expect, wait)
				return report.ExitFail
			}
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(stderr, "gwconform load merge: %d of the %d results expected after %s\n", len(files), expect, wait)
			return report.ExitConfig
		}
		select {
		case <-ctx.Done():
			return report.ExitConfig
		case <-time.After(time.Second):
		}
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "gwconform load merge: no %s in %s\n", load.ReportJSON, strings.Join(o.paths, ", "))
		return report.ExitConfig
	}
	var results []*load.Result
	for _, f := range files {
		b, err := safefile.ReadFile(f, safefile.MaxInput)
		if err != nil {
			fmt.Fprintln(stderr, "gwconform load merge:", shown(err))
			return report.ExitConfig
		}
		var r load.Result
		if err := json.Unmarshal(b, &r); err != nil {
			fmt.Fprintf(stderr, "gwconform load merge: %s: not a gwconform load result: %s\n", f, shown(err))
			return report.ExitConfig
		}
		if len(r.Shards) > 0 && !slices.Contains(o.paths, f) {
			// A merge found in a directory given (an earlier merge's
			// --report-dir inside it): not a shard.
			fmt.Fprintf(stderr, "gwconform load merge: %s is a merge, not a shard: left out\n", f)
			continue
		}
		results = append(results, &r)
	}
	res, err := load.Merge(results)
	if err != nil {
		fmt.Fprintln(stderr, "gwconform load merge:", shown(err))
		return report.ExitConfig
	}
	if code, ok := writeLoadResult(stdout, stderr, res, asJSON, reportDir); !ok {
		return code
	}
	if !asJSON {
		for _, s := range res.Shards {
			fmt.Fprintf(stdout, "  shard %-5s %d requests, %d errors, %.1f requests/s, p99 %.2fms\n", s.Shard, s.Requests, s.Errors,
				s.Throughput, float64(s.Latency.P99)/float64(time.Millisecond))
		}
	}
	if len(res.Missing) > 0 {
		fmt.Fprintf(stderr, "gwconform load merge: shard %s of the load missing: its requests are not counted\n", strings.Join(res.Missing, ", "))
		return report.ExitFail
	}
	if !res.OK() || !o.maxNotSent.holds(res, stderr, "gwconform load merge") {
		return report.ExitFail
	}
	return report.ExitPass
}

// failedShards gives, for each load.failed written since started in the
// directories of paths (and one level down) and not followed by a result
// in its directory, the shard's reason.
func failedShards(paths []string, started time.Time) []string {
	var out []string
	for _, a := range paths {
		for _, pattern := range []string{filepath.Join(a, loadFailed), filepath.Join(a, "*", loadFailed)} {
			m, _ := filepath.Glob(pattern)
			for _, f := range m {
				st, err := os.Stat(f)
				if err != nil || st.ModTime().Before(started.Add(-time.Second)) {
					continue
				}
				if res, err := os.Stat(filepath.Join(filepath.Dir(f), load.ReportJSON)); err == nil && !res.ModTime().Before(st.ModTime()) {
					continue // the shard ran again since, and wrote its result
				}
				b, err := safefile.ReadFile(f, 4096)
				if err != nil {
					continue
				}
				out = append(out, fmt.Sprintf("%s: the shard could not run: %s", filepath.Dir(f), printable.String(strings.TrimSpace(string(b)))))
			}
		}
	}
	return out
}

// resultFiles expands the arguments of load merge: files as they are,
// directories to the load.json in them and one level down.
func resultFiles(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, a)
			continue
		}
		for _, pattern := range []string{filepath.Join(a, load.ReportJSON), filepath.Join(a, "*", load.ReportJSON)} {
			m, _ := filepath.Glob(pattern)
			files = append(files, m...)
		}
	}
	return files, nil
}

const checkAcksUsage = `Usage: gwconform load check-acks ACKLOG --target URL [--fleet FILE] [--admin-token T]

Reads an ack log (gwconform load --ack-log) and checks, for each device it
changed, that the target shows the last acknowledged value of its name
and of each field a command set, or one of the values sent after it that
got no answer (each may or may not have been applied); and, for each
gateway it sent messages to, that every acknowledged message is in the
gateway's log exactly once, in the order its worker sent them (a message
without a sure answer: at most once). gwconform load tags each message of
a run with an ack log so that it is one of a kind. It reads the target
through the admin API (GET /_sim/gateways/{mac}/devices/{sn} and
GET /_sim/gateways/{mac}/messages, docs/CONTRACT.md 7), from any replica.
It prints each difference (device or gateway, field or message,
expected, got). A gateway log that is capped (--message-limit) may have
dropped the oldest: those are counted as evicted, not as lost.

--fleet FILE, the fleet the load ran with, makes a device of the log that
is not in it an error (the log is not this fleet's).

Exit 0: every acknowledged change is there; 1: some are not; 2: bad
arguments, an unreadable log, or a target or admin API that cannot be read.

Flags:
`

// checkAcksOpts is gwconform load check-acks' command line.
type checkAcksOpts struct {
	logFile, target, fleetFile, token string
	timeout                           time.Duration
}

// parseCheckAcksFlags reads and checks load check-acks' command line.
func parseCheckAcksFlags(args []string, stderr io.Writer) (*checkAcksOpts, error) {
	o := &checkAcksOpts{}
	fs := flag.NewFlagSet("gwconform load check-acks", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, checkAcksUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.target, "target", "", "base `URL` of the implementation (any replica)")
	fs.StringVar(&o.fleetFile, "fleet", "", "the fleet the load ran with: every device of the log must be in it")
	fs.StringVar(&o.token, "admin-token", "", "bearer token of the admin API (default: from $GWSIM_ADMIN_TOKEN)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "time limit of one read")
	// The log comes first (check-acks ACKLOG --target URL) or after the flags.
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		o.logFile, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, errUsage
	}
	rest := fs.Args()
	if o.logFile == "" && len(rest) > 0 {
		o.logFile, rest = rest[0], rest[1:]
	}
	switch {
	case len(rest) > 0:
		return nil, fmt.Errorf("unexpected argument %q", rest[0])
	case o.logFile == "":
		return nil, errors.New("name the ack log: gwconform load check-acks ACKLOG --target URL")
	case o.target == "":
		return nil, errors.New("--target URL is required: the implementation whose state to check")
	case strings.Contains(o.target, ","):
		return nil, errors.New("--target takes one URL: the replicas share one state, any of them answers")
	case o.timeout <= 0:
		return nil, errors.New("--timeout must be positive")
	}
	if _, err := client.ParseBaseURL(o.target); err != nil {
		return nil, fmt.Errorf("--target %w", err)
	}
	return o, nil
}

// checkAcksCmd is gwconform load check-acks.
func checkAcksCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "gwconform load check-acks: "+format+"\n", a...)
		return report.ExitConfig
	}
	o, err := parseCheckAcksFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return report.ExitPass
		}
		if errors.Is(err, errUsage) {
			return report.ExitConfig
		}
		return fail("%v", err)
	}
	logFile, target, fleetFile, timeout := o.logFile, o.target, o.fleetFile, o.timeout
	// The state is read through --target's admin API: a token from the
	// environment goes there only on loopback.
	token := adminTokenOf(o.token, os.Getenv("GWSIM_ADMIN_TOKEN")).to(target, false, stderr, "gwconform load check-acks")
	fh, err := safefile.Open(logFile, safefile.MaxInput)
	if err != nil {
		return fail("%v", err)
	}
	entries, err := load.ReadAckLog(fh)
	fh.Close()
	if err != nil {
		return fail("%s: %v", logFile, err)
	}
	want := load.Expectations(entries)
	if fleetFile != "" {
		f, err := fleet.Load(fleetFile)
		if err != nil {
			return fail("fleet: %v", err)
		}
		known := map[string]bool{}
		for _, a := range f.Accounts {
			for _, g := range a.Gateways {
				for _, d := range g.Devices {
					known[g.MAC+"/"+d.SN] = true
				}
			}
		}
		for k := range want {
			if !known[k] {
				return fail("the ack log names device %s, which the fleet %s does not have: is it this load's log?", k, fleetFile)
			}
		}
	}
	check := load.AckCheck{Target: target, AdminToken: token, Client: &http.Client{Timeout: timeout}}
	rep, err := check.CheckAcks(ctx, want)
	if err != nil {
		return fail("%v", err)
	}
	msgs, err := check.CheckMessages(ctx, load.MessageExpectations(entries))
	if err != nil {
		return fail("%v", err)
	}
	acked, uncertain, noAnswer := load.CountAcks(entries)
	mismatches := append(rep.Mismatches, msgs.Mismatches...)
	for _, m := range mismatches {
		fmt.Fprintln(stdout, "MISMATCH", shown(m))
	}
	fmt.Fprintf(stdout, "%s: %d lines (%s); %d devices, %d values, %d messages on %d gateways checked against %s",
		logFile, len(entries), load.AckCounts(acked, uncertain, noAnswer), rep.Devices, rep.Fields, msgs.Messages, msgs.Gateways, load.RedactURL(target))
	if msgs.Evicted > 0 {
		fmt.Fprintf(stdout, " (%d messages not held: evicted from a capped log)", msgs.Evicted)
	}
	if msgs.Untagged > 0 {
		fmt.Fprintf(stdout, " (%d messages not held: untagged, from an older gwconform)", msgs.Untagged)
	}
	fmt.Fprint(stdout, ": ")
	if len(mismatches) > 0 {
		fmt.Fprintf(stdout, "%d differ\n", len(mismatches))
		return report.ExitFail
	}
	fmt.Fprintln(stdout, "every acknowledged change is there")
	return report.ExitPass
}
