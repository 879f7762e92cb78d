package diff

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// BenchmarkDiffSimulators compares two embedded simulators (in this test
// process, over HTTP on loopback): compared operations a second, each
// sent to both sides with the reads that follow it, resets included; and
// per CPU-second of the process (both simulators and diff together).
func BenchmarkDiffSimulators(b *testing.B) {
	f := fleet.Demo()
	a, c := startSim(b, f, nil), startSim(b, f, nil)
	for _, clients := range []int{1, 4} {
		b.Run(map[int]string{1: "sequential", 4: "clients=4"}[clients], func(b *testing.B) {
			d := differ(b, side(b, a, f), side(b, c, f), Config{Seed: 1, Operations: max(b.N, 2000), Clients: clients})
			b.ResetTimer()
			start, cpu := time.Now(), processCPU()
			rep, err := d.Run(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if len(rep.Differences) > 0 {
				b.Fatalf("two copies of gwsim differ:\n%s", rep.Summary())
			}
			b.ReportMetric(float64(rep.Operations)/time.Since(start).Seconds(), "ops/s")
			if used := processCPU() - cpu; used > 0 {
				b.ReportMetric(float64(rep.Operations)/used.Seconds(), "ops/cpu-s")
			}
		})
	}
}

// processCPU is the CPU time, user and system, this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
