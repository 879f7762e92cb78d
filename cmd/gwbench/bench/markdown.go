package bench

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/simulator/gcheadroom"
)

// Goal is one of the targets the figures are held to.
type Goal struct {
	Name     string
	Target   string
	Measured string
	Met      bool
	// Miss says by how much the goal was missed; empty when met.
	Miss string
	// Why explains a miss from the measurements and profiles.
	Why string
	// Known is false when the figure could not be measured here.
	Known bool
	// Info is a figure reported without a target: neither met nor
	// missed.
	Info bool
}

// Goal thresholds of these benchmarks.
const (
	goalJSONRatio    = 0.8
	goalXMLRatio     = 0.7
	goalP99          = 2 * time.Millisecond
	goalRSSPerDevice = 150.0
	goalStartup      = 3 * time.Second
	goalBigStartup   = 10 * time.Second
	goalBigRSS       = 2 << 30
	goalSuite        = 3 * time.Second
	goalLoadVsWrk    = 0.8
	goalFleetDevice  = 1_000_000
)

// Goals holds the figures to their targets, section by section.
func (r *Report) Goals() []Goal {
	var goals []Goal
	for _, sec := range Sections() {
		if sec.Goals != nil {
			goals = append(goals, sec.Goals(r)...)
		}
	}
	return goals
}

func (r *Report) loadGoals() []Goal {
	var goals []Goal
	first := r.FirstConns()
	for _, conns := range r.Connections {
		for _, g := range []struct {
			format string
			target float64
		}{{"json", goalJSONRatio}, {"xml", goalXMLRatio}} {
			sims, bares := r.RunsOf(r.Tool, "gwsim", g.format, conns), r.RunsOf(r.Tool, "bare", g.format, conns)
			sim, bare := r.MedianRPS(r.Tool, "gwsim", g.format, conns), r.MedianRPS(r.Tool, "bare", g.format, conns)
			goal := Goal{Name: fmt.Sprintf("gwsim %s command endpoint, default flags, requests/s against the bare handler (%s, %d connections, %d thread(s), same run)",
				strings.ToUpper(g.format), r.Tool, conns, r.Threads),
				Target: fmt.Sprintf("≥ %.2f ×", g.target)}
			if bare > 0 && sim > 0 {
				ratio := PairedRatio(sims, bares)
				goal.Known, goal.Met = true, ratio >= g.target
				goal.Measured = fmt.Sprintf("%.2f × (median of %d rounds; medians %s vs %s req/s)", ratio, len(RoundRatios(sims, bares)), num(sim), num(bare))
				if ctl := r.RunsOf(r.Tool, TargetBareGC, g.format, conns); len(RoundRatios(sims, ctl)) > 0 {
					goal.Measured += fmt.Sprintf("; against the bare handler with gwsim's GC headroom %.2f ×", PairedRatio(sims, ctl))
				}
				if g.format == "json" && conns == first {
					if b, threads := r.altRPS(r.Tool, "bare"); b > 0 {
						if s, _ := r.altRPS(r.Tool, "gwsim"); s > 0 {
							goal.Measured += fmt.Sprintf("; with %d generator threads %.2f ×", threads, s/b)
						}
					}
				}
				if !goal.Met {
					goal.Miss = shortOf(ratio, g.target)
					goal.Why = r.whyThroughput(g.format, conns)
				}
			}
			goals = append(goals, goal)
		}
	}
	for _, h := range r.HalfRate {
		goal := Goal{Name: fmt.Sprintf("gwsim %s p99 latency at half the measured maximum rate (%s req/s, %d connections)", strings.ToUpper(h.Format), num(h.Rate), h.Connections),
			Target: "< 2 ms", Known: true, Measured: fmt.Sprintf("%s (p50 %s, %d errors)", dur(h.P99), dur(h.P50), h.Errors)}
		goal.Met = h.P99 < goalP99 && h.Errors == 0
		if !goal.Met {
			goal.Miss = fmt.Sprintf("%s over", dur(h.P99-goalP99))
			if h.Errors > 0 {
				goal.Miss = fmt.Sprintf("%d errors", h.Errors)
			}
			goal.Why = "Client and server share two cores: the generator's own scheduling and the Go runtime's (GC assists, goroutine wake-ups) land in the tail. " +
				"p50 is " + dur(h.P50) + "; the server's CPU per request at this rate was " + dur(h.CPUPerRequest()) + "."
		}
		goals = append(goals, goal)
	}
	goal := Goal{Name: fmt.Sprintf("gwconform load against wrk on the same target, requests/s (%d connections, %d thread(s) each)", first, r.Threads), Target: "≥ 0.80 ×"}
	if r.Tool == ToolWrk {
		var parts []string
		worst := 0.0
		for _, target := range []string{"bare", "gwsim"} {
			for _, format := range []string{"json", "xml"} {
				w, l := r.RunsOf(ToolWrk, target, format, first), r.RunsOf(ToolLoad, target, format, first)
				if len(RoundRatios(l, w)) == 0 {
					continue
				}
				ratio := PairedRatio(l, w)
				if !goal.Known || ratio < worst {
					worst = ratio
				}
				goal.Known = true
				parts = append(parts, fmt.Sprintf("%s %s %.2f ×", target, format, ratio))
			}
		}
		if goal.Known {
			goal.Met = worst >= goalLoadVsWrk
			goal.Measured = fmt.Sprintf("lowest %.2f × (%s)", worst, strings.Join(parts, ", "))
			if wb, threads := r.altRPS(ToolWrk, "bare"); wb > 0 {
				lb, _ := r.altRPS(ToolLoad, "bare")
				wg, _ := r.altRPS(ToolWrk, "gwsim")
				lg, _ := r.altRPS(ToolLoad, "gwsim")
				if wg > 0 {
					goal.Measured += fmt.Sprintf("; with %d threads each, JSON: bare %.2f ×, gwsim %.2f ×", threads, lb/wb, lg/wg)
				}
			}
			if !goal.Met {
				goal.Miss = fmt.Sprintf("%.0f%% short at worst", (goalLoadVsWrk-worst)/goalLoadVsWrk*100)
				goal.Why = r.whyGenerator()
			}
		}
	}
	if !goal.Known {
		goal.Measured = "not measured: wrk is not installed"
	}
	return append(goals, goal)
}

