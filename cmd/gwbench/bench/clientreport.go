package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// SectionClientReport measures what the client report (on by default)
// costs: gwsim with its default flags against gwsim with
// --client-report=false, in the same rounds.
const SectionClientReport = "the client report's cost: default flags against --client-report=false"

// ClientReportFigures are the section's figures (Report.Extra[SectionClientReport]).
type ClientReportFigures struct {
	Rounds   int               `json:"rounds"`
	Duration time.Duration     `json:"duration_ns"`
	Runs     []ClientReportRun `json:"runs"`
	Commands []string          `json:"commands"`
}

// ClientReportRun is one concurrency: requests/s of each gwsim in each
// round, and each one's memory after the last round.
type ClientReportRun struct {
	Connections int       `json:"connections"`
	On          []float64 `json:"default_rps"`
	Off         []float64 `json:"off_rps"`
	Ratios      []float64 `json:"ratios"`
	OnErrors    int64     `json:"default_errors"`
	OffErrors   int64     `json:"off_errors"`
	On99, Off99 []time.Duration
	// OnCPU and OffCPU are each gwsim's CPU time per request in each
	// round (/proc/PID/stat): steadier than requests/s on a shared machine.
	OnCPU, OffCPU []time.Duration
	// Memory after the last round: VmRSS and VmHWM (/proc/PID/status), and
	// the live heap the Go runtime marked at its last collection and the
	// largest at any collection (GODEBUG=gctrace=1, in MB).
	OnMem, OffMem ProcMemory
}

// ProcMemory is a process's memory after a run.
type ProcMemory struct {
	RSS, HWM          int64
	HeapMB, MaxHeapMB int
	GCs               int
}

func clientReportSection() Section {
	return onOffSection(SectionClientReport, "--client-report=false", "client report", reportRounds, (*Report).clientReportGoals, (*Report).writeClientReport)
}

// reportRounds and onOffRounds are the rounds of an on/off comparison:
// the client report's and its control's, and the metrics'.
func reportRounds(o Options) int { return o.ReportRounds }
func onOffRounds(o Options) int  { return o.OnOffRounds }

// onOffSection is a section that runs measureOnOff with offFlag ("": the
// same flags on both sides), in rounds(o) rounds, and keeps its figures
// under name.
func onOffSection(name, offFlag, what string, rounds func(Options) int, goals func(*Report) []Goal, write func(*Report, func(string, ...any))) Section {
	return Section{Name: name, Measure: func(ctx context.Context, o Options, r *Report, logf func(string, ...any)) error {
		fig, err := r.measureOnOff(ctx, o, rounds(o), offFlag, what, logf)
		if fig != nil {
			r.Extra[name] = fig
		}
		return err
	}, Goals: goals, Write: write}
}

// onOffFigures are the figures an onOffSection kept under name, if it ran.
func (r *Report) onOffFigures(name string) (*ClientReportFigures, bool) {
	fig, ok := r.Extra[name].(*ClientReportFigures)
	return fig, ok && len(fig.Runs) > 0
}

// gctraceRe is a GODEBUG=gctrace=1 line's heap sizes: at the start of the
// collection, at its end, and live (marked), in MB.
var gctraceRe = regexp.MustCompile(`^gc \d+ @.* (\d+)->(\d+)->(\d+) MB`)

// heapOf reads the gctrace lines of a process's stderr.
func heapOf(stderr string, m *ProcMemory) {
	for _, line := range strings.Split(stderr, "\n") {
		g := gctraceRe.FindStringSubmatch(line)
		if g == nil {
			continue
		}
		live, _ := strconv.Atoi(g[3])
		m.GCs++
		m.HeapMB, m.MaxHeapMB = live, max(m.MaxHeapMB, live)
	}
}

