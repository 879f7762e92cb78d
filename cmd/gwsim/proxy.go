package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/cassette"
	"github.com/gwdmi/gwtools/simulator/proxy"
	"github.com/gwdmi/gwtools/simulator/server"
)

const proxyUsage = `Usage:
  gwsim proxy --upstream URL [--addr 127.0.0.1:8081] [--fleet FILE] [--record DIR] [--block-invalid]

Stands in front of a real implementation of the interface: point the app at
the proxy. Every request and every answer is judged by the rule table the
conformance harness uses (gatewayapi/oracle); what breaks it, on either
side, is logged, journaled (GET /_sim/journal), shown live in a browser at
PROXY/_sim/, judged per client and for the service (GET /_sim/clients;
gwsim clients --target PROXY --format text|json|junit|html). Nothing on the
wire changes unless --block-invalid. With --fleet the proxy also checks
signs and timestamps.
With --record DIR it writes each answer to a cassette for gwsim serve
--replay DIR (no api_key, sign or timestamp is written).
  gwsim proxy --upstream https://staging.example.com --fleet staging.yaml --record cassettes/
Exit 0 on a signal; 2 on bad usage or a taken address.

Flags:
`

// proxyMain is gwsim proxy.
type proxyMain struct {
	Stdout, Stderr io.Writer

	addr, upstream, fleetFile, record, token, logLevel string
	tokenFile                                          string
	allowedHosts, trustedProxies                       string
	block                                              bool
	timeout                                            time.Duration
	maxInFlight, recordMaxMiB, recordMaxEntries        int
	adminMode                                          string
	cfg                                                proxy.Config
	p                                                  *proxy.Proxy
	checkOnly                                          bool
}

func (m *proxyMain) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("gwsim proxy", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() { fmt.Fprint(m.Stderr, proxyUsage); fs.PrintDefaults() }
	fs.StringVar(&m.addr, "addr", "127.0.0.1:8081", "listen address (host:port); port 0 picks a free one")
	fs.StringVar(&m.upstream, "upstream", "", "base URL of the implementation to stand in front of (required)")
	fs.StringVar(&m.fleetFile, "fleet", "", "fleet file with the keys' secrets: signs and timestamps are checked too")
	fs.StringVar(&m.record, "record", "", "write the upstream's answers as cassettes into `DIR` (for gwsim serve --replay)")
	fs.BoolVar(&m.block, "block-invalid", false, "answer a request that breaks the rules with its error instead of passing it on")
	fs.StringVar(&m.token, "admin-token", "", "require Authorization: Bearer TOKEN on /_sim/ (default: from $GWSIM_ADMIN_TOKEN); at least 32 characters.\n"+
		"A command line is visible to every user of the machine: prefer $GWSIM_ADMIN_TOKEN or --admin-token-file")
	fs.StringVar(&m.tokenFile, "admin-token-file", "", "read the admin token from the first line of `FILE`")
	fs.StringVar(&m.logLevel, "log-level", "info", "log level: debug, info, warn, error (violations are logged at warn)")
	fs.StringVar(&m.allowedHosts, "allowed-hosts", "", "comma-separated host `NAMES` the live page and /_sim/ answer besides IP addresses,\n"+
		"localhost and the --addr host (DNS-rebinding protection; others get 421); * for any")
	fs.DurationVar(&m.timeout, "timeout", proxy.DefaultTimeout, "time limit of one exchange with the upstream")
	fs.StringVar(&m.adminMode, "admin", "", "the proxy's admin calls and live page by `MODE` (default: $GWSIM_ADMIN, else auto). auto: behind\n"+
		"the admin token when one is set; without one, loopback only (on any other address the proxy refuses to\n"+
		"start). open: without a token even beyond loopback, on purpose")
	fs.StringVar(&m.trustedProxies, "trusted-proxies", "", "comma-separated `ADDRESSES` or prefixes of the balancers in front of the proxy: from them, the client\n"+
		"the admin-token guess and sign-in limiters count is read from Forwarded or X-Forwarded-For")
	fs.IntVar(&m.maxInFlight, "max-in-flight-mib", proxy.DefaultMaxInFlight>>20, "`MiB` of request and answer bodies held at once, all requests together (1 to 4096);\n"+
		"beyond, 503 proxy_busy with Retry-After")
	fs.IntVar(&m.recordMaxEntries, "record-max-entries", cassette.DefaultMaxEntries, "with --record: at most `N` cassette entries (1 to 1000000); beyond, nothing more is recorded")
	fs.IntVar(&m.recordMaxMiB, "record-max-mib", cassette.MaxCassette>>20, "with --record: at most `MiB` of cassettes in the directory (1 to 256, what gwsim serve --replay reads)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if m.upstream == "" {
		return errors.New("--upstream is required: the base URL of the implementation")
	}
	var onCommandLine bool
	if !m.checkOnly {
		var err error
		if m.token, onCommandLine, err = adminToken(m.token, m.tokenFile); err != nil {
			return err
		}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(m.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %q is not debug, info, warn or error", m.logLevel)
	}
	if m.timeout <= 0 {
		return errors.New("--timeout must be above 0")
	}
	trusted, err := server.ParseTrustedProxies(m.trustedProxies)
	if err != nil {
		return err
	}
	if err := inRange("--max-in-flight-mib", m.maxInFlight, 1, 4096); err != nil {
		return err
	}
	if err := inRange("--record-max-entries", m.recordMaxEntries, 1, 1000000); err != nil {
		return err
	}
	if err := inRange("--record-max-mib", m.recordMaxMiB, 1, cassette.MaxCassette>>20); err != nil {
		return err
	}
	m.cfg = proxy.Config{Upstream: m.upstream, BlockInvalid: m.block, AdminToken: m.token, Timeout: m.timeout, AllowedHosts: hostList(m.allowedHosts),
		MaxInFlight: int64(m.maxInFlight) << 20, TrustedProxies: trusted,
		Logger: slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: level}))}
	if onCommandLine {
		m.cfg.Logger.Warn(tokenOnCommandLine)
	}
	if _, err := proxy.New(m.cfg); err != nil {
		return err
	}
	if m.checkOnly {
		return nil
	}
	if m.adminMode == "" {
		m.adminMode = os.Getenv("GWSIM_ADMIN")
	}
	switch m.adminMode {
	case "", adminAuto:
		if m.token == "" && !loopbackOnly(m.addr) {
			return errors.New(closedAdminLine(m.addr))
		}
	case adminOpen:
		if m.token != "" {
			return errors.New("--admin open and an admin token: open needs no token; leave one out")
		}
	default:
		return fmt.Errorf("--admin: %q is not auto or open", m.adminMode)
	}
	if m.fleetFile != "" {
		f, err := fleet.Load(m.fleetFile)
		if err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
		m.cfg.Fleet = f
	}
	if m.record != "" {
		w, err := cassette.NewWriter(m.record)
		if err != nil {
			return err
		}
		w.MaxEntries, w.MaxBytes = m.recordMaxEntries, int64(m.recordMaxMiB)<<20
		m.cfg.Record = w
	}
	return nil
}

