package bench

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
)

// GoBench is one line of go test -bench -benchmem.
type GoBench struct {
	Package     string  `json:"package"`
	Name        string  `json:"name"`
	NsPerOp     float64 `json:"ns_per_op"`
	MBPerSec    float64 `json:"mb_per_s,omitempty"`
	BytesPerOp  int64   `json:"bytes_per_op"`
	AllocsPerOp int64   `json:"allocs_per_op"`
}

// BenchPackages are the packages with benchmarks of the request path, and
// of the load generator's senders.
var BenchPackages = []string{"./gatewayapi/codec", "./gatewayapi/device", "./gatewayapi/auth", "./simulator/server", "./simulator/clients", "./simulator/internal/metrics", "./conformance/load"}

// goBenchArgs is the go test command line of the Go benchmarks.
func goBenchArgs(goTool, benchtime string) []string {
	return append([]string{goTool, "test", "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", benchtime}, BenchPackages...)
}

// parseGoBench reads go test -bench output; the package of each line is
// the last "pkg:" line before it.
func parseGoBench(out string) []GoBench {
	var res []GoBench
	pkg := ""
	for _, line := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		b := GoBench{Package: pkg, Name: trimProcs(f[0])}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				b.NsPerOp = v
			case "MB/s":
				b.MBPerSec = v
			case "B/op":
				b.BytesPerOp = int64(v)
			case "allocs/op":
				b.AllocsPerOp = int64(v)
			}
		}
		if b.NsPerOp > 0 {
			res = append(res, b)
		}
	}
	return res
}

// trimProcs drops the -GOMAXPROCS suffix of a benchmark name.
func trimProcs(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			return name[:i]
		}
	}
	return name
}

// Profile is the top of a CPU profile of one benchmark.
type Profile struct {
	Title   string `json:"title"`
	Command string `json:"command"`
	Top     string `json:"top"`
}

// profile runs one benchmark with -cpuprofile and returns pprof's top
// functions by cumulative time.
func profile(ctx context.Context, goTool, dir, work, pkg, bench, title string) (Profile, error) {
	name := strings.NewReplacer("/", "-", "^", "", "$", "").Replace(bench)
	prof := filepath.Join(work, "cpu-"+name+".out")
	bin := filepath.Join(work, "bench-"+name+".test")
	test := []string{goTool, "test", "-run", "^$", "-bench", bench, "-benchtime", "2s", "-cpuprofile", prof, "-o", bin, pkg}
	top := []string{goTool, "tool", "pprof", "-top", "-cum", "-nodecount", "25", bin, prof}
	p := Profile{Title: title, Command: strings.Join(shortArgv(test), " ") + " && " +
		strings.Join([]string{"go", "tool", "pprof", "-top", "-cum", "-nodecount", "25", filepath.Base(bin), filepath.Base(prof)}, " ")}
	if _, err := output(ctx, dir, test...); err != nil {
		return p, err
	}
	out, err := output(ctx, dir, top...)
	if err != nil {
		return p, err
	}
	p.Top = trimProfile(out)
	return p, nil
}

// trimProfile keeps pprof's table and drops the testing harness's own
// frames, which are at the top of every cumulative list.
func trimProfile(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "File:"), strings.HasPrefix(line, "Build ID:"), strings.HasPrefix(line, "Type:"),
			strings.HasPrefix(line, "Time:"), strings.HasPrefix(line, "Dropped"), strings.HasPrefix(line, "Showing top"):
			continue
		case strings.Contains(line, "testing.(*B)"), strings.Contains(line, "testing.tRunner"), strings.Contains(line, "runtime.goexit"):
			continue
		}
		keep = append(keep, line)
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}
