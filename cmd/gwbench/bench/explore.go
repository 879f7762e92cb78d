package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SectionExplore runs gwconform explore against gwsim in each setting a
// user runs it in, and the Go benchmarks of explore's speed.
const SectionExplore = "gwconform explore against gwsim: in memory, --state-file, three replicas on Redis"

// The goals of explore's speed: operations a second, and the shrinking of
// a 10,000-operation failing sequence.
const (
	goalExploreOpsPerSec = 5000.0
	goalShrink10000      = 30 * time.Second
)

// ExploreFigures are the explore section's figures (Report.Extra[SectionExplore]).
type ExploreFigures struct {
	Duration time.Duration    `json:"duration_ns"`
	Clients  int              `json:"clients"`
	Settings []ExploreSetting `json:"settings"`
	// Embedded are BenchmarkExploreSimulator's operations a second against
	// the embedded simulator, by sub-benchmark, each run's figure; Shrink
	// BenchmarkShrink10000's seconds a shrink, by sub-benchmark.
	Embedded    map[string][]float64 `json:"embedded_ops_per_s"`
	EmbeddedCmd string               `json:"embedded_command"`
	// EmbeddedCPU are the same runs' operations per CPU-second of the
	// test process (explore and the simulator both).
	EmbeddedCPU map[string][]float64 `json:"embedded_ops_per_cpu_s"`
	Shrink      map[string][]float64 `json:"shrink_s"`
	ShrinkLeft  map[string][]float64 `json:"shrink_ops_left"`
	ShrinkCmd   string               `json:"shrink_command"`
}

// ExploreSetting is one gwconform explore run against gwsim.
type ExploreSetting struct {
	Name string `json:"name"`
	// Commands start gwsim (and Redis) and run explore.
	Commands   []string `json:"commands"`
	Seed       int64    `json:"seed"`
	Exit       int      `json:"exit"`
	Operations int      `json:"operations"`
	Rounds     int      `json:"rounds"`
	OpsPerSec  float64  `json:"operations_per_second"`
	Elapsed    string   `json:"elapsed"`
	// Disagreements and Violations count the findings (explore stops at
	// the first, shrinks it and reports it); Finding is its summary.
	Disagreements int    `json:"disagreements"`
	Violations    int    `json:"linearizability_violations"`
	Finding       string `json:"finding,omitempty"`
	// Err is why the run could not be judged (exit 2, no report).
	Err string `json:"error,omitempty"`
}

func exploreSection() Section {
	return Section{Name: SectionExplore, Measure: func(ctx context.Context, o Options, r *Report, logf func(string, ...any)) error {
		return r.measureExplore(ctx, o, logf)
	}, Goals: (*Report).exploreGoals, Write: (*Report).writeExplore}
}

// measureExplore runs gwconform explore against gwsim in memory, with
// --state-file and as three replicas on Redis (unless EXPLORE_DURATION
// is 0), then the Go benchmarks of explore's speed.
func (r *Report) measureExplore(ctx context.Context, o Options, logf func(string, ...any)) error {
	fig := &ExploreFigures{Duration: o.ExploreDuration, Clients: o.ExploreClients}
	r.Extra[SectionExplore] = fig
	e := &explorer{ctx: ctx, o: o, logf: logf, fig: fig,
		gwsim: filepath.Join(o.Bin, "gwsim"), gwconform: filepath.Join(o.Bin, "gwconform"), seed: time.Now().Unix()}
	if o.ExploreDuration > 0 && o.ExploreDuration < 5*time.Minute {
		r.Notes = append(r.Notes, fmt.Sprintf("**gwconform explore ran for %s in each setting** (EXPLORE_DURATION), not the 5 minutes of the goal: its figures cover that much, no more.", o.ExploreDuration))
	}
	if o.ExploreDuration < 0 {
		r.Notes = append(r.Notes, "gwconform explore was not run against gwsim (EXPLORE_DURATION=0): only its Go benchmarks were.")
	}
	if o.ExploreDuration > 0 {
		if err := e.inMemory(); err != nil {
			return err
		}
		if err := e.stateFile(); err != nil {
			return err
		}
		if err := e.onRedis(); err != nil {
			return err
		}
	}
	return benchExplore(ctx, o, fig, logf)
}

// explorer runs gwconform explore against gwsim in each setting, all
// with one seed, and adds each run to fig.Settings.
type explorer struct {
	ctx              context.Context
	o                Options
	logf             func(string, ...any)
	fig              *ExploreFigures
	gwsim, gwconform string
	seed             int64
}