func (r *Report) memoryGoals() []Goal {
	var goals []Goal
	if r.RSS.FleetRSS > 0 {
		per := r.RSS.PerDevice()
		goal := Goal{Name: fmt.Sprintf("RSS per device at %s devices: gwsim serve's VmRSS with the generated fleet less with the demo fleet, over the devices", num(float64(r.RSS.Devices))),
			Target: fmt.Sprintf("≤ %.0f B", goalRSSPerDevice), Known: true, Met: per <= goalRSSPerDevice,
			Measured: fmt.Sprintf("%.0f B (%s less %s)", per, mib(r.RSS.FleetRSS), mib(r.RSS.DemoRSS))}
		if !goal.Met {
			goal.Miss = fmt.Sprintf("%.0f B over", per-goalRSSPerDevice)
			goal.Why = "the fleet as loaded (kept for /_sim/reset: Device values, sn and name strings) and the store (type byte, sn index); see the fleet table for the heap split."
		}
		goals = append(goals, goal)
	}
	if fr, ok := r.fleetOf(goalFleetDevice); ok {
		goal := Goal{Name: "1M-device fleet generated and loaded: gwsim serve --seed, from start until it listens", Target: "< 3 s",
			Known: true, Met: fr.Startup < goalStartup,
			Measured: fmt.Sprintf("%s (in-process: generate %s, load %s)", dur(fr.Startup), dur(fr.Generate), dur(fr.Load))}
		if !goal.Met {
			goal.Miss = fmt.Sprintf("%s over", dur(fr.Startup-goalStartup))
			goal.Why = "generation (gofakeit draws) and the store's load (sn index); see the fleet table for the split."
		}
		goals = append(goals, goal)
	}
	if b := r.Big; b.Devices > 0 {
		goal := Goal{Name: fmt.Sprintf("%s-device generated fleet: gwsim serve --seed listening, and its RSS", num(float64(b.Devices))),
			Target: "< 10 s, < 2 GiB", Known: true, Met: b.Startup < goalBigStartup && b.RSS < goalBigRSS,
			Measured: fmt.Sprintf("%s, %s", dur(b.Startup), mib(b.RSS))}
		if !goal.Met {
			var miss []string
			if b.Startup >= goalBigStartup {
				miss = append(miss, dur(b.Startup-goalBigStartup)+" slow")
			}
			if b.RSS >= goalBigRSS {
				miss = append(miss, mib(b.RSS-goalBigRSS)+" over")
			}
			goal.Miss = strings.Join(miss, ", ")
			goal.Why = "see the 1M figures: time and memory grow with the devices."
		}
		goals = append(goals, goal)
	}
	return goals
}

