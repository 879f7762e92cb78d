package bench

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestPlacementSplitsTheCPUs: pinned, targets and generators get CPUs of
// their own (the upper and the lower half) and their command lines say
// so; not pinned, argv is left as it is.
func TestPlacementSplitsTheCPUs(t *testing.T) {
	gwsim := []string{"/repo/bin/gwsim", "serve", "--addr", "127.0.0.1:0"}
	if p, why := placement(false); p.target(gwsim)[0] != gwsim[0] || why != "" {
		t.Errorf("not pinned: %v, %q", p.target(gwsim), why)
	}
	if _, err := exec.LookPath("taskset"); err != nil || runtime.NumCPU() < 2 {
		p, why := placement(true)
		if p.TargetCPUs != "" || why == "" {
			t.Errorf("without taskset or a second CPU: %+v, %q", p, why)
		}
		return
	}
	p, why := placement(true)
	n := runtime.NumCPU()
	if why != "" || p.GenCPUs != cpuList(0, n/2-1) || p.TargetCPUs != cpuList(n/2, n-1) {
		t.Fatalf("placement on %d CPUs: %+v, %q", n, p, why)
	}
	got := strings.Join(shortArgv(p.target(gwsim)), " ")
	if want := "taskset -c " + p.TargetCPUs + " bin/gwsim serve --addr 127.0.0.1:0"; got != want {
		t.Errorf("target: %q, want %q", got, want)
	}
	got = strings.Join(shortArgv(p.generator([]string{"/usr/bin/wrk", "-c4"})), " ")
	if want := "taskset -c " + p.GenCPUs + " wrk -c4"; got != want {
		t.Errorf("generator: %q, want %q", got, want)
	}
	if cpuCount("2-3") != "2" || cpuCount("1") != "1" {
		t.Errorf("cpuCount: %s, %s", cpuCount("2-3"), cpuCount("1"))
	}
}
