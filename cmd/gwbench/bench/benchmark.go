// Package bench measures gwsim and gwconform and writes
// docs/benchmarks.md: a load comparison, in one run, of gwsim's command
// endpoint (default flags) with a bare net/http handler on loopback at 4
// and 32 connections, driven by wrk (or by gwconform load where wrk is
// missing); the heap, RSS and start-up of fleets up to ten million
// devices; the wall time of the conformance suite, serial and parallel;
// Go benchmarks and profiles of the request path. Each part is a Section
// (sections.go): a list that new measurements extend. It drives the built programs (bin/gwsim,
// bin/gwconform) and wrk as separate processes, as a user would, so that
// every figure comes with the command line that reproduces it. cmd/gwbench
// is its command line; make bench runs it.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/gcheadroom"
)

// Options is one benchmark run. Zero values take the defaults.
type Options struct {
	// Dir is the repository's root: go test runs there.
	Dir string
	// Bin holds gwsim and gwconform, built.
	Bin string
	// Self is the gwbench program, for the bare handler and the fleet
	// measurements, which run in processes of their own.
	Self string
	// Work is where the bench fleet, bodies, wrk script and profiles go; a
	// temporary directory, removed afterwards, when empty.
	Work string
	// Wrk is the wrk program; found on PATH when empty; "none" uses
	// gwconform load for the whole comparison.
	Wrk string
	// Duration of each load run (3s), Rounds of the comparison (7),
	// Connections of wrk and workers of gwconform load, one comparison
	// for each (4 and 32; gwconform load, the half-rate latency and the
	// AltThreads round at the first only), Threads of
	// wrk and GOMAXPROCS of gwconform load (1: one core for the generator,
	// the other for the target, on a two-core machine), AltThreads of one
	// more round of JSON runs (2; 0: none).
	Duration    time.Duration
	Rounds      int
	Connections []int
	// OnOffRounds and OnOffDuration are the rounds and each run of the
	// on/off comparisons: 15 of 2 s (the metrics'; the client report's
	// rounds are ReportRounds).
	// Their goals' margin (5 %) is below one round's spread on a
	// two-core machine (±10 %), and the error of a median shrinks with
	// the square root of the rounds: 15 short rounds hold it to some 3 %
	// where 7 of 3 s held it to some 5 %, in about the same time.
	OnOffRounds   int
	OnOffDuration time.Duration
	// ReportRounds are the rounds of the client report's comparison and
	// of its control: 60. Its goal (≥ 0.95) sits within the error of a
	// median of 15 (some 4 % here); 60 rounds halve that error.
	ReportRounds int
	Threads      int
	AltThreads   int
	// FleetSizes are the fleets measured for memory and load time.
	FleetSizes []int
	// BigFleet is the device count of the large fleet gwsim serve is
	// started with, timed and its RSS read (10M; below 0: none).
	BigFleet int
	// Parallel is gwconform run --parallel of the harness figures (8).
	Parallel int
	// SuiteRuns is how often the suite is timed (3).
	SuiteRuns int
	// SkipNetworkSerial leaves out the suite's run with --concurrency 1
	// behind the delaying proxy (some 10 minutes: every request, observer
	// reads included, alone at 75 ms on average): the before-figure
	// of the network section, which then says it was skipped.
	SkipNetworkSerial bool
	// BenchTime is go test's -benchtime (1s).
	BenchTime string
	// SkipGoBench leaves out the Go benchmarks and profiles.
	SkipGoBench bool
	// ExploreDuration is how long gwconform explore runs against gwsim in
	// each setting (5m; below 0: no explore runs, only its Go benchmarks);
	// ExploreClients its --clients (8).
	ExploreDuration time.Duration
	ExploreClients  int
	// Only, when not empty, runs only the sections whose names contain
	// one of these words (a developer's shortcut; make bench runs all).
	Only []string
	// Note is written under "Where this ran" (e.g. that the machine was
	// shared with other work during the run).
	Note string
	// Pin runs the load comparisons' targets and generators on CPUs of
	// their own (Placement); place is where, once defaults has looked.
	Pin   bool
	place Placement
	// placeWhy is why Pin could not be followed ("" when it was).
	placeWhy string
	// Log receives progress lines.
	Log io.Writer
}

