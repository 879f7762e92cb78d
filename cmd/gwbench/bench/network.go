package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// SectionNetwork times gwconform run against gwsim behind a DelayProxy:
// the bench a vendor has (one device of each type) and a service that
// answers as one in another region does.
const SectionNetwork = "the suite against a service across a network"

// NetworkMaxDelay is the most a request is delayed: 0 to 150 ms, 75 ms
// on average, a service in another region.
const NetworkMaxDelay = 150 * time.Millisecond

// NetworkFarMaxDelay is the same for a service on another continent or
// behind a VPN: 0 to 500 ms, 250 ms on average.
const NetworkFarMaxDelay = 500 * time.Millisecond

// networkSeed seeds the proxy's delays.
const networkSeed = 1

// The goals of the section: a verdict within a minute at 250 ms a request
// with default flags; at 75 ms within 1.3 times its floor; the suite
// against the embedded simulator in a second (whole process, median).
const (
	goalNetworkWall  = 60 * time.Second
	goalNetworkFloor = 1.3
	goalEmbedded     = time.Second
)

// NetworkFigures are the section's figures (Report.Extra[SectionNetwork]).
type NetworkFigures struct {
	FleetCmd string `json:"fleet_command"`
	ServeCmd string `json:"serve_command"`
	// Runs are the timed runs: at 0, 75 and 250 ms mean with default
	// flags, and at 75 ms with --concurrency 1 unless skipped.
	Runs []NetworkRun `json:"runs"`
	// SerialSkipped says the --concurrency 1 run was left out.
	SerialSkipped bool `json:"serial_skipped"`
	// Embedded is the suite against the embedded simulator; EmbeddedHere
	// says it was timed by this section (the suite section did not run).
	Embedded     SuiteRun `json:"embedded"`
	EmbeddedHere bool     `json:"embedded_timed_here"`
}

// NetworkRun is one gwconform run through the proxy.
type NetworkRun struct {
	Name     string        `json:"name"`
	MaxDelay time.Duration `json:"max_delay_ns"`
	// Concurrency is the --concurrency given (0: the default).
	Concurrency int           `json:"concurrency_flag"`
	ProxyCmd    string        `json:"proxy_command"`
	Cmd         string        `json:"command"`
	Wall        time.Duration `json:"wall_ns"`
	Exit        int           `json:"exit"`
	Summary     string        `json:"summary"`
	// Delays are the proxy's figures: requests and the delay added.
	Delays DelayStats `json:"delays"`
	// Schedule is report.json's schedule.
	InFlight   int     `json:"in_flight"`
	Critical   string  `json:"critical_path_of"`
	RoundTrips int     `json:"critical_path_round_trips"`
	ChainSecs  float64 `json:"critical_path_seconds"`
	Seed       int64   `json:"seed"`
}

// Floor is the critical path's round trips times the mean delay the
// proxy added: the run cannot end sooner.
func (n NetworkRun) Floor() time.Duration {
	return time.Duration(n.RoundTrips) * n.Delays.Mean()
}

// MeanInFlight is the requests in flight on average: the delays added
// over the wall time (Little's law), 0 without a delay.
func (n NetworkRun) MeanInFlight() float64 {
	if n.Wall <= 0 {
		return 0
	}
	return float64(n.Delays.Total) / float64(n.Wall)
}

// whyNotFloor says, from the run's figures, where its time went besides
// the critical path.
func (n NetworkRun) whyNotFloor() string {
	k := max(n.InFlight, 1)
	return fmt.Sprintf("the critical path (%s) was %d round trips one after another, %s at the mean delay of %s; "+
		"the %s requests, %d at a time, needed %s at least; the run kept %.1f requests in flight on average (at most %d at once) where %d were allowed, "+
		"the wall time less the floor, %s, went to round trips not on the critical path that report.json counts, or to none in flight",
		n.Critical, n.RoundTrips, dur(n.Floor()), dur(n.Delays.Mean()), num(float64(n.Delays.Requests)), k,
		dur(n.Delays.Total/time.Duration(k)), n.MeanInFlight(), n.Delays.Peak, k, dur(n.Wall-n.Floor()))
}

// OverFloor is the wall time over the floor (0 without a floor).
func (n NetworkRun) OverFloor() float64 {
	f := n.Floor()
	if f <= 0 {
		return 0
	}
	return float64(n.Wall) / float64(f)
}

