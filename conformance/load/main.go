package load

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/device"
	"github.com/gwdmi/gwtools/simulator/fleet"
)

// Exit codes of gwconform load, as of gwconform run.
const (
	ExitOK     = 0
	ExitErrors = 1
	ExitConfig = 2
)

const usage = `Usage: gwconform load [--target URL]... [--fleet FILE] --rate R --duration D --concurrency C
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

// Main is gwconform load: it parses args, runs the load and writes the
// result, and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gwconform load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	var (
		cfg                  Config
		targets              targetList
		fleetFile, ackFile   string
		formatFlag, mixFlag  string
		via                  string
		asJSON, quiet        bool
		concurrency          int
		seed                 int64
		rate                 float64
		duration, reqTimeout time.Duration
		requests             int64
	)
	fs.Var(&targets, "target", "base `URL` of the implementation; repeat it, or separate URLs by commas, to spread the requests round-robin over several (replicas); none: the simulator, in-process")
	fs.StringVar(&fleetFile, "fleet", "", "fleet file with the target's credentials, gateways and devices; default: the demo fleet")
	fs.Float64Var(&rate, "rate", 0, "requests per second across all workers; 0: as fast as the target answers")
	fs.DurationVar(&duration, "duration", 10*time.Second, "how long to send (0 with --requests: until that many are sent)")
	fs.Int64Var(&requests, "requests", 0, "stop after this many requests (0: no limit)")
	fs.IntVar(&concurrency, "concurrency", 4, "workers, each with one request in flight and its own connection")
	fs.StringVar(&formatFlag, "format", "both", "body format: json, xml or both (drawn at random per request)")
	fs.StringVar(&mixFlag, "mix", DefaultMix.String(), "weights of the operations")
	fs.DurationVar(&reqTimeout, "timeout", 10*time.Second, "time limit of one answer")
	fs.StringVar(&via, "via", "", "how to send: raw (HTTP/1.1 spoken directly, fastest), http (net/http), client (conformance/client, as the checks send); default raw for http://, http for https://")
	fs.StringVar(&ackFile, "ack-log", "", "write one JSON line per acknowledged change, and per request sent that got no answer, to `FILE`")
	fs.BoolVar(&asJSON, "json", false, "write the result as JSON")
	fs.BoolVar(&quiet, "quiet", false, "no progress lines")
	fs.Int64Var(&seed, "seed", 1, "seed of the devices and values drawn")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitConfig
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "gwconform load: "+format+"\n", a...)
		return ExitConfig
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	if concurrency < 1 {
		return bad("--concurrency must be at least 1")
	}
	if duration <= 0 && requests <= 0 {
		return bad("set --duration or --requests")
	}
	switch formatFlag {
	case "both":
		cfg.Formats = []device.Format{device.JSON, device.XML}
	default:
		f, ok := device.ParseFormat(formatFlag)
		if !ok {
			return bad("--format must be json, xml or both, not %q", formatFlag)
		}
		cfg.Formats = []device.Format{f}
	}
	mix, err := ParseMix(mixFlag)
	if err != nil {
		return bad("--%v", err)
	}
	if via != "" && via != ViaRaw && via != ViaHTTP && via != ViaClient {
		return bad("--via must be raw, http or client, not %q", via)
	}
	f := fleet.Demo()
	if fleetFile != "" {
		if f, err = fleet.Load(fleetFile); err != nil {
			return bad("fleet: %v", err)
		}
	}
	for _, t := range targets {
		u, err := url.Parse(t)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("--target %q is not an http:// or https:// base URL", redactURL(t))
		}
	}
	var acks *errWriter
	if ackFile != "" {
		file, err := os.Create(ackFile)
		if err != nil {
			return bad("--ack-log: %v", err)
		}
		defer file.Close()
		acks = &errWriter{w: file}
		cfg.AckLog = acks
	}
	if len(targets) == 0 {
		sim, err := simulator.Start("127.0.0.1:0", simulator.Options{Fleet: f,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			return bad("starting the simulator: %v", err)
		}
		defer sim.Close()
		targets = targetList{sim.URL()}
		if !quiet {
			fmt.Fprintf(stderr, "load: the simulator, in-process at %s (%s)\n", sim.URL(), f.Describe())
		}
	} else {
		for _, t := range targets {
			if err := reachable(ctx, t, reqTimeout); err != nil {
				return bad("--target %s unreachable: %v", redactURL(t), err)
			}
		}
	}
	cfg.Targets, cfg.Fleet, cfg.Rate, cfg.Duration, cfg.Requests = targets, f, rate, duration, requests
	cfg.Concurrency, cfg.Mix, cfg.Timeout, cfg.Via, cfg.Seed = concurrency, mix, reqTimeout, via, uint64(seed)
	if !quiet {
		cfg.Progress = stderr
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		if errors.Is(err, ErrOwnedDevices) {
			return bad("--concurrency %d with --ack-log: %v", concurrency, err)
		}
		return bad("%v", err)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	} else {
		res.WriteText(stdout)
	}
	if acks != nil && acks.err != nil {
		fmt.Fprintf(stderr, "gwconform load: --ack-log %s: %v\n", ackFile, acks.err)
		return ExitErrors
	}
	if res.Requests == 0 {
		fmt.Fprintln(stderr, "gwconform load: no request finished")
		return ExitErrors
	}
	if !res.OK() {
		return ExitErrors
	}
	return ExitOK
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

// errWriter keeps the first error of its writer (the ack log's file) for
// the end of the run; the file is closed by Main.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// reachable dials the target's host once, so that a wrong address is a
// configuration error rather than a run of failed requests.
func reachable(ctx context.Context, target string, timeout time.Duration) error {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not a base URL", target)
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	d := net.Dialer{Timeout: min(timeout, 5*time.Second)}
	c, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return err
	}
	return c.Close()
}