func (o *Options) defaults() error {
	if o.Dir == "" {
		o.Dir = "."
	}
	if o.Bin == "" {
		o.Bin = "bin"
	}
	var err error
	if o.Dir, err = filepath.Abs(o.Dir); err != nil {
		return err
	}
	if o.Bin, err = filepath.Abs(o.Bin); err != nil {
		return err
	}
	if o.Self == "" {
		if o.Self, err = os.Executable(); err != nil {
			return err
		}
	}
	for _, p := range []string{"gwsim", "gwconform"} {
		if _, err := os.Stat(filepath.Join(o.Bin, p)); err != nil {
			return fmt.Errorf("%s/%s is not built (make build): %v", o.Bin, p, err)
		}
	}
	if o.Duration <= 0 {
		o.Duration = 3 * time.Second
	}
	if o.Rounds <= 0 {
		o.Rounds = 7
	}
	if o.OnOffRounds <= 0 {
		o.OnOffRounds = 15
	}
	if o.ReportRounds <= 0 {
		o.ReportRounds = 60
	}
	if o.OnOffDuration <= 0 {
		o.OnOffDuration = 2 * time.Second
	}
	if len(o.Connections) == 0 {
		o.Connections = []int{4, 32}
	}
	if o.BigFleet == 0 {
		o.BigFleet = 10_000_000
	}
	if o.Parallel <= 0 {
		o.Parallel = 8
	}
	if o.Threads <= 0 {
		o.Threads = 1
	}
	if o.AltThreads < 0 {
		o.AltThreads = 0
	}
	if len(o.FleetSizes) == 0 {
		o.FleetSizes = []int{10_000, 100_000, 1_000_000}
	}
	if o.SuiteRuns <= 0 {
		o.SuiteRuns = 3
	}
	if o.BenchTime == "" {
		o.BenchTime = "1s"
	}
	if o.ExploreDuration == 0 {
		o.ExploreDuration = 5 * time.Minute
	}
	if o.ExploreClients <= 0 {
		o.ExploreClients = 8
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	o.place, o.placeWhy = placement(o.Pin)
	return nil
}

// Report is everything one run measured.
type Report struct {
	Env Environment `json:"environment"`
	// Placement is where the load comparisons ran targets and generators.
	Placement   Placement     `json:"placement"`
	Took        time.Duration `json:"took_ns"`
	GoBench     []GoBench     `json:"go_bench"`
	GoBenchCmd  string        `json:"go_bench_command"`
	Profiles    []Profile     `json:"profiles"`
	Fleets      []FleetRun    `json:"fleets"`
	Tool        string        `json:"tool"` // what drove the comparison
	Rounds      int           `json:"rounds"`
	Connections []int         `json:"connections"`
	Threads     int           `json:"threads"`
	Duration    time.Duration `json:"duration_ns"`
	Runs        []LoadRun     `json:"runs"`
	HalfRate    []LoadRun     `json:"half_rate"`
	// AltRuns are JSON runs with Options.AltThreads generator threads.
	AltRuns []LoadRun `json:"alt_runs,omitempty"`
	// BenchFleet is the command that writes the fleet gwsim serves under
	// load; Bodies the pre-signed request bodies wrk sends.
	BenchFleet string            `json:"bench_fleet"`
	Bodies     map[string]string `json:"bodies"`
	GwsimCmd   string            `json:"gwsim_command"`
	BareCmd    string            `json:"bare_command"`
	BareGCCmd  string            `json:"bare_gc_command,omitempty"`
	Suite      SuiteRun          `json:"suite"`
	// ReportSizes are runs whose report files were measured besides the
	// suite's own.
	ReportSizes []ReportSize `json:"report_sizes,omitempty"`
	// RSS is gwsim serve's resident memory, demo fleet against 1M
	// devices; Big the large fleet's start-up and RSS.
	RSS RSSRun      `json:"rss"`
	Big BigFleetRun `json:"big_fleet"`
	// Harness is gwconform run serial and parallel against a slow gwsim.
	Harness HarnessRun `json:"harness"`
	// Extra holds the figures of sections defined elsewhere, by name.
	Extra map[string]any `json:"extra,omitempty"`
	Notes []string       `json:"notes"`
}

// Environment is where the figures were taken.
type Environment struct {
	Date        string `json:"date"`
	Commit      string `json:"commit"`
	Go          string `json:"go"`
	OS          string `json:"os"`
	CPU         string `json:"cpu"`
	Cores       int    `json:"cores"`
	Wrk         string `json:"wrk"`
	LoadBefore  string `json:"load_before"`
	LoadAfter   string `json:"load_after"`
	MemoryTotal string `json:"memory"`
}

// FleetRun is a fleet's memory, measured in a process of its own, and the
// startup of gwsim serving it.
type FleetRun struct {
	FleetMemory
	MeasureCmd string        `json:"measure_command"`
	ServeCmd   string        `json:"serve_command"`
	Startup    time.Duration `json:"startup_ns"` // gwsim serve --seed, until it listens
	RSS        int64         `json:"rss"`
	// WriteCmd and Write are gwsim fleet writing the fleet as YAML.
	WriteCmd string        `json:"write_command"`
	Write    time.Duration `json:"write_ns"`
	Bytes    int64         `json:"file_bytes"`
}

// SuiteRun is the wall time of the whole suite against the embedded
// simulator.
type SuiteRun struct {
	Command string          `json:"command"`
	Times   []time.Duration `json:"times_ns"`
	Exit    int             `json:"exit"`
	Summary string          `json:"summary"`
	// ReportBytes is the size of the last run's report files together.
	ReportBytes int64 `json:"report_bytes"`
}

// Median of the suite's wall times.
func (s SuiteRun) Median() time.Duration { return medianDuration(s.Times) }

// Run measures everything and returns the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	start := time.Now()
	if o.Work == "" {
		dir, err := os.MkdirTemp("", "gwbench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		o.Work = dir
	} else if err := os.MkdirAll(o.Work, 0o755); err != nil {
		return nil, err
	}
	r := &Report{Env: environment(ctx, o), Rounds: o.Rounds, Connections: o.Connections, Threads: o.Threads, Duration: o.Duration,
		Placement: o.place, Extra: map[string]any{}}
	if o.placeWhy != "" {
		r.Notes = append(r.Notes, "Not pinned: "+o.placeWhy+".")
	}
	if o.Note != "" {
		r.Notes = append(r.Notes, o.Note)
	}
	logf := func(format string, a ...any) { fmt.Fprintf(o.Log, "gwbench: "+format+"\n", a...) }
	for _, sec := range Sections() {
		if sec.Measure == nil || (o.SkipGoBench && sec.Name == SectionGoBench) || !o.selected(sec.Name) {
			continue
		}
		logf("%s", sec.Name)
		if err := sec.Measure(ctx, o, r, logf); err != nil {
			return nil, fmt.Errorf("%s: %w", sec.Name, err)
		}
	}
	r.Env.LoadAfter = loadAverage()
	r.Took = time.Since(start)
	if other := r.OtherShare(); other > 0.1 {
		r.Notes = append(r.Notes, fmt.Sprintf("**The machine was busy**: during the load runs, processes other than the target and the load generator "+
			"used %.0f%% of the CPU (median; /proc/stat). Throughput and tail latency suffer first: run make bench again on an idle machine before trusting a miss.",
			other*100))
	}
	return r, nil
}

// OtherShare is the median share of the machine's CPU that other
// processes used during the load runs.
func (r *Report) OtherShare() float64 {
	return median(r.Runs, func(l LoadRun) float64 { return l.OtherShare })
}

func environment(ctx context.Context, o Options) Environment {
	e := Environment{Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Go: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, Cores: runtime.NumCPU(), LoadBefore: loadAverage(), CPU: "unknown"}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		e.OS += ", Linux " + strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				e.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0]); len(f) >= 2 {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			e.MemoryTotal = fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
		}
	}
	if out, err := output(ctx, o.Dir, "git", "rev-parse", "--short", "HEAD"); err == nil {
		e.Commit = strings.TrimSpace(out)
		if st, err := output(ctx, o.Dir, "git", "status", "--porcelain", "--untracked-files=no"); err == nil && strings.TrimSpace(st) != "" {
			e.Commit += " with uncommitted changes"
		}
	}
	return e
}

