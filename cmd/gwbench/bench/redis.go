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

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
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
	// Durability: one gwsim replica on a Redis primary with a Redis
	// replica attached, with --store-durability primary and replicated
	// (each change waits for WAIT 1), against gwsim in memory in the same
	// rounds, at each concurrency: what each durability costs.
	Durability    []DurabilityRun
	DurabilityCmd []string
	Connections   int
	// Ratio is the median of the rounds' one-replica/in-memory ratios,
	// over Rounds rounds; Commands are the command lines measured.
	Ratio    float64
	Rounds   int
	Commands []string
	// Devices, BytesPerDevice (INFO memory used_memory after minus
	// before, over Devices) and LoadTime of the fleet into Redis.
	Devices        int
	BytesPerDevice float64
	LoadTime       time.Duration
}

func redisSection() Section {
	return Section{Name: SectionRedis, Measure: func(ctx context.Context, o Options, r *Report, logf func(string, ...any)) error {
		return r.measureRedis(ctx, o, logf)
	}, Goals: (*Report).redisGoals, Write: (*Report).writeRedis}
}

// redisGoals: one replica on Redis at least half the in-memory throughput,
// in the same run.
func (r *Report) redisGoals() []Goal {
	fig, ok := r.Extra[SectionRedis].(*RedisFigures)
	if !ok || fig.Memory == 0 {
		return nil
	}
	g := Goal{Name: fmt.Sprintf("gwsim on Redis, one replica, JSON commands against gwsim in memory (wrk, %d connections, same run)", fig.Connections),
		Target: "≥ 0.50 ×", Known: true, Met: fig.Ratio >= 0.5,
		Measured: fmt.Sprintf("%.2f × (median of %d rounds; medians %.0f vs %.0f req/s); two replicas %.2f ×", fig.Ratio, fig.Rounds, fig.OneReplica, fig.Memory, fig.TwoReplicas/fig.Memory)}
	if !g.Met {
		g.Miss = fmt.Sprintf("%.2f × instead of 0.50 ×", fig.Ratio)
		g.Why = "each request waits for its Redis pipeline; redis-server's thread shares the two cores with gwsim and wrk (docs/redis.md)"
	}
	return append([]Goal{g}, fig.durabilityGoals()...)
}

// startRedisServer runs redis-server on a free loopback port with no
// persistence; stop kills it by PID.
func startRedisServer(dir string, extra ...string) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("redis-server", append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--logfile", ""}, extra...)...)
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

// measureRedis measures gwsim on Redis: its throughput against gwsim in
// memory, with one and two replicas and with each durability (with wrk
// only), and the memory and time a big fleet takes in Redis. Without
// redis-server it notes so and measures nothing.
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
	if wrk != "" {
		if err := r.measureReplicas(ctx, o, fig, wrk, "redis://"+addr+"/0", logf); err != nil {
			return err
		}
	}
	if err := measureFleetLoad(ctx, o, fig, addr, logf); err != nil {
		return err
	}
	r.Extra[SectionRedis] = fig
	return nil
}

// redisLoad drives wrk at gwsim replicas with the JSON command.
type redisLoad struct {
	ctx               context.Context
	o                 Options
	wrk, script, body string
	connections       int
}