// exploreReport is what the bench reads of explore.json.
type exploreReport struct {
	Rounds     int     `json:"rounds"`
	Operations int     `json:"operations"`
	Elapsed    string  `json:"elapsed"`
	OpsPerSec  float64 `json:"operations_per_second"`
	Found      *struct {
		Kind     string `json:"kind"`
		Original int    `json:"original_operations"`
		Ops      []any  `json:"operations"`
		History  []string
	} `json:"finding"`
}

// explore runs gwconform explore against targets and records the run as
// setting name. setup are the command lines that started the targets;
// shown stands for the targets in the command line recorded.
func (e *explorer) explore(name string, setup []string, shown string, targets ...string) error {
	o := e.o
	dir, err := os.MkdirTemp(o.Work, "explore")
	if err != nil {
		return err
	}
	argv := []string{e.gwconform, "explore", "--target", strings.Join(targets, ","), "--clients", strconv.Itoa(o.ExploreClients),
		"--duration", shortDur(o.ExploreDuration), "--seed", strconv.FormatInt(e.seed, 10), "--report-dir", dir}
	s := ExploreSetting{Name: name, Seed: e.seed, Commands: append(setup, strings.Join(shortArgv(argv), " "))}
	e.logf("explore: %s, %s", name, o.ExploreDuration)
	cmd := exec.CommandContext(e.ctx, argv[0], argv[1:]...)
	cmd.Dir = o.Dir
	out, err := cmd.CombinedOutput()
	if s.Exit, err = exitOf(err); err != nil {
		return err
	}
	last := &s.Commands[len(s.Commands)-1]
	*last = strings.Replace(*last, filepath.Base(dir), "reports/explore", 1)
	*last = strings.Replace(*last, strings.Join(targets, ","), shown, 1)
	b, rerr := os.ReadFile(filepath.Join(dir, "explore.json"))
	var rep exploreReport
	if rerr == nil {
		rerr = json.Unmarshal(b, &rep)
	}
	if rerr != nil || s.Exit == 2 {
		s.Err = fmt.Sprintf("exit %d, no report: %s", s.Exit, tail(string(out)))
	}
	s.Rounds, s.Operations, s.Elapsed, s.OpsPerSec = rep.Rounds, rep.Operations, rep.Elapsed, rep.OpsPerSec
	if f := rep.Found; f != nil {
		if f.Kind == "linearizability" {
			s.Violations++
		} else {
			s.Disagreements++
		}
		s.Finding = fmt.Sprintf("%s, shrunk from %d to %d operations; %s", f.Kind, f.Original, len(f.Ops), tail(string(out)))
	}
	e.logf("explore: %s: %d operations, %.0f/s, exit %d", name, s.Operations, s.OpsPerSec, s.Exit)
	e.fig.Settings = append(e.fig.Settings, s)
	return nil
}

// inMemory explores gwsim in memory, as a user starts it.
func (e *explorer) inMemory() error {
	mem := []string{e.gwsim, "serve", "--addr", "127.0.0.1:0"}
	srv, err := startServer(mem, time.Minute)
	if err != nil {
		return err
	}
	err = e.explore("in memory", []string{strings.Join(shortArgv(mem), " ") + " &   # prints GWSIM_URL"}, "GWSIM_URL", srv.url)
	srv.stop()
	return err
}

// stateFile explores gwsim with --state-file: every change on disk
// before its answer.
func (e *explorer) stateFile() error {
	sdir, err := os.MkdirTemp(e.o.Work, "statefile")
	if err != nil {
		return err
	}
	sf := []string{e.gwsim, "serve", "--addr", "127.0.0.1:0", "--state-file", filepath.Join(sdir, "gwsim-state.db")}
	srv, err := startServer(sf, time.Minute)
	if err != nil {
		return err
	}
	err = e.explore("--state-file", []string{strings.Join(shortArgv(sf), " ") + " &   # prints GWSIM_URL"}, "GWSIM_URL", srv.url)
	srv.stop()
	return err
}