func (r *Report) goBenchmarks(ctx context.Context, o Options) error {
	argv := goBenchArgs("go", o.BenchTime)
	out, err := output(ctx, o.Dir, argv...)
	if err != nil {
		return err
	}
	r.GoBench = parseGoBench(out)
	r.GoBenchCmd = strings.Join(shortArgv(argv), " ")
	for _, p := range []struct{ pkg, bench, title string }{
		{"./simulator/server", "^BenchmarkRequest$/^json/thermostat$", "a whole JSON request (BenchmarkRequest/json/thermostat)"},
		{"./simulator/server", "^BenchmarkRequest$/^xml/thermostat$", "a whole XML request (BenchmarkRequest/xml/thermostat)"},
		{"./conformance/load", "^BenchmarkSend$/^raw$", "the load generator's request (BenchmarkSend/raw, against a bare handler in the same process)"},
	} {
		prof, err := profile(ctx, "go", o.Dir, o.Work, p.pkg, p.bench, p.title)
		if err != nil {
			return err
		}
		r.Profiles = append(r.Profiles, prof)
	}
	return nil
}

// measureFleets measures each of o.FleetSizes, then gwsim serve's RSS
// per device and the big fleet.
func (r *Report) measureFleets(ctx context.Context, o Options, logf func(string, ...any)) error {
	for _, n := range o.FleetSizes {
		fr, err := measureFleet(ctx, o, n)
		if err != nil {
			return err
		}
		logf("  %d devices: %.0f B/device of heap, generated in %s, loaded in %s, gwsim serve listening after %s, RSS %s",
			fr.Devices, fr.PerDevice(fr.TotalBytes()), fr.Generate.Round(time.Millisecond), fr.Load.Round(time.Millisecond), fr.Startup.Round(time.Millisecond), mib(fr.RSS))
		r.Fleets = append(r.Fleets, fr)
	}
	if err := r.measureRSS(ctx, o, logf); err != nil {
		return err
	}
	return r.measureBig(ctx, o, logf)
}