// Open starts the proxy and prints where it listens.
func (m *proxyMain) Open() error {
	p, err := proxy.New(m.cfg)
	if err != nil {
		return err
	}
	if err := p.Open(m.addr); err != nil {
		return err
	}
	m.p = p
	if m.token == "" && !isLoopback(strings.TrimPrefix(p.URL(), "http://")) {
		if m.adminMode != adminOpen {
			p.Close()
			return errors.New(closedAdminLine(strings.TrimPrefix(p.URL(), "http://")))
		}
		m.cfg.Logger.Warn("the proxy's admin calls are open to the network on purpose (--admin open): anyone who reaches this address can read the reports")
	}
	up, _ := url.Parse(m.upstream)
	up.User = nil
	at, every := reachableURL(p.URL())
	fmt.Fprintf(m.Stdout, "gwsim proxy listening on %s, in front of %s\n", at, up)
	if every != "" {
		fmt.Fprintf(m.Stdout, "  listening on every interface (%s): from another machine, use this one's name or address\n", every)
	}
	fmt.Fprintf(m.Stdout, "  live page: %s/_sim/   reports of the app and the service: gwsim clients --target %s [--format html|junit]\n", at, at)
	if m.record != "" {
		fmt.Fprintf(m.Stdout, "  recording cassettes into %s\n", m.record)
	}
	if m.block {
		fmt.Fprintln(m.Stdout, "  --block-invalid: requests that break the rules are answered by the proxy, not passed on")
	}
	return nil
}

func proxyCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	m := &proxyMain{Stdout: stdout, Stderr: stderr}
	if err := m.ParseFlags(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "gwsim proxy:", err)
		return 2
	}
	if err := m.Open(); err != nil {
		fmt.Fprintln(stderr, "gwsim proxy:", err)
		return 2
	}
	<-ctx.Done()
	if err := m.p.Close(); err != nil {
		fmt.Fprintln(stderr, "gwsim proxy:", err)
		return 1
	}
	return 0
}