// onRedis explores three gwsim replicas on one redis-server; without
// redis-server the setting is recorded as not run.
func (e *explorer) onRedis() error {
	if _, err := exec.LookPath("redis-server"); err != nil {
		e.fig.Settings = append(e.fig.Settings, ExploreSetting{Name: "three replicas on Redis", Err: "redis-server was not found (make tools installs it)"})
		return nil
	}
	rdir, err := os.MkdirTemp(e.o.Work, "redis-explore")
	if err != nil {
		return err
	}
	addr, stop, err := startRedisServer(rdir)
	if err != nil {
		return err
	}
	replica := []string{e.gwsim, "serve", "--addr", "127.0.0.1:0", "--store", "redis://" + addr + "/0"}
	var urls []string
	var srvs []*server
	for range 3 {
		s, err := startServer(replica, time.Minute)
		if err != nil {
			break
		}
		srvs, urls = append(srvs, s), append(urls, s.url)
	}
	if len(srvs) == 3 {
		err = e.explore("three replicas on Redis", []string{
			"redis-server --port PORT --save '' --appendonly no &",
			strings.Join(shortArgv(replica[:len(replica)-1]), " ") + " redis://127.0.0.1:PORT/0 &   # three times: GWSIM_URL1, 2, 3",
		}, "GWSIM_URL1,GWSIM_URL2,GWSIM_URL3", urls...)
	} else {
		err = fmt.Errorf("three gwsim replicas on Redis did not all start")
	}
	for _, s := range srvs {
		s.stop()
	}
	stop()
	return err
}

// benchExplore runs the go test benchmarks of conformance/explore: its
// speed against the embedded simulator, and the shrink of 10,000
// operations.
func benchExplore(ctx context.Context, o Options, fig *ExploreFigures, logf func(string, ...any)) error {
	goTool := goProgram()
	simArgs := []string{goTool, "test", "-run", "^$", "-bench", "^BenchmarkExploreSimulator$", "-benchtime", "20000x", "-count", "3", "./conformance/explore/"}
	fig.EmbeddedCmd = strings.Join(shortArgv(simArgs), " ")
	logf("explore: %s", fig.EmbeddedCmd)
	out, err := output(ctx, o.Dir, simArgs...)
	if err != nil {
		return err
	}
	fig.Embedded, fig.EmbeddedCPU = benchMetric(out, "ops/s"), benchMetric(out, "ops/cpu-s")
	shArgs := []string{goTool, "test", "-run", "^$", "-bench", "^BenchmarkShrink10000$", "-benchtime", "1x", "./conformance/explore/"}
	fig.ShrinkCmd = strings.Join(shortArgv(shArgs), " ")
	logf("explore: %s", fig.ShrinkCmd)
	if out, err = output(ctx, o.Dir, shArgs...); err != nil {
		return err
	}
	fig.Shrink, fig.ShrinkLeft = benchMetric(out, "s/shrink"), benchMetric(out, "ops-left")
	return nil
}

// goProgram is the go command: $GO, or go on PATH.
func goProgram() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// benchMetric collects one custom metric (b.ReportMetric's unit) of go
// test -bench output, by benchmark name without its -GOMAXPROCS suffix.
func benchMetric(out, unit string) map[string][]float64 {
	m := map[string][]float64{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		for i := 3; i < len(f); i++ {
			if f[i] != unit {
				continue
			}
			if v, err := strconv.ParseFloat(f[i-1], 64); err == nil {
				name := trimProcs(f[0])
				m[name] = append(m[name], v)
			}
		}
	}
	return m
}

func (r *Report) exploreGoals() []Goal {
	fig, ok := r.Extra[SectionExplore].(*ExploreFigures)
	if !ok {
		return nil
	}
	var goals []Goal
	for _, name := range sortedNames(fig.Embedded) {
		v := medianOf(fig.Embedded[name])
		g := Goal{Name: fmt.Sprintf("gwconform explore against the embedded simulator, operations/s (%s)", strings.TrimPrefix(name, "BenchmarkExploreSimulator/")),
			Target: "≥ 5,000/s", Known: v > 0, Met: v >= goalExploreOpsPerSec,
			Measured: fmt.Sprintf("%s/s (median of %s); %s per CPU-second", num(v), joinFloats(fig.Embedded[name], "%.0f"), num(medianOf(fig.EmbeddedCPU[name])))}
		if !g.Met {
			g.Miss = fmt.Sprintf("%s/s", num(v))
			g.Why = "each operation is an HTTP exchange on loopback, on two cores shared with the simulator and other processes"
		}
		goals = append(goals, g)
	}
	for _, name := range sortedNames(fig.Shrink) {
		v := medianOf(fig.Shrink[name])
		d := time.Duration(v * float64(time.Second))
		g := Goal{Name: fmt.Sprintf("shrinking a 10,000-operation failing sequence (%s)", strings.TrimPrefix(name, "BenchmarkShrink10000/")),
			Target: "< 30 s", Known: true, Met: d < goalShrink10000,
			Measured: fmt.Sprintf("%s, to %s operations", d.Round(time.Millisecond), joinFloats(fig.ShrinkLeft[name], "%.0f"))}
		if !g.Met {
			g.Miss = d.Round(time.Millisecond).String()
		}
		goals = append(goals, g)
	}
	for _, s := range fig.Settings {
		g := Goal{Name: fmt.Sprintf("gwconform explore --clients %d for %s against gwsim, %s: disagreements and linearizability violations", fig.Clients, shortDur(fig.Duration), s.Name),
			Target: "0 and 0", Known: s.Err == "", Met: s.Err == "" && s.Disagreements == 0 && s.Violations == 0,
			Measured: fmt.Sprintf("%d and %d in %s operations (%s/s)", s.Disagreements, s.Violations, num(float64(s.Operations)), num(s.OpsPerSec))}
		if s.Err != "" {
			g.Measured = s.Err
		}
		if g.Known && !g.Met {
			g.Miss = s.Finding
		}
		goals = append(goals, g)
	}
	return goals
}

