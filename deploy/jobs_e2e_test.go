package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gwdmi/gwtools/conformance/load"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// The address a stack's names resolve to in the test's network namespace:
// not loopback, so gwconform treats the stack as any remote target (it
// sends $GWSIM_ADMIN_TOKEN only where a recipe names it).
const stackAddr = "10.77.0.1"

// netns is a network and mount namespace of its own, held open by a
// sleeping process: loopback up, stackAddr on it, and /etc/hosts replaced
// (a bind mount seen only inside) by one that gives each of names that
// address, as a cluster's DNS gives each Service its address. Commands
// run in it through nsenter; they write files where the test reads them.
type netns struct {
	pid  int
	hold *exec.Cmd
}

// startNetns needs root (unshare, nsenter, ip, mount): without them the
// test skips with one line, or fails under CI=true.
func startNetns(t *testing.T, names ...string) *netns {
	t.Helper()
	hosts := map[string]string{}
	for _, n := range names {
		hosts[n] = stackAddr
	}
	return startNetnsHosts(t, hosts)
}

// startNetnsHosts is startNetns with an address of its own for each name
// (name: address, each address on the namespace's loopback).
func startNetnsHosts(t *testing.T, hosts map[string]string) *netns {
	t.Helper()
	for _, tool := range []string{"unshare", "nsenter", "ip"} {
		simtest.NeedTool(t, tool, "apt-get install -y util-linux iproute2")
	}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("a network namespace needs root")
		}
		t.Skip("a network namespace needs root")
	}
	byAddr := map[string][]string{}
	for name, addr := range hosts {
		byAddr[addr] = append(byAddr[addr], name)
	}
	lines := "127.0.0.1 localhost\n"
	script := "ip link set lo up"
	for _, addr := range slices.Sorted(maps.Keys(byAddr)) {
		slices.Sort(byAddr[addr])
		lines += addr + " " + strings.Join(byAddr[addr], " ") + "\n"
		script += " && ip addr add " + addr + "/32 dev lo"
	}
	file := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(file, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	script += " && mount --bind " + file + " /etc/hosts && echo ready $$ && exec sleep 3600"
	hold := exec.Command("unshare", "--net", "--mount", "--propagation", "private", "--fork", "--kill-child", "sh", "-c", script)
	out, err := hold.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	hold.Stderr = &stderr
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hold.Process.Kill(); hold.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	var pid int
	if _, serr := fmt.Sscanf(line, "ready %d", &pid); err != nil || serr != nil {
		t.Fatalf("network namespace: %q %v %v\n%s", line, err, serr, stderr.String())
	}
	return &netns{pid: pid, hold: hold}
}

// command is name args run inside the namespace, with env added to the
// test's environment (PATH first: the programs a recipe names).
func (n *netns) command(ctx context.Context, env []string, name string, args ...string) *exec.Cmd {
	return n.commandIn(ctx, "", env, name, args...)
}

