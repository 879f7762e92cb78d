// Command gwsim simulates the Gateway Device Management Interface.
//
//	gwsim serve [--addr 127.0.0.1:8080] [--fleet FILE | --seed N --gateways G --devices-per-gateway D]
//	gwsim fleet --seed N --gateways G --devices-per-gateway D [--out FILE]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/printable"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
	"github.com/gwdmi/gwtools/gatewayapi/stopsignal"
	"github.com/gwdmi/gwtools/gatewayapi/version"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/cassette"
	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/gcheadroom"
	"github.com/gwdmi/gwtools/simulator/redisstore"
	"github.com/gwdmi/gwtools/simulator/scenario"
	"github.com/gwdmi/gwtools/simulator/server"
	"github.com/gwdmi/gwtools/simulator/store"
)

func main() {
	ctx, stop := stopsignal.Context(context.Background(), stopsignal.Grace)
	defer stop()
	os.Exit(Run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `gwsim simulates the Gateway Device Management Interface.

Usage:
  gwsim serve [--addr 127.0.0.1:8080] [--fleet FILE | --seed N --gateways G --devices-per-gateway D]
              [--state-file PATH | --store redis://HOST:PORT/DB [--store-reset]]
              [--reject-replays] [--rate-limit N] [--replay DIR] [--scenario FILE]
              [--effect-delay D] [--message-cap N] [--connection-close] [--pretty] [--own-details]
              [--log-level info] [--access-log] [--log-summary 1m]
  gwsim fleet --seed N --gateways G --devices-per-gateway D [--timestamp-window D] [--out FILE]
  gwsim send command|message|rename [--target URL] [--format json|xml] [--fleet FILE] FIELD=VALUE...
  gwsim openapi         print the OpenAPI 3.1 document of the interface (docs/openapi.yaml)
  gwsim clients [--target URL] [--format text|json|junit|html]   the client report (docs/clients.md)
  gwsim proxy --upstream URL [--addr A] [--fleet FILE] [--record DIR] [--block-invalid]   (docs/proxy.md)
  gwsim version         print the version (also --version, after any command)

Run "gwsim serve -h", "gwsim fleet -h" or "gwsim send -h" for the flags of each.
`

// Run runs one gwsim command and returns its exit code: 0 success, 1 the
// server failed, 2 bad arguments, an unreadable fleet or a state file that
// cannot be used.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if slices.Contains(commands, args[0]) && wantsVersion(args[1:]) {
		fmt.Fprintln(stdout, "gwsim", version.Get())
		return 0
	}
	switch args[0] {
	case "gwsim": // the image's entrypoint rule (Entry): gwsim gwsim serve is gwsim serve
		return Run(ctx, args[1:], stdout, stderr)
	case "gwconform":
		return execGwconform(args[1:], stderr)
	case "serve":
		m := &Main{Stdout: stdout, Stderr: stderr}
		if err := m.ParseFlags(args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			m.fail(err)
			return 2
		}
		if err := m.Open(); err != nil {
			m.fail(err)
			return 2
		}
		keeper := m.keepHeadroom()
		defer keeper.Stop()
		<-ctx.Done()
		m.log.Info("stopping: signal received; letting requests in flight finish")
		if err := m.Close(); err != nil {
			m.fail(err)
			return 1
		}
		m.log.Info("stopped")
		return 0
	case "fleet":
		return fleetCmd(args[1:], stdout, stderr)
	case "send":
		return sendCmd(ctx, args[1:], stdout, stderr)
	case "openapi":
		return openAPICmd(args[1:], stdout, stderr)
	case "clients":
		return clientsCmd(ctx, args[1:], stdout, stderr)
	case "proxy":
		return proxyCmd(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "--version", "-version", "version":
		fmt.Fprintln(stdout, "gwsim", version.Get())
		return 0
	}
	fmt.Fprintln(stderr, unknownCommand(args[0]))
	return 2
}

// Main is gwsim serve: flags, the running simulator, and its shutdown. The
// end-to-end tests drive it on 127.0.0.1:0.
type Main struct {
	Stdout, Stderr io.Writer

	Addr       string
	FleetFile  string
	Seed       int64
	Gateways   int
	PerGateway int
	AdminToken string
	// AdminTokenFile holds the admin token on its first line.
	AdminTokenFile string
	LogLevel       string
	LogFormat      string
	// AccessLog logs one line per request; LogSummary is how often the
	// summary of the requests is logged (0: never).
	AccessLog  bool
	LogSummary time.Duration
	Journal    int
	// StateFile keeps the state across restarts; RejectReplays and
	// RateLimit harden the operations.
	StateFile     string
	RejectReplays bool
	RateLimit     int
	// The latitudes of a faithful service gwsim takes on demand
	// (CONTRACT's preamble): EffectDelay shows each change at the admin
	// reads up to that long after the answer, MessageCap keeps the last N
	// messages of a gateway, ConnectionClose closes the connection after
	// every answer, Pretty lays answers out over lines, OwnDetails gives
	// its own wording, codes and fields where no sentence states them.
	EffectDelay     time.Duration
	MessageCap      int
	ConnectionClose bool
	Pretty          bool
	OwnDetails      bool
	// Store is the --store URL: where the state is kept (package
	// simulator's Backend); StoreReset replaces another fleet found there.
	Store      string
	StoreReset bool
	// sentinelPassword is $GWSIM_SENTINEL_PASSWORD: the Sentinels' own
	// password for a redis+sentinel:// Store (never a flag, never shown).
	sentinelPassword string
	// StoreDurability is when a change on Redis is acknowledged: primary
	// or replicated.
	StoreDurability string
	// AllowedHosts are the further Host names /_sim/ answers
	// (--allowed-hosts); MaxEventsClients bounds the dashboard's event
	// streams.
	AllowedHosts     string
	MaxEventsClients int
	// ReplicaName names this process in the journal, the dashboard and
	// its events (default: host name and pid).
	ReplicaName string
	// OpenForms is --open-forms: refuse or accept the forms neither text
	// decides.
	OpenForms string
	// HealthNeedsToken puts /_sim/health behind --admin-token too.
	HealthNeedsToken bool
	// TrustedProxies is --trusted-proxies: the balancers whose
	// Forwarded or X-Forwarded-For names the client the limiters count.
	TrustedProxies string
	trusted        []netip.Prefix
	// AdminMode is --admin (default $GWSIM_ADMIN): auto (a token is
	// needed beyond loopback), open (no token, on purpose) or off (no
	// admin API at all).
	AdminMode string
	// ClientReport keeps the client report (GET /_sim/clients).
	ClientReport bool
	// Metrics serves the Prometheus metrics (GET /metrics).
	Metrics bool
	// GCHeadroom is --gc-headroom in MiB: the room for garbage the
	// collector keeps between cycles (package gcheadroom); 0: Go's own pace.
	GCHeadroom int
	// Replay answers the requests recorded in this cassette directory
	// with their recorded answers (gwsim proxy --record).
	Replay string
	player *cassette.Player
	// Scenario plays this timeline of faults (package scenario).
	Scenario string
	play     *scenario.Player

	Sim *simulator.Simulator
	log *slog.Logger
	// credentials says where the fleet's credentials come from, for the
	// banner; demo: the built-in demo fleet, whose secrets are public.
	credentials string
	demo        bool
	// checkOnly stops ParseFlags once the flags are read (checkArgs).
	checkOnly bool
}

// ParseFlags reads the serve flags and loads or generates the fleet.
func (m *Main) ParseFlags(args []string) error {
	fs := m.serveFlagSet(args)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := m.checkFlags(fs); err != nil {
		return err
	}
	if m.checkOnly {
		return nil
	}
	if err := m.readAdminToken(); err != nil {
		return err
	}
	if err := m.checkAdminMode(os.Getenv); err != nil {
		return err
	}
	trusted, err := server.ParseTrustedProxies(m.TrustedProxies)
	if err != nil {
		return err
	}
	m.trusted = trusted
	f, restoreGC, err := m.loadFleet(fs)
	if err != nil {
		return err
	}
	defer restoreGC()
	summary, openForms, err := m.checkLimits()
	if err != nil {
		return err
	}
	wrap, replayNote, err := m.loadReplay(f)
	if err != nil {
		return err
	}
	faults, admin, err := m.loadScenario()
	if err != nil {
		return err
	}
	m.Sim, err = simulator.Build(simulator.Options{SentinelPassword: m.sentinelPassword, WrapOperations: wrap, ReplayNote: replayNote, ClientFaults: faults, Admin: admin, Fleet: f, AdminToken: m.AdminToken, Logger: m.log, JournalSize: m.Journal,
		StateFile: m.StateFile, RejectReplays: m.RejectReplays, RateLimit: m.RateLimit,
		AccessLog: m.AccessLog, SummaryEvery: summary,
		StoreURL: m.Store, StoreReset: m.StoreReset, HealthNeedsToken: m.HealthNeedsToken, AdminOff: m.AdminMode == adminOff, TrustedProxies: m.trusted,
		StoreDurability: m.StoreDurability, Replica: m.ReplicaName, OpenForms: openForms,
		AllowedHosts: hostList(m.AllowedHosts), MaxEventsClients: m.MaxEventsClients,
		NoClientReport: !m.ClientReport, NoMetrics: !m.Metrics,
		EffectDelay: m.EffectDelay, MessageLimit: m.MessageCap, ConnectionClose: m.ConnectionClose,
		Latitudes: server.Latitudes{Pretty: m.Pretty, OwnDetails: m.OwnDetails}})
	if err != nil {
		return err
	}
	return m.attachScenario()
}

// serveFlagSet declares the serve flags on m's fields. Once
// --log-format json is among args, the flag errors are left to m.fail so
// that everything gwsim writes is JSON.
func (m *Main) serveFlagSet(args []string) *flag.FlagSet {
	fs := flag.NewFlagSet("gwsim serve", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	jsonLogErrors(m, fs, args)
	fs.StringVar(&m.Addr, "addr", "127.0.0.1:8080", "listen address (host:port); port 0 picks a free one")
	fs.StringVar(&m.FleetFile, "fleet", "", "fleet file (YAML or JSON, CONTRACT section 5); default: the built-in demo fleet")
	fs.Int64Var(&m.Seed, "seed", 0, "generate a fleet from this seed instead (with --gateways and --devices-per-gateway)")
	fs.IntVar(&m.Gateways, "gateways", 1, "gateways in a generated fleet")
	fs.IntVar(&m.PerGateway, "devices-per-gateway", 6, "devices per gateway in a generated fleet")
	// The token's default comes from the environment after parsing, so
	// that no usage text ever shows its value.
	fs.StringVar(&m.AdminToken, "admin-token", "", "require Authorization: Bearer TOKEN on /_sim/ (default: from $GWSIM_ADMIN_TOKEN); at least 32 characters.\n"+
		"A command line is visible to every user of the machine: prefer $GWSIM_ADMIN_TOKEN or --admin-token-file")
	fs.StringVar(&m.AdminTokenFile, "admin-token-file", "", "read the admin token from the first line of `FILE`")
	fs.StringVar(&m.LogLevel, "log-level", "info", "log level: debug, info, warn, error. At info: start-up, warnings, errors and a\n"+
		"summary of the requests every --log-summary; at debug also one line per request")
	fs.BoolVar(&m.AccessLog, "access-log", false, "log one line per request at info (method, path, status, duration, mac, sn;\n"+
		"never a sign or secret). Off by default: a line per request costs throughput")
	fs.DurationVar(&m.LogSummary, "log-summary", server.DefaultSummaryEvery, "log a summary of the requests answered (count, rate, errors) this often\n"+
		"when there were any; 0: never")
	fs.StringVar(&m.AdminMode, "admin", "", "the admin API (/_sim/, the dashboard, /metrics) by `MODE` (default: $GWSIM_ADMIN, else auto).\n"+
		"auto: behind the admin token when one is set; without one, loopback only: on any other address\n"+
		"gwsim refuses to start. open: without a token even beyond loopback, on purpose (the banner says so).\n"+
		"off: no admin API at all (404), only /_sim/health; for a service whose admin calls nobody makes")
	fs.StringVar(&m.TrustedProxies, "trusted-proxies", "", "comma-separated `ADDRESSES` or prefixes (10.0.0.0/8) of the reverse proxies or load balancers\n"+
		"in front of gwsim: from them, the client that the admin-token guess, sign-in and --rate-limit limiters\n"+
		"count is read from Forwarded or X-Forwarded-For (docs/deploy.md); from anyone else the headers are ignored")
	fs.BoolVar(&m.HealthNeedsToken, "health-needs-token", false, "require the admin token on /_sim/health and /_sim/ready too (by default they stay open for probes)")
	fs.BoolVar(&m.ClientReport, "client-report", true, "keep the client report, GET /_sim/clients and gwsim clients (docs/clients.md);\n"+
		"false saves each request a pass over its fields")
	fs.BoolVar(&m.Metrics, "metrics", true, "serve Prometheus metrics on GET /metrics, behind --admin-token when set\n(names in docs/usage.md, Metrics)")
	fs.StringVar(&m.Replay, "replay", "", "answer the requests recorded in `DIR` (gwsim proxy --record) with the recorded answers,\n"+
		"matched by operation, format and fields (never sign or timestamp); simulate everything else")
	fs.StringVar(&m.Scenario, "scenario", "", "play the timeline of faults in `FILE` (YAML, docs/scenarios.md) on top of fault injection;\n"+
		"POST /_sim/scenario/start, /stop and /restart control it")
	fs.StringVar(&m.LogFormat, "log-format", "text", "log format: text or json")
	fs.IntVar(&m.Journal, "journal-size", 1000, "requests kept in the journal")
	fs.StringVar(&m.StateFile, "state-file", "", "keep device states, names and message logs in the file at `PATH` across restarts (a bbolt\n"+
		"database, created when missing or empty); each change is on disk before it is acknowledged.\n"+
		"A damaged or foreign file, or one made for another fleet, stops gwsim (exit 2) and is left untouched.\n"+
		"POST /_sim/reset empties it too. Default: state in memory only")
	fs.BoolVar(&m.RejectReplays, "reject-replays", false, "answer 401 replayed_request to an api_key, timestamp and sign already used while the\n"+
		"timestamp is in the window (with the md5 sign: at most one request per key per second)")
	fs.DurationVar(&m.EffectDelay, "effect-delay", 0, "show each change at the admin reads (a device, a gateway's messages, the state) between half\n"+
		"of `D` and D after its answer, drawn for each change, in the order they were made; the answers are\n"+
		"unchanged. With the state in memory only. 0: at once")
	fs.IntVar(&m.MessageCap, "message-cap", store.DefaultMessageLimit, "keep the last `N` messages of each gateway (the oldest drop out)")
	fs.BoolVar(&m.ConnectionClose, "connection-close", false, "close the connection after every answer (Connection: close)")
	fs.BoolVar(&m.Pretty, "pretty", false, "lay every operation's answer out over indented lines, JSON and XML alike")
	fs.BoolVar(&m.OwnDetails, "own-details", false, "answer errors in gwsim's own words, with its own code and field wherever neither text\n"+
		"states them (the code of a 405, the field of most errors; docs/usage.md, Latitudes)")
	fs.IntVar(&m.RateLimit, "rate-limit", 0, "at most `N` operation requests a second per client IP (IPv6: per /64), burst N;\n"+
		"beyond: 429 rate_limited with Retry-After. 0: no limit")
	fs.StringVar(&m.Store, "store", "", "where the state is kept, by `URL` (env GWSIM_STORE): memory: (the default), file:PATH (as\n"+
		"--state-file), or Redis, shared by every gwsim started with it: redis://[user:password@]HOST:PORT/DB,\n"+
		"rediss:// for TLS, redis://H1:P1?addr=H2:P2 for a Cluster, redis+sentinel://H1:P1,H2:P2/MASTER[/DB] to\n"+
		"follow a Sentinel setup through failovers. On Redis: device states, names, message logs, journal,\n"+
		"replay protection, rate counts, faults, dashboard sessions and events.\n"+
		"$GWSIM_SENTINEL_PASSWORD (environment only, never shown): the password of Sentinels that require one")
	fs.BoolVar(&m.StoreReset, "store-reset", false, "with --store: empty gwsim's keys in Redis and load this fleet, even when Redis holds another fleet")
	fs.StringVar(&m.StoreDurability, "store-durability", "primary", "with --store: when a change is acknowledged. primary: once the Redis primary has it\n"+
		"(a failover may lose the last ones); replicated: once a replica has it too (WAIT 1, 1s; when no\n"+
		"replica confirms in time: 503 storage_unavailable, the change may or may not be kept)")
	fs.StringVar(&m.AllowedHosts, "allowed-hosts", "", "comma-separated host `NAMES` the admin API and dashboard answer besides IP addresses,\n"+
		"localhost and the --addr host (DNS-rebinding protection; others get 421): gwsim.example.com,\n"+
		".example.com (a domain and every name under it), * (any: only behind a proxy that checks Host)")
	fs.IntVar(&m.MaxEventsClients, "max-events-clients", server.DefaultMaxEventsClients, "dashboards that may follow the live event stream at once (beyond: 503)")
	fs.StringVar(&m.ReplicaName, "replica-name", "", "this process's name in the journal, the dashboard and its events (default: host name-pid)")
	fs.StringVar(&m.OpenForms, "open-forms", "refuse", "how to read the forms neither gateway-api.md nor CONTRACT.md decides (a sign, leading zeros\n"+
		"or white space in a number, an exponent in its text, a type name in another case, text beside control, ...;\n"+
		"docs/oracle.md lists them): refuse (a strict service) or accept (a lenient one). gwconform passes both")
	fs.IntVar(&m.GCHeadroom, "gc-headroom", gcheadroom.DefaultHeadroom>>20, "let `MiB` of garbage build up between two collections however small the live heap\n"+
		"(the collector runs less often: more requests a second for up to that much memory); 0: Go's own pace.\n"+
		"GOGC set in the environment wins")
	fs.Bool("version", false, "print the version and exit")
	return fs
}

// checkFlags checks the flags that need no fleet and sets up the logger:
// gwsim --check stops after it, so everything it rejects is rejected
// before anything is loaded.
func (m *Main) checkFlags(fs *flag.FlagSet) error {
	storeFrom := "--store"
	if m.Store == "" { // not a flag default: a URL may carry a password, and -h prints defaults
		m.Store, storeFrom = os.Getenv("GWSIM_STORE"), "GWSIM_STORE"
	}
	if err := checkStore(m.Store, storeFrom); err != nil {
		return err
	}
	pw, err := sentinelPassword(m.Store, storeFrom, os.Getenv)
	if err != nil {
		return err
	}
	m.sentinelPassword = pw
	if _, err := redisstore.ParseDurability(m.StoreDurability); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := m.openLog(); err != nil {
		return err
	}
	return inRange("--gc-headroom", m.GCHeadroom, 0, maxGCHeadroom)
}

// openLog sets m.log to the logger --log-level and --log-format ask for.
func (m *Main) openLog() error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(m.LogLevel)); err != nil {
		return fmt.Errorf("--log-level: %q is not debug, info, warn or error", m.LogLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch m.LogFormat {
	case "text":
		m.log = slog.New(slog.NewTextHandler(m.Stderr, opts))
	case "json":
		m.log = slog.New(slog.NewJSONHandler(m.Stderr, opts))
	default:
		return fmt.Errorf("--log-format: %q is not text or json", m.LogFormat)
	}
	return nil
}

// readAdminToken settles m.AdminToken from --admin-token, its file or the
// environment, and warns when it was given on the command line, where
// every user of the machine can read it.
func (m *Main) readAdminToken() error {
	token, onCommandLine, err := adminToken(m.AdminToken, m.AdminTokenFile)
	if err != nil {
		return err
	}
	m.AdminToken = token
	if onCommandLine {
		m.log.Warn(tokenOnCommandLine)
	}
	return nil
}

// loadFleet loads the --fleet file or generates the fleet of --seed; nil
// stands for the built-in demo fleet. It also says where the credentials
// come from, for the banner. Call restoreGC once the simulator is built:
// a generated fleet is made with the collector off.
func (m *Main) loadFleet(fs *flag.FlagSet) (f *fleet.Fleet, restoreGC func(), err error) {
	restoreGC = func() {}
	seedSet := false
	fs.Visit(func(f *flag.Flag) { seedSet = seedSet || f.Name == "seed" })
	m.credentials, m.demo = "the built-in demo fleet, whose secrets are public", m.FleetFile == "" && !seedSet
	switch {
	case m.FleetFile != "" && seedSet:
		return nil, restoreGC, errors.New("--fleet and --seed exclude each other")
	case m.FleetFile != "":
		if f, err = fleet.Load(m.FleetFile); err != nil {
			return nil, restoreGC, fmt.Errorf("fleet: %w", err)
		}
		m.credentials = "the fleet file " + m.FleetFile
	case seedSet:
		if err := fleetSize(m.Gateways, m.PerGateway); err != nil {
			return nil, restoreGC, err
		}
		// A generated fleet makes almost no garbage: everything it
		// allocates stays. Collecting while it grows would only mark the
		// same devices again and again (10M devices: half the start-up),
		// so the collector waits until the simulator is built.
		percent := debug.SetGCPercent(-1)
		restoreGC = func() { debug.SetGCPercent(percent) }
		f = fleet.Generate(m.Seed, m.Gateways, m.PerGateway)
		m.credentials = fmt.Sprintf("the fleet generated from --seed %d (gwsim fleet --seed %d writes it, secrets included)", m.Seed, m.Seed)
	}
	return f, restoreGC, nil
}

// checkLimits checks the bounded flags and turns --log-summary and
// --open-forms into what the simulator takes.
func (m *Main) checkLimits() (summary time.Duration, openForms device.OpenForms, err error) {
	if err := inRange("--journal-size", m.Journal, 1, server.MaxJournalSize); err != nil {
		return 0, openForms, err
	}
	if err := inRange("--max-events-clients", m.MaxEventsClients, 1, server.MaxEventsClientsLimit); err != nil {
		return 0, openForms, err
	}
	if m.LogSummary < 0 {
		return 0, openForms, errors.New("--log-summary must be a duration such as 1m, or 0 for none")
	}
	summary = m.LogSummary
	if summary == 0 {
		summary = -1 // server.Config: below 0 is never
	}
	if err := inRange("--rate-limit", m.RateLimit, 0, maxRateLimit); err != nil {
		return 0, openForms, err
	}
	if err := inRange("--message-cap", m.MessageCap, 1, maxMessageCap); err != nil {
		return 0, openForms, err
	}
	if m.EffectDelay < 0 || m.EffectDelay > maxEffectDelay {
		return 0, openForms, fmt.Errorf("--effect-delay must be a duration from 0 to %s, not %s", maxEffectDelay, m.EffectDelay)
	}
	openForms, ok := device.ParseOpenForms(m.OpenForms)
	if !ok {
		return 0, openForms, errors.New("--open-forms must be refuse or accept, not " + strconv.Quote(m.OpenForms))
	}
	return summary, openForms, nil
}

// loadReplay loads the --replay cassette, whose answers then stand in for
// the simulator's on the requests they recorded; f (nil: the demo fleet)
// authenticates those requests. The note says so in the log.
func (m *Main) loadReplay(f *fleet.Fleet) (wrap func(http.Handler) http.Handler, note string, err error) {
	if m.Replay == "" {
		return nil, "", nil
	}
	p, err := cassette.Load(m.Replay)
	if err != nil {
		return nil, "", err
	}
	af := f
	if af == nil {
		af = fleet.Demo()
	}
	p.Auth = af.Authenticator()
	m.player = p
	note = fmt.Sprintf("replay mode: %d recorded answers from %s answer the requests they recorded; everything else is simulated", m.player.Len(), m.Replay)
	return p.Wrap, note, nil
}

// loadScenario loads the --scenario timeline: the client faults it plays
// and the admin routes that start, stop and restart it.
func (m *Main) loadScenario() (faults func() []clients.Fault, admin map[string]http.Handler, err error) {
	if m.Scenario == "" {
		return nil, nil, nil
	}
	sc, err := scenario.Load(m.Scenario)
	if err != nil {
		return nil, nil, err
	}
	m.play = scenario.NewPlayer(sc, m.log)
	return m.play.Faults, m.play.Routes(), nil
}

// attachScenario binds the scenario, if any, to the built simulator; a
// scenario naming devices the fleet lacks closes the simulator.
func (m *Main) attachScenario() error {
	if m.play == nil {
		return nil
	}
	if err := m.play.Scenario().CheckFleet(m.Sim.Fleet); err != nil {
		m.Sim.Close()
		return fmt.Errorf("scenario %s: %w", m.Scenario, err)
	}
	m.play.Attach(m.Sim.Server)
	if p := m.Sim.Backend.PauseWrites; p != nil {
		m.play.RedisLoss = p
	}
	if rec := m.Sim.Clients; rec != nil {
		// A restart is a new run: the client report starts afresh.
		m.play.OnRestart = rec.Reset
	}
	return nil
}

// maxGCHeadroom bounds --gc-headroom (MiB).
const maxGCHeadroom = 4096

// keepHeadroom starts the collector's headroom of --gc-headroom, when GOGC
// does not decide instead. Stop what it returns (nil or not) on the way out.
func (m *Main) keepHeadroom() *gcheadroom.Keeper {
	if m.GCHeadroom == 0 {
		return nil
	}
	if !gcheadroom.Enabled() {
		m.log.Debug("GOGC is set in the environment: the collector keeps its pace, --gc-headroom is not applied")
		return nil
	}
	return gcheadroom.Start(uint64(m.GCHeadroom) << 20)
}

// Open starts listening and prints where, with the credentials to use.
func (m *Main) Open() error {
	if err := m.Sim.Open(m.Addr); err != nil {
		m.Sim.Close() // the state file
		return err
	}
	if m.AdminToken == "" && m.AdminMode != adminOff && !isLoopback(m.Sim.Server.Addr()) {
		if m.AdminMode != adminOpen { // a name that resolved to loopback and was listened on elsewhere
			m.Sim.Close()
			return errors.New(closedAdmin(m.Sim.Server.Addr()))
		}
		m.log.Warn("the admin API is open to the network on purpose (--admin open): anyone who reaches this address can read and reset the state")
	}
	m.printBanner()
	if m.play != nil && m.play.Autostart() {
		if err := m.play.Start(); err != nil {
			m.Sim.Close()
			return err
		}
	}
	return nil
}

// jsonLogErrors: with --log-format json on the command line, even a
// mistake in the flags is reported as a JSON record (by fail), not by the
// flag package's text; -h still prints the usage.
func jsonLogErrors(m *Main, fs *flag.FlagSet, args []string) {
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		if a == "log-format=json" || a == "log-format" && i+1 < len(args) && args[i+1] == "json" {
			m.LogFormat, m.log = "json", slog.New(slog.NewJSONHandler(m.Stderr, nil))
			fs.SetOutput(io.Discard)
			usage := fs.Usage
			fs.Usage = func() {}
			for _, h := range args {
				if h == "-h" || h == "--h" || h == "-help" || h == "--help" {
					fs.SetOutput(m.Stderr)
					fs.Usage = usage
				}
			}
			return
		}
	}
}

// fail reports an error of gwsim serve: a JSON record once --log-format
// json is known (everything gwsim then writes is JSON), a line otherwise.
func (m *Main) fail(err error) {
	if m.log != nil && m.LogFormat == "json" {
		m.log.Error("gwsim: " + err.Error())
		return
	}
	fmt.Fprintln(m.Stderr, "gwsim:", err)
}

// Close shuts down gracefully.
func (m *Main) Close() error {
	if m.play != nil {
		m.play.Stop()
	}
	return m.Sim.Close()
}

// reachableURL is a URL to open for a server that listens at u. A
// wildcard address (0.0.0.0, [::], or no host) listens on every interface
// but is no address to connect to: this machine's loopback stands for it
// in the URL, and every is the address listened on, to say so.
func reachableURL(u string) (url, every string) {
	addr := strings.TrimPrefix(u, "http://")
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return u, ""
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return u, ""
	}
	return "http://" + net.JoinHostPort("127.0.0.1", port), addr
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// printBanner says where gwsim listens, what it serves and where the
// credentials come from. A secret is shown only for the built-in demo
// fleet, whose secrets are public; any other fleet's api_key shows its
// first four characters. With --log-format json the banner is one JSON
// record on stdout, like every other line gwsim writes.
// adminAccess says who may use the admin API (/_sim/, the dashboard,
// /metrics): with a token, whoever holds it; without, whoever reaches the
// address, which beyond loopback is the network.
func (m *Main) adminAccess() string {
	switch {
	case m.AdminToken != "":
		return "needs the admin token (Authorization: Bearer, or the dashboard's sign-in)"
	case m.AdminMode == adminOff:
		return "off (--admin off): no admin API, dashboard or /metrics; /_sim/health answers"
	case isLoopback(m.Sim.Server.Addr()):
		return "open without a token to every program of this machine (loopback only); set $GWSIM_ADMIN_TOKEN to close it"
	}
	return "OPEN TO THE NETWORK without a token, on purpose (--admin open): anyone who reaches this address can read the state and the journal, " +
		"reset the state, set faults and scenarios, use the dashboard and read /metrics; set $GWSIM_ADMIN_TOKEN " +
		"(at least 32 characters: openssl rand -hex 16) to close it"
}

// latitudes name, for the banner, the freedoms of a faithful service
// this gwsim takes (CONTRACT's preamble), each as its flag set it; the
// two that also harden a shared service, --reject-replays and
// --rate-limit, are said on the hardening line.
func (m *Main) latitudes() []string {
	var l []string
	if m.EffectDelay > 0 {
		l = append(l, fmt.Sprintf("changes shown at the admin reads %s to %s after the answer (--effect-delay)", m.EffectDelay/2, m.EffectDelay))
	}
	if m.MessageCap != store.DefaultMessageLimit {
		l = append(l, fmt.Sprintf("the last %s of each gateway kept (--message-cap)", plural(m.MessageCap, "message")))
	}
	if m.ConnectionClose {
		l = append(l, "Connection: close after every answer (--connection-close)")
	}
	if m.Pretty {
		l = append(l, "answers laid out over lines (--pretty)")
	}
	if m.OwnDetails {
		l = append(l, "own wording, codes and fields where no sentence states them (--own-details)")
	}
	return l
}

// hardening says what --rate-limit and --reject-replays do when set, for
// the banner: an app's 429s and 401s then come from them.
func (m *Main) hardening() string {
	var parts []string
	if m.RateLimit > 0 {
		parts = append(parts, fmt.Sprintf("--rate-limit %d: at most %d operation requests a second per client address, then 429 rate_limited with Retry-After", m.RateLimit, m.RateLimit))
	}
	if m.RejectReplays {
		parts = append(parts, "--reject-replays: a request sent again with its timestamp and sign is refused 401 replayed_request")
	}
	if len(parts) == 0 {
		return ""
	}
	return "hardening: " + strings.Join(parts, "; ")
}

func (m *Main) printBanner() {
	url, every := reachableURL(m.Sim.URL())
	f := m.Sim.Fleet
	scheme := map[auth.Scheme]string{auth.MD5: "md5 of api_key + secret + timestamp",
		auth.FormatOnly: "any 32 hex characters (scheme format)", auth.Off: "not checked (scheme off)"}[f.Scheme()]
	window := "timestamp window " + f.Window().String()
	if f.Window() == 0 {
		window = "no timestamp window"
	}
	store := m.Sim.Backend.Describe
	t, terr := f.Target()
	key, secret := "", "not shown: it is in "+m.credentials
	if terr == nil {
		key = client.MaskAPIKey(t.Key.Key)
		if m.demo {
			key, secret = t.Key.Key, t.Key.Secret
		}
	}
	var devices []fleet.Device
	more := 0
	if terr == nil {
		for _, a := range f.Accounts {
			for _, g := range a.Gateways {
				if a.ID == t.AccountID && g.MAC == t.MAC {
					devices = g.Devices
				}
			}
		}
		if len(devices) > 10 {
			more, devices = len(devices)-10, devices[:10]
		}
	}

	if m.LogFormat == "json" {
		attrs := []any{"url", url, "fleet", f.Describe(), "credentials_from", m.credentials,
			"operations", []string{"/v1/services/gateway/command", "/v1/services/gateway/message", "/v1/services/device/update_name"},
			"dashboard", url + "/_sim/", "admin_api", url + "/_sim/state", "admin", m.adminAccess(), "sign", scheme, "window", window}
		if h := m.hardening(); h != "" {
			attrs = append(attrs, "hardening", h)
		}
		if store != "" {
			attrs = append(attrs, "store", store)
		}
		if l := m.latitudes(); len(l) > 0 {
			attrs = append(attrs, "latitudes", l)
		}
		if every != "" {
			attrs = append(attrs, "listen", every)
		}
		if terr == nil {
			attrs = append(attrs, "api_key", key, "myservice_id", t.AccountID, "mac", t.MAC)
			if m.demo {
				attrs = append(attrs, "secret", secret)
			}
			sns := make([]string, len(devices))
			for i, d := range devices {
				sns[i] = d.SN + " " + d.Type
			}
			attrs = append(attrs, "devices", sns, "more_devices", more)
		}
		slog.New(slog.NewJSONHandler(m.Stdout, nil)).Info("gwsim listening on "+url, attrs...)
		return
	}

	// The banner shows what files said (device names, a scenario's
	// steps, paths): escaped as a whole, line by line, when written.
	var w strings.Builder
	defer func() { io.WriteString(m.Stdout, printable.Lines(w.String())) }()
	fmt.Fprintf(&w, "gwsim listening on %s (%s)\n", url, f.Describe())
	if every != "" {
		fmt.Fprintf(&w, "  listening on every interface (%s): from another machine, use this one's name or address\n", every)
	}
	fmt.Fprintf(&w, "  operations: POST %s/v1/services/gateway/command | /v1/services/gateway/message | /v1/services/device/update_name\n", url)
	fmt.Fprintf(&w, "  dashboard:  %s/_sim/   admin API: %s/_sim/state\n", url, url)
	fmt.Fprintf(&w, "  admin: %s\n", m.adminAccess())
	fmt.Fprintf(&w, "  sign: %s, %s\n", scheme, window)
	if h := m.hardening(); h != "" {
		fmt.Fprintf(&w, "  %s\n", h)
	}
	if m.play != nil {
		st := m.play.Status()
		fmt.Fprintf(&w, "  scenario: %s, %s over %s (GET %s/_sim/scenario)\n", st.Name, plural(len(st.Steps), "step"), st.End, url)
		for _, s := range m.play.Skipped() {
			fmt.Fprintf(&w, "    %s\n", s)
		}
	}
	if m.player != nil {
		fmt.Fprintf(&w, "  replaying %d recorded answers from %s; everything else is simulated\n", m.player.Len(), m.Replay)
	}
	if store != "" {
		fmt.Fprintf(&w, "  store: %s\n", store)
	}
	if l := m.latitudes(); len(l) > 0 {
		fmt.Fprintf(&w, "  latitudes taken: %s\n", strings.Join(l, "; "))
	}
	if terr != nil {
		return
	}
	fmt.Fprintf(&w, "credentials (from %s):\n  api_key:      %s\n  secret:       %s\n  myservice_id: %s\n  mac:          %s\n",
		m.credentials, key, secret, t.AccountID, t.MAC)
	if len(devices) > 0 {
		fmt.Fprintln(&w, "devices:")
		for _, d := range devices {
			fmt.Fprintf(&w, "  %s  %-22s %s\n", d.SN, d.Type, d.Name)
		}
		if more > 0 {
			fmt.Fprintf(&w, "  … and %d more (GET %s/_sim/state)\n", more, url)
		}
	}
}

func fleetCmd(args []string, stdout, stderr io.Writer) int {
	return fleetRun(args, stdout, stderr, false)
}

// fleetRun is gwsim fleet; with checkOnly it stops once the arguments are
// checked (checkArgs).
func fleetRun(args []string, stdout, stderr io.Writer, checkOnly bool) int {
	fs := flag.NewFlagSet("gwsim fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Int64("seed", 1, "seed: the same seed gives the same fleet")
	gateways := fs.Int("gateways", 1, "gateways")
	per := fs.Int("devices-per-gateway", 6, "devices per gateway")
	out := fs.String("out", "", "write to this file instead of standard output")
	window := fs.String("timestamp-window", "", "write timestamp_window: a duration such as 300s, or 0 to disable the check (default: none written, 300s)")
	fs.Bool("version", false, "print the version and exit")
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "gwsim fleet:", err)
		return 2
	}
	if *gateways < 1 || *per < 0 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "gwsim fleet: --gateways must be at least 1, --devices-per-gateway at least 0, and no other arguments")
		return 2
	}
	if err := fleetSize(*gateways, *per); err != nil {
		fmt.Fprintln(stderr, "gwsim fleet:", err)
		return 2
	}
	if checkOnly {
		return 0
	}
	// Streamed: a million devices would be gigabytes as a YAML node tree.
	f := fleet.Generate(*seed, *gateways, *per)
	if *window != "" {
		d, err := time.ParseDuration(*window)
		if secs, aerr := strconv.Atoi(*window); aerr == nil {
			d, err = time.Duration(secs)*time.Second, nil
		}
		if err != nil || d < 0 {
			fmt.Fprintf(stderr, "gwsim fleet: --timestamp-window %q is not a duration such as 300s or 0\n", *window)
			return 2
		}
		f.TimestampWindow = &fleet.Duration{Duration: d}
	}
	if *out == "" {
		if err := f.WriteYAML(stdout); err != nil {
			fmt.Fprintln(stderr, "gwsim fleet:", err)
			return 1
		}
		return 0
	}
	err := safefile.Write(*out, 0o600, f.WriteYAML)
	if err != nil {
		fmt.Fprintln(stderr, "gwsim fleet:", strings.TrimSpace(err.Error()))
		return 1
	}
	return 0
}

// plural is "1 step", "2 steps": a count and its noun in English.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
