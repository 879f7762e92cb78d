package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/simulator/fleet"
	"github.com/gwdmi/gwtools/simulator/redisstore"
)

// RedisFleetDevices is the fleet loaded into Redis for its memory per
// device and load time (1,000 gateways of 1,000 devices).
var RedisFleetDevices = 1_000_000

// RedisRun is gwsim on Redis next to the in-memory store, in one run.
type RedisRun struct {
	// Runs are JSON command runs: Target "memory", "redis-1" (one replica)
	// or "redis-2" (two replicas, one generator each; RPS is their sum).
	Runs []LoadRun `json:"runs"`
	// Devices loaded into Redis; Load the time redisstore took to write
	// them (pipelined); UsedMemory the growth of INFO memory used_memory.
	Devices    int           `json:"devices"`
	Load       time.Duration `json:"load_ns"`
	UsedMemory int64         `json:"used_memory"`
	Server     string        `json:"redis_server"`
	Cmd        string        `json:"redis_command"`
	Note       string        `json:"note,omitempty"`
}

// PerDevice is Redis's memory per device.
func (r RedisRun) PerDevice() float64 {
	if r.Devices == 0 {
		return 0
	}
	return float64(r.UsedMemory) / float64(r.Devices)
}

// MedianRPS of one target.
func (r RedisRun) MedianRPS(target string) float64 {
	var runs []LoadRun
	for _, l := range r.Runs {
		if l.Target == target {
			runs = append(runs, l)
		}
	}
	return median(runs, func(l LoadRun) float64 { return l.RPS })
}

// redisServer is a redis-server for the bench, no persistence.
type redisServer struct {
	cmd  *exec.Cmd
	port int
}

