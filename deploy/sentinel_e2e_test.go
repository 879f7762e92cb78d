package deploy

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestSentinelStackWithPassword runs the Sentinel stack as its manifests
// say, with Redis's password: deploy/k8s-sentinel as kustomize builds it,
// and the chart's redis.mode=sentinel with redis.auth.existingSecret as
// helm renders it. The three Redis nodes and three Sentinels run their own
// scripts (each Sentinel writes its file as its command does, the password
// from the Secret through the environment), each pod with its host name
// (a UTS namespace of its own) and an address of its own in a network
// namespace where the pods' DNS names and the Services' resolve as in a
// cluster; redis-server gets --bind with that address, the one change to
// a script (the pods share the namespace's ports). Then gwsim, with
// GWSIM_STORE as the Deployment composes it from REDIS_PASSWORD, and
// GWSIM_SENTINEL_PASSWORD from the Secret.
//
// Every node and every Sentinel refuses a client without the password
// (NOAUTH), and a Sentinel one with a wrong password; each readinessProbe
// as written (redis-cli with the container's environment, pointed at the
// pod's address) answers PONG; each Sentinel's file has sentinel
// auth-pass with the password and is its user's only; no process lists
// the password; gwsim turns healthy through the Sentinels, stays so while
// they refuse others, and its keys reach both replicas (masterauth). Then
// the primary is killed: the Sentinels promote a replica (they reach the
// nodes with auth-pass and each other with requirepass), gwsim is healthy
// again on it, and the old primary, started again by its script (which
// asks the Sentinels with the password), replicates the new one.
func TestSentinelStackWithPassword(t *testing.T) {
	simtest.Heavy(t)
	for _, tool := range []string{"redis-server", "redis-cli"} {
		simtest.NeedTool(t, tool, "apt-get install -y redis-server")
	}
	simtest.NeedTool(t, "wget", "apt-get install -y wget")
	simtest.NeedTool(t, "hostname", "apt-get install -y hostname")
	bin := recipeBin(t)
	secrets := map[string]string{
		"gwsim-admin/token":   "e2e-admin-token-0123456789abcdef0123",
		"redis-auth/password": "e2e-Sentinel-password_0123456789.x~",
	}
	t.Run("kustomize", func(t *testing.T) {
		tree := buildTree(t)
		out := kustomizeBuild(t, kustomizeTools[len(kustomizeTools)-1], tree, "deploy/k8s-sentinel")
		runSentinelStack(t, out, secrets, bin)
	})
	t.Run("helm", func(t *testing.T) {
		chart, err := filepath.Abs(filepath.Join(root, chartDir))
		if err != nil {
			t.Fatal(err)
		}
		out, err := goTool(t, helmTool, nil, "template", "gwsim", chart, "--set", "auth.existingSecret=gwsim-admin",
			"--set", "redis.mode=sentinel", "--set", "redis.auth.existingSecret=redis-auth")
		if err != nil {
			t.Fatalf("helm template: %v", err)
		}
		runSentinelStack(t, out, secrets, bin)
	})
}