func measureFleet(ctx context.Context, o Options, n int) (FleetRun, error) {
	argv := []string{o.Self, "fleetmem", "--devices", strconv.Itoa(n)}
	out, err := output(ctx, o.Dir, argv...)
	if err != nil {
		return FleetRun{}, err
	}
	var fr FleetRun
	if err := json.Unmarshal([]byte(out), &fr.FleetMemory); err != nil {
		return fr, fmt.Errorf("gwbench fleetmem: %v: %s", err, tail(out))
	}
	fr.MeasureCmd = strings.Join(shortArgv(argv), " ")
	per := min(n, PerGateway)
	gw := strconv.Itoa(max(1, n/max(per, 1)))
	serve := []string{filepath.Join(o.Bin, "gwsim"), "serve", "--addr", "127.0.0.1:0", "--seed", "1",
		"--gateways", gw, "--devices-per-gateway", strconv.Itoa(per)}
	fr.ServeCmd = strings.Join(shortArgv(serve), " ")
	s, err := startServer(serve, 2*time.Minute)
	if err != nil {
		return fr, err
	}
	fr.Startup, fr.RSS = s.started, s.settledRSS()
	s.stop()
	file := filepath.Join(o.Work, fmt.Sprintf("fleet-%d.yaml", n))
	write := []string{filepath.Join(o.Bin, "gwsim"), "fleet", "--seed", "1", "--gateways", gw,
		"--devices-per-gateway", strconv.Itoa(per), "--out", file}
	fr.WriteCmd = strings.Join(shortArgv(write), " ")
	t0 := time.Now()
	if _, err := output(ctx, o.Dir, write...); err != nil {
		return fr, err
	}
	fr.Write = time.Since(t0)
	if st, err := os.Stat(file); err == nil {
		fr.Bytes = st.Size()
	}
	os.Remove(file)
	return fr, nil
}

// benchSeed, benchGateways and benchPerGateway make the fleet gwsim serves
// under load.
const (
	benchSeed       = 1
	benchGateways   = 10
	benchPerGateway = 100
	// benchTimestamp is the timestamp of wrk's pre-signed bodies; the bench
	// fleet disables the window, so it stays valid.
	benchTimestamp = "20240101000000"
)

