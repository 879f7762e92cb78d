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

// Tools that generate the load.
const (
	ToolWrk  = "wrk"
	ToolLoad = "gwconform load"
)

// LoadRun is one run of a load generator against one target.
type LoadRun struct {
	Tool   string `json:"tool"`
	Target string `json:"target"` // "gwsim" or "bare"
	Format string `json:"format"`
	// Threads are wrk's threads or gwconform load's GOMAXPROCS;
	// Connections wrk's connections or gwconform load's workers.
	Threads     int `json:"threads"`
	Connections int `json:"connections"`
	// Rate is the rate asked for; 0 is as fast as answered.
	Rate     float64       `json:"rate"`
	Command  string        `json:"command"`
	Requests int64         `json:"requests"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	RPS      float64       `json:"rps"`
	P50      time.Duration `json:"p50_ns"`
	P99      time.Duration `json:"p99_ns"`
	Max      time.Duration `json:"max_ns"`
	// Errors are answers other than success (wrk: non-2xx status) and
	// requests without an answer.
	Errors int64 `json:"errors"`
	// ServerCPU is the CPU time the target's process used during the run;
	// GenCPU the load generator's.
	ServerCPU time.Duration `json:"server_cpu_ns"`
	GenCPU    time.Duration `json:"generator_cpu_ns"`
	// OtherShare is the share of the machine's CPU that other processes
	// used during the run: all the CPU busy time (/proc/stat) less the
	// target's and the generator's, over cores × elapsed.
	OtherShare float64 `json:"other_cpu_share"`
}

// CPUPerRequest is the target's CPU time per request.
func (r LoadRun) CPUPerRequest() time.Duration { return perRequest(r.ServerCPU, r.Requests) }

// GenCPUPerRequest is the load generator's CPU time per request.
func (r LoadRun) GenCPUPerRequest() time.Duration { return perRequest(r.GenCPU, r.Requests) }

func perRequest(d time.Duration, n int64) time.Duration {
	if n == 0 {
		return 0
	}
	return d / time.Duration(n)
}

// cpuOf is the CPU time a finished process used.
func cpuOf(c *exec.Cmd) time.Duration {
	if c.ProcessState == nil {
		return 0
	}
	return c.ProcessState.UserTime() + c.ProcessState.SystemTime()
}

// wrkScript makes wrk POST the body in GWBENCH_BODY with Content-Type
// GWBENCH_CT, and print its figures on one line at the end.
const wrkScript = `-- gwbench: POST one pre-signed body; print the figures on one line.
local f = assert(io.open(os.getenv("GWBENCH_BODY"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = os.getenv("GWBENCH_CT")

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("GWBENCH %d %d %d %d %d %d %d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    latency.max, e.status, e.connect + e.read + e.write + e.timeout))
end
`

// runWrk runs wrk against url with a body file.
func runWrk(ctx context.Context, place Placement, wrk, script, body, contentType, url string, threads, conns int, d time.Duration) (LoadRun, error) {
	argv := place.generator([]string{wrk, "-t" + strconv.Itoa(threads), "-c" + strconv.Itoa(conns), "-d" + secs(d), "-s", script, url})
	r := LoadRun{Tool: ToolWrk, Command: fmt.Sprintf("GWBENCH_BODY=%s GWBENCH_CT=%s %s", filepath.Base(body), contentType, strings.Join(shortArgv(argv), " "))}
	cmd := envCommand(ctx, argv, "GWBENCH_BODY="+body, "GWBENCH_CT="+contentType)
	out, err := cmd.Output()
	if err != nil {
		return r, fmt.Errorf("wrk: %v: %s", err, tail(string(out)))
	}
	r.GenCPU = cpuOf(cmd)
	return r, parseWrk(string(out), &r)
}

func parseWrk(out string, r *LoadRun) error {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 8 || f[0] != "GWBENCH" {
			continue
		}
		var n [7]int64
		for i := range n {
			v, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil {
				return fmt.Errorf("wrk: bad figures %q", line)
			}
			n[i] = v
		}
		r.Requests, r.Elapsed = n[0], time.Duration(n[1])*time.Microsecond
		r.P50, r.P99, r.Max = time.Duration(n[2])*time.Microsecond, time.Duration(n[3])*time.Microsecond, time.Duration(n[4])*time.Microsecond
		r.Errors = n[5] + n[6]
		if r.Elapsed > 0 {
			r.RPS = float64(r.Requests) / r.Elapsed.Seconds()
		}
		return nil
	}
	return fmt.Errorf("wrk printed no figures: %s", tail(out))
}

// runLoad runs gwconform load: commands only, one format, like wrk's
// runs but each request to a device drawn from the fleet and signed afresh.
func runLoad(ctx context.Context, place Placement, gwconform, fleetFile, url, format string, threads, conns int, d time.Duration, rate float64) (LoadRun, error) {
	argv := place.generator([]string{gwconform, "load", "--target", url, "--fleet", fleetFile, "--format", format, "--mix", "command=1",
		"--concurrency", strconv.Itoa(conns), "--duration", secs(d), "--rate", strconv.FormatFloat(rate, 'f', 0, 64), "--json", "--quiet"})
	procs := "GOMAXPROCS=" + strconv.Itoa(threads)
	r := LoadRun{Tool: ToolLoad, Rate: rate, Command: procs + " " + strings.Join(shortArgv(argv), " ")}
	cmd := envCommand(ctx, argv, procs)
	out, err := cmd.Output()
	if err != nil && len(out) == 0 {
		return r, fmt.Errorf("gwconform load: %v", err)
	}
	r.GenCPU = cpuOf(cmd)
	return r, parseLoadJSON(out, &r)
}

// parseLoadJSON reads gwconform load --json's figures into r.
func parseLoadJSON(out []byte, r *LoadRun) error {
	var res struct {
		Requests int64         `json:"requests"`
		Errors   int64         `json:"errors"`
		Elapsed  time.Duration `json:"elapsed_ns"`
		RPS      float64       `json:"requests_per_second"`
		Latency  struct {
			P50 time.Duration `json:"p50_ns"`
			P99 time.Duration `json:"p99_ns"`
			Max time.Duration `json:"max_ns"`
		} `json:"latency"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("gwconform load: %v: %s", err, tail(string(out)))
	}
	r.Requests, r.Errors, r.Elapsed, r.RPS = res.Requests, res.Errors, res.Elapsed, res.RPS
	r.P50, r.P99, r.Max = res.Latency.P50, res.Latency.P99, res.Latency.Max
	return nil
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s" }

// shortArgv writes the programs of this repository as bin/NAME and other
// absolute paths by their base names, for command lines in the report that
// do not carry this machine's temporary paths.
func shortArgv(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if filepath.IsAbs(a) {
			switch base := filepath.Base(a); {
			case base == "gwsim" || base == "gwconform" || base == "gwbench":
				a = "bin/" + base
			default:
				a = base
			}
		}
		if strings.ContainsAny(a, "^$*?[]{}()|&;<>\"' \\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return out
}

// median of the runs' figure.
func median(runs []LoadRun, f func(LoadRun) float64) float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	return medianOf(v)
}

// medianOf is the median of v (the mean of the middle two when even; 0
// when empty); v is left as it is.
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	w := append([]float64(nil), v...)
	sort.Float64s(w)
	if len(w)%2 == 1 {
		return w[len(w)/2]
	}
	return (w[len(w)/2-1] + w[len(w)/2]) / 2
}

// medianDuration is the middle of ts (the upper middle when even; 0 when
// empty); ts is left as it is.
func medianDuration(ts []time.Duration) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	t := append([]time.Duration(nil), ts...)
	sort.Slice(t, func(i, j int) bool { return t[i] < t[j] })
	return t[len(t)/2]
}

func envCommand(ctx context.Context, argv []string, env ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Env = append(os.Environ(), env...)
	return c
}