// hwm is the process's peak resident memory, from /proc.
func (s *server) hwm() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// measureOnOff runs gwsim with its default flags against gwsim with
// offFlag, in the same alternating rounds, at each concurrency.
func (r *Report) measureOnOff(ctx context.Context, o Options, rounds int, offFlag, what string, logf func(string, ...any)) (*ClientReportFigures, error) {
	fleetFile, _, err := r.benchFleet(ctx, o)
	if err != nil {
		return nil, err
	}
	gw, gwconform := filepath.Join(o.Bin, "gwsim"), filepath.Join(o.Bin, "gwconform")
	on := o.place.target([]string{gw, "serve", "--addr", "127.0.0.1:0", "--fleet", fleetFile})
	off := append([]string(nil), on...)
	onNote, offNote := "   # default flags: the "+what+" on; prints GWSIM_URL", "   # prints OFF_URL"
	if offFlag != "" {
		off = append(off, offFlag)
	} else {
		onNote, offNote = "   # default flags; prints GWSIM_URL", "   # the same again (the control); prints OFF_URL"
	}
	fig := &ClientReportFigures{Rounds: rounds, Duration: o.OnOffDuration}
	procs := "GOMAXPROCS=" + strconv.Itoa(o.Threads)
	load := func(url string, conns int) (LoadRun, error) {
		argv := o.place.generator([]string{gwconform, "load", "--target", url, "--fleet", fleetFile, "--concurrency", strconv.Itoa(conns),
			"--duration", secs(o.OnOffDuration), "--rate", "0", "--json", "--quiet"})
		return runLoadArgv(ctx, argv, procs)
	}
	const trace = "GODEBUG=gctrace=1"
	fig.Commands = []string{
		trace + " " + strings.Join(shortArgv(on), " ") + " &" + onNote,
		trace + " " + strings.Join(shortArgv(off), " ") + " &" + offNote,
	}
	for _, conns := range o.Connections {
		fig.Commands = append(fig.Commands, procs+" "+strings.Join(shortArgv(o.place.generator([]string{gwconform, "load", "--target", "GWSIM_URL", "--fleet", fleetFile,
			"--concurrency", strconv.Itoa(conns), "--duration", secs(o.OnOffDuration), "--rate", "0", "--json", "--quiet"})), " ")+"   # and OFF_URL")
		// Fresh servers for each round: a process keeps its luck for
		// its whole life (where its heap lands, its collector's pacing),
		// which, one process a concurrency, the rounds could not average
		// out (measured: at 4 connections all seven rounds of one run read
		// 0.73 to 0.93, another's 0.71 to 1.25). The memory is the last
		// round's processes', after their one run each.
		run := ClientReportRun{Connections: conns}
		for round := 0; round < rounds; round++ {
			sOn, err := startServerEnv(on, []string{trace}, time.Minute)
			if err != nil {
				return fig, err
			}
			sOff, err := startServerEnv(off, []string{trace}, time.Minute)
			if err != nil {
				sOn.stop()
				return fig, err
			}
			order := []*server{sOn, sOff}
			if round%2 == 1 {
				order = []*server{sOff, sOn}
			}
			got := map[*server]LoadRun{}
			for _, s := range order {
				before, _ := s.cpu()
				lr, err := load(s.url, conns)
				if err != nil {
					sOn.stop()
					sOff.stop()
					return fig, err
				}
				after, _ := s.cpu()
				lr.ServerCPU = after - before
				got[s] = lr
			}
			run.OnCPU, run.OffCPU = append(run.OnCPU, got[sOn].CPUPerRequest()), append(run.OffCPU, got[sOff].CPUPerRequest())
			run.On, run.Off = append(run.On, got[sOn].RPS), append(run.Off, got[sOff].RPS)
			run.On99, run.Off99 = append(run.On99, got[sOn].P99), append(run.Off99, got[sOff].P99)
			run.OnErrors += got[sOn].Errors
			run.OffErrors += got[sOff].Errors
			if got[sOff].RPS > 0 {
				run.Ratios = append(run.Ratios, got[sOn].RPS/got[sOff].RPS)
			}
			if round == rounds-1 {
				run.OnMem = ProcMemory{RSS: sOn.rss(), HWM: sOn.hwm()}
				run.OffMem = ProcMemory{RSS: sOff.rss(), HWM: sOff.hwm()}
			}
			sOn.stop()
			sOff.stop()
			if round == rounds-1 {
				heapOf(sOn.stderr.String(), &run.OnMem)
				heapOf(sOff.stderr.String(), &run.OffMem)
			}
		}
		logf(what+": %d connections: %.0f req/s with it, %.0f without, %.2f ×", conns, medianOf(run.On), medianOf(run.Off), medianOf(run.Ratios))
		fig.Runs = append(fig.Runs, run)
	}
	return fig, nil
}