// benchFleet writes the fleet gwsim serves under load: generated, with the
// timestamp window off so that wrk's pre-signed bodies stay valid. It
// returns the bodies of a Light Dimmer command in each format.
func (r *Report) benchFleet(ctx context.Context, o Options) (fleetFile string, bodies map[string]string, err error) {
	fleetFile = filepath.Join(o.Work, "bench-fleet.yaml")
	argv := []string{filepath.Join(o.Bin, "gwsim"), "fleet", "--seed", strconv.Itoa(benchSeed), "--gateways", strconv.Itoa(benchGateways),
		"--devices-per-gateway", strconv.Itoa(benchPerGateway), "--timestamp-window", "0", "--out", fleetFile}
	if _, err := output(ctx, o.Dir, argv...); err != nil {
		return "", nil, err
	}
	r.BenchFleet = strings.Join(shortArgv(argv), " ")
	f, err := fleet.Load(fleetFile)
	if err != nil {
		return "", nil, err
	}
	if f.Window() != 0 {
		return "", nil, errors.New("the bench fleet has a timestamp window; gwsim fleet ignored --timestamp-window")
	}
	t, err := f.Target()
	if err != nil {
		return "", nil, err
	}
	d, ok := t.Devices["Light Dimmer"]
	if !ok {
		return "", nil, errors.New("the bench fleet's first gateway has no Light Dimmer")
	}
	if r.Bodies, err = commandBodies(t, d.SN); err != nil {
		return "", nil, err
	}
	bodies = map[string]string{}
	for format, body := range r.Bodies {
		p := filepath.Join(o.Work, "command."+format)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return "", nil, err
		}
		bodies[format] = p
	}
	return fleetFile, bodies, nil
}

// commandBodies are the bench's Light Dimmer command to sn in each format,
// signed for benchTimestamp, written by the request encoder every client
// shares.
func commandBodies(t *fleet.Target, sn string) (map[string]string, error) {
	fields := []codec.Field{
		{Key: device.FieldAPIKey, Value: t.Key.Key},
		{Key: device.FieldTimestamp, Value: benchTimestamp},
		{Key: device.FieldSign, Value: auth.Sign(t.Key.Key, t.Key.Secret, benchTimestamp)},
		{Key: device.FieldAccount, Value: t.AccountID},
		{Key: device.FieldMAC, Value: t.MAC},
		{Key: device.FieldSN, Value: sn},
		{Key: device.FieldType, Value: "Light Dimmer"},
		{Key: "dimming", Value: "50"},
	}
	bodies := map[string]string{}
	for name, f := range map[string]device.Format{"json": device.JSON, "xml": device.XML} {
		b, err := codec.AppendRequest(nil, f, fields)
		if err != nil {
			return nil, err
		}
		bodies[name] = string(b)
	}
	return bodies, nil
}

// TargetBareGC names the control target: the bare handler with gwsim
// serve's default --gc-headroom.
const TargetBareGC = "bare-gc"

var contentTypes = map[string]string{"json": "application/json", "xml": "application/xml"}

// loadComparison measures gwsim against the bare handler (and the bare
// handler with gwsim's collector headroom) with wrk, or gwconform load
// when wrk is missing, over rounds of fresh targets; then gwconform
// load's latency at half the maximum, and the JSON runs with other
// generator threads.
func (r *Report) loadComparison(ctx context.Context, o Options, logf func(string, ...any)) error {
	fleetFile, bodies, err := r.benchFleet(ctx, o)
	if err != nil {
		return err
	}
	c := &comparison{r: r, ctx: ctx, o: o, logf: logf, fleetFile: fleetFile, bodies: bodies,
		targets: map[string]*server{}, path: device.SendCommand.Path()}
	c.commands()
	defer c.stopTargets()
	if err := c.fresh(); err != nil {
		return err
	}
	if err := c.checkBodies(); err != nil {
		return err
	}
	if err := c.chooseTool(); err != nil {
		return err
	}
	tools := []string{r.Tool}
	if r.Tool == ToolWrk {
		tools = append(tools, ToolLoad)
	}
	first := o.Connections[0]
	logf("load comparison: %d rounds of %s runs, %v connections, %d generator thread(s), %s (gwconform load at %d connections only)",
		o.Rounds, secs(o.Duration), o.Connections, o.Threads, strings.Join(tools, " and "), first)
	for round := 0; round < o.Rounds; round++ {
		if round > 0 {
			if err := c.fresh(); err != nil {
				return err
			}
		}
		if err := c.round(round, tools, first); err != nil {
			return err
		}
	}
	if err := c.halfRate(first); err != nil {
		return err
	}
	return c.altThreads(tools, first)
}

