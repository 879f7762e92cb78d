package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

func TestParseGoBench(t *testing.T) {
	out := `goos: linux
pkg: github.com/gwdmi/gwtools/gatewayapi/codec
BenchmarkDecode/json-2      	  862809	      1373 ns/op	  94.14 MB/s	     864 B/op	       2 allocs/op
BenchmarkErrorBody/xml      	  170347	     23927 ns/op	    5088 B/op	      13 allocs/op
PASS
pkg: github.com/gwdmi/gwtools/gatewayapi/auth
BenchmarkSign-2    	 2832936	       515.5 ns/op	      32 B/op	       1 allocs/op
ok  	github.com/gwdmi/gwtools/gatewayapi/auth	2.650s
`
	got := parseGoBench(out)
	want := []GoBench{
		{Package: "github.com/gwdmi/gwtools/gatewayapi/codec", Name: "BenchmarkDecode/json", NsPerOp: 1373, MBPerSec: 94.14, BytesPerOp: 864, AllocsPerOp: 2},
		{Package: "github.com/gwdmi/gwtools/gatewayapi/codec", Name: "BenchmarkErrorBody/xml", NsPerOp: 23927, BytesPerOp: 5088, AllocsPerOp: 13},
		{Package: "github.com/gwdmi/gwtools/gatewayapi/auth", Name: "BenchmarkSign", NsPerOp: 515.5, BytesPerOp: 32, AllocsPerOp: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseWrk(t *testing.T) {
	var r LoadRun
	err := parseWrk("Running 4s test @ http://x\n  1 threads\nGWBENCH 120000 4000000 110 1900 5000 3 1\n", &r)
	if err != nil || r.Requests != 120000 || r.RPS != 30000 || r.P50 != 110*time.Microsecond || r.P99 != 1900*time.Microsecond ||
		r.Max != 5*time.Millisecond || r.Errors != 4 {
		t.Errorf("%+v %v", r, err)
	}
	if err := parseWrk("nothing", &r); err == nil {
		t.Error("no figures, no error")
	}
}

func TestBareHandler(t *testing.T) {
	h := BareHandler()
	for ct, want := range map[string]string{"application/json": string(successJSON), "application/xml": string(successXML), "text/xml": string(successXML)} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/services/gateway/command", strings.NewReader("{}")))
		r := httptest.NewRequest(http.MethodPost, "/v1/services/gateway/command", strings.NewReader("x"))
		r.Header.Set("Content-Type", ct)
		w = httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 || w.Body.String() != want {
			t.Errorf("%s: %d %s", ct, w.Code, w.Body)
		}
	}
}

func TestServeBare(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- ServeBare(ctx, "127.0.0.1:0", pw) }()
	line := make([]byte, 200)
	n, _ := pr.Read(line)
	url := urlRe.FindString(string(line[:n]))
	if url == "" {
		t.Fatalf("no URL in %q", line[:n])
	}
	resp, err := http.Post(url+"/x", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != string(successJSON) {
		t.Errorf("%s", b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}

func TestMeasureFleet(t *testing.T) {
	m := MeasureFleet(2000)
	if m.Devices != 2000 || m.Gateways != 2 || m.Generate <= 0 || m.Load <= 0 {
		t.Errorf("%+v", m)
	}
	// Loose bounds: the heap delta of a small fleet in a test process is
	// noisy; the benchmark measures a million in a process of its own.
	if per := m.PerDevice(m.TotalBytes()); per < 50 || per > 2000 {
		t.Errorf("%.0f bytes per device", per)
	}
}

func TestMedianAndShortArgv(t *testing.T) {
	runs := []LoadRun{{RPS: 3}, {RPS: 1}, {RPS: 2}}
	if m := median(runs, func(r LoadRun) float64 { return r.RPS }); m != 2 {
		t.Errorf("median %v", m)
	}
	if m := median(runs[:2], func(r LoadRun) float64 { return r.RPS }); m != 2 {
		t.Errorf("median of two %v", m)
	}
	a := []LoadRun{{RPS: 8}, {RPS: 9}, {RPS: 30}}
	b := []LoadRun{{RPS: 10}, {RPS: 10}, {RPS: 20}, {RPS: 99}}
	if rs := RoundRatios(a, b); len(rs) != 3 || rs[0] != 0.8 || PairedRatio(a, b) != 0.9 {
		t.Errorf("ratios %v, paired %v", rs, PairedRatio(a, b))
	}
	got := strings.Join(shortArgv([]string{"/work/x/bin/gwconform", "load", "--fleet", "/tmp/gwbench-1/bench-fleet.yaml", "-run", "^$", "it's"}), " ")
	if got != `bin/gwconform load --fleet bench-fleet.yaml -run '^$' 'it'\''s'` {
		t.Errorf("%s", got)
	}
}

// A report renders every section, and its goals say which were missed and
// by how much.
func TestWriteMarkdown(t *testing.T) {
	run := func(tool, target, format string, conns int, rps float64) LoadRun {
		return LoadRun{Tool: tool, Target: target, Format: format, Connections: conns, RPS: rps, Requests: 1}
	}
	r := &Report{Tool: ToolWrk, Rounds: 1, Connections: []int{4, 32}, Threads: 1, Duration: 4 * time.Second,
		Env: Environment{Date: "2024-01-01 00:00 UTC", Commit: "abc", CPU: "test", Cores: 2},
		Runs: []LoadRun{
			{Tool: ToolWrk, Target: "bare", Format: "json", Connections: 4, RPS: 40000, Requests: 160000, ServerCPU: 2 * time.Second, GenCPU: time.Second, Command: "wrk json bare"},
			{Tool: ToolWrk, Target: "gwsim", Format: "json", Connections: 4, RPS: 34000, Requests: 120000, ServerCPU: 3 * time.Second, GenCPU: time.Second},
			run(ToolWrk, "bare", "xml", 4, 40000), run(ToolWrk, "gwsim", "xml", 4, 10000),
			run(ToolWrk, "bare", "json", 32, 50000), run(ToolWrk, "gwsim", "json", 32, 45000),
			run(ToolWrk, "bare", "xml", 32, 50000), run(ToolWrk, "gwsim", "xml", 32, 40000),
			run(ToolLoad, "bare", "json", 4, 36000), run(ToolLoad, "gwsim", "json", 4, 30000),
			run(ToolWrk, TargetBareGC, "json", 4, 42500), run(ToolWrk, TargetBareGC, "json", 32, 56250),
		},
		BareGCCmd: "gwbench bare --addr 127.0.0.1:0 --gc-headroom 16",
		HalfRate:  []LoadRun{{Tool: ToolLoad, Target: "gwsim", Format: "json", Connections: 4, Rate: 15000, RPS: 15000, P50: 200 * time.Microsecond, P99: 1500 * time.Microsecond}},
		Fleets: []FleetRun{{FleetMemory: FleetMemory{Devices: 1_000_000, Generate: time.Second, Load: 200 * time.Millisecond,
			FleetBytes: 110_000_000, SimBytes: 80_000_000}, Startup: 2 * time.Second}},
		RSS:     RSSRun{Devices: 1_000_000, DemoRSS: 10 << 20, FleetRSS: 10<<20 + 120_000_000, DemoCmd: "bin/gwsim serve --addr 127.0.0.1:0"},
		Big:     BigFleetRun{Devices: 10_000_000, Startup: 12 * time.Second, RSS: 1 << 30, Command: "bin/gwsim serve --seed 1"},
		Harness: HarnessRun{Parallel: 8, Why: "gwconform run has no --parallel"},
		Suite:   SuiteRun{Times: []time.Duration{time.Second, 2 * time.Second, 1500 * time.Millisecond}},
		GoBench: []GoBench{{Package: "github.com/gwdmi/gwtools/simulator/server", Name: "BenchmarkRequest/json/dimmer", NsPerOp: 5000, AllocsPerOp: 9}},
		Profiles: []Profile{{Title: "a whole XML request (x)", Top: "      flat  flat%   sum%        cum   cum%\n" +
			"         0     0%     0%      2.67s 82.66%  github.com/gwdmi/gwtools/simulator/server.(*Server).handle\n"}},
	}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| gwsim JSON command endpoint, default flags, requests/s against the bare handler (wrk, 4 connections, 1 thread(s), same run) | ≥ 0.80 × | 0.85 × (median of 1 rounds; medians 34,000 vs 40,000 req/s); against the bare handler with gwsim's GC headroom 0.80 × | **met** |",
		"Against the control, the bare handler with gwsim's GC headroom: **0.80 ×** (bare-gc / bare 1.12 ×).", "| bare-gc | 56,250 |",
		"with the same headroom (`gwbench bare --addr 127.0.0.1:0 --gc-headroom 16`)",
		"XML command endpoint", "**missed**: 64% short: 0.25 × instead of 0.70 ×",
		"(wrk, 32 connections, 1 thread(s), same run) | ≥ 0.70 × | 0.80 ×",
		"| 120 B (124 MiB less 10 MiB) | **met** |", "12.00 s, 1024 MiB | **missed**: 2.00 s slow |",
		"1.50 s (median of 3; exit 0)", "not measured: gwconform run has no --parallel | not measured |",
		"lowest 0.88 ×", "### Where a goal was missed", "server.(*Server).handle 82.66%",
		"### JSON, 32 connections", "## Fleets", "### RSS per device", "## The conformance suite", "## Go benchmarks", "## Profiles", "post.lua", "wrk json bare",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(md)
	}
	r.Harness = HarnessRun{Measured: true, Parallel: 8, Serial: 40 * time.Second, ParallelT: 8 * time.Second, SerialCmd: "bin/gwconform run", ParallelCmd: "bin/gwconform run --parallel 8"}
	b.Reset()
	r.WriteMarkdown(&b)
	if md := b.String(); !strings.Contains(md, "serial 40.00 s (exit 0), parallel 8.00 s (exit 0; median of 1): 5.0 × faster | **met** |") ||
		!strings.Contains(md, "bin/gwconform run --parallel 8") {
		t.Errorf("the harness figures are not in the report:\n%s", md)
	}
	// Slower than a fifth of serial: missed, and said by how much.
	r.Harness.ParallelT = 10 * time.Second
	b.Reset()
	r.WriteMarkdown(&b)
	if md := b.String(); !strings.Contains(md, "4.0 × faster | **missed**: 4.0 × instead of 5 × |") {
		t.Errorf("a harness goal missed is not said so:\n%s", md)
	}
}

// The harness fleet has at least harnessPerType devices of every type on
// its gateway.
func TestHarnessFleet(t *testing.T) {
	per := harnessPerGateway()
	count := map[string]int{}
	for _, d := range fleet.Generate(benchSeed, 1, per).Accounts[0].Gateways[0].Devices {
		count[d.Type]++
	}
	for _, typ := range device.Types {
		if count[typ.Name] < harnessPerType {
			t.Errorf("%d devices: %d of %s", per, count[typ.Name], typ.Name)
		}
	}
}

// Every section writes and either measures or is measured by another.
func TestSections(t *testing.T) {
	names := map[string]bool{}
	for _, s := range Sections() {
		if s.Name == "" || s.Write == nil || names[s.Name] {
			t.Errorf("section %q", s.Name)
		}
		names[s.Name] = true
	}
	if !names[SectionGoBench] {
		t.Error("no Go benchmark section: --skip-go-bench would skip nothing")
	}
}

// The bench's bodies are the shared encoder's, byte for byte what the
// bench always sent, and a valid command.
func TestCommandBodies(t *testing.T) {
	tg, err := fleet.Generate(benchSeed, 1, 10).Target()
	if err != nil {
		t.Fatal(err)
	}
	d := tg.Devices["Light Dimmer"]
	got, err := commandBodies(tg, d.SN)
	if err != nil {
		t.Fatal(err)
	}
	sign := auth.Sign(tg.Key.Key, tg.Key.Secret, benchTimestamp)
	want := map[string]string{
		"json": fmt.Sprintf(`{"control":{"api_key":%q,"timestamp":%q,"sign":%q,"myservice_id":%q,"mac":%q,"sn":%q,"type":"Light Dimmer","dimming":"50"}}`,
			tg.Key.Key, benchTimestamp, sign, tg.AccountID, tg.MAC, d.SN),
		"xml": fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><xml><control><api_key>%s</api_key><timestamp>%s</timestamp><sign>%s</sign><myservice_id>%s</myservice_id><mac>%s</mac><sn>%s</sn><type>Light Dimmer</type><dimming>50</dimming></control></xml>`,
			tg.Key.Key, benchTimestamp, sign, tg.AccountID, tg.MAC, d.SN),
	}
	for name, f := range map[string]device.Format{"json": device.JSON, "xml": device.XML} {
		if got[name] != want[name] {
			t.Errorf("%s:\n got %s\nwant %s", name, got[name], want[name])
		}
		pairs, derr := codec.Decode(f, []byte(got[name]))
		if derr != nil {
			t.Fatalf("%s: %v", name, derr)
		}
		if _, perr := device.Parse(device.SendCommand, f, pairs); perr != nil {
			t.Errorf("%s: %v", name, perr)
		}
	}
}

func TestBenchMetric(t *testing.T) {
	out := `pkg: github.com/gwdmi/gwtools/conformance/explore
BenchmarkExploreSimulator/sequential-2         	   20000	    121657 ns/op	      9097 ops/s
BenchmarkExploreSimulator/sequential-2         	   20000	    126041 ns/op	      8781 ops/s
BenchmarkExploreSimulator/clients=8-2          	   20000	    156411 ns/op	      6633 ops/s
BenchmarkShrink10000/shared-state-2         	       1	7192000000 ns/op	         2.000 ops-left	       310.0 runs	         7.192 s/shrink
`
	ops := benchMetric(out, "ops/s")
	if got := ops["BenchmarkExploreSimulator/sequential"]; len(got) != 2 || got[0] != 9097 || got[1] != 8781 {
		t.Errorf("sequential: %v", got)
	}
	if got := ops["BenchmarkExploreSimulator/clients=8"]; len(got) != 1 || got[0] != 6633 {
		t.Errorf("clients=8: %v", got)
	}
	if len(ops) != 2 {
		t.Errorf("ops/s of %d benchmarks, want 2: %v", len(ops), ops)
	}
	if got := benchMetric(out, "s/shrink")["BenchmarkShrink10000/shared-state"]; len(got) != 1 || got[0] != 7.192 {
		t.Errorf("s/shrink: %v", got)
	}
	if got := benchMetric(out, "ops-left")["BenchmarkShrink10000/shared-state"]; len(got) != 1 || got[0] != 2 {
		t.Errorf("ops-left: %v", got)
	}
}

func TestHeapOfGCTrace(t *testing.T) {
	stderr := `time=2026-11-24T12:00:00Z level=INFO msg="gwsim listening"
gc 1 @0.004s 2%: 0.012+0.61+0.004 ms clock, 0.025+0.11/0.40/0.51+0.009 ms cpu, 3->3->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 2 @0.100s 1%: 0.010+0.5+0.003 ms clock, 0.02+0.1/0.3/0.5+0.006 ms cpu, 9->10->7 MB, 10 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 3 @0.200s 1%: 0.010+0.5+0.003 ms clock, 0.02+0.1/0.3/0.5+0.006 ms cpu, 12->12->4 MB, 14 MB goal, 0 MB stacks, 0 MB globals, 2 P
`
	var m ProcMemory
	heapOf(stderr, &m)
	if m.GCs != 3 || m.HeapMB != 4 || m.MaxHeapMB != 7 {
		t.Errorf("%+v, want 3 GCs, last live heap 4 MB, largest 7 MB", m)
	}
}