// runLoadArgv runs one gwconform load --json with env and reads its figures.
func runLoadArgv(ctx context.Context, argv []string, env ...string) (LoadRun, error) {
	r := LoadRun{Tool: ToolLoad, Command: strings.Join(env, " ") + " " + strings.Join(shortArgv(argv), " ")}
	cmd := envCommand(ctx, argv, env...)
	out, err := cmd.Output()
	if err != nil && len(out) == 0 {
		return r, fmt.Errorf("gwconform load: %v", err)
	}
	r.GenCPU = cpuOf(cmd)
	return r, parseLoadJSON(out, &r)
}

// missWhy says what a missed on/off goal's rounds show: every round
// below the goal is the cost itself in this run, not the noise; some
// rounds over it say the noise decided.
func missWhy(ratios []float64, goal, cpuExtra float64) string {
	below := 0
	for _, x := range ratios {
		if x < goal {
			below++
		}
	}
	if below == len(ratios) {
		return fmt.Sprintf("all %d rounds read below %.2f × and gwsim's CPU per request was %+.0f%%: in this run the cost itself was over the goal, "+
			"not the noise; on other runs it was under ([performance.md](performance.md#the-client-reports-cost))", len(ratios), goal, cpuExtra)
	}
	e, short := medianError(ratios), goal-medianOf(ratios)
	within := "within one error: the noise may have decided"
	switch {
	case short > 2*e:
		within = "beyond two errors: more than the noise"
	case short > e:
		within = "between one error and two: likely, not surely, more than the noise"
	}
	return fmt.Sprintf("%d of %d rounds read below %.2f × and %d over; the median is %.3f short and its error ±%.3f, the miss %s; "+
		"BenchmarkObserveFresh (simulator/clients) gives the report's own cost per request without the machine's noise", below, len(ratios), goal, len(ratios)-below, short, e, within)
}

// goalClientReport is the goal: the client report on costs at most 5 % of
// the requests/s.
const goalClientReport = 0.95

func (r *Report) clientReportGoals() []Goal {
	fig, ok := r.onOffFigures(SectionClientReport)
	if !ok {
		return nil
	}
	var goals []Goal
	for _, run := range fig.Runs {
		ratio := medianOf(run.Ratios)
		g := Goal{Name: fmt.Sprintf("gwsim with the client report (default flags) against --client-report=false, requests/s (gwconform load, %d connections, same run)", run.Connections),
			Target: fmt.Sprintf("≥ %.2f ×", goalClientReport), Known: len(run.Ratios) > 0, Met: ratio >= goalClientReport,
			Measured: fmt.Sprintf("%s × (median of %d rounds, its error ±%.2f: %s; medians %s vs %s req/s); gwsim CPU per request %s vs %s (%+.0f%%); RSS after the last round %d vs %d MiB",
				ratioText(ratio, goalClientReport), len(run.Ratios), medianError(run.Ratios), joinFloats(run.Ratios, "%.2f"), num(medianOf(run.On)), num(medianOf(run.Off)),
				dur(medianDuration(run.OnCPU)), dur(medianDuration(run.OffCPU)), cpuExtra(run), run.OnMem.RSS>>20, run.OffMem.RSS>>20)}
		if g.Known && !g.Met {
			g.Miss = shortOf(ratio, goalClientReport)
			g.Why = missWhy(run.Ratios, goalClientReport, cpuExtra(run))
		}
		goals = append(goals, g)
	}
	return goals
}

