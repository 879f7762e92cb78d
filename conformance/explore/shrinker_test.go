package explore

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

// undoneSequence is n operations on the demo fleet whose first
// disagreement against a renameUndone target is the last one: a rename of
// the dimmer early, a command to it next to last, a read of it last, and
// between them random operations that rename nothing.
func undoneSequence(w *World, n int) []Op {
	g := &Generator{W: w, Rules: OracleRules(), Reads: true}
	m := NewModel(w, OracleRules())
	dimmer := devKey{"a4c138f0e2b1", "0123456789abcdef0123456789abcd06"}
	var fill []Op
	for round := 0; len(fill) < n-3; round++ {
		for _, op := range g.Sequence(99, round, 100) {
			if (op.Kind == Rename && m.Judge(op).Expect.Status == 200) || op.device() == dimmer {
				continue
			}
			fill = append(fill, op)
		}
	}
	fill = fill[:n-3]
	base := Op{Format: "xml", Account: "5f3a9c0e1b2d4f6a8c0e1b2d", Key: "demo-key", MAC: dimmer.MAC, SN: dimmer.SN, Note: "valid"}
	rename, command := base, base
	rename.Kind, rename.Fields = Rename, []KV{{Key: "name", Value: "Über-Licht"}}
	command.Kind, command.Type, command.Fields = Command, "Light Dimmer", []KV{{Key: "dimming", Value: "77"}}
	ops := append([]Op{}, fill[:100]...)
	ops = append(ops, rename)
	ops = append(ops, fill[100:]...)
	return append(ops, command, Op{Kind: ReadDevice, MAC: dimmer.MAC, SN: dimmer.SN})
}

func TestShrinksLongSequence(t *testing.T) {
	f := fleet.Demo()
	x := explorer(t, startTarget(t, renameUndone, f), f, Config{})
	ops := undoneSequence(x.cfg.World, 2000)
	d, _, err := x.Execute(context.Background(), ops, false)
	if err != nil || d == nil || d.Index != len(ops)-1 {
		t.Fatalf("the sequence should first disagree at its last operation: %+v %v", d, err)
	}
	sh := &Shrinker{Rules: OracleRules(), World: x.cfg.World, Budget: 20 * time.Second, Fails: func(c []Op) bool {
		d, _, err := x.Execute(context.Background(), c, false)
		return err == nil && d != nil
	}}
	got := sh.Shrink(ops)
	if len(got) != 3 || got[0].Kind != Rename || got[1].Kind != Command || got[2].Kind != ReadDevice {
		t.Fatalf("shrunk to %d operations, want rename, command, read: %v", len(got), got)
	}
	if got[0].Format != "json" || got[1].Fields[0].Value != "50" || got[0].Fields[0].Value != "x" {
		t.Errorf("values not simplified: %v", got)
	}
}

// sharedSequence is n operations whose first disagreement against a
// sharedState target is the last: a command to the second gateway's dimmer
// early, a read of the first gateway's dimmer last, and between them random
// operations on neither. Cutting to the failing device loses the command,
// so ddmin has to work through the whole sequence.
func sharedSequence(w *World, n int) []Op {
	g := &Generator{W: w, Rules: OracleRules(), Reads: true}
	d1 := devKey{"a4c138f0e2b1", "0123456789abcdef0123456789abcd06"}
	d2 := devKey{"a4c138f0e2b2", "0123456789abcdef0123456789abcd07"}
	var fill []Op
	for round := 0; len(fill) < n-2; round++ {
		for _, op := range g.Sequence(98, round, 100) {
			if op.device() != d1 && op.device() != d2 {
				fill = append(fill, op)
			}
		}
	}
	fill = fill[:n-2]
	command := Op{Kind: Command, Format: "json", Account: "5f3a9c0e1b2d4f6a8c0e1b2d", Key: "demo-key", MAC: d2.MAC, SN: d2.SN,
		Type: "Light Dimmer", Fields: []KV{{Key: "dimming", Value: "3"}}, Note: "valid"}
	ops := append(append(append([]Op{}, fill[:100]...), command), fill[100:]...)
	return append(ops, Op{Kind: ReadDevice, MAC: d1.MAC, SN: d1.SN})
}

// BenchmarkShrink10000 shrinks 10,000-operation failing sequences against
// test targets (the goal: under 30 s): one whose commands undo renames
// (the cut to the failing device does most), one where two gateways share
// a dimmer's state (ddmin does all).
func BenchmarkShrink10000(b *testing.B) {
	for _, tc := range []struct {
		name string
		bug  bug
		seq  func(*World, int) []Op
	}{{"rename-undone", renameUndone, undoneSequence}, {"shared-state", sharedState, sharedSequence}} {
		b.Run(tc.name, func(b *testing.B) {
			f := fleet.Demo()
			x := explorer(b, startTarget(b, tc.bug, f), f, Config{})
			ops := tc.seq(x.cfg.World, 10000)
			if d, _, _ := x.Execute(context.Background(), ops, false); d == nil || d.Index != len(ops)-1 {
				b.Fatalf("the sequence should first disagree at its last operation: %+v", d)
			}
			for b.Loop() {
				sh := &Shrinker{Rules: OracleRules(), World: x.cfg.World, Budget: time.Minute, Fails: func(c []Op) bool {
					d, _, err := x.Execute(context.Background(), c, false)
					return err == nil && d != nil
				}}
				start := time.Now()
				got := sh.Shrink(ops)
				b.ReportMetric(time.Since(start).Seconds(), "s/shrink")
				b.ReportMetric(float64(len(got)), "ops-left")
				b.ReportMetric(float64(sh.Runs), "runs")
			}
		})
	}
}

// BenchmarkExploreSimulator is explore's throughput against the embedded
// simulator, reads and resets included (the goal: at least 5,000/s).
func BenchmarkExploreSimulator(b *testing.B) {
	f := fleet.Demo()
	url := startSim(b, f)
	for _, clients := range []int{1, 8} {
		b.Run(map[int]string{1: "sequential", 8: "clients=8"}[clients], func(b *testing.B) {
			x := explorer(b, url, f, Config{Seed: 1, Operations: max(b.N, 2000), Clients: clients})
			b.ResetTimer()
			start, cpu := time.Now(), processCPU()
			rep, err := x.Run(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if rep.Found != nil {
				b.Fatalf("gwsim flagged:\n%s", rep.Summary())
			}
			b.ReportMetric(float64(x.Sent())/time.Since(start).Seconds(), "ops/s")
			// Per second of CPU (explore and the simulator, both in this
			// process): what the run does with the CPU it gets, steadier
			// than ops/s on a machine other work shares.
			if used := processCPU() - cpu; used > 0 {
				b.ReportMetric(float64(x.Sent())/used.Seconds(), "ops/cpu-s")
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
