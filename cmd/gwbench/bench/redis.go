package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gwdmi/gwtools/simulator/device"
	"github.com/gwdmi/gwtools/simulator/fleet"
	"github.com/gwdmi/gwtools/simulator/redisstore"
)

// SectionRedis measures gwsim on Redis next to the in-memory store.
const SectionRedis = "gwsim on Redis: replicas, memory per device, fleet load"

// RedisFleetDevices is the fleet loaded into Redis for memory and load
// time (Options.BigFleet when that is smaller and above 0).
const RedisFleetDevices = 1_000_000

// RedisFigures are the Redis section's figures (Report.Extra[SectionRedis]).
type RedisFigures struct {
	// Memory, OneReplica: JSON commands/s to gwsim in memory and to one
	// replica on Redis; TwoReplicas: the sum of two replicas loaded at once.
	Memory, OneReplica, TwoReplicas float64
	Connections                     int
	// Devices, BytesPerDevice (INFO memory used_memory after minus
	// before, over Devices) and LoadTime of the fleet into Redis.
	Devices        int
	BytesPerDevice float64
	LoadTime       time.Duration
}

func redisSection() Section {
	return Section{Name: SectionRedis, Measure: func(ctx context.Context, o Options, r *Report, logf func(string, ...any)) error {
		return r.measureRedis(ctx, o, logf)
	}, Write: (*Report).writeRedis}
}

// startRedisServer runs redis-server on a free loopback port with no
// persistence; stop kills it by PID.
func startRedisServer(dir string) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--logfile", "")
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("redis-server: %w (make tools installs it)", err)
	}
	go cmd.Wait()
	addr = "127.0.0.1:" + strconv.Itoa(port)
	stop = func() { syscall.Kill(cmd.Process.Pid, syscall.SIGKILL) }
	for i := 0; i < 500; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr, stop, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	return "", nil, fmt.Errorf("redis-server did not listen on %s", addr)
}

func (r *Report) measureRedis(ctx context.Context, o Options, logf func(string, ...any)) error {
	wrk := o.Wrk
	if wrk == "" || wrk == "none" {
		p, err := exec.LookPath("wrk")
		if err != nil || o.Wrk == "none" {
			r.Notes = append(r.Notes, "Redis section: wrk not found, so requests/s on Redis were not measured.")
			wrk = ""
		} else {
			wrk = p
		}
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		r.Notes = append(r.Notes, "Redis section: redis-server was not found (make tools installs it), so gwsim on Redis was not measured.")
		return nil
	}
	fig := &RedisFigures{Connections: 32}
	if len(o.Connections) > 0 {
		fig.Connections = o.Connections[len(o.Connections)-1]
	}
	dir, err := os.MkdirTemp(o.Work, "redis")
	if err != nil {
		return err
	}
	addr, stop, err := startRedisServer(dir)
	if err != nil {
		return err
	}
	defer stop()
	url := "redis://" + addr + "/0"
	if wrk != "" {
		fleetFile, bodies, err := r.benchFleet(ctx, o)
		if err != nil {
			return err
		}
		script := filepath.Join(o.Work, "post.lua")
		if err := os.WriteFile(script, []byte(wrkScript), 0o644); err != nil {
			return err
		}
		gw := filepath.Join(o.Bin, "gwsim")
		base := []string{gw, "serve", "--addr", "127.0.0.1:0", "--fleet", fleetFile}
		run := func(urls ...string) (float64, error) {
			var wg sync.WaitGroup
			rps := make([]float64, len(urls))
			errs := make([]error, len(urls))
			for i, u := range urls {
				wg.Add(1)
				go func(i int, u string) {
					defer wg.Done()
					lr, err := runWrk(ctx, wrk, script, bodies["json"], contentTypes["json"], u+device.SendCommand.Path(), o.Threads, fig.Connections, o.Duration)
					rps[i], errs[i] = lr.RPS, err
				}(i, u)
			}
			wg.Wait()
			sum := 0.0
			for i := range urls {
				if errs[i] != nil {
					return 0, errs[i]
				}
				sum += rps[i]
			}
			return sum, nil
		}
		mem, err := startServer(base, time.Minute)
		if err != nil {
			return err
		}
		fig.Memory, err = run(mem.url)
		mem.stop()
		if err != nil {
			return err
		}
		r1, err := startServer(append(base, "--store", url), time.Minute)
		if err != nil {
			return err
		}
		defer r1.stop()
		if fig.OneReplica, err = run(r1.url); err != nil {
			return err
		}
		r2, err := startServer(append(base, "--store", url), time.Minute)
		if err != nil {
			return err
		}
		defer r2.stop()
		if fig.TwoReplicas, err = run(r1.url, r2.url); err != nil {
			return err
		}
		logf("redis: %.0f req/s in memory, %.0f on one replica, %.0f on two", fig.Memory, fig.OneReplica, fig.TwoReplicas)
	}
	// The big fleet in a database of its own.
	devices := RedisFleetDevices
	if o.BigFleet >= 0 && o.BigFleet < devices && o.BigFleet > 0 {
		devices = o.BigFleet
	}
	f := fleet.Generate(1, devices/10, 10)
	fig.Devices = f.DeviceCount()
	rdb, err := redisstore.NewClient("redis://" + addr + "/1")
	if err != nil {
		return err
	}
	defer rdb.Close()
	before, err := usedMemory(ctx, rdb.Info(ctx, "memory").Val())
	if err != nil {
		return err
	}
	start := time.Now()
	b, err := redisstore.Open(ctx, f, redisstore.Options{URL: "redis://" + addr + "/1", Replica: "gwbench"})
	if err != nil {
		return err
	}
	fig.LoadTime = time.Since(start)
	b.Close()
	after, err := usedMemory(ctx, rdb.Info(ctx, "memory").Val())
	if err != nil {
		return err
	}
	fig.BytesPerDevice = float64(after-before) / float64(fig.Devices)
	logf("redis: %d devices loaded in %s, %.0f bytes a device", fig.Devices, fig.LoadTime.Round(time.Millisecond), fig.BytesPerDevice)
	r.Extra[SectionRedis] = fig
	return nil
}

func usedMemory(_ context.Context, info string) (int64, error) {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO memory has no used_memory")
}

func (r *Report) writeRedis(p func(string, ...any)) {
	fig, ok := r.Extra[SectionRedis].(*RedisFigures)
	if !ok {
		return
	}
	p("## gwsim on Redis\n\n")
	if fig.Memory > 0 {
		p("JSON commands a second, wrk at %d connections, in the same run (docs/redis.md says what bounds it):\n\n", fig.Connections)
		p("| target | requests/s | vs in memory |\n|---|---:|---:|\n")
		p("| gwsim, in memory | %.0f | 1.00 |\n", fig.Memory)
		p("| gwsim on Redis, one replica | %.0f | %.2f |\n", fig.OneReplica, fig.OneReplica/fig.Memory)
		p("| gwsim on Redis, two replicas (sum) | %.0f | %.2f |\n\n", fig.TwoReplicas, fig.TwoReplicas/fig.Memory)
	}
	p("A fleet of %d devices loaded into Redis in %s; Redis memory %.0f bytes a device (INFO used_memory, after minus before).\n\n",
		fig.Devices, fig.LoadTime.Round(time.Millisecond), fig.BytesPerDevice)
}