func (r *Report) writeExplore(p func(string, ...any)) {
	fig, ok := r.Extra[SectionExplore].(*ExploreFigures)
	if !ok {
		return
	}
	p("## gwconform explore against gwsim\n\n")
	if len(fig.Settings) > 0 {
		p("gwconform explore ([explore.md](explore.md)) against gwsim started as a user starts it, in its own process, with its default flags and the demo fleet, "+
			"for %s in each setting, with %d concurrent clients on shared devices (each history checked for linearizability with Porcupine). "+
			"Explore stops at its first finding, shrinks it and reports it: a disagreement or a violation in gwsim is a bug to fix, not a figure. "+
			"The seed is new each run (from the clock) and printed below; the operations a second include the observer's reads and resets, and explore's own checking, on the same two cores as gwsim.\n\n",
			shortDur(fig.Duration), fig.Clients)
		p("| Setting | operations | operations/s | sequences | disagreements | linearizability violations | exit |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range fig.Settings {
			if s.Err != "" {
				p("| %s | not measured: %s | | | | | %d |\n", s.Name, s.Err, s.Exit)
				continue
			}
			p("| %s | %s | %s | %s | **%d** | **%d** | %d |\n", s.Name, num(float64(s.Operations)), num(s.OpsPerSec), num(float64(s.Rounds)), s.Disagreements, s.Violations, s.Exit)
		}
		p("\n")
		for _, s := range fig.Settings {
			if s.Finding != "" {
				p("- %s: **%s**\n", s.Name, s.Finding)
			}
		}
		for _, s := range fig.Settings {
			p("%s:\n\n```sh\n%s\n```\n\n", s.Name, strings.Join(s.Commands, "\n"))
		}
	}
	if len(fig.Embedded) > 0 || len(fig.Shrink) > 0 {
		p("### Speed against the embedded simulator, and shrinking\n\n")
		p("Explore's throughput against the simulator in the test's own process (`BenchmarkExploreSimulator`: 20,000 operations, reads and resets included, sequential and with 8 clients; 3 runs), " +
			"and the shrinking of a failing sequence of 10,000 operations (`BenchmarkShrink10000`: a target, written in the test, that undoes a rename, or that shares one device's state between two gateways).\n\n")
		p("Operations per CPU-second count the CPU time of the test process, explore and the simulator together: what a run does with the CPU it gets, which other work on the machine disturbs less than operations per second.\n\n")
		p("| Benchmark | each run | median | per CPU-second (median; each run) |\n|---|---|---|---|\n")
		for _, name := range sortedNames(fig.Embedded) {
			p("| %s | %s ops/s | **%s ops/s** | %s (%s) |\n", name, joinFloats(fig.Embedded[name], "%.0f"), num(medianOf(fig.Embedded[name])),
				num(medianOf(fig.EmbeddedCPU[name])), joinFloats(fig.EmbeddedCPU[name], "%.0f"))
		}
		for _, name := range sortedNames(fig.Shrink) {
			p("| %s | %s s, to %s operations | **%s** | |\n", name, joinFloats(fig.Shrink[name], "%.3f"), joinFloats(fig.ShrinkLeft[name], "%.0f"),
				time.Duration(medianOf(fig.Shrink[name])*float64(time.Second)).Round(time.Millisecond))
		}
		p("\n```sh\n%s\n%s\n```\n\n", fig.EmbeddedCmd, fig.ShrinkCmd)
	}
}

func sortedNames(m map[string][]float64) []string {
	var names []string
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func joinFloats(v []float64, format string) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(s, ", ")
}

// shortDur writes whole minutes and seconds without their zero parts:
// 5m, 30s, 1m30s.
func shortDur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