// comparison is one load comparison: its options, its fleet and bodies,
// the targets' command lines and the targets running this round.
type comparison struct {
	r         *Report
	ctx       context.Context
	o         Options
	logf      func(string, ...any)
	fleetFile string
	bodies    map[string]string
	// argv are the targets' command lines by target name.
	argv    map[string][]string
	targets map[string]*server
	path    string
	// wrk is wrk's path ("": gwconform load drives every run); script
	// its Lua script posting the body.
	wrk, script string
	gwconform   string
}

// commands sets the targets' command lines and writes them, shortened,
// into the report.
func (c *comparison) commands() {
	o, r := c.o, c.r
	// gwsim as a user starts it: default flags.
	gwsimArgv := o.place.target([]string{filepath.Join(o.Bin, "gwsim"), "serve", "--addr", "127.0.0.1:0", "--fleet", c.fleetFile})
	bareArgv := o.place.target([]string{o.Self, "bare", "--addr", "127.0.0.1:0"})
	// The control: the bare handler given the collector's headroom that
	// gwsim serve keeps by default, so that the report can tell gwsim's
	// code from its collector's pace (JSON only).
	bareGCArgv := o.place.target([]string{o.Self, "bare", "--addr", "127.0.0.1:0", "--gc-headroom", strconv.Itoa(gcheadroom.DefaultHeadroom >> 20)})
	r.GwsimCmd, r.BareCmd = strings.Join(shortArgv(gwsimArgv), " "), strings.Join(shortArgv(bareArgv), " ")
	r.BareGCCmd = strings.Join(shortArgv(bareGCArgv), " ")
	c.argv = map[string][]string{"gwsim": gwsimArgv, "bare": bareArgv, TargetBareGC: bareGCArgv}
}

// stopTargets stops the running targets.
func (c *comparison) stopTargets() {
	for name, s := range c.targets {
		s.stop()
		delete(c.targets, name)
	}
}

// fresh starts every target afresh. Each round does: a process keeps its
// luck for its whole life (where its heap and stacks land, its
// collector's pacing), which one process a run made a bias the rounds
// could not average out (measured: the client report's seven rounds at 4
// connections all read 0.73 to 0.93 in one run, 0.71 to 1.25 in
// another).
func (c *comparison) fresh() error {
	c.stopTargets()
	for name, argv := range c.argv {
		s, err := startServer(argv, time.Minute)
		if err != nil {
			return err
		}
		c.targets[name] = s
	}
	return nil
}

// checkBodies checks that gwsim accepts the pre-signed bodies: a run of
// rejections would measure nothing.
func (c *comparison) checkBodies() error {
	for format := range c.bodies {
		if err := checkSuccess(c.targets["gwsim"].url+c.path, contentTypes[format], c.r.Bodies[format]); err != nil {
			return fmt.Errorf("gwsim does not accept the pre-signed %s body: %v", format, err)
		}
	}
	return nil
}

// chooseTool picks wrk when it is there and not turned off, gwconform
// load otherwise (with a note), and writes wrk's script.
func (c *comparison) chooseTool() error {
	o, r := c.o, c.r
	wrk := o.Wrk
	if wrk == "" {
		if p, err := exec.LookPath("wrk"); err == nil {
			wrk = p
		}
	}
	if wrk == "none" {
		wrk = ""
	}
	c.wrk = wrk
	c.script = filepath.Join(o.Work, "post.lua")
	if err := os.WriteFile(c.script, []byte(wrkScript), 0o644); err != nil {
		return err
	}
	c.gwconform = filepath.Join(o.Bin, "gwconform")
	r.Tool = ToolLoad
	if wrk != "" {
		r.Tool = ToolWrk
		if out, err := exec.Command(wrk, "-v").CombinedOutput(); len(out) > 0 || err == nil {
			v, _, _ := strings.Cut(strings.SplitN(string(out), "\n", 2)[0], " Copyright")
			r.Env.Wrk = strings.TrimSpace(v)
		}
	} else {
		r.Notes = append(r.Notes, "wrk was not found (make bench installs it with apt-get when it can) or was turned off with --wrk none, so gwconform load drove the whole comparison and the load mode's ratio to wrk could not be measured.")
	}
	return nil
}

