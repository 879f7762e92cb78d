package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/conformance/load"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

const loadUsage = `Usage: gwconform load [--target URL]... [--fleet FILE] --rate R --duration D --concurrency C
                      [--requests N] [--format json|xml|both] [--mix command=8,message=1,rename=1]
                      [--timeout D] [--via raw|http|client] [--ack-log FILE] [--json] [--quiet] [--seed N]

Sends a mix of valid, freshly signed commands, messages and renames over
the fleet's devices to URL, or to the simulator started in-process when no
--target is given. One progress line a second goes to stderr; the result
(throughput, latency percentiles, status codes, errors) to stdout. Every
answer other than success counts as an error, since every request was valid.

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
the fleet's devices).

Exit 0: no error; 1: some (or the ack log could not be written); 2: bad
arguments, unreadable fleet or a target unreachable at the start.

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
	asJSON    bool
	quiet     bool
	embedded  Embedded
	ackFH     *os.File
}

// loadCmd is gwconform load with its exit code: 0 no error, 1 some, 2 bad
// arguments, unreadable fleet or a target unreachable at the start.
func loadCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	m := &loadMain{Stdout: stdout, Stderr: stderr, StartEmbedded: startSimulator}
	defer m.Close()
	if err := m.ParseFlags(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitPass
		}
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(stderr, "gwconform load:", err)
		}
		return exitConfig
	}
	if err := m.Open(ctx); err != nil {
		fmt.Fprintln(stderr, "gwconform load:", err)
		return exitConfig
	}
	return m.Run(ctx)
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
		formatFlag, mixFlag string
		seed                int64
	)
	cfg := &m.cfg
	fs.Var(&m.targets, "target", "base `URL` of the implementation; repeat it, or separate URLs by commas, to spread the requests round-robin over several (replicas); none: the simulator, in-process")
	fs.StringVar(&m.fleetFile, "fleet", "", "fleet file with the target's credentials, gateways and devices; default: the demo fleet")
	fs.Float64Var(&cfg.Rate, "rate", 0, "requests per second across all workers; 0: as fast as the target answers")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long to send (0 with --requests: until that many are sent)")
	fs.Int64Var(&cfg.Requests, "requests", 0, "stop after this many requests (0: no limit)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 4, "workers, each with one request in flight and its own connection")
	fs.StringVar(&formatFlag, "format", "both", "body format: json, xml or both (drawn at random per request)")
	fs.StringVar(&mixFlag, "mix", load.DefaultMix.String(), "weights of the operations")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "time limit of one answer")
	fs.StringVar(&cfg.Via, "via", "", "how to send: raw (HTTP/1.1 spoken directly, fastest), http (net/http), client (conformance/client, as the checks send); default raw for http://, http for https://")
	fs.StringVar(&m.ackFile, "ack-log", "", "write one JSON line per acknowledged change, and per request sent that got no answer, to `FILE`")
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
	if cfg.Concurrency < 1 {
		return errors.New("--concurrency must be at least 1")
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
		u, err := url.Parse(t)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--target %q is not an http:// or https:// base URL", load.RedactURL(t))
		}
	}
	return nil
}

// Open loads the fleet, opens the ack log, and starts the embedded
// simulator or checks that each target can be reached.
func (m *loadMain) Open(ctx context.Context) error {
	f := fleet.Demo()
	if m.fleetFile != "" {
		var err error
		if f, err = fleet.Load(m.fleetFile); err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
	}
	m.cfg.Fleet = f
	if m.ackFile != "" {
		fh, err := os.Create(m.ackFile)
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
	res, err := load.Run(ctx, m.cfg)
	if err != nil {
		if errors.Is(err, load.ErrOwnedDevices) {
			err = fmt.Errorf("--concurrency %d with --ack-log: %w", m.cfg.Concurrency, err)
		}
		fmt.Fprintln(m.Stderr, "gwconform load:", err)
		return exitConfig
	}
	if m.asJSON {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	} else {
		res.WriteText(m.Stdout)
	}
	if res.AckLogError != "" {
		fmt.Fprintf(m.Stderr, "gwconform load: --ack-log %s: %s\n", m.ackFile, res.AckLogError)
		return exitFail
	}
	if res.Requests == 0 {
		fmt.Fprintln(m.Stderr, "gwconform load: no request finished")
		return exitFail
	}
	if !res.OK() {
		return exitFail
	}
	return exitPass
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