func (r *Report) suiteGoals() []Goal {
	var goals []Goal
	if m := r.Suite.Median(); m > 0 {
		goal := Goal{Name: "the whole suite against the embedded simulator, wall time", Target: "< 3 s", Known: true,
			Met: m < goalSuite && r.Suite.Exit == 0, Measured: fmt.Sprintf("%s (median of %d; exit %d)", dur(m), len(r.Suite.Times), r.Suite.Exit)}
		if !goal.Met {
			goal.Miss = fmt.Sprintf("%s over", dur(m-goalSuite))
			if r.Suite.Exit != 0 {
				goal.Miss = fmt.Sprintf("the suite exited %d", r.Suite.Exit)
			}
			var each []string
			for _, t := range r.Suite.Times {
				each = append(each, dur(t))
			}
			goal.Why = fmt.Sprintf("the runs took %s, one after the other, each starting gwconform and its embedded gwsim afresh on the 2 cores; "+
				"the load average before and after the whole bench is under \"Where this ran\"", strings.Join(each, ", "))
		}
		goals = append(goals, goal)
	}
	if g, ok := r.reportSizeGoal(); ok {
		goals = append(goals, g)
	}
	h := r.Harness
	goal := Goal{Name: fmt.Sprintf("gwconform run against gwsim with %s latency: --parallel %d against serial, wall time", HarnessLatency, h.Parallel),
		Target: "≤ 1/5 of serial", Known: h.Measured, Measured: "not measured: " + h.Why}
	if h.Measured {
		goal.Measured = fmt.Sprintf("serial %s (exit %d), parallel %s (exit %d; median of %d): %.1f × faster", dur(h.Serial), h.SerialExit, dur(h.ParallelT), h.ParExit, max(len(h.ParallelRuns), 1), h.Speedup())
		goal.Met = h.Speedup() >= 5 && h.SerialExit == 0 && h.ParExit == 0
		if !goal.Met {
			goal.Miss = fmt.Sprintf("%.1f × instead of 5 ×", h.Speedup())
			goal.Why = "worker 0 starts the others, runs the checks that share the gateway's message log and merges the reports; the workers share two cores"
		}
	}
	if h.Parallel > 0 {
		goals = append(goals, goal)
	}
	return goals
}

// altRPS is the requests/s of the JSON run with AltThreads threads.
func (r *Report) altRPS(tool, target string) (float64, int) {
	for _, run := range r.AltRuns {
		if run.Tool == tool && run.Target == target {
			return run.RPS, run.Threads
		}
	}
	return 0, 0
}

func (r *Report) fleetOf(n int) (FleetRun, bool) {
	for _, f := range r.Fleets {
		if f.Devices == n {
			return f, true
		}
	}
	return FleetRun{}, false
}

// whyThroughput explains a throughput miss from the server's CPU per
// request and the whole-request profile.
func (r *Report) whyThroughput(format string, conns int) string {
	cpu := func(target string) time.Duration {
		return time.Duration(median(r.RunsOf(r.Tool, target, format, conns), func(l LoadRun) float64 { return float64(l.CPUPerRequest()) }))
	}
	s := fmt.Sprintf("gwsim used %s of CPU per request against the bare handler's %s (median, from /proc); ", dur(cpu("gwsim")), dur(cpu("bare")))
	for _, b := range r.GoBench {
		if b.Name == "BenchmarkRequest/"+format+"/dimmer" {
			s += fmt.Sprintf("the handler alone (BenchmarkRequest/%s/dimmer) takes %s and %d allocations, so the rest of the difference is net/http reading the body and the runtime (GC, scheduling) under load. ", format, dur(time.Duration(b.NsPerOp)), b.AllocsPerOp)
		}
	}
	for _, p := range r.Profiles {
		if strings.Contains(p.Title, strings.ToUpper(format)+" request") {
			if top := ourTop(p.Top, 4); top != "" {
				s += "Its profile's largest costs in this repository's code (cumulative): " + top + "."
			}
		}
	}
	return s
}

// whyGenerator explains a load-generator miss from the CPU each generator
// used per request.
func (r *Report) whyGenerator() string {
	var parts []string
	for _, target := range []string{"bare", "gwsim"} {
		for _, format := range []string{"json", "xml"} {
			g := func(tool string) time.Duration {
				return time.Duration(median(r.RunsOf(tool, target, format, r.FirstConns()), func(l LoadRun) float64 { return float64(l.GenCPUPerRequest()) }))
			}
			if w := g(ToolWrk); w > 0 {
				parts = append(parts, fmt.Sprintf("%s %s: wrk %s, gwconform load %s", target, format, dur(w), dur(g(ToolLoad))))
			}
		}
	}
	s := "CPU per request of each generator (from the process's rusage): " + strings.Join(parts, "; ") + ". " +
		"On two shared cores every microsecond the generator spends is taken from the server. gwconform load draws a device, values and a sign for every request and checks every answer; wrk sends one fixed body and only counts status codes."
	for _, p := range r.Profiles {
		if strings.Contains(p.Title, "load generator") {
			if top := ourTop(p.Top, 4); top != "" {
				s += " Its profile's largest costs in this repository's code: " + top + "."
			}
		}
	}
	return s
}

// ourTop lists the first n functions of this repository in a pprof -top
// -cum table, with their cumulative share.
func ourTop(top string, n int) string {
	var out []string
	for _, line := range strings.Split(top, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.Contains(f[5], "gwdmi/gwtools/") || strings.Contains(f[5], "Benchmark") || strings.Contains(f[5], "bench") {
			continue
		}
		name := f[5][strings.LastIndex(f[5], "/")+1:]
		out = append(out, fmt.Sprintf("%s %s", name, f[4]))
		if len(out) == n {
			break
		}
	}
	return strings.Join(out, ", ")
}