// measure runs one tool against one target; threads are wrk's, and
// gwconform load's GOMAXPROCS, so that both generators have as many
// threads running their code.
func (c *comparison) measure(tool, target, format string, threads, conns int, rate float64) (LoadRun, error) {
	o := c.o
	s := c.targets[target]
	busy0, busyOK := machineBusy()
	cpu0, cpuOK := s.cpu()
	var run LoadRun
	var err error
	if tool == ToolWrk {
		run, err = runWrk(c.ctx, o.place, c.wrk, c.script, c.bodies[format], contentTypes[format], s.url+c.path, threads, conns, o.Duration)
	} else {
		run, err = runLoad(c.ctx, o.place, c.gwconform, c.fleetFile, s.url, format, threads, conns, o.Duration, rate)
	}
	if err != nil {
		return run, err
	}
	if cpu1, ok := s.cpu(); ok && cpuOK {
		run.ServerCPU = cpu1 - cpu0
	}
	if busy1, ok := machineBusy(); ok && busyOK && run.Elapsed > 0 {
		other := busy1 - busy0 - run.ServerCPU - run.GenCPU
		run.OtherShare = max(0, float64(other)/(float64(run.Elapsed)*float64(runtime.NumCPU())))
	}
	run.Target, run.Format, run.Threads, run.Connections = target, format, threads, conns
	run.Command = strings.ReplaceAll(run.Command, s.url, strings.ToUpper(target)+"_URL")
	asked := ""
	if rate > 0 {
		asked = fmt.Sprintf(" (%.0f asked)", rate)
	}
	c.logf("  %-14s %-5s %-4s %2d conns %d thread(s) %8.0f req/s%s  p50 %s  p99 %s  errors %d", tool, target, format, conns, threads, run.RPS, asked,
		run.P50.Round(time.Microsecond), run.P99.Round(time.Microsecond), run.Errors)
	return run, nil
}

// round measures every tool, format and number of connections against
// the targets, in an order that alternates from round to round so that
// no target always goes first; gwconform load beside wrk runs at the
// first number of connections only, and the control only in JSON with
// the main tool.
func (c *comparison) round(round int, tools []string, first int) error {
	r := c.r
	order := []string{"bare", "gwsim"}
	if round%2 == 1 {
		order = []string{"gwsim", "bare"}
	}
	for _, conns := range c.o.Connections {
		for _, tool := range tools {
			if tool == ToolLoad && r.Tool == ToolWrk && conns != first {
				continue
			}
			for _, format := range []string{"json", "xml"} {
				targetsNow := order
				if tool == r.Tool && format == "json" {
					targetsNow = []string{order[0], order[1], TargetBareGC}
					if round%2 == 1 {
						targetsNow = []string{TargetBareGC, order[0], order[1]}
					}
				}
				for _, target := range targetsNow {
					run, err := c.measure(tool, target, format, c.o.Threads, conns, 0)
					if err != nil {
						return err
					}
					r.Runs = append(r.Runs, run)
				}
			}
		}
	}
	return nil
}

// halfRate measures gwsim's latency at half the measured maximum:
// gwconform load holds a rate, which wrk cannot.
func (c *comparison) halfRate(first int) error {
	r := c.r
	for _, format := range []string{"json", "xml"} {
		rate := math.Floor(r.MedianRPS(r.Tool, "gwsim", format, first) / 2)
		if rate < 1 {
			continue
		}
		run, err := c.measure(ToolLoad, "gwsim", format, c.o.Threads, first, rate)
		if err != nil {
			return err
		}
		r.HalfRate = append(r.HalfRate, run)
	}
	return nil
}

