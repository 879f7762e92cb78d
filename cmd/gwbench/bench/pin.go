package bench

import (
	"fmt"
	"os/exec"
	"runtime"
)

// Placement is where the load comparisons run their processes when
// Options.Pin asks: the targets (gwsim, the bare handler) on TargetCPUs
// and the load generators (wrk, gwconform load) on GenCPUs, each a
// taskset CPU list; both empty when they share every CPU (the default).
//
// It was tried against the noise of this two-core machine. Six rounds
// of wrk against gwsim and the bare handler by hand swung 0.76 to 0.82
// pinned and 0.70 to 1.02 not; but in gwbench's own seven rounds the
// client report's ratio still swung 0.72 to 1.43 pinned, as much as not:
// most of the noise is the host's. Pinned, Go gives each target GOMAXPROCS
// 1, so gwsim cannot run its collector beside the handler on the
// generator's idle time as it does on a user's machine (JSON at 32
// connections read 0.68 × pinned, 0.77 to 0.81 × not). So make bench
// does not pin; --pin is for profiling one target on a core of its own.
type Placement struct {
	TargetCPUs string `json:"target_cpus,omitempty"`
	GenCPUs    string `json:"generator_cpus,omitempty"`
	taskset    string
}

// placement splits the machine's CPUs between targets (the upper half)
// and generators (the lower half) when pin is asked, taskset is found
// and there are two CPUs or more; else it returns why not.
func placement(pin bool) (Placement, string) {
	if !pin {
		return Placement{}, ""
	}
	n := runtime.NumCPU()
	if n < 2 {
		return Placement{}, "one CPU only: the load generators and the targets shared it"
	}
	ts, err := exec.LookPath("taskset")
	if err != nil {
		return Placement{}, "taskset (util-linux) was not found: the load generators and the targets shared every CPU"
	}
	half := n / 2
	return Placement{GenCPUs: cpuList(0, half-1), TargetCPUs: cpuList(half, n-1), taskset: ts}, ""
}

// cpuCount is how many CPUs a cpuList names ("1": 1, "2-3": 2).
func cpuCount(list string) string {
	var from, to int
	if n, _ := fmt.Sscanf(list, "%d-%d", &from, &to); n == 2 {
		return fmt.Sprint(to - from + 1)
	}
	return "1"
}

func cpuList(from, to int) string {
	if from == to {
		return fmt.Sprint(from)
	}
	return fmt.Sprintf("%d-%d", from, to)
}

// target is argv run on the targets' CPUs.
func (p Placement) target(argv []string) []string { return p.on(p.TargetCPUs, argv) }

// generator is argv run on the generators' CPUs.
func (p Placement) generator(argv []string) []string { return p.on(p.GenCPUs, argv) }

func (p Placement) on(cpus string, argv []string) []string {
	if cpus == "" || p.taskset == "" {
		return argv
	}
	return append([]string{p.taskset, "-c", cpus}, argv...)
}