func startRedis(dir string) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &redisServer{cmd: cmd, port: port}
	for i := 0; i < 200; i++ {
		if c, err := net.DialTimeout("tcp", s.addr(), 100*time.Millisecond); err == nil {
			fmt.Fprint(c, "PING\r\n")
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "+PONG") {
				return s, nil
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	s.stop()
	return nil, fmt.Errorf("redis-server did not answer on %s", s.addr())
}

func (s *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }
func (s *redisServer) url() string  { return "redis://" + s.addr() + "/0" }
func (s *redisServer) stop()        { s.cmd.Process.Kill(); s.cmd.Wait() }

// RedisBench measures gwsim on Redis: requests/s with one and two
// replicas next to the in-memory store, then the memory and load time of
// a RedisFleetDevices fleet.
// Not yet called from Run: its small test hung (see docs/redis.md).
func (r *Report) RedisBench(ctx context.Context, o Options, fleetFile string, bodies map[string]string, wrk, script string, logf func(string, ...any)) error {
	rr := &RedisRun{}
	r.Redis = rr
	dir := filepath.Join(o.Work, "redis")
	os.MkdirAll(dir, 0o755)
	rs, err := startRedis(dir)
	if err != nil {
		rr.Note = "redis-server could not be started (make bench installs it with apt-get where it can): " + err.Error()
		logf("%s", rr.Note)
		return nil
	}
	defer rs.stop()
	if out, err := exec.Command("redis-server", "--version").Output(); err == nil {
		rr.Server = strings.TrimSpace(string(out))
	}
	gwsim := filepath.Join(o.Bin, "gwsim")
	base := []string{gwsim, "serve", "--addr", "127.0.0.1:0", "--fleet", fleetFile, "--log-level", "warn"}
	redisArgv := append(append([]string{}, base...), "--store", rs.url())
	rr.Cmd = strings.Join(shortArgv(redisArgv), " ") + " (REDIS_URL: redis-server --save '' --appendonly no)"
	rr.Cmd = strings.ReplaceAll(rr.Cmd, rs.url(), "REDIS_URL")
	mem, err := startServer(base, time.Minute)
	if err != nil {
		return err
	}
	defer mem.stop()
	r1, err := startServer(append(append([]string{}, redisArgv...), "--store-reset"), time.Minute)
	if err != nil {
		return err
	}
	defer r1.stop()
	r2, err := startServer(redisArgv, time.Minute)
	if err != nil {
		return err
	}
	defer r2.stop()
	path := "/v1/services/gateway/command"
	one := func(url string, conns int) (LoadRun, error) {
		if wrk != "" {
			return runWrk(ctx, wrk, script, bodies["json"], contentTypes["json"], url+path, o.Threads, conns, o.Duration)
		}
		return runLoad(ctx, filepath.Join(o.Bin, "gwconform"), fleetFile, url, "json", o.Threads, conns, o.Duration, 0)
	}
	conns := 32
	if len(o.Connections) > 0 {
		conns = o.Connections[len(o.Connections)-1]
	}
	rounds := min(o.Rounds, 3)
	logf("gwsim on Redis: %d rounds of JSON runs, in memory, one replica, two replicas", rounds)
	for round := 0; round < rounds; round++ {
		for _, target := range []string{"memory", "redis-1", "redis-2"} {
			var run LoadRun
			switch target {
			case "memory":
				run, err = one(mem.url, conns)
			case "redis-1":
				run, err = one(r1.url, conns)
			default:
				var a, b LoadRun
				var ea, eb error
				var wg sync.WaitGroup
				wg.Add(2)
				go func() { defer wg.Done(); a, ea = one(r1.url, max(1, conns/2)) }()
				go func() { defer wg.Done(); b, eb = one(r2.url, max(1, conns/2)) }()
				wg.Wait()
				if err = ea; err == nil {
					err = eb
				}
				run = a
				run.Requests += b.Requests
				run.Errors += b.Errors
				run.RPS += b.RPS
				run.P50, run.P99 = max(a.P50, b.P50), max(a.P99, b.P99)
				run.Command += " ; the same against REDIS2_URL, at once"
			}
			if err != nil {
				return err
			}
			run.Target, run.Format = target, "json"
			for _, u := range []string{mem.url, r1.url, r2.url} {
				run.Command = strings.ReplaceAll(run.Command, u, "GWSIM_URL")
			}
			logf("  %-8s %8.0f req/s  p50 %s  p99 %s  errors %d", target, run.RPS, run.P50.Round(time.Microsecond), run.P99.Round(time.Microsecond), run.Errors)
			rr.Runs = append(rr.Runs, run)
		}
	}
	r1.stop()
	r2.stop()

	// Memory and load time of a big fleet, loaded by redisstore itself.
	g := 1000
	per := max(1, RedisFleetDevices/g)
	if RedisFleetDevices < g {
		g, per = 1, RedisFleetDevices
	}
	f := fleet.Generate(1, g, per)
	rdbURL := rs.url()
	before, err := usedMemory(ctx, rdbURL, true)
	if err != nil {
		return err
	}
	start := time.Now()
	st, err := redisstore.Open(ctx, f, redisstore.Options{URL: rdbURL, Reset: true, Prefix: "gwbench:"})
	if err != nil {
		return err
	}
	rr.Load = time.Since(start)
	st.Close()
	after, err := usedMemory(ctx, rdbURL, false)
	if err != nil {
		return err
	}
	rr.Devices, rr.UsedMemory = g*per, after-before
	logf("  %d devices loaded into Redis in %s; %.0f B/device (INFO memory used_memory)", rr.Devices, rr.Load.Round(time.Millisecond), rr.PerDevice())
	return nil
}

// usedMemory is INFO memory's used_memory; flush empties the database first.
func usedMemory(ctx context.Context, url string, flush bool) (int64, error) {
	c, err := redisstore.NewClient(url)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if flush {
		if err := c.FlushAll(ctx).Err(); err != nil {
			return 0, err
		}
	}
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO memory has no used_memory")
}

// writeRedis is the Redis section of docs/benchmarks.md.
func (r *Report) writeRedis(p func(string, ...any)) {
	rr := r.Redis
	if rr == nil {
		return
	}
	p("## gwsim on Redis\n\n")
	if rr.Note != "" {
		p("%s\n\n", rr.Note)
		return
	}
	p("The same JSON command body, in the same run: gwsim with its in-memory store, one replica on Redis (`%s`), "+
		"and two replicas on the same Redis with one generator each (requests/s summed). %s on the same %d cores as everything else: "+
		"generator, gwsim and redis-server share them. See docs/redis.md for what bounds these figures.\n\n", rr.Cmd, orUnknown(rr.Server), r.Env.Cores)
	p("| Store | Median requests/s | Runs |\n|---|---|---|\n")
	memRPS := rr.MedianRPS("memory")
	for _, target := range []string{"memory", "redis-1", "redis-2"} {
		var each []string
		for _, l := range rr.Runs {
			if l.Target == target {
				each = append(each, num(l.RPS))
			}
		}
		p("| %s | %s | %s |\n", target, num(rr.MedianRPS(target)), strings.Join(each, ", "))
	}
	if memRPS > 0 {
		ratio := rr.MedianRPS("redis-1") / memRPS
		verdict := "met"
		if ratio < 0.5 {
			verdict = "missed"
		}
		p("\nGoal: one replica on Redis at least half the in-memory throughput: %.0f%%, **%s**.\n", ratio*100, verdict)
	}
	p("\nA fleet of %s devices loaded into Redis (pipelined, %d devices a pipeline) in %s; Redis used %s more "+
		"(INFO memory used_memory): %.0f bytes per device.\n\n", num(float64(rr.Devices)), 2000, dur(rr.Load), mib(rr.UsedMemory), rr.PerDevice())
}