// altThreads runs the same JSON runs once more with another number of
// generator threads, so that the choice of threads is not what the
// comparison rests on.
func (c *comparison) altThreads(tools []string, first int) error {
	o := c.o
	if o.AltThreads <= 0 || o.AltThreads == o.Threads {
		return nil
	}
	c.logf("the JSON runs again with %d generator threads", o.AltThreads)
	for _, tool := range tools {
		for _, target := range []string{"bare", "gwsim"} {
			run, err := c.measure(tool, target, "json", o.AltThreads, first, 0)
			if err != nil {
				return err
			}
			c.r.AltRuns = append(c.r.AltRuns, run)
		}
	}
	return nil
}

// checkSuccess posts body once and wants 200 with status success.
func checkSuccess(url, contentType, body string) error {
	resp, err := http.Post(url, contentType, strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "success") {
		return fmt.Errorf("%d %s", resp.StatusCode, b)
	}
	return nil
}

// RunsOf are the comparison's runs of a tool against a target in a format
// at a number of connections.
func (r *Report) RunsOf(tool, target, format string, conns int) []LoadRun {
	var out []LoadRun
	for _, run := range r.Runs {
		if run.Tool == tool && run.Target == target && run.Format == format && run.Connections == conns {
			out = append(out, run)
		}
	}
	return out
}

// MedianRPS is the median requests/s of those runs.
func (r *Report) MedianRPS(tool, target, format string, conns int) float64 {
	return median(r.RunsOf(tool, target, format, conns), func(l LoadRun) float64 { return l.RPS })
}

// FirstConns is the first number of connections of the comparison: the
// one gwconform load, the half-rate latency and the AltThreads round use.
func (r *Report) FirstConns() int {
	if len(r.Connections) == 0 {
		return 0
	}
	return r.Connections[0]
}

// RoundRatios are a's requests/s over b's, round by round: each round runs
// both back to back, so a slow drift of the machine cancels out in a pair.
func RoundRatios(a, b []LoadRun) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		if b[i].RPS > 0 {
			out = append(out, a[i].RPS/b[i].RPS)
		}
	}
	return out
}

// PairedRatio is the median of RoundRatios: the comparison's headline
// figure.
func PairedRatio(a, b []LoadRun) float64 {
	rs := RoundRatios(a, b)
	runs := make([]LoadRun, len(rs))
	for i, v := range rs {
		runs[i].RPS = v
	}
	return median(runs, func(l LoadRun) float64 { return l.RPS })
}

func (r *Report) suite(ctx context.Context, o Options) error {
	dir := filepath.Join(o.Work, "suite-report")
	argv := []string{filepath.Join(o.Bin, "gwconform"), "run", "--report-dir", dir}
	r.Suite.Command = "bin/gwconform run --report-dir $(mktemp -d)"
	for i := 0; i < o.SuiteRuns; i++ {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = o.Dir
		start := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		if r.Suite.Exit, err = exitOf(err); err != nil {
			return fmt.Errorf("gwconform run: %v", err)
		}
		r.Suite.Times = append(r.Suite.Times, took)
		r.Suite.Summary = suiteSummary(string(out))
	}
	_, total, err := sizeOf(dir)
	if err != nil {
		return err
	}
	r.Suite.ReportBytes = total
	return nil
}

// summaryLine is a line of gwconform's summary that counts a level's
// checks ("MUST   1514 checks: ..."), not a failure's ("MUST   [ID]: ...").
var summaryLine = regexp.MustCompile(`^(MUST|SHOULD|INFO)\s+\d+ checks:`)

// suiteSummary keeps the lines of gwconform's summary that count checks.
func suiteSummary(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		t := strings.TrimSpace(line)
		if summaryLine.MatchString(t) {
			keep = append(keep, t)
		}
	}
	return strings.Join(keep, "; ")
}

// selected says whether Only lets the section run.
func (o *Options) selected(name string) bool {
	if len(o.Only) == 0 {
		return true
	}
	for _, w := range o.Only {
		if w != "" && strings.Contains(strings.ToLower(name), strings.ToLower(w)) {
			return true
		}
	}
	return false
}