// builtStack is what runSentinelStack reads of a build: the workloads by
// their pods' app.kubernetes.io/name, and each ConfigMap's data written
// into a folder (name: the folder).
func builtStack(t *testing.T, where string, b []byte) (map[string]workload, map[string]string) {
	t.Helper()
	ws, cms := map[string]workload{}, map[string]string{}
	for _, o := range k8sObjects(t, where, b) {
		switch o.Kind {
		case "Deployment", "StatefulSet":
			raw, err := yaml.Marshal(o.raw)
			if err != nil {
				t.Fatal(err)
			}
			var w workload
			if err := yaml.Unmarshal(raw, &w); err != nil {
				t.Fatalf("%s: %s: %v", where, o, err)
			}
			ws[appOf(o.raw)] = w
		case "ConfigMap":
			dir := t.TempDir()
			data, _ := o.raw["data"].(map[string]any)
			for k, v := range data {
				if err := os.WriteFile(filepath.Join(dir, k), []byte(fmt.Sprint(v)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cms[o.Metadata.Name] = dir
		}
	}
	return ws, cms
}

// bindTo gives the redis-server a script execs --bind addr.
func bindTo(script, addr string) string {
	lines := strings.Split(script, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "exec redis-server ") {
			lines[i] = l + " --bind " + addr
		}
	}
	return strings.Join(lines, "\n")
}

var (
	sentinelFile = regexp.MustCompile(`> (\S+sentinel\.conf)`)
	masterName   = regexp.MustCompile(`sentinel monitor (\S+) `)
)

func runSentinelStack(t *testing.T, manifests []byte, secrets map[string]string, bin []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	password := secrets["redis-auth/password"]
	ws, cms := builtStack(t, "sentinel", manifests)
	nodes, sentinels, gw := ws["redis-node"], ws["redis-sentinel"], ws["gwsim"]
	if nodes.Spec.Template.Spec.Containers == nil || sentinels.Spec.Template.Spec.Containers == nil || gw.Spec.Template.Spec.Containers == nil {
		t.Fatalf("the build lacks the Redis nodes, the Sentinels or gwsim: %v", slices.Sorted(maps.Keys(ws)))
	}
	count := func(w workload) int {
		if w.Spec.Replicas == nil {
			return 1
		}
		return *w.Spec.Replicas
	}
	type pod struct{ name, fqdn, addr string }
	podsOf := func(w workload, first int) []pod {
		var out []pod
		for i := range count(w) {
			name := fmt.Sprintf("%s-%d", w.Metadata.Name, i)
			out = append(out, pod{name, name + "." + w.Spec.ServiceName, fmt.Sprintf("10.77.1.%d", first+i)})
		}
		return out
	}
	nodePods, sentinelPods := podsOf(nodes, 10), podsOf(sentinels, 20)
	if len(nodePods) != 3 || len(sentinelPods) != 3 {
		t.Fatalf("%d Redis nodes and %d Sentinels, want 3 and 3", len(nodePods), len(sentinelPods))
	}
	// A headless Service's name gives its pods' addresses: here the
	// first pod's.
	hosts := map[string]string{gw.Metadata.Name: "10.77.1.1", nodes.Spec.ServiceName: nodePods[0].addr, sentinels.Spec.ServiceName: sentinelPods[0].addr}
	for _, p := range append(slices.Clone(nodePods), sentinelPods...) {
		hosts[p.fqdn] = p.addr
	}
	c := &cluster{t: t, configMaps: cms, claims: map[string]string{}, secrets: secrets, bin: bin, ns: startNetnsHosts(t, hosts)}

	// asPod runs a pod's words under its host name, its redis-server
	// bound to its address.
	asPod := func(p pod) func([]string) []string {
		return func(words []string) []string {
			words = slices.Clone(words)
			for i, w := range words {
				if strings.Contains(w, "\n") {
					words[i] = bindTo(w, p.addr)
				}
			}
			return append([]string{"unshare", "--uts", "--", "sh", "-c", `hostname "$0" && exec "$@"`, p.name}, words...)
		}
	}
	// atPod points a probe's redis-cli at the pod's address.
	atPod := func(p pod) func([]string) []string {
		return func(words []string) []string {
			return append([]string{words[0], "-h", p.addr}, words[1:]...)
		}
	}
	// cli is redis-cli in the namespace, with the password (from the
	// environment, as the probes have it) or without.
	cli := func(auth bool, args ...string) string {
		var env []string
		if auth {
			env = []string{"REDISCLI_AUTH=" + password}
		}
		p := start(t, "redis-cli", c.ns.command(ctx, env, "redis-cli", args...))
		p.wait(t)
		return p.output()
	}
	waitFor := func(what string, limit time.Duration, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !ok() {
			if time.Now().After(deadline) || ctx.Err() != nil {
				t.Fatalf("%s: not after %s", what, limit)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	healthy := func() bool {
		p := start(t, "health", c.ns.command(ctx, nil, "wget", "-q", "-T", "2", "-O", "/dev/null", "http://"+gw.Metadata.Name+":8080/_sim/health"))
		return p.wait(t) == 0
	}

	nodeCtr, sentinelCtr := nodes.Spec.Template.Spec.Containers[0], sentinels.Spec.Template.Spec.Containers[0]
	var nodeProcs, sentinelProcs []*proc
	for i, p := range nodePods {
		nodeProcs = append(nodeProcs, start(t, p.name, c.pod(ctx, nodes, nodeCtr, i, asPod(p))))
	}
	for _, p := range nodePods {
		waitFor(p.name+" answers", 30*time.Second, func() bool { return strings.TrimSpace(cli(true, "-h", p.fqdn, "ping")) == "PONG" })
	}
	var sentinelCmds []string
	for i, p := range sentinelPods {
		cmd := c.pod(ctx, sentinels, sentinelCtr, i, asPod(p))
		sentinelCmds = append(sentinelCmds, strings.Join(cmd.Args, " "))
		sentinelProcs = append(sentinelProcs, start(t, p.name, cmd))
	}
	m := masterName.FindStringSubmatch(strings.Join(sentinelCtr.Command, " ") + strings.Join(sentinelCtr.Args, " "))
	if m == nil {
		t.Fatal("the Sentinels' command monitors no primary")
	}
	master := m[1]
	// Each Sentinel knows the two replicas and the two other Sentinels:
	// it reached the primary and the replicas with auth-pass.
	for _, p := range sentinelPods {
		waitFor(p.name+" knows the replicas and the other Sentinels", time.Minute, func() bool {
			info := strings.Fields(cli(true, "-h", p.fqdn, "-p", "26379", "sentinel", "master", master))
			at := func(k string) string {
				if i := slices.Index(info, k); i >= 0 && i+1 < len(info) {
					return info[i+1]
				}
				return ""
			}
			return at("num-slaves") == "2" && at("num-other-sentinels") == "2" && at("flags") == "master"
		})
	}

	// The password is required, given by the probes, in each Sentinel's
	// file (its user's only), and in no process listing.
	for i, p := range nodePods {
		refusedWithout(ctx, t, c.ns, p.fqdn, "6379")
		pr := start(t, p.name+" probe", c.probe(ctx, nodes, nodeCtr, atPod(p)))
		if pr.wait(t); strings.TrimSpace(pr.output()) != "PONG" {
			t.Errorf("%s: readinessProbe: %q (want PONG)", p.name, pr.output())
		}
		argvHolds(t, p.name, nodeProcs[i].cmd.Process.Pid, password)
	}
	for i, p := range sentinelPods {
		// A Sentinel answers no command (who the primary is, as SENTINEL
		// SET or MONITOR) without the password, or with a wrong one.
		for what, env := range map[string][]string{"without the password": nil, "with a wrong password": {"REDISCLI_AUTH=wrong-" + password}} {
			pr := start(t, "redis-cli", c.ns.command(ctx, env, "redis-cli", "-h", p.fqdn, "-p", "26379", "sentinel", "get-master-addr-by-name", master))
			pr.wait(t)
			if out := pr.output(); !strings.Contains(out, "NOAUTH") {
				t.Errorf("%s: a client %s asked who the primary is: %q (want NOAUTH)", p.name, what, strings.ReplaceAll(out, password, "***"))
			}
		}
		pr := start(t, p.name+" probe", c.probe(ctx, sentinels, sentinelCtr, atPod(p)))
		if pr.wait(t); strings.TrimSpace(pr.output()) != "PONG" {
			t.Errorf("%s: readinessProbe: %q (want PONG)", p.name, pr.output())
		}
		argvHolds(t, p.name, sentinelProcs[i].cmd.Process.Pid, password)
		f := sentinelFile.FindStringSubmatch(sentinelCmds[i])
		if f == nil {
			t.Fatalf("%s writes no sentinel.conf", p.name)
		}
		b, err := os.ReadFile(f[1])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "sentinel auth-pass "+master+" "+password+"\n") {
			t.Errorf("%s: its file has no sentinel auth-pass %s with the password", p.name, master)
		}
		if fi, err := os.Stat(f[1]); err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: its file, which holds the password, is %v %v (want its user's only)", p.name, fi.Mode(), err)
		}
	}

	// gwsim, as its Deployment composes its environment, through the
	// Sentinels with the nodes' password.
	gwsim := start(t, "gwsim", c.pod(ctx, gw, gw.Spec.Template.Spec.Containers[0], -1, nil))
	waitFor("gwsim healthy through the Sentinels", time.Minute, func() bool {
		select {
		case <-gwsim.done:
			t.Fatalf("gwsim stopped:\n%s", strings.ReplaceAll(gwsim.output(), password, "***"))
		default:
		}
		return healthy()
	})
	argvHolds(t, "gwsim", gwsim.cmd.Process.Pid, password)
	if !healthy() {
		t.Error("gwsim not healthy once the Sentinels refused clients without the password")
	}
	for _, p := range nodePods {
		waitFor(p.name+" holds gwsim's keys", 30*time.Second, func() bool {
			n, err := strconv.Atoi(strings.TrimSpace(cli(true, "-h", p.fqdn, "dbsize")))
			return err == nil && n > 0
		})
	}

	// The primary lost: a replica is promoted, gwsim follows it, and the
	// old primary, started again, replicates the new one.
	began := time.Now()
	nodeProcs[0].cmd.Process.Kill()
	<-nodeProcs[0].done
	primary := func() string {
		return strings.SplitN(cli(true, "-h", sentinelPods[0].fqdn, "-p", "26379", "sentinel", "get-master-addr-by-name", master), "\n", 2)[0]
	}
	waitFor("a replica promoted", time.Minute, func() bool {
		p := primary()
		return p != "" && p != nodePods[0].fqdn
	})
	waitFor("gwsim healthy on the promoted replica", time.Minute, healthy)
	t.Logf("failover: %s is the primary, gwsim healthy %s after the kill", primary(), time.Since(began).Round(time.Second))
	start(t, nodePods[0].name+" again", c.pod(ctx, nodes, nodeCtr, 0, asPod(nodePods[0])))
	waitFor(nodePods[0].name+" replicates the new primary", time.Minute, func() bool {
		info := cli(true, "-h", nodePods[0].fqdn, "info", "replication")
		return strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up")
	})
	if !healthy() {
		t.Error("gwsim not healthy once the old primary is back as a replica")
	}
	for _, p := range append(append([]*proc{gwsim}, nodeProcs...), sentinelProcs...) {
		if strings.Contains(p.output(), password) {
			t.Errorf("%s: the password is in its output", p.name)
		}
	}
}
