package bench

import (
	"context"
	"errors"
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

// HarnessLatency is the latency gwsim is given (PUT /_sim/faults) for the
// harness figures: a target that answers in 20 ms, where running checks
// in parallel pays off.
const HarnessLatency = "20ms"

// harnessPerType is the least number of devices of each type in the fleet
// of the harness figures, so that parallel checks have devices of their
// own.
const harnessPerType = 8

// HarnessRun is gwconform run against a gwsim with HarnessLatency, serial
// and with --parallel. Measured is false, with Why, where gwconform run
// has no --parallel.
type HarnessRun struct {
	Measured    bool          `json:"measured"`
	Why         string        `json:"why,omitempty"`
	Parallel    int           `json:"parallel"`
	FleetCmd    string        `json:"fleet_command"`
	ServeCmd    string        `json:"serve_command"`
	FaultsCmd   string        `json:"faults_command"`
	SerialCmd   string        `json:"serial_command"`
	ParallelCmd string        `json:"parallel_command"`
	Serial      time.Duration `json:"serial_ns"`
	ParallelT   time.Duration `json:"parallel_ns"`
	// ParallelRuns are the parallel run's times (ParallelT their median):
	// a run of 3 s swings by a tenth from one to the next, where the
	// serial run, six times as long, swings by little.
	ParallelRuns []time.Duration `json:"parallel_runs_ns,omitempty"`
	SerialExit   int             `json:"serial_exit"`
	ParExit      int             `json:"parallel_exit"`
	SerialSum    string          `json:"serial_summary"`
	ParSum       string          `json:"parallel_summary"`
}

// harnessParallelRuns is how many times the parallel run is timed.
const harnessParallelRuns = 3

// Speedup is the serial wall time over the parallel one.
func (h HarnessRun) Speedup() float64 {
	if h.ParallelT <= 0 {
		return 0
	}
	return float64(h.Serial) / float64(h.ParallelT)
}

// hasParallel reports whether gwconform run takes --parallel, from its
// help text.
func hasParallel(ctx context.Context, gwconform string) bool {
	out, _ := exec.CommandContext(ctx, gwconform, "run", "-h").CombinedOutput()
	return strings.Contains(string(out), "-parallel")
}

// harnessPerGateway is the smallest devices-per-gateway (from 48, in
// steps of 8) whose generated gateway has harnessPerType devices of every
// type.
func harnessPerGateway() int {
	for d := 48; ; d += 8 {
		count := map[string]int{}
		for _, dv := range fleet.Generate(benchSeed, 1, d).Accounts[0].Gateways[0].Devices {
			count[dv.Type]++
		}
		ok := true
		for _, t := range device.Types {
			ok = ok && count[t.Name] >= harnessPerType
		}
		if ok {
			return d
		}
	}
}

// measureHarness times gwconform run serial and with --parallel against
// a gwsim (default flags) with HarnessLatency on every operation.
func (r *Report) measureHarness(ctx context.Context, o Options, logf func(string, ...any)) error {
	h := &r.Harness
	h.Parallel = o.Parallel
	gwconform := filepath.Join(o.Bin, "gwconform")
	if !hasParallel(ctx, gwconform) {
		h.Why = "gwconform run has no --parallel (not in `gwconform run -h`)"
		logf("  harness: not measured: %s", h.Why)
		return nil
	}
	per := harnessPerGateway()
	fleetFile := filepath.Join(o.Work, "harness-fleet.yaml")
	argv := []string{filepath.Join(o.Bin, "gwsim"), "fleet", "--seed", strconv.Itoa(benchSeed), "--gateways", "1",
		"--devices-per-gateway", strconv.Itoa(per), "--out", fleetFile}
	if _, err := output(ctx, o.Dir, argv...); err != nil {
		return err
	}
	h.FleetCmd = strings.Join(shortArgv(argv), " ")
	serve := []string{filepath.Join(o.Bin, "gwsim"), "serve", "--addr", "127.0.0.1:0", "--fleet", fleetFile}
	h.ServeCmd = strings.Join(shortArgv(serve), " ")
	s, err := startServer(serve, time.Minute)
	if err != nil {
		return err
	}
	defer s.stop()
	faults := `{"latency":"` + HarnessLatency + `"}`
	h.FaultsCmd = `curl -X PUT -H 'Content-Type: application/json' -d '` + faults + `' GWSIM_URL/_sim/faults`
	run := func(parallel int) (time.Duration, int, string, string, error) {
		for _, call := range []struct{ method, path, body string }{{"POST", "/_sim/reset", ""}, {"PUT", "/_sim/faults", faults}} {
			if err := adminCall(ctx, s.url, call.method, call.path, call.body); err != nil {
				return 0, 0, "", "", err
			}
		}
		dir, err := os.MkdirTemp(o.Work, "harness-")
		if err != nil {
			return 0, 0, "", "", err
		}
		// --parallel 1 for the serial run: without the flag gwconform
		// picks as many workers as the fleet allows. --allow-partial: the
		// generated fleet has one account, so the run is PARTIAL by
		// design; the exit code then says whether a check failed.
		argv := []string{gwconform, "run", "--target", s.url, "--fleet", fleetFile, "--report-dir", dir,
			"--parallel", strconv.Itoa(max(parallel, 1)), "--allow-partial"}
		cmdline := strings.ReplaceAll(strings.Join(shortArgv(argv), " "), s.url, "GWSIM_URL")
		cmdline = strings.Replace(cmdline, filepath.Base(dir), "$(mktemp -d)", 1)
		rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(rctx, argv[0], argv[1:]...)
		cmd.Dir = o.Dir
		start := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		exit := 0
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee) && rctx.Err() == nil:
			exit = ee.ExitCode()
		default:
			return 0, 0, cmdline, "", fmt.Errorf("gwconform run: %v: %s", err, tail(string(out)))
		}
		return took, exit, cmdline, suiteSummary(string(out)), nil
	}
	if h.Serial, h.SerialExit, h.SerialCmd, h.SerialSum, err = run(1); err != nil {
		return err
	}
	for i := 0; i < harnessParallelRuns; i++ {
		var t time.Duration
		if t, h.ParExit, h.ParallelCmd, h.ParSum, err = run(o.Parallel); err != nil {
			return err
		}
		h.ParallelRuns = append(h.ParallelRuns, t)
		if h.ParExit != 0 {
			break
		}
	}
	h.ParallelT = medianDuration(h.ParallelRuns)
	h.Measured = true
	logf("  harness against %s latency: serial %s (exit %d), --parallel %d %s (exit %d): %.1f ×", HarnessLatency,
		h.Serial.Round(time.Millisecond), h.SerialExit, o.Parallel, h.ParallelT.Round(time.Millisecond), h.ParExit, h.Speedup())
	return nil
}