// commandIn is command run in the folder dir ("": the root folder).
func (n *netns) commandIn(ctx context.Context, dir string, env []string, name string, args ...string) *exec.Cmd {
	nsArgs := []string{"-t", strconv.Itoa(n.pid), "-n", "-m"}
	if dir != "" {
		nsArgs = append(nsArgs, "--wd="+dir)
	}
	cmd := exec.CommandContext(ctx, "nsenter", append(append(nsArgs, "--", name), args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// proc is a process of a recipe, its output kept.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  bytes.Buffer
	mu   sync.Mutex
	done chan struct{}
	err  error
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// start starts cmd; a server is stopped when the test ends.
func start(t *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p, p
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for the process to end and gives its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	<-p.done
	if p.err == nil {
		return 0
	}
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatalf("%s: %v\n%s", p.name, p.err, p.output())
	return -1
}

// recipeBin is a folder holding gwsim and gwconform (built once for the
// test process) under those names, first on PATH, so that a recipe's
// command runs as written.
func recipeBin(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"gwsim", "gwconform"} {
		if err := os.Symlink(simtest.Binary(t, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")}
}

// podSpec is what the test runs of a pod template: its containers (init
// containers first, flagged) and volumes.
type podSpec struct {
	Init       []podContainer `yaml:"initContainers"`
	Containers []podContainer `yaml:"containers"`
	Volumes    []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
		PVC *struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
		EmptyDir any `yaml:"emptyDir"`
	} `yaml:"volumes"`
}

type podContainer struct {
	Name    string   `yaml:"name"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Mounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
	Readiness *struct {
		Exec *struct {
			Command []string `yaml:"command"`
		} `yaml:"exec"`
	} `yaml:"readinessProbe"`
}

// workload is a Deployment, StatefulSet or Job of a manifest.
type workload struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		Completions *int   `yaml:"completions"`
		Replicas    *int   `yaml:"replicas"`
		ServiceName string `yaml:"serviceName"`
		Template    struct {
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
		Claims []struct {
			Metadata struct {
				Name string `yaml:"name"`
			} `yaml:"metadata"`
		} `yaml:"volumeClaimTemplates"`
	} `yaml:"spec"`
}

// workloads reads the workloads of the manifests, by name.
func workloads(t *testing.T, files ...string) map[string]workload {
	t.Helper()
	out := map[string]workload{}
	for _, f := range files {
		docs, err := ParseYAML(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			var w workload
			if err := d.Decode(&w); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			switch w.Kind {
			case "Deployment", "StatefulSet", "Job":
				out[w.Metadata.Name] = w
			}
		}
	}
	return out
}

// cluster is what stands in for the cluster's objects: the ConfigMaps the
// kustomization generates (name: a folder holding their files), the
// claims' volumes (one folder per claim, shared by the pods that mount
// it) and the Secrets (NAME/KEY: the value), the admin token's and
// Redis's password.
type cluster struct {
	t          *testing.T
	configMaps map[string]string
	claims     map[string]string
	secrets    map[string]string
	bin        []string
	ns         *netns
}

func (c *cluster) claim(name string) string {
	if c.claims[name] == "" {
		c.claims[name] = c.t.TempDir()
	}
	return c.claims[name]
}

// $(VAR) in a container's command and args, and in an env value, is the
// variable's value, as Kubernetes expands it (in an env value, from the
// entries before it); a reference to no variable stays as written.
var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func expandVars(s string, env map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// inScript replaces the path from, where it stands as a path of its own
// in a shell script (after a space, a quote or =; followed by /, a space,
// a quote or the end), by to.
func inScript(script, from, to string) string {
	re := regexp.MustCompile(`(^|[\s"'=])` + regexp.QuoteMeta(from) + `(/|[\s"';]|$)`)
	return re.ReplaceAllString(script, "${1}"+strings.ReplaceAll(to, "$", "$$")+"${2}")
}

// pod runs one container of w's pod template as Kubernetes would: its
// command and args ($(VAR) expanded), its environment (the Secrets' values,
// the Job's completion index for an Indexed Job's pod and the annotation
// that carries it, $(VAR) expanded from the entries before), each mount
// path (an argument, or a path in a shell script argument) replaced by
// the folder that stands in for its volume. index is an Indexed Job's
// completion index, or a StatefulSet's pod ordinal (each ordinal its own
// claims), or -1. edit may change the words (shorter durations).
func (c *cluster) pod(ctx context.Context, w workload, ctr podContainer, index int, edit func([]string) []string) *exec.Cmd {
	t := c.t
	t.Helper()
	spec := w.Spec.Template.Spec
	vols := map[string]string{}
	for _, v := range spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			dir, ok := c.configMaps[v.ConfigMap.Name]
			if !ok {
				t.Fatalf("%s: ConfigMap %s is not one the stack makes", w.Metadata.Name, v.ConfigMap.Name)
			}
			vols[v.Name] = dir
		case v.PVC != nil:
			vols[v.Name] = c.claim(v.PVC.ClaimName)
		case v.EmptyDir != nil:
			vols[v.Name] = t.TempDir()
		default:
			t.Fatalf("%s: volume %s of a kind this test does not stand in for", w.Metadata.Name, v.Name)
		}
	}
	for _, cl := range w.Spec.Claims {
		name := w.Metadata.Name + "-" + cl.Metadata.Name
		if index >= 0 {
			name += "-" + strconv.Itoa(index)
		}
		vols[cl.Metadata.Name] = c.claim(name)
	}
	env := map[string]string{}
	var envList []string
	if index >= 0 && w.Kind == "Job" {
		env["JOB_COMPLETION_INDEX"] = strconv.Itoa(index)
	}
	for _, e := range ctr.Env {
		v := e.Value
		switch {
		case e.ValueFrom == nil:
			v = expandVars(v, env)
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
			var ok bool
			if v, ok = c.secrets[ref]; !ok {
				t.Fatalf("%s: env %s from Secret %s, which the stack does not make", w.Metadata.Name, e.Name, ref)
			}
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']" && index >= 0 && w.Kind == "Job":
			v = strconv.Itoa(index)
		default:
			t.Fatalf("%s: env %s from a source this test does not stand in for", w.Metadata.Name, e.Name)
		}
		env[e.Name] = v
	}
	for k, v := range env {
		envList = append(envList, k+"="+v)
	}
	words := append(append([]string{}, ctr.Command...), ctr.Args...)
	for i, word := range words {
		words[i] = expandVars(word, env)
		for _, m := range ctr.Mounts {
			dir, ok := vols[m.Name]
			if !ok {
				t.Fatalf("%s: mount of an unknown volume %s", w.Metadata.Name, m.Name)
			}
			if words[i] == m.MountPath || strings.HasPrefix(words[i], m.MountPath+"/") {
				words[i] = dir + strings.TrimPrefix(words[i], m.MountPath)
				break // a path is in one volume
			}
			if strings.Contains(words[i], "\n") { // sh -c SCRIPT
				words[i] = inScript(words[i], m.MountPath, dir)
			}
		}
	}
	if edit != nil {
		words = edit(words)
	}
	return c.ns.command(ctx, append(c.bin, envList...), words[0], words[1:]...)
}

// probe runs the container's readinessProbe command as Kubernetes does:
// in the container, with its environment. edit as for pod.
func (c *cluster) probe(ctx context.Context, w workload, ctr podContainer, edit func([]string) []string) *exec.Cmd {
	c.t.Helper()
	if ctr.Readiness == nil || ctr.Readiness.Exec == nil {
		c.t.Fatalf("%s: container %s has no exec readinessProbe", w.Metadata.Name, ctr.Name)
	}
	p := ctr
	p.Command, p.Args = ctr.Readiness.Exec.Command, nil
	return c.pod(ctx, w, p, -1, edit)
}

// untilPong runs cmd (a probe, a health check) until it answers PONG, a
// minute at most.
func untilPong(t *testing.T, what string, cmd func() *exec.Cmd) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		p := start(t, what, cmd())
		if p.wait(t); strings.TrimSpace(p.output()) == "PONG" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q after a minute (want PONG)", what, p.output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// argvHolds fails when the process's arguments, as a process listing
// shows them (/proc/PID/cmdline), hold any of secrets.
func argvHolds(t *testing.T, name string, pid int, secrets ...string) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	for _, s := range secrets {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("%s: a password in its process listing: %s", name, strings.ReplaceAll(string(b), s, "***"))
		}
	}
}

// refusedWithout runs redis-cli in the namespace, without a password,
// against host:port: Redis must answer NOAUTH.
func refusedWithout(ctx context.Context, t *testing.T, ns *netns, host, port string) {
	t.Helper()
	p := start(t, "redis-cli without a password", ns.command(ctx, nil, "redis-cli", "-h", host, "-p", port, "set", "gwsim-test-key", "v"))
	p.wait(t)
	if !strings.Contains(p.output(), "NOAUTH") {
		t.Errorf("Redis %s:%s without the password: %q (want NOAUTH)", host, port, p.output())
	}
}

// shorten makes a load's run short: --duration 3s, --rate at most 400
// (the whole load's), all else as written.
func shorten(words []string) []string {
	out := append([]string{}, words...)
	for i := 0; i+1 < len(out); i++ {
		switch out[i] {
		case "--duration":
			out[i+1] = "3s"
		case "--rate":
			if r, err := strconv.Atoi(out[i+1]); err == nil && r > 400 {
				out[i+1] = "400"
			}
		}
	}
	return out
}

// redisAsImage is the official Redis image's entrypoint rule: a
// redis-server started without a config file gets --protected-mode no, so
// that other pods (not on loopback) may connect.
func redisAsImage(words []string) []string {
	if len(words) > 0 && words[0] == "redis-server" {
		return append(append([]string{}, words...), "--protected-mode", "no")
	}
	return words
}

// verdict reads report.json's verdict in dir ("no report" without one).
func verdict(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return "no report"
	}
	var r struct {
		Verdict string `json:"verdict"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return "unreadable report: " + err.Error()
	}
	return r.Verdict
}

// TestShippedJobsPassOnTheShippedStack runs the stack of deploy/k8s as its
// manifests say (Redis, gwsim: command, args, environment, the fleet of
// fleet.yaml as the kustomization's ConfigMaps carry it) in a network
// namespace where gwsim and redis are names for an address that is not
// loopback, as a cluster's Services are: Redis requires the password of
// its Secret, and gwsim reaches it with GWSIM_STORE as Kubernetes composes
// it from that Secret (a client without the password is refused, Redis's
// probe gets in, neither process lists the password); then every shipped Job as its
// manifest says, against it: the conformance Job (its init container's
// wait, then gwconform run) ends PASS with exit 0, nothing skipped for
// want of the observer; the load Jobs (the 4 shards of the Indexed Job
// and the merge beside them, durations shortened to 3 s and the rate
// capped at 400/s) end with exit 0 and a merged result of 4 shards; and
// gwconform load check-acks, as docs/deploy.md runs it on each shard's
// ack log (its port-forward's 127.0.0.1:8080 stood in for by the
// Service), finds every acknowledged change. Then Compose's stack
// (deploy/compose.yaml: Redis, gwsim, and its conformance service; lb, the
// nginx in front, is the name of gwsim's address here: nginx's recipe is
// TestNginxRecipeKeepsTheDashboardWorking's) in a namespace of its own:
// its conformance service ends PASS too, Redis requiring the password of
// $GWSIM_REDIS_PASSWORD as the file takes it (the services' commands and
// environment interpolated as compose does; Redis's sh script writes its
// config; its health check gets in with REDISCLI_AUTH, a client without
// the password is refused, no process lists it).
func TestShippedJobsPassOnTheShippedStack(t *testing.T) {
	simtest.Heavy(t)
	simtest.NeedTool(t, "redis-server", "apt-get install -y redis-server")
	simtest.NeedTool(t, "wget", "apt-get install -y wget")
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	bin := recipeBin(t)
	token := "e2e-admin-token-0123456789abcdef0123"
	// Redis's password: letters, digits and -._~, as the docs make it.
	const password = "e2e-Redis-password_0123456789.x~"

	t.Run("kubernetes", func(t *testing.T) {
		fleetDir := t.TempDir()
		fleetYAML, err := os.ReadFile(filepath.Join(root, "deploy/k8s/fleet.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), fleetYAML, 0o644); err != nil {
			t.Fatal(err)
		}
		c := &cluster{t: t, configMaps: map[string]string{"gwsim-fleet": fleetDir, "gwsim-fleet-current": fleetDir},
			claims: map[string]string{}, secrets: map[string]string{"gwsim-admin/token": token, "redis-auth/password": password},
			bin: bin, ns: startNetns(t, "gwsim", "redis")}
		ws := workloads(t, "deploy/k8s/redis.yaml", "deploy/k8s/gwsim.yaml", "deploy/k8s/conformance-job.yaml", "deploy/k8s-load/load-job.yaml")
		for _, name := range []string{"redis", "gwsim", "gwconform", "gwconform-load", "gwconform-load-merge"} {
			if _, ok := ws[name]; !ok {
				t.Fatalf("no workload %s in the manifests", name)
			}
		}
		redis := start(t, "redis", c.pod(ctx, ws["redis"], ws["redis"].Spec.Template.Spec.Containers[0], -1, redisAsImage))
		// gwsim starts once Redis is ready, its readinessProbe as written
		// (the password from the container's environment) answering
		// PONG: a gwsim that finds Redis still loading stops, and
		// Kubernetes would start it again.
		untilPong(t, "Redis's readinessProbe", func() *exec.Cmd {
			return c.probe(ctx, ws["redis"], ws["redis"].Spec.Template.Spec.Containers[0], nil)
		})
		gwsim := start(t, "gwsim", c.pod(ctx, ws["gwsim"], ws["gwsim"].Spec.Template.Spec.Containers[0], -1, nil))

		// The conformance Job: its init container waits for gwsim, then
		// the run.
		job := ws["gwconform"]
		for _, ctr := range job.Spec.Template.Spec.Init {
			if code := start(t, ctr.Name, c.pod(ctx, job, ctr, -1, nil)).wait(t); code != 0 {
				t.Fatalf("init container %s: exit %d\ngwsim: %s\nredis: %s", ctr.Name, code, gwsim.output(), redis.output())
			}
		}
		// gwsim is healthy on a Redis that requires the Secret's
		// password: without it a client is refused, and no process lists
		// the password.
		refusedWithout(ctx, t, c.ns, "redis", "6379")
		argvHolds(t, "redis", redis.cmd.Process.Pid, password)
		argvHolds(t, "gwsim", gwsim.cmd.Process.Pid, password)
		if out := gwsim.output() + redis.output(); strings.Contains(out, password) {
			t.Error("the password is in gwsim's or Redis's output")
		}
		began := time.Now()
		run := start(t, "gwconform", c.pod(ctx, job, job.Spec.Template.Spec.Containers[0], -1, nil))
		code := run.wait(t)
		out := run.output()
		reports := filepath.Join(c.claim("gwconform-reports"), "latest")
		if code != 0 || verdict(reports) != "PASS" || strings.Contains(out, "not sent to") {
			t.Errorf("the conformance Job: exit %d, verdict %s (want 0, PASS)\n%s", code, verdict(reports), out)
		}
		t.Logf("conformance Job: exit %d, %s in %s", code, verdict(reports), time.Since(began).Round(time.Second))

		// The load: the Indexed Job's shards and the merge, all at once.
		lj, merge := ws["gwconform-load"], ws["gwconform-load-merge"]
		shards := 1
		if lj.Spec.Completions != nil {
			shards = *lj.Spec.Completions
		}
		began = time.Now()
		m := start(t, "merge", c.pod(ctx, merge, merge.Spec.Template.Spec.Containers[0], -1, nil))
		var ps []*proc
		for i := range shards {
			ps = append(ps, start(t, fmt.Sprintf("shard %d", i), c.pod(ctx, lj, lj.Spec.Template.Spec.Containers[0], i, shorten)))
		}
		for i, p := range ps {
			if code := p.wait(t); code != 0 {
				t.Errorf("load shard %d: exit %d\n%s", i, code, p.output())
			}
		}
		if code := m.wait(t); code != 0 {
			t.Errorf("the merge Job: exit %d\n%s", code, m.output())
		}
		results := c.claim("gwconform-load-results")
		b, err := os.ReadFile(filepath.Join(results, "merged", load.ReportJSON))
		if err != nil {
			t.Fatalf("no merged result: %v\n%s", err, m.output())
		}
		var res load.Result
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Shards) != shards || res.Requests == 0 || res.Errors != 0 || len(res.Missing) > 0 {
			t.Errorf("merged: %d shards (want %d), %d requests, %d errors, missing %v", len(res.Shards), shards, res.Requests, res.Errors, res.Missing)
		}
		t.Logf("load: %d shards, %d requests, %d errors, %d workers in all, in %s", len(res.Shards), res.Requests, res.Errors, res.Concurrency, time.Since(began).Round(time.Second))

		// check-acks as docs/deploy.md runs it, through the Service.
		var checks int
		for _, dc := range docCommands(t, "docs/deploy.md") {
			if len(dc.Words) < 3 || dc.Words[0] != "gwconform" || dc.Words[2] != "check-acks" {
				continue
			}
			words := slicesReplace(dc.Words, map[string]string{
				"http://127.0.0.1:8080": "http://gwsim:8080", // kubectl port-forward service/gwsim
				"$GWSIM_ADMIN_TOKEN":    token,
			})
			for i, w := range words {
				if rest, ok := strings.CutPrefix(w, "load-results/"); ok {
					words[i] = filepath.Join(results, rest) // kubectl cp of the volume
				}
			}
			p := start(t, dc.String(), c.ns.command(ctx, bin, words[0], words[1:]...))
			if code := p.wait(t); code != 0 {
				t.Errorf("%s: exit %d\n%s", dc, code, p.output())
			}
			checks++
		}
		if checks != shards {
			t.Errorf("docs/deploy.md runs check-acks %d times, want once per shard (%d)", checks, shards)
		}
	})

	t.Run("compose", func(t *testing.T) {
		var compose struct {
			Services map[string]struct {
				Healthcheck struct {
					Test []string `yaml:"test"`
				} `yaml:"healthcheck"`
				Command     []string          `yaml:"command"`
				Environment map[string]string `yaml:"environment"`
				Volumes     []string          `yaml:"volumes"`
				WorkingDir  string            `yaml:"working_dir"`
			} `yaml:"services"`
		}
		// The user's environment, as docs/deploy.md has it exported.
		vars := map[string]string{"GWSIM_ADMIN_TOKEN": token, "GWSIM_REDIS_PASSWORD": password}
		interpolate := func(what, s string) string {
			v, err := composeInterpolate(s, vars)
			if err != nil {
				t.Fatalf("deploy/compose.yaml: %s: %v", what, err)
			}
			return v
		}
		b, err := os.ReadFile(filepath.Join(root, "deploy/compose.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, &compose); err != nil {
			t.Fatal(err)
		}
		ns := startNetns(t, "lb", "gwsim", "redis")
		// A service's environment, interpolated.
		envOf := func(name string) []string {
			var env []string
			for k, v := range compose.Services[name].Environment {
				env = append(env, k+"="+interpolate(name+": "+k, v))
			}
			return env
		}
		// A service's command as its image runs it (interpolated), bind
		// mounts to their host paths (relative to deploy/), named volumes
		// to folders, in its working folder (Redis's image's: /data), with
		// its environment.
		service := func(name string) *exec.Cmd {
			s, ok := compose.Services[name]
			if !ok {
				t.Fatalf("no service %s in deploy/compose.yaml", name)
			}
			var words []string
			for _, w := range s.Command {
				words = append(words, interpolate(name+": command", w))
			}
			wd := s.WorkingDir
			if name != "redis" {
				var prog string
				prog, words = Entrypoint(words)
				words = append([]string{prog}, words...)
			} else {
				words = redisAsImage(words)
				if wd == "" {
					wd = "/data"
				}
			}
			dir := ""
			for _, v := range s.Volumes {
				parts := strings.Split(v, ":")
				host, inside := parts[0], parts[1]
				if strings.HasPrefix(host, ".") {
					if strings.Contains(host, "reports") {
						host = t.TempDir() // written by the run, not read
					} else {
						host = filepath.Join(absRoot(t), "deploy", host)
					}
				} else {
					host = t.TempDir()
				}
				for i, w := range words {
					if w == inside || strings.HasPrefix(w, inside+"/") {
						words[i] = host + strings.TrimPrefix(w, inside)
					} else if strings.Contains(w, "\n") { // sh -c SCRIPT
						words[i] = inScript(w, inside, host)
					}
				}
				if wd == inside || strings.HasPrefix(wd, inside+"/") {
					dir = host + strings.TrimPrefix(wd, inside)
				}
			}
			if wd != "" && dir == "" {
				dir = t.TempDir() // the image's own folder
			}
			return ns.commandIn(ctx, dir, append(append([]string{}, bin...), envOf(name)...), words[0], words[1:]...)
		}
		redis := start(t, "redis", service("redis"))
		// depends_on redis: service_healthy (its health check, run in the
		// container with its environment).
		check := compose.Services["redis"].Healthcheck.Test
		if len(check) < 2 || check[0] != "CMD" {
			t.Fatalf("Redis's health check in deploy/compose.yaml: %v", check)
		}
		untilPong(t, "Redis's health check", func() *exec.Cmd { return ns.command(ctx, envOf("redis"), check[1], check[2:]...) })
		gwsim := start(t, "gwsim", service("gwsim"))
		// depends_on gwsim: service_healthy (the image's health check).
		deadline := time.Now().Add(time.Minute)
		for {
			p := start(t, "health", ns.command(ctx, nil, "wget", "-q", "-T", "2", "-O", "/dev/null", "http://gwsim:8080/_sim/health"))
			if p.wait(t) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("gwsim not healthy after a minute:\n%s", gwsim.output())
			}
			time.Sleep(200 * time.Millisecond)
		}
		// gwsim is healthy on a Redis that requires the password: without
		// it a client is refused, and no process lists it or prints it.
		refusedWithout(ctx, t, ns, "redis", "6379")
		argvHolds(t, "redis", redis.cmd.Process.Pid, password)
		argvHolds(t, "gwsim", gwsim.cmd.Process.Pid, password)
		if out := gwsim.output() + redis.output(); strings.Contains(out, password) {
			t.Error("the password is in gwsim's or Redis's output")
		}
		s := compose.Services["conformance"]
		reportDir := ""
		cmd := service("conformance")
		for _, w := range cmd.Args {
			if strings.HasPrefix(w, os.TempDir()) {
				reportDir = w
			}
		}
		run := start(t, "conformance", cmd)
		code := run.wait(t)
		if code != 0 || reportDir == "" || verdict(reportDir) != "PASS" {
			t.Errorf("Compose's conformance service %v: exit %d (want 0, PASS)\n%s", s.Command, code, run.output())
		}
	})
}

// absRoot is the repository's absolute path: a process nsenter starts in
// a mount namespace starts in its root folder, so relative paths would
// not reach.
func absRoot(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// slicesReplace is words with each word found in r replaced.
func slicesReplace(words []string, r map[string]string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		if v, ok := r[w]; ok {
			w = v
		}
		out[i] = w
	}
	return out
}