func (r *Report) writeClientReport(p func(string, ...any)) {
	fig, ok := r.onOffFigures(SectionClientReport)
	if !ok {
		return
	}
	p("## The client report's cost\n\n")
	p("The client report ([clients.md](clients.md)) is on by default: gwsim keeps, per api_key, what the app did, from the fields the server already decoded (one hash of each, to tell a resent request; no allocation for a known app). "+
		"Two gwsim processes serve the bench fleet at once, one with the default flags and one with `--client-report=false`; gwconform load sends them the default mix "+
		"(commands, messages and renames, JSON and XML at random, each request to a device drawn from the fleet and signed afresh: what an app sends), "+
		"%s a run, in %d rounds that alternate which goes first, at each concurrency; each round starts both processes afresh, so that one process's luck "+
		"(where its heap lands, its collector's pacing) is one round's, not the whole run's. "+
		"These rounds are more and shorter than the comparisons with the bare handler (`gwbench --report-rounds`, `--onoff-duration`): the goal's margin, 5 %%, "+
		"is below the spread of one round on a two-core machine (±10 %% and more), and a median's error shrinks with the square root of the rounds: "+
		"15 rounds left it at some 4 %%, the whole margin, so a cost of 2 to 3 %% read as met or missed by luck ([performance.md](performance.md#measurement-method-and-noise)). "+
		"Each ratio's error is the median's standard error, 1.25 σ/√rounds, with σ taken from the rounds' middle half (IQR/1.35). "+
		"After the last round (its processes' one run each): VmRSS and VmHWM (peak) from `/proc/PID/status`, and the Go heap from `GODEBUG=gctrace=1` "+
		"(live heap marked at the last collection and the largest at any collection, in whole MB, the trace's resolution).\n\n", secs(fig.Duration), fig.Rounds)
	p("| connections | default flags, requests/s (median) | `--client-report=false` | default / off (median of the rounds' ratios) | the median's error | each round's ratio | gwsim CPU per request, default / off (median) | p99 default / off (median) | errors |\n|---:|---:|---:|---:|---:|---|---|---|---|\n")
	for _, run := range fig.Runs {
		p("| %d | %s | %s | **%.2f ×** | ±%.2f | %s | %s / %s | %s / %s | %d / %d |\n", run.Connections, num(medianOf(run.On)), num(medianOf(run.Off)), medianOf(run.Ratios),
			medianError(run.Ratios), joinFloats(run.Ratios, "%.2f"), dur(medianDuration(run.OnCPU)), dur(medianDuration(run.OffCPU)),
			dur(medianDuration(run.On99)), dur(medianDuration(run.Off99)), run.OnErrors, run.OffErrors)
	}
	p("\nThe load comparison with the bare handler above runs gwsim with its default flags, so with the client report: the difference in CPU per request here is its share of gwsim's.\n")
	p("\nMemory after the last round:\n\n| connections | gwsim | VmRSS | VmHWM | live heap, last GC | largest live heap | GCs |\n|---:|---|---:|---:|---:|---:|---:|\n")
	for _, run := range fig.Runs {
		for _, m := range []struct {
			name string
			m    ProcMemory
		}{{"default flags", run.OnMem}, {"`--client-report=false`", run.OffMem}} {
			p("| %d | %s | %d MiB | %d MiB | %d MB | %d MB | %d |\n", run.Connections, m.name, m.m.RSS>>20, m.m.HWM>>20, m.m.HeapMB, m.m.MaxHeapMB, m.m.GCs)
		}
	}
	p("\n```sh\n%s\n%s\ngrep -E 'VmRSS|VmHWM' /proc/$(pgrep -n gwsim)/status   # after the last round\n```\n\n", r.BenchFleet, strings.Join(fig.Commands, "\n"))
}

// cpuExtra is how much more CPU a request costs gwsim with the client
// report than without, in percent (medians).
func cpuExtra(run ClientReportRun) float64 {
	off := medianDuration(run.OffCPU)
	if off == 0 {
		return 0
	}
	return (float64(medianDuration(run.OnCPU))/float64(off) - 1) * 100
}