// The runs' names.
const (
	netRunZero   = "0 ms, default flags"
	netRunMean   = "0–150 ms (75 ms mean), default flags"
	netRunFar    = "0–500 ms (250 ms mean), default flags"
	netRunSerial = "0–150 ms (75 ms mean), --concurrency 1"
)

func (f *NetworkFigures) run(name string) (NetworkRun, bool) {
	for _, r := range f.Runs {
		if r.Name == name {
			return r, true
		}
	}
	return NetworkRun{}, false
}

// OnePerTypeFleet is the demo fleet with its tested gateway holding
// exactly one device of each type (the first of each), in the table's
// order: the bench a vendor has.
func OnePerTypeFleet() (*fleet.Fleet, error) {
	f := fleet.Demo()
	_, gw, err := f.TestedGateway()
	if err != nil {
		return nil, err
	}
	first := map[string]fleet.Device{}
	for _, d := range gw.Devices {
		if _, ok := first[d.Type]; !ok {
			first[d.Type] = d
		}
	}
	var devices []fleet.Device
	for _, t := range device.Types {
		d, ok := first[t.Name]
		if !ok {
			return nil, fmt.Errorf("the demo fleet's tested gateway has no %s", t.Name)
		}
		devices = append(devices, d)
	}
	gw.Devices = devices
	return f, f.Check()
}