// WriteMarkdown writes docs/benchmarks.md.
func (r *Report) WriteMarkdown(w io.Writer) error {
	b := &strings.Builder{}
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	e := r.Env
	p("# Benchmarks\n\n")
	p("Written by `make bench` (`cmd/gwbench`, package `cmd/gwbench/bench`) on %s at commit %s; the run took %s. "+
		"Do not edit by hand: run `make bench` again. Every figure below comes with the command line that reproduces it. "+
		"What was decided for performance, why, and the figure and command behind each decision: [performance.md](performance.md).\n\n",
		e.Date, orUnknown(e.Commit), r.Took.Round(time.Second))

	p("## Goals\n\n| Goal | Target | Measured | |\n|---|---|---|---|\n")
	goals := r.Goals()
	for _, g := range goals {
		verdict := "**met**"
		switch {
		case g.Info && g.Known:
			verdict = "reported"
		case !g.Known:
			verdict = "not measured"
		case !g.Met:
			verdict = "**missed**: " + g.Miss
		}
		p("| %s | %s | %s | %s |\n", g.Name, g.Target, orUnknown(g.Measured), verdict)
	}
	p("\n")
	missed := false
	for _, g := range goals {
		if g.Known && !g.Met && !g.Info {
			if !missed {
				p("### Where a goal was missed\n\n")
				missed = true
			}
			p("- **%s** (%s): %s\n", g.Name, g.Miss, g.Why)
		}
	}
	if missed {
		p("\nThe profiles are at the end of this file.\n\n")
	}

	p("## Where this ran\n\n")
	p("- CPU: %s, %d cores; memory %s; %s\n", e.CPU, e.Cores, orUnknown(e.MemoryTotal), e.OS)
	p("- Go: %s; load generator: %s\n", e.Go, orUnknown(firstNonEmpty(e.Wrk, r.Tool)))
	p("- Load average (1, 5, 15 min) before: %s; after: %s (the run's own load included). The load tables give the share of the CPU "+
		"that other processes took during each run (/proc/stat less the target's and the generator's own time).\n", e.LoadBefore, e.LoadAfter)
	if pl := r.Placement; pl.TargetCPUs != "" {
		p("- Client and server run on one machine over loopback, each on CPUs of its own (`gwbench --pin`, `taskset`): the targets (gwsim, the bare handler) on CPU %s, "+
			"the load generators (wrk, gwconform load) on CPU %s, in the load comparison, the client report's and the metrics'. Go gives a process "+
			"as many Ps as CPUs it may use, so gwsim and the bare handler both ran with GOMAXPROCS %s. The Redis comparisons, with redis-server as a third process, are not pinned. "+
			"Requests/s are a comparison between targets measured the same way, not the capacity of either on a machine of its own.\n", pl.TargetCPUs, pl.GenCPUs, cpuCount(pl.TargetCPUs))
	} else {
		p("- Client and server run on the same %d cores over loopback: every run below shares the CPU between the load generator and the target, "+
			"so requests/s are a comparison between targets measured the same way, not the capacity of either on a machine of its own.\n", e.Cores)
	}
	for _, n := range r.Notes {
		p("- %s\n", n)
	}
	p("\n")

	for _, sec := range Sections() {
		if sec.Write != nil {
			sec.Write(r, p)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// placementWords say where generator and target ran, for the load
// section's opening.
func (r *Report) placementWords() string {
	if pl := r.Placement; pl.TargetCPUs != "" {
		return fmt.Sprintf("the generator on CPU %s, the targets on CPU %s, by `taskset -c`, as each command line below shows", pl.GenCPUs, pl.TargetCPUs)
	}
	return "on two cores, one for the generator and what is left for the target"
}

// writeLoad writes the load comparison: how it was measured, each format
// and number of connections, the latency at half the maximum, gwconform
// load against wrk, the runs with other generator threads, and how to
// reproduce it all.
func (r *Report) writeLoad(p func(string, ...any)) {
	if len(r.Runs) == 0 {
		return
	}
	first := r.FirstConns()
	r.writeLoadMethod(p)
	for _, conns := range r.Connections {
		for _, format := range []string{"json", "xml"} {
			r.writeLoadTable(p, format, conns)
			r.writeLoadRatio(p, format, conns)
		}
	}
	r.writeHalfRate(p, first)
	r.writeLoadAgainstWrk(p, first)
	r.writeAltThreads(p, first)
	r.writeLoadReproduce(p)
}

// writeLoadMethod says how the load comparison was measured: the targets,
// the signed body, and the control target with gwsim's GC headroom.
func (r *Report) writeLoadMethod(p func(string, ...any)) {
	p("## Load: gwsim against a bare net/http handler\n\n")
	p("Each round of `gwbench` starts two servers afresh on loopback, each in its own process (so that one process's luck, where its heap lands "+
		"and its collector's pacing, is one round's): gwsim serving a generated fleet of %d devices "+
		"**with its default flags**, as a user starts it, "+
		"and a bare `net/http` handler (`cmd/gwbench/bench.BareHandler`, with gwsim's `http.Server` timeouts) that answers gwsim's success body "+
		"in the request's format without doing anything else, not even reading the body. "+
		"%s then sends send-command requests (the signed Light Dimmer command) to each, at %s connections from %d generator thread(s) (wrk's `-t`, gwconform load's `GOMAXPROCS`: "+
		"%s), %s a run, in %d rounds that alternate which target goes first. "+
		"Requests/s and latencies are the medians of the rounds; a ratio is the median of the rounds' ratios, each between two runs made back to back.\n\n",
		benchGateways*benchPerGateway, r.Tool, joinInts(r.Connections, " and "), r.Threads, r.placementWords(), secs(r.Duration), r.Rounds)
	p("wrk sends one body again and again, and a gwsim request needs a fresh timestamp and its sign: so the bench fleet sets "+
		"`timestamp_window: 0` (CONTRACT 1: 0 disables the window) and the body is signed once with the timestamp %s. gwsim still checks the api key, "+
		"the account and the md5 sign of every request; only the clock check is off. gwconform load signs every request afresh (the sign is cached for the second of its timestamp). "+
		"At its default `--log-level info` gwsim writes no line per request (only with `--access-log` or at debug) and a summary line a minute.\n\n", benchTimestamp)
	if r.BareGCCmd != "" {
		p("gwsim serve keeps %d MiB of room for garbage between two collections by default (`--gc-headroom`, package `simulator/gcheadroom`): with its live heap of about 2 MiB, "+
			"Go's own pace (GOGC 100, never below a 4 MiB heap) collected every 700 requests or so. The bare handler runs at Go's own pace, as a handler written without thought for it would. "+
			"So that the comparison can tell gwsim's code from its collector's pace, the JSON runs also measure a third target in the same rounds, **bare-gc**: the same bare handler "+
			"with the same headroom (`%s`). gwsim / bare-gc is the part of the gap that is gwsim's work per request.\n\n", gcheadroom.DefaultHeadroom>>20, r.BareGCCmd)
	}
}

// writeLoadTable writes the table of each target's runs in one format at
// one number of connections.
func (r *Report) writeLoadTable(p func(string, ...any), format string, conns int) {
	p("### %s, %d connections\n\n", strings.ToUpper(format), conns)
	p("| Target | requests/s (median) | each round | p50 | p99 | server CPU per request | other processes' CPU | errors |\n|---|---|---|---|---|---|---|---|\n")
	for _, target := range []string{"bare", TargetBareGC, "gwsim"} {
		runs := r.RunsOf(r.Tool, target, format, conns)
		if len(runs) == 0 {
			continue
		}
		var each []string
		var errs int64
		for _, run := range runs {
			each = append(each, num(run.RPS))
			errs += run.Errors
		}
		p("| %s | %s | %s | %s | %s | %s | %.0f%% | %d |\n", target, num(r.MedianRPS(r.Tool, target, format, conns)), strings.Join(each, ", "),
			dur(time.Duration(median(runs, func(l LoadRun) float64 { return float64(l.P50) }))),
			dur(time.Duration(median(runs, func(l LoadRun) float64 { return float64(l.P99) }))),
			dur(time.Duration(median(runs, func(l LoadRun) float64 { return float64(l.CPUPerRequest()) }))),
			100*median(runs, func(l LoadRun) float64 { return l.OtherShare }), errs)
	}
}

// writeLoadRatio writes gwsim's ratio to the bare handler, and to the
// control, in one format at one number of connections.
func (r *Report) writeLoadRatio(p func(string, ...any), format string, conns int) {
	bs, gs := r.RunsOf(r.Tool, "bare", format, conns), r.RunsOf(r.Tool, "gwsim", format, conns)
	rs := RoundRatios(gs, bs)
	if len(rs) == 0 {
		return
	}
	var per []string
	for _, v := range rs {
		per = append(per, fmt.Sprintf("%.2f", v))
	}
	cpu := func(runs []LoadRun) float64 {
		return median(runs, func(l LoadRun) float64 { return float64(l.CPUPerRequest()) })
	}
	p("\ngwsim / bare: **%.2f ×**, the median of the rounds' ratios (%s); the ratio of the medians is %.2f ×",
		PairedRatio(gs, bs), strings.Join(per, ", "), r.MedianRPS(r.Tool, "gwsim", format, conns)/r.MedianRPS(r.Tool, "bare", format, conns))
	if c := cpu(gs); c > 0 {
		p(", and by server CPU per request %.2f ×", cpu(bs)/c)
	}
	p(".")
	if ctl := r.RunsOf(r.Tool, TargetBareGC, format, conns); len(RoundRatios(gs, ctl)) > 0 {
		p(" Against the control, the bare handler with gwsim's GC headroom: **%.2f ×** (bare-gc / bare %.2f ×).", PairedRatio(gs, ctl), PairedRatio(ctl, bs))
	}
	p("\n\n")
}

// writeHalfRate writes gwsim's latency at half its maximum rate, which
// gwconform load holds and wrk cannot.
func (r *Report) writeHalfRate(p func(string, ...any), first int) {
	if len(r.HalfRate) == 0 {
		return
	}
	p("### Latency at half the maximum rate\n\n")
	p("wrk cannot hold a rate, so gwconform load does: half the median gwsim requests/s above at %d connections, same connections, %s.\n\n", first, secs(r.Duration))
	p("| Format | rate asked | done | p50 | p99 | max | errors |\n|---|---|---|---|---|---|---|\n")
	for _, h := range r.HalfRate {
		p("| %s | %s | %s | %s | %s | %s | %d |\n", h.Format, num(h.Rate), num(h.RPS), dur(h.P50), dur(h.P99), dur(h.Max), h.Errors)
	}
	p("\n")
}

// writeLoadAgainstWrk compares gwconform load with wrk against each
// target, when wrk ran.
func (r *Report) writeLoadAgainstWrk(p func(string, ...any), first int) {
	if r.Tool != ToolWrk {
		return
	}
	p("### gwconform load against wrk\n\n")
	p("The same rounds also ran gwconform load (commands only, the same format, %d connections) against both targets. "+
		"It does more per request than wrk: it draws one of the %d devices and valid values, signs, encodes, and reads and checks every answer.\n\n",
		first, benchGateways*benchPerGateway)
	p("| Target | Format | wrk requests/s | gwconform load requests/s | load / wrk (median of the rounds' ratios) | generator CPU per request, wrk | gwconform load |\n|---|---|---|---|---|---|---|\n")
	for _, target := range []string{"bare", "gwsim"} {
		for _, format := range []string{"json", "xml"} {
			w, l := r.MedianRPS(ToolWrk, target, format, first), r.MedianRPS(ToolLoad, target, format, first)
			if w == 0 {
				continue
			}
			ratio := PairedRatio(r.RunsOf(ToolLoad, target, format, first), r.RunsOf(ToolWrk, target, format, first))
			g := func(tool string) string {
				return dur(time.Duration(median(r.RunsOf(tool, target, format, first), func(x LoadRun) float64 { return float64(x.GenCPUPerRequest()) })))
			}
			p("| %s | %s | %s | %s | %.2f × | %s | %s |\n", target, format, num(w), num(l), ratio, g(ToolWrk), g(ToolLoad))
		}
	}
	p("\n")
}

// writeAltThreads writes the JSON runs made with another number of
// generator threads.
func (r *Report) writeAltThreads(p func(string, ...any), first int) {
	if len(r.AltRuns) == 0 {
		return
	}
	threads := r.AltRuns[0].Threads
	p("### The JSON runs with %d generator threads\n\n", threads)
	p("One more round, to show how much the figures above owe to the number of generator threads (%d connections, %s a run). "+
		"It is one round only: the spread of the rounds above shows how far a single run can be trusted.\n\n", first, secs(r.Duration))
	p("| Generator | bare requests/s | gwsim requests/s | gwsim / bare |\n|---|---|---|---|\n")
	alt := func(tool, target string) float64 { v, _ := r.altRPS(tool, target); return v }
	for _, tool := range []string{ToolWrk, ToolLoad} {
		b, g := alt(tool, "bare"), alt(tool, "gwsim")
		if b > 0 {
			p("| %s | %s | %s | %.2f × |\n", tool, num(b), num(g), g/b)
		}
	}
	if w, l := alt(ToolWrk, "bare"), alt(ToolLoad, "bare"); w > 0 && l > 0 {
		p("\ngwconform load / wrk with %d threads: %.2f × against bare, %.2f × against gwsim.\n", threads, l/w, alt(ToolLoad, "gwsim")/alt(ToolWrk, "gwsim"))
	}
	p("\n")
}

// writeLoadReproduce writes the command lines, script and bodies that
// reproduce every run.
func (r *Report) writeLoadReproduce(p func(string, ...any)) {
	p("### To reproduce\n\n```sh\nmake build && go build -o bin/gwbench ./cmd/gwbench\n")
	p("%s\n", r.BenchFleet)
	p("%s &   # prints GWSIM_URL\n", r.GwsimCmd)
	p("%s &      # prints BARE_URL\n", r.BareCmd)
	seen := map[string]bool{}
	for _, run := range append(append(append([]LoadRun{}, r.Runs...), r.HalfRate...), r.AltRuns...) {
		c := run.Command
		if !seen[c] {
			seen[c] = true
			p("%s\n", c)
		}
	}
	p("```\n\n`post.lua`:\n\n```lua\n%s```\n\n", wrkScript)
	if len(r.Bodies) > 0 {
		p("`command.json` and `command.xml` (a Light Dimmer of the bench fleet, signed for %s):\n\n```\n%s\n%s\n```\n\n", benchTimestamp, r.Bodies["json"], r.Bodies["xml"])
	}
}

func (r *Report) writeFleets(p func(string, ...any)) {
	if len(r.Fleets) == 0 {
		return
	}
	p("## Fleets: memory and load time\n\n")
	p("Each size is measured in a fresh process (`gwbench fleetmem`): the live heap after a forced GC (`runtime.ReadMemStats`), "+
		"as a delta, after `fleet.Generate` and after `simulator.New` on the fleet; bytes per device are the delta over the devices. "+
		"The simulator keeps the fleet (for `/_sim/reset`), so both parts stay in memory: the total is what a running gwsim holds per device. "+
		"Then `gwsim serve --seed` is timed from its start until it listens, and `gwsim fleet` writing the same fleet as YAML. %d devices to a gateway.\n\n", PerGateway)
	p("| Devices | heap per device | of which the fleet | the store | generate | load | gwsim serve listening after | its RSS | gwsim fleet (YAML) |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, f := range r.Fleets {
		p("| %s | %.0f B | %.0f B | %.0f B | %s | %s | %s | %s | %s (%s) |\n", num(float64(f.Devices)), f.PerDevice(f.TotalBytes()),
			f.PerDevice(f.FleetBytes), f.PerDevice(f.SimBytes), dur(f.Generate), dur(f.Load), dur(f.Startup), mib(f.RSS), dur(f.Write), mib(f.Bytes))
	}
	p("\nThe store keeps per device its type (one byte) and 4 to 11 bytes of a hash index of positions, whose keys are the sn strings the fleet " +
		"already holds; a device's name and state are recorded only once they differ from the fleet (in maps striped like its 1024 locks). " +
		"The fleet's own share is its `Device` values (56 bytes) and their sn and name strings, which a generated fleet writes, gateway by gateway, " +
		"into one string that they slice.\n\n```sh\n")
	for _, f := range r.Fleets {
		p("%s\n%s\n%s\n", f.MeasureCmd, f.ServeCmd, f.WriteCmd)
	}
	p("```\n\n")
	if r.RSS.FleetRSS > 0 {
		p("### RSS per device, as a user sees it\n\n")
		p("gwsim serve with its default flags, each in a fresh process; VmRSS from `/proc/PID/status` %s after it listens. "+
			"The difference over the devices is what a device costs a running gwsim: heap, the runtime's overhead on it, and pages not yet returned.\n\n", dur(settleTime))
		p("| Fleet | VmRSS |\n|---|---|\n| demo | %s |\n| %s devices | %s |\n| **per device** | **%.0f B** |\n\n", mib(r.RSS.DemoRSS), num(float64(r.RSS.Devices)), mib(r.RSS.FleetRSS), r.RSS.PerDevice())
		p("```sh\n%s\n%s\ngrep VmRSS /proc/$(pgrep -n gwsim)/status   # %s after the banner\n```\n\n", r.RSS.DemoCmd, r.RSS.FleetCmd, dur(settleTime))
	}
	if b := r.Big; b.Devices > 0 {
		p("### %s devices\n\n", num(float64(b.Devices)))
		p("gwsim serve generating %s devices listened after **%s** with **%s** of RSS (%.0f B a device).\n\n```sh\n%s\n```\n\n",
			num(float64(b.Devices)), dur(b.Startup), mib(b.RSS), float64(b.RSS)/float64(b.Devices), b.Command)
	}
}

func (r *Report) writeSuite(p func(string, ...any)) {
	if len(r.Suite.Times) == 0 && !r.Harness.Measured {
		return
	}
	p("## The conformance suite\n\n")
	var times []string
	for _, t := range r.Suite.Times {
		times = append(times, dur(t))
	}
	p("Wall time of the whole suite against the embedded simulator (gwconform starts gwsim in-process), binary already built: "+
		"**%s** median (%s); exit %d. %s\n\n```sh\n%s\n```\n\n", dur(r.Suite.Median()), strings.Join(times, ", "), r.Suite.Exit, r.Suite.Summary, r.Suite.Command)
	if r.Suite.ReportBytes > 0 {
		p("### Report files\n\nThe last of those runs wrote %s of report files together. With every message refused, hundreds of checks fail or prove nothing:\n\n", mb(r.Suite.ReportBytes))
		for _, rs := range r.ReportSizes {
			var files []string
			for _, f := range reportFiles {
				files = append(files, fmt.Sprintf("%s %s", f, mb(rs.Files[f])))
			}
			p("- %s: **%s** (%s); exit %d. %s\n\n```sh\n%s\n```\n\n", rs.Name, mb(rs.Total), strings.Join(files, ", "), rs.Exit, rs.Summary, strings.Join(rs.Command, "\n"))
		}
	}
	h := r.Harness
	p("### Serial and parallel against a slow target\n\n")
	if !h.Measured {
		p("Not measured: %s.\n\n", h.Why)
		return
	}
	p("gwconform run against gwsim (default flags, its own process) with every operation delayed %s (`PUT /_sim/faults`), "+
		"a generated fleet with at least %d devices of each type; the state is reset and the latency set again before each run. "+
		"The suite's own fault checks change the faults while they run, so part of the suite runs without the latency.\n\n", HarnessLatency, harnessPerType)
	parallel := dur(h.ParallelT)
	if len(h.ParallelRuns) > 1 {
		var each []string
		for _, t := range h.ParallelRuns {
			each = append(each, dur(t))
		}
		parallel += fmt.Sprintf(" (median of %d: %s)", len(h.ParallelRuns), strings.Join(each, ", "))
	}
	p("| Run | wall time | exit | checks |\n|---|---|---|---|\n| serial | %s | %d | %s |\n| --parallel %d | %s | %d | %s |\n\n",
		dur(h.Serial), h.SerialExit, h.SerialSum, h.Parallel, parallel, h.ParExit, h.ParSum)
	p("Parallel / serial: **%.1f × faster**, both in the same run.\n\n```sh\n%s\n%s &   # prints GWSIM_URL\n%s\n%s\n%s\n```\n\n",
		h.Speedup(), h.FleetCmd, h.ServeCmd, h.FaultsCmd, h.SerialCmd, h.ParallelCmd)
}

func (r *Report) writeGoBench(p func(string, ...any)) {
	if len(r.GoBench) == 0 {
		return
	}
	p("## Go benchmarks\n\n")
	p("Decoding (`gatewayapi/codec`), validation (`gatewayapi/device`), signing and authentication (`gatewayapi/auth`), a whole request through " +
		"gwsim's handler (`simulator/server`) and the load generator's senders (`conformance/load`), in JSON and XML. " +
		"`BenchmarkDecodeStandard` is the encoding/json and encoding/xml path that gwsim keeps for bodies its fast readers give up on. " +
		"`BenchmarkSend` sends one command to a bare handler in the same process through each of the load generator's three senders: " +
		"its own HTTP/1.1 (raw, the default), net/http's transport, and gatewayapi/client (what the checks use).\n\n")
	p("| Package | Benchmark | ns/op | MB/s | B/op | allocs/op |\n|---|---|---|---|---|---|\n")
	benches := append([]GoBench(nil), r.GoBench...)
	sort.SliceStable(benches, func(i, j int) bool { return benches[i].Package < benches[j].Package })
	for _, b := range benches {
		mbs := ""
		if b.MBPerSec > 0 {
			mbs = fmt.Sprintf("%.1f", b.MBPerSec)
		}
		p("| %s | %s | %s | %s | %d | %d |\n", strings.TrimPrefix(b.Package, "github.com/gwdmi/gwtools/"), b.Name, num(b.NsPerOp), mbs, b.BytesPerOp, b.AllocsPerOp)
	}
	p("\n```sh\n%s\n```\n\n", r.GoBenchCmd)
}

func (r *Report) writeProfiles(p func(string, ...any)) {
	if len(r.Profiles) == 0 {
		return
	}
	p("## Profiles\n\n")
	for _, pr := range r.Profiles {
		p("### CPU profile of %s\n\n```sh\n%s\n```\n\n```\n%s\n```\n\n", pr.Title, pr.Command, pr.Top)
	}
}

func joinInts(v []int, sep string) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, sep)
}

func num(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	if v < 100 && v != float64(int64(v)) {
		s = fmt.Sprintf("%.1f", v)
	}
	// Thousands separated by commas.
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	for i := len(intPart) - 3; i > 0; i -= 3 {
		intPart = intPart[:i] + "," + intPart[i:]
	}
	if frac != "" {
		intPart += "." + frac
	}
	if neg {
		intPart = "-" + intPart
	}
	return intPart
}

func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Microsecond:
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// ratioText is ratio with two decimals, or three when two would round a
// missed goal's ratio up to its target (0.947 is not 0.95).
func ratioText(ratio, target float64) string {
	if ratio < target && fmt.Sprintf("%.2f", ratio) == fmt.Sprintf("%.2f", target) {
		return fmt.Sprintf("%.3f", ratio)
	}
	return fmt.Sprintf("%.2f", ratio)
}

// shortOf says how far ratio falls short of target.
func shortOf(ratio, target float64) string {
	pct := (target - ratio) / target * 100
	p := fmt.Sprintf("%.0f%%", pct)
	if pct < 1 {
		p = fmt.Sprintf("%.1f%%", pct)
	}
	return fmt.Sprintf("%s short: %s × instead of %.2f ×", p, ratioText(ratio, target), target)
}
