// Command gwbench measures gwsim and gwconform and writes
// docs/benchmarks.md (make bench runs it). It only wires package
// cmd/gwbench/bench to the command line.
//
//	gwbench [--out docs/benchmarks.md] [--duration 3s] [--rounds 7] [--connections 4,32] [--explore-duration 5m] ...
//	gwbench bare --addr 127.0.0.1:0          the bare handler gwsim is compared with
//	gwbench fleetmem --devices N             heap and load time of a generated fleet, as JSON
//	gwbench delay --to URL [--max 150ms] [--seed 1]   a reverse proxy that delays each request by 0 to --max
//	gwbench typefleet --out FILE             the demo fleet, one device of each type on its tested gateway
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gwdmi/gwtools/cmd/gwbench/bench"
	"github.com/gwdmi/gwtools/gatewayapi/safefile"
	"github.com/gwdmi/gwtools/simulator/gcheadroom"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:]))
}

func run(ctx context.Context, args []string) int {
	if len(args) > 0 {
		if code, ok := subcommand(ctx, args[0], args[1:]); ok {
			return code
		}
	}
	inv, code, ok := parseArgs(args)
	if !ok {
		return code
	}
	r, err := bench.Run(ctx, inv.o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gwbench:", err)
		return 1
	}
	if err := inv.write(r); err != nil {
		fmt.Fprintln(os.Stderr, "gwbench:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "gwbench: wrote %s in %s\n", inv.out, r.Took.Round(1e9))
	printGoals(r)
	return 0
}

// subcommand runs gwbench bare, delay, typefleet or fleetmem, the
// processes the bench starts; ok is false for any other first argument.
func subcommand(ctx context.Context, name string, args []string) (code int, ok bool) {
	switch name {
	case "bare":
		return bareCmd(ctx, args), true
	case "delay":
		return delayCmd(ctx, args), true
	case "typefleet":
		return typefleetCmd(args), true
	case "fleetmem":
		return fleetmemCmd(args), true
	}
	return 0, false
}

// bareCmd is gwbench bare: the bare handler gwsim is compared with.
func bareCmd(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("gwbench bare", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	headroom := fs.Int("gc-headroom", 0, "keep `MiB` of room for garbage between collections, as gwsim serve --gc-headroom does (0: Go's own pace)")
	if err := fs.Parse(args); err != nil || *headroom < 0 {
		return 2
	}
	defer gcheadroom.Start(uint64(*headroom) << 20).Stop()
	if err := bench.ServeBare(ctx, *addr, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gwbench bare:", err)
		return 1
	}
	return 0
}

// delayCmd is gwbench delay: a reverse proxy that delays each request.
func delayCmd(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("gwbench delay", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address (loopback only)")
	to := fs.String("to", "", "URL of the target every request is forwarded to (loopback only)")
	most := fs.Duration("max", bench.NetworkMaxDelay, "each request is held for a delay drawn uniformly from 0 to this (0: none)")
	seed := fs.Uint64("seed", 1, "seed of the delays")
	if err := fs.Parse(args); err != nil || *most < 0 || *to == "" {
		return 2
	}
	if err := bench.ServeDelayProxy(ctx, *addr, *to, *most, *seed, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gwbench delay:", err)
		return 1
	}
	return 0
}

// typefleetCmd is gwbench typefleet: the fleet with one device of each
// type on its tested gateway.
func typefleetCmd(args []string) int {
	fs := flag.NewFlagSet("gwbench typefleet", flag.ContinueOnError)
	out := fs.String("out", "one-per-type.yaml", "the fleet file to write")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := bench.WriteOnePerTypeFleet(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gwbench typefleet:", err)
		return 1
	}
	return 0
}

// fleetmemCmd is gwbench fleetmem: the heap and load time of a generated
// fleet, as JSON, measured in a process of its own.
func fleetmemCmd(args []string) int {
	fs := flag.NewFlagSet("gwbench fleetmem", flag.ContinueOnError)
	n := fs.Int("devices", 1_000_000, "devices in the generated fleet")
	if err := fs.Parse(args); err != nil || *n < 1 {
		return 2
	}
	json.NewEncoder(os.Stdout).Encode(bench.MeasureFleet(*n))
	return 0
}

// invocation is what gwbench's flags ask for: the bench's options and the
// files to write.
type invocation struct {
	o            bench.Options
	out, jsonOut string
}

// parseArgs reads gwbench's flags; when ok is false, gwbench exits with
// code (0 after -h).
func parseArgs(args []string) (inv invocation, code int, ok bool) {
	fs := flag.NewFlagSet("gwbench", flag.ContinueOnError)
	o := &inv.o
	out := fs.String("out", "docs/benchmarks.md", "the Markdown file to write")
	jsonOut := fs.String("json", "", "also write every figure as JSON to this file")
	fs.StringVar(&o.Dir, "dir", ".", "the repository's root")
	fs.StringVar(&o.Bin, "bin", "bin", "where gwsim and gwconform are built")
	fs.StringVar(&o.Work, "work", "", "keep the bench fleet, bodies, wrk script and profiles here (default: a temporary directory, removed)")
	fs.StringVar(&o.Wrk, "wrk", "", `wrk program (default: found on PATH; "none": gwconform load drives everything)`)
	fs.DurationVar(&o.Duration, "duration", 0, "each load run (default 3s)")
	fs.IntVar(&o.Rounds, "rounds", 0, "rounds of the load comparisons and of the Redis one (default 7: the median of fewer swung by a tenth on this two-core machine)")
	fs.IntVar(&o.OnOffRounds, "onoff-rounds", 0, "rounds of the metrics' on/off comparison (default 15)")
	fs.IntVar(&o.ReportRounds, "report-rounds", 0, "rounds of the client report's on/off comparison and of its control (default 60)")
	fs.DurationVar(&o.OnOffDuration, "onoff-duration", 0, "each load run of the on/off comparisons (default 2s)")
	conns := fs.String("connections", "4,32", "wrk connections and gwconform load workers, one comparison each, comma-separated")
	fs.IntVar(&o.BigFleet, "big-fleet", 0, "devices of the large fleet gwsim serve is timed with (default 10000000; -1: none)")
	fs.IntVar(&o.Parallel, "parallel", 0, "gwconform run --parallel of the harness figures (default 8)")
	fs.IntVar(&o.Threads, "threads", 0, "wrk threads and gwconform load's GOMAXPROCS (default 1)")
	fs.IntVar(&o.AltThreads, "alt-threads", 2, "threads of one more round of JSON runs (0: none)")
	fs.IntVar(&o.SuiteRuns, "suite-runs", 0, "times the suite is timed (default 3)")
	fs.BoolVar(&o.SkipNetworkSerial, "skip-network-serial", false, "leave out the suite's run with --concurrency 1 behind the delaying proxy (some 10 minutes); the report says it was skipped")
	fs.StringVar(&o.BenchTime, "benchtime", "", "go test -benchtime (default 1s)")
	fs.BoolVar(&o.SkipGoBench, "skip-go-bench", false, "leave out the Go benchmarks and profiles")
	fs.DurationVar(&o.ExploreDuration, "explore-duration", 5*time.Minute, "gwconform explore against gwsim in each setting (in memory, --state-file, three replicas on Redis); 0: none (make bench: EXPLORE_DURATION)")
	fs.IntVar(&o.ExploreClients, "explore-clients", 8, "gwconform explore --clients")
	fs.BoolVar(&o.Pin, "pin", false, "run the load comparisons' targets and load generators on CPUs of their own (taskset); off: they share every CPU, as on a user's machine")
	fs.StringVar(&o.Note, "note", "", "a line written under \"Where this ran\" (make bench: BENCH_NOTE), e.g. that other work shared the machine")
	only := fs.String("only", "", "run only the sections whose names hold one of these comma-separated words (e.g. explore,redis,client); default: all")
	sizes := fs.String("fleets", "10000,100000,1000000", "fleet sizes measured, comma-separated")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return inv, 0, false
		}
		return inv, 2, false
	}
	inv.out, inv.jsonOut = *out, *jsonOut
	if o.ExploreDuration <= 0 {
		o.ExploreDuration = -1 // none
	}
	if *only != "" {
		o.Only = strings.Split(*only, ",")
	}
	var countsOK bool
	if o.FleetSizes, countsOK = counts("--fleets", *sizes); !countsOK {
		return inv, 2, false
	}
	if o.Connections, countsOK = counts("--connections", *conns); !countsOK {
		return inv, 2, false
	}
	o.Log = os.Stderr
	return inv, 0, true
}

// write writes the Markdown report, and the JSON of every figure when
// --json asks for it.
func (inv invocation) write(r *bench.Report) error {
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		return err
	}
	err := os.MkdirAll(filepath.Dir(inv.out), 0o755)
	if err == nil {
		err = safefile.WriteFile(inv.out, b.Bytes(), 0o644)
	}
	if err != nil {
		return err
	}
	if inv.jsonOut != "" {
		j, _ := json.MarshalIndent(r, "", "  ")
		if err := safefile.WriteFile(inv.jsonOut, j, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// printGoals prints each goal's verdict and figure on stderr.
func printGoals(r *bench.Report) {
	for _, g := range r.Goals() {
		verdict := "met"
		switch {
		case g.Info && g.Known:
			verdict = "reported"
		case !g.Known:
			verdict = "not measured"
		case !g.Met:
			verdict = "MISSED (" + g.Miss + ")"
		}
		fmt.Fprintf(os.Stderr, "  %-8s %s: %s\n", verdict, g.Name, g.Measured)
	}
}

// counts reads a comma-separated list of positive numbers.
func counts(flagName, list string) ([]int, bool) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "gwbench: %s: %q is not a positive number\n", flagName, s)
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}