// WriteOnePerTypeFleet writes OnePerTypeFleet to path.
func WriteOnePerTypeFleet(path string) error {
	f, err := OnePerTypeFleet()
	if err != nil {
		return err
	}
	b, err := f.Marshal()
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func networkSection() Section {
	return Section{Name: SectionNetwork, Measure: func(ctx context.Context, o Options, r *Report, logf func(string, ...any)) error {
		return r.measureNetwork(ctx, o, logf)
	}, Goals: (*Report).networkGoals, Write: (*Report).writeNetwork}
}

// measureNetwork runs the suite against gwsim through a proxy that delays
// every request: without delay, with random delays, and one request at a
// time (unless --skip-network-serial); then takes the figure against the
// embedded simulator to compare with.
func (r *Report) measureNetwork(ctx context.Context, o Options, logf func(string, ...any)) error {
	fig := &NetworkFigures{SerialSkipped: o.SkipNetworkSerial}
	r.Extra[SectionNetwork] = fig
	fleetFile := filepath.Join(o.Work, "one-per-type.yaml")
	if err := WriteOnePerTypeFleet(fleetFile); err != nil {
		return err
	}
	fig.FleetCmd = "bin/gwbench typefleet --out one-per-type.yaml"
	serve := []string{filepath.Join(o.Bin, "gwsim"), "serve", "--addr", "127.0.0.1:0", "--fleet", fleetFile}
	fig.ServeCmd = strings.Replace(strings.Join(shortArgv(serve), " "), fleetFile, "one-per-type.yaml", 1)
	s, err := startServer(serve, time.Minute)
	if err != nil {
		return err
	}
	defer s.stop()
	n := &networkRuns{ctx: ctx, o: o, logf: logf, fig: fig, gwsim: s, fleetFile: fleetFile, gwconform: filepath.Join(o.Bin, "gwconform")}
	if err := n.one(netRunZero, 0, 0); err != nil {
		return err
	}
	if err := n.one(netRunMean, NetworkMaxDelay, 0); err != nil {
		return err
	}
	if err := n.one(netRunFar, NetworkFarMaxDelay, 0); err != nil {
		return err
	}
	if o.SkipNetworkSerial {
		logf("  %s: skipped (--skip-network-serial)", netRunSerial)
	} else if err := n.one(netRunSerial, NetworkMaxDelay, 1); err != nil {
		return err
	}
	return r.embeddedSuite(ctx, o, fig, logf)
}

// networkRuns runs the suite against one gwsim through delaying proxies
// and adds each run to fig.Runs.
type networkRuns struct {
	ctx                  context.Context
	o                    Options
	logf                 func(string, ...any)
	fig                  *NetworkFigures
	gwsim                *server
	fleetFile, gwconform string
}

// one runs the suite once as name, through a proxy that delays each
// request by up to maxDelay, with --concurrency when above 0. Each run
// starts from the fleet as loaded, through a proxy of its own (its
// figures are the run's); the reset goes to gwsim itself.
func (n *networkRuns) one(name string, maxDelay time.Duration, concurrency int) error {
	s := n.gwsim
	if err := adminCall(n.ctx, s.url, "POST", "/_sim/reset", ""); err != nil {
		return err
	}
	proxyArgv := []string{n.o.Self, "delay", "--addr", "127.0.0.1:0", "--to", s.url, "--max", maxDelay.String(), "--seed", strconv.Itoa(networkSeed)}
	p, err := startServer(proxyArgv, time.Minute)
	if err != nil {
		return err
	}
	defer p.stop()
	run := NetworkRun{Name: name, MaxDelay: maxDelay, Concurrency: concurrency,
		ProxyCmd: strings.ReplaceAll(strings.Join(shortArgv(proxyArgv), " "), s.url, "GWSIM_URL")}
	if err := n.runSuite(&run, p); err != nil {
		return err
	}
	n.fig.Runs = append(n.fig.Runs, run)
	n.logf("  %s: %s (exit %d), %d requests, mean delay %s; critical path %s, %d round trips: floor %s, wall ÷ floor %.2f",
		name, dur(run.Wall), run.Exit, run.Delays.Requests, dur(run.Delays.Mean()), run.Critical, run.RoundTrips, dur(run.Floor()), run.OverFloor())
	return nil
}

// runSuite runs gwconform run through the proxy p (at most 15 minutes)
// and fills run with its command line, time, exit, summary, the proxy's
// delays and the report's schedule.
func (n *networkRuns) runSuite(run *NetworkRun, p *server) error {
	o := n.o
	dir, err := os.MkdirTemp(o.Work, "network-")
	if err != nil {
		return err
	}
	argv := []string{n.gwconform, "run", "--target", p.url, "--fleet", n.fleetFile, "--report-dir", dir}
	if run.Concurrency > 0 {
		argv = append(argv, "--concurrency", strconv.Itoa(run.Concurrency))
	}
	cmdline := strings.ReplaceAll(strings.Join(shortArgv(argv), " "), p.url, "PROXY_URL")
	cmdline = strings.Replace(cmdline, n.fleetFile, "one-per-type.yaml", 1)
	run.Cmd = strings.Replace(cmdline, filepath.Base(dir), "$(mktemp -d)", 1)
	rctx, cancel := context.WithTimeout(n.ctx, 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(rctx, argv[0], argv[1:]...)
	cmd.Dir = o.Dir
	n.logf("  %s: %s", run.Name, run.Cmd)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	run.Wall = time.Since(start)
	if run.Exit, err = exitOf(err); err != nil || rctx.Err() != nil {
		return fmt.Errorf("gwconform run: %v %v: %s", err, rctx.Err(), tail(string(out)))
	}
	run.Summary = suiteSummary(string(out))
	if run.Delays, err = delayStats(n.ctx, p.url); err != nil {
		return err
	}
	if err := readSchedule(run, dir, out); err != nil {
		return err
	}
	os.RemoveAll(dir)
	return nil
}

// readSchedule reads the run's seed, requests in flight and critical path
// from the report.json in dir; out is the run's output, for the error.
func readSchedule(run *NetworkRun, dir string, out []byte) error {
	var rep struct {
		Seed     int64 `json:"seed"`
		Schedule *struct {
			Concurrency  int `json:"concurrency"`
			CriticalPath *struct {
				Of         string  `json:"of"`
				RoundTrips int     `json:"round_trips"`
				Seconds    float64 `json:"seconds"`
			} `json:"critical_path"`
		} `json:"schedule"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return fmt.Errorf("gwconform run wrote no report.json (exit %d): %s", run.Exit, tail(string(out)))
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("report.json: %v", err)
	}
	run.Seed = rep.Seed
	if sc := rep.Schedule; sc != nil {
		run.InFlight = sc.Concurrency
		if cp := sc.CriticalPath; cp != nil {
			run.Critical, run.RoundTrips, run.ChainSecs = cp.Of, cp.RoundTrips, cp.Seconds
		}
	}
	return nil
}

// embeddedSuite takes the embedded simulator's figure: the suite
// section's, when it ran in this run; else timed here the same way.
func (r *Report) embeddedSuite(ctx context.Context, o Options, fig *NetworkFigures, logf func(string, ...any)) error {
	if len(r.Suite.Times) > 0 {
		fig.Embedded = r.Suite
		return nil
	}
	var tmp Report
	if err := tmp.suite(ctx, o); err != nil {
		return err
	}
	fig.Embedded, fig.EmbeddedHere = tmp.Suite, true
	logf("  against the embedded simulator: %s (median of %d)", dur(fig.Embedded.Median()), len(fig.Embedded.Times))
	return nil
}

func (r *Report) networkFigures() (*NetworkFigures, bool) {
	fig, ok := r.Extra[SectionNetwork].(*NetworkFigures)
	return fig, ok && len(fig.Runs) > 0
}

func (r *Report) networkGoals() []Goal {
	fig, ok := r.networkFigures()
	if !ok {
		return nil
	}
	var goals []Goal
	mean, known := fig.run(netRunMean)
	far, farKnown := fig.run(netRunFar)
	g := Goal{Name: "gwconform run against gwsim behind 0–500 ms (250 ms mean) a request, one device of each type, default flags, wall time",
		Target: "≤ 60 s", Known: farKnown}
	if farKnown {
		g.Measured = fmt.Sprintf("%s (exit %d; %s requests, mean delay added %s; %.2f × its floor of %d round trips × %s = %s; one run)",
			dur(far.Wall), far.Exit, num(float64(far.Delays.Requests)), dur(far.Delays.Mean()), far.OverFloor(), far.RoundTrips, dur(far.Delays.Mean()), dur(far.Floor()))
		g.Met = far.Wall <= goalNetworkWall && far.Exit == 0
		if !g.Met {
			g.Miss = fmt.Sprintf("%s over", dur(far.Wall-goalNetworkWall))
			if far.Exit != 0 {
				g.Miss = fmt.Sprintf("gwconform run exited %d", far.Exit)
			}
			g.Why = far.whyNotFloor()
		}
	}
	goals = append(goals, g)
	g = Goal{Name: "gwconform run against gwsim behind 0–150 ms (75 ms mean) a request, one device of each type, default flags, wall time",
		Target: "reported", Known: known, Info: true}
	if known {
		g.Measured = fmt.Sprintf("%s (exit %d; %s requests, mean delay added %s; one run)", dur(mean.Wall), mean.Exit, num(float64(mean.Delays.Requests)), dur(mean.Delays.Mean()))
		if serial, ok := fig.run(netRunSerial); ok {
			g.Measured += fmt.Sprintf("; with --concurrency 1 %s, %.1f × longer", dur(serial.Wall), float64(serial.Wall)/float64(max(mean.Wall, 1)))
		} else if fig.SerialSkipped {
			g.Measured += "; the --concurrency 1 run was skipped"
		}
	}
	goals = append(goals, g)
	g = Goal{Name: "the same run's wall time over its floor (the critical path's round trips × the mean delay added)", Target: "≤ 1.3 ×", Known: known && mean.Floor() > 0}
	if g.Known {
		g.Measured = fmt.Sprintf("%.2f × (%s over %d round trips × %s = %s)", mean.OverFloor(), dur(mean.Wall), mean.RoundTrips, dur(mean.Delays.Mean()), dur(mean.Floor()))
		g.Met = mean.OverFloor() <= goalNetworkFloor
		if !g.Met {
			g.Miss = fmt.Sprintf("%.2f × instead of 1.3 ×", mean.OverFloor())
			g.Why = mean.whyNotFloor()
		}
	}
	goals = append(goals, g)
	if zero, ok := fig.run(netRunZero); ok {
		goals = append(goals, Goal{Name: "the same bench through the proxy with no delay, default flags, wall time", Target: "reported", Known: true, Info: true,
			Measured: fmt.Sprintf("%s (exit %d; critical path %d round trips)", dur(zero.Wall), zero.Exit, zero.RoundTrips)})
	}
	e := fig.Embedded
	g = Goal{Name: "the whole suite against the embedded simulator, wall time, with checks scheduled by what they touch", Target: "≤ 1 s", Known: e.Median() > 0}
	if g.Known {
		from := "the suite section's runs"
		if fig.EmbeddedHere {
			from = "timed by this section"
		}
		g.Measured = fmt.Sprintf("%s (median of %d, %s; exit %d)", dur(e.Median()), len(e.Times), from, e.Exit)
		g.Met = e.Median() <= goalEmbedded && e.Exit == 0
		if !g.Met {
			g.Miss = fmt.Sprintf("%s over", dur(e.Median()-goalEmbedded))
			g.Why = fmt.Sprintf("the runs took %s on the 2 shared cores; against a target that answers in under 5 ms the checks go one at a time as before", joinDurations(e.Times))
		}
	}
	return append(goals, g)
}

func joinDurations(ts []time.Duration) string {
	var s []string
	for _, t := range ts {
		s = append(s, dur(t))
	}
	return strings.Join(s, ", ")
}

func (r *Report) writeNetwork(p func(string, ...any)) {
	fig, ok := r.networkFigures()
	if !ok {
		return
	}
	p("## The suite against a service across a network\n\n")
	p("The bench a vendor has: one device of each of the %d types on the tested gateway (the demo fleet, whose tested gateway holds exactly that; "+
		"its other gateway and account stay, for the checks that need them), served by gwsim with its default flags. "+
		"Between gwconform and gwsim, `gwbench delay`, a reverse proxy (`net/http/httputil`) on loopback, holds each request, "+
		"the observer's reads and the admin API's calls included, for a delay drawn uniformly from 0 to %d ms (seed %d; %d ms on average: a service in another region), "+
		"or from 0 to %d ms (%d ms on average: another continent, or behind a VPN), before it forwards it, "+
		"and counts the delays it added. Each run has a proxy of its own and starts from gwsim's fleet as loaded (`POST /_sim/reset`, to gwsim itself). "+
		"gwconform runs with its default flags (`--concurrency %d`, chosen by itself), and once with `--concurrency 1`, every request alone, as before the checks were scheduled by what they touch. "+
		"The floor is the critical path report.json gives (`schedule.critical_path`: the device whose round trips went one after another, counted by the run) "+
		"times the mean delay the proxy actually added: no schedule ends sooner. Each figure is one run, on 2 cores shared with other work: "+
		"the wall times are noisy, by some seconds.\n\n",
		len(device.Types), NetworkMaxDelay.Milliseconds(), networkSeed, NetworkMaxDelay.Milliseconds()/2, NetworkFarMaxDelay.Milliseconds(), NetworkFarMaxDelay.Milliseconds()/2, r.networkInFlight(fig))
	p("| Run | wall time | exit | requests through the proxy | mean delay added | in flight: mean, most | critical path | its round trips | floor | wall ÷ floor | checks |\n|---|---:|---|---:|---:|---:|---|---:|---:|---:|---|\n")
	for _, n := range fig.Runs {
		floor, ratio := "—", "—"
		if n.Floor() > 0 {
			floor, ratio = dur(n.Floor()), fmt.Sprintf("**%.2f ×**", n.OverFloor())
		}
		inFlight := "—"
		if n.Delays.Total > 0 {
			inFlight = fmt.Sprintf("%.1f, %d", n.MeanInFlight(), n.Delays.Peak)
		}
		p("| %s | **%s** | %d | %s | %s | %s | %s | %d | %s | %s | %s |\n", n.Name, dur(n.Wall), n.Exit, num(float64(n.Delays.Requests)), dur(n.Delays.Mean()),
			inFlight, orUnknown(n.Critical), n.RoundTrips, floor, ratio, n.Summary)
	}
	if fig.SerialSkipped {
		p("| %s | skipped (`gwbench --skip-network-serial`) | | | | | | | | | |\n", netRunSerial)
	}
	p("\n")
	if zero, ok := fig.run(netRunZero); ok {
		p("gwconform sends requests together only to a target that answers in 5 ms or more; through the proxy with no delay it sends them one at a time, "+
			"as on loopback (its critical path: %d round trips of its %s requests). With no delay there is no floor to divide by.\n\n", zero.RoundTrips, num(float64(zero.Delays.Requests)))
	}
	e := fig.Embedded
	from := "from the suite section of this run"
	if fig.EmbeddedHere {
		from = "timed by this section, the suite section not having run"
	}
	p("Against the embedded simulator (%s): **%s** median (%s); exit %d.\n\n", from, dur(e.Median()), joinDurations(e.Times), e.Exit)
	p("```sh\n%s\n%s &   # prints GWSIM_URL\n", fig.FleetCmd, fig.ServeCmd)
	for _, n := range fig.Runs {
		p("curl -X POST GWSIM_URL/_sim/reset\n%s &   # prints PROXY_URL\n%s\n", n.ProxyCmd, n.Cmd)
	}
	p("%s\n```\n\n", e.Command)
}

// networkInFlight is the concurrency the default runs reported.
func (r *Report) networkInFlight(fig *NetworkFigures) int {
	if n, ok := fig.run(netRunMean); ok && n.InFlight > 0 {
		return n.InFlight
	}
	return 16
}