// run loads every url at once and returns the sum of their requests/s,
// as replicas of one fleet serve together.
func (l redisLoad) run(urls ...string) (float64, error) {
	var wg sync.WaitGroup
	rps := make([]float64, len(urls))
	errs := make([]error, len(urls))
	for i, u := range urls {
		wg.Add(1)
		go func(i int, u string) {
			defer wg.Done()
			lr, err := runWrk(l.ctx, Placement{}, l.wrk, l.script, l.body, contentTypes["json"], u+device.SendCommand.Path(), l.o.Threads, l.connections, l.o.Duration)
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

// measureReplicas measures one gwsim replica on the Redis at url against
// gwsim in memory, then two replicas at once, then each durability, and
// writes the command lines measured into fig.
func (r *Report) measureReplicas(ctx context.Context, o Options, fig *RedisFigures, wrk, url string, logf func(string, ...any)) error {
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
	load := redisLoad{ctx: ctx, o: o, wrk: wrk, script: script, body: bodies["json"], connections: fig.Connections}
	r1, err := oneReplicaRounds(o, fig, load, base, url)
	if err != nil {
		return err
	}
	defer r1.stop()
	r2, err := startServer(append(base, "--store", url), time.Minute)
	if err != nil {
		return err
	}
	defer r2.stop()
	if fig.TwoReplicas, err = load.run(r1.url, r2.url); err != nil {
		return err
	}
	r1.stop()
	r2.stop()
	if err := r.measureDurability(ctx, o, fig, base, wrk, script, bodies["json"], logf); err != nil {
		return err
	}
	fig.Commands = []string{
		strings.Join(shortArgv(base), " ") + " (in memory)",
		strings.Join(shortArgv(append(base, "--store", "redis://127.0.0.1:PORT/0")), " ") + " (each replica; redis-server --save '' --appendonly no)",
		fmt.Sprintf("wrk -t%d -c%d -d%s -s post.lua http://ADDR%s (the signed Light Dimmer command in JSON)", o.Threads, fig.Connections, secs(o.Duration), device.SendCommand.Path()),
	}
	logf("redis: %.0f req/s in memory, %.0f on one replica, %.0f on two", fig.Memory, fig.OneReplica, fig.TwoReplicas)
	return nil
}

// oneReplicaRounds measures gwsim in memory and one replica on the Redis
// at url, both up at once; rounds alternate which goes first, and the
// figures are the medians (one round alone swings by a tenth). It stops
// the one in memory and returns the replica, still running.
func oneReplicaRounds(o Options, fig *RedisFigures, load redisLoad, base []string, url string) (*server, error) {
	mem, err := startServer(base, time.Minute)
	if err != nil {
		return nil, err
	}
	defer mem.stop()
	r1, err := startServer(append(base, "--store", url), time.Minute)
	if err != nil {
		return nil, err
	}
	var memRuns, oneRuns, ratios []float64
	for round := 0; round < o.Rounds; round++ {
		order := []*server{mem, r1}
		if round%2 == 1 {
			order = []*server{r1, mem}
		}
		got := map[*server]float64{}
		for _, srv := range order {
			v, err := load.run(srv.url)
			if err != nil {
				r1.stop()
				return nil, err
			}
			got[srv] = v
		}
		memRuns, oneRuns = append(memRuns, got[mem]), append(oneRuns, got[r1])
		ratios = append(ratios, got[r1]/got[mem])
	}
	fig.Memory, fig.OneReplica, fig.Ratio = medianOf(memRuns), medianOf(oneRuns), medianOf(ratios)
	fig.Rounds = o.Rounds
	mem.stop()
	return r1, nil
}

// measureFleetLoad loads the big fleet into a database of its own on the
// Redis at addr and measures the time it takes and the memory a device
// takes there.
func measureFleetLoad(ctx context.Context, o Options, fig *RedisFigures, addr string, logf func(string, ...any)) error {
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
	return nil
}

// DurabilityRun is one concurrency of the durability comparison:
// requests/s of each target in each round, and each round's ratio to
// gwsim in memory measured in the same round.
type DurabilityRun struct {
	Connections                     int
	Memory, Primary, Replicated     []float64
	PrimaryRatios, ReplicatedRatios []float64
	// Errors are non-2xx answers and requests without one, by target.
	Errors map[string]int64
}

// Durability modes measured, in gwsim's --store-durability words.
const (
	durabilityMemory     = "memory"
	durabilityPrimary    = "primary"
	durabilityReplicated = "replicated"
)

// measureDurability starts a Redis primary with one Redis replica and
// measures one gwsim replica on it with each --store-durability, next to
// gwsim in memory, at each concurrency, in rounds that rotate which goes
// first (medians).
func (r *Report) measureDurability(ctx context.Context, o Options, fig *RedisFigures, base []string,
	wrk, script, body string, logf func(string, ...any)) error {
	pdir, err := os.MkdirTemp(o.Work, "redis-primary")
	if err != nil {
		return err
	}
	primary, stopPrimary, err := startRedisServer(pdir, "--repl-diskless-sync-delay", "0")
	if err != nil {
		return err
	}
	defer stopPrimary()
	rdir, err := os.MkdirTemp(o.Work, "redis-replica")
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(primary)
	replicaAddr, stopReplica, err := startRedisServer(rdir, "--replicaof", host, port)
	if err != nil {
		return err
	}
	defer stopReplica()
	rc, err := redisstore.NewClient("redis://" + replicaAddr + "/0")
	if err != nil {
		return err
	}
	defer rc.Close()
	for i := 0; ; i++ {
		if info := rc.Info(ctx, "replication").Val(); strings.Contains(info, "master_link_status:up") {
			break
		}
		if i == 1000 {
			return fmt.Errorf("the Redis replica did not sync with its primary in 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	url := "redis://" + primary + "/0"
	mem, err := startServer(base, time.Minute)
	if err != nil {
		return err
	}
	defer mem.stop()
	async, err := startServer(append(base, "--store", url, "--store-durability", durabilityPrimary), time.Minute)
	if err != nil {
		return err
	}
	defer async.stop()
	repl, err := startServer(append(base, "--store", url, "--store-durability", durabilityReplicated), time.Minute)
	if err != nil {
		return err
	}
	defer repl.stop()
	fig.DurabilityCmd = []string{
		"redis-server --port PORT --save '' --appendonly no --repl-diskless-sync-delay 0 &   # the primary",
		"redis-server --port PORT2 --save '' --appendonly no --replicaof 127.0.0.1 PORT &   # its replica",
		strings.Join(shortArgv(base), " ") + " &   # in memory",
		strings.Join(shortArgv(append(base, "--store", "redis://127.0.0.1:PORT/0", "--store-durability", durabilityPrimary)), " ") + " &",
		strings.Join(shortArgv(append(base, "--store", "redis://127.0.0.1:PORT/0", "--store-durability", durabilityReplicated)), " ") + " &",
	}
	targets := []*server{mem, async, repl}
	for _, conns := range o.Connections {
		fig.DurabilityCmd = append(fig.DurabilityCmd, fmt.Sprintf("GWBENCH_BODY=command.json GWBENCH_CT=application/json wrk -t%d -c%d -d%s -s post.lua http://ADDR%s   # each of the three, in turn",
			o.Threads, conns, secs(o.Duration), device.SendCommand.Path()))
		d := DurabilityRun{Connections: conns, Errors: map[string]int64{}}
		for round := 0; round < o.Rounds; round++ {
			got := map[*server]float64{}
			for k := range targets {
				srv := targets[(k+round)%len(targets)]
				lr, err := runWrk(ctx, Placement{}, wrk, script, body, contentTypes["json"], srv.url+device.SendCommand.Path(), o.Threads, conns, o.Duration)
				if err != nil {
					return err
				}
				got[srv] = lr.RPS
				d.Errors[map[*server]string{mem: durabilityMemory, async: durabilityPrimary, repl: durabilityReplicated}[srv]] += lr.Errors
			}
			d.Memory, d.Primary, d.Replicated = append(d.Memory, got[mem]), append(d.Primary, got[async]), append(d.Replicated, got[repl])
			if got[mem] > 0 {
				d.PrimaryRatios = append(d.PrimaryRatios, got[async]/got[mem])
				d.ReplicatedRatios = append(d.ReplicatedRatios, got[repl]/got[mem])
			}
		}
		logf("redis: durability at %d connections: in memory %.0f req/s, primary %.2f ×, replicated %.2f ×", conns,
			medianOf(d.Memory), medianOf(d.PrimaryRatios), medianOf(d.ReplicatedRatios))
		fig.Durability = append(fig.Durability, d)
	}
	return nil
}

// durabilityGoals report what each durability costs: no target, a
// figure.
func (fig *RedisFigures) durabilityGoals() []Goal {
	var goals []Goal
	for _, d := range fig.Durability {
		goals = append(goals, Goal{Name: fmt.Sprintf("gwsim on a Redis primary with a replica, `--store-durability primary` and `replicated`, JSON commands against gwsim in memory (wrk, %d connections, same run)", d.Connections),
			Target: "reported", Known: len(d.PrimaryRatios) > 0, Info: true,
			Measured: fmt.Sprintf("primary %.2f ×, replicated %.2f × (medians of %d rounds; %s, %s and %s req/s)", medianOf(d.PrimaryRatios), medianOf(d.ReplicatedRatios),
				len(d.PrimaryRatios), num(medianOf(d.Memory)), num(medianOf(d.Primary)), num(medianOf(d.Replicated)))})
	}
	return goals
}

func (fig *RedisFigures) writeDurability(p func(string, ...any)) {
	if len(fig.Durability) == 0 {
		return
	}
	p("### What each durability costs\n\n")
	p("A second redis-server as the primary, with a Redis replica (`redis-server --replicaof`), both on loopback; one gwsim on it with each `--store-durability`, "+
		"and gwsim in memory, all three up at once. wrk sends the signed Light Dimmer command in JSON to each in turn, %d rounds at each concurrency, the order rotating each round; "+
		"a ratio is the median of the rounds' ratios, each against the in-memory run of the same round. `primary` acknowledges once the primary has the change; "+
		"`replicated` once a replica has it too (`WAIT 1` at the end of each write pipeline). [redis.md](redis.md) says what each loses in a failover.\n\n", len(fig.Durability[0].Memory))
	p("| connections | in memory, requests/s | `primary`, requests/s | vs in memory | `replicated`, requests/s | vs in memory | replicated / primary | errors (memory, primary, replicated) |\n|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, d := range fig.Durability {
		rp := 0.0
		if m := medianOf(d.Primary); m > 0 {
			rp = medianOf(d.Replicated) / m
		}
		p("| %d | %s | %s | **%.2f ×** (%s) | %s | **%.2f ×** (%s) | %.2f × | %d, %d, %d |\n", d.Connections, num(medianOf(d.Memory)),
			num(medianOf(d.Primary)), medianOf(d.PrimaryRatios), joinFloats(d.PrimaryRatios, "%.2f"),
			num(medianOf(d.Replicated)), medianOf(d.ReplicatedRatios), joinFloats(d.ReplicatedRatios, "%.2f"), rp,
			d.Errors[durabilityMemory], d.Errors[durabilityPrimary], d.Errors[durabilityReplicated])
	}
	p("\n```sh\n%s\n```\n\n", strings.Join(fig.DurabilityCmd, "\n"))
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
		p("JSON commands a second, wrk at %d connections, in the same run: in memory and one replica in %d rounds that alternate which goes first (medians), then two replicas loaded at once. [redis.md](redis.md) says what bounds it.\n\n", fig.Connections, fig.Rounds)
		p("| target | requests/s | vs in memory |\n|---|---:|---:|\n")
		p("| gwsim, in memory | %.0f | 1.00 |\n", fig.Memory)
		p("| gwsim on Redis, one replica | %.0f | %.2f (median of the rounds' ratios) |\n", fig.OneReplica, fig.Ratio)
		p("| gwsim on Redis, two replicas (sum) | %.0f | %.2f |\n", fig.TwoReplicas, fig.TwoReplicas/fig.Memory)
		p("\n")
		verdict := "**met**"
		if fig.Ratio < 0.5 {
			verdict = fmt.Sprintf("**missed**: %.2f ×", fig.Ratio)
		}
		p("Goal: one replica on Redis at least 0.50 × the in-memory throughput: %s.\n\n", verdict)
		p("```sh\n%s\n```\n\n", strings.Join(fig.Commands, "\n"))
	}
	fig.writeDurability(p)
	p("A fleet of %d devices loaded into Redis in %s; Redis memory %.0f bytes a device (INFO used_memory, after minus before).\n\n",
		fig.Devices, fig.LoadTime.Round(time.Millisecond), fig.BytesPerDevice)
}
