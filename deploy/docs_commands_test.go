package deploy

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.yaml.in/yaml/v3"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// The operator's guides whose commands TestDocsCommands reads.
var operatorDocs = []string{"docs/deploy.md", "docs/redis.md", "docs/load.md", "deploy/helm/gwsim/README.md"}

// docCommand is one simple command of a guide's shell block: its words
// (quotes removed, $VAR left as written), a for loop's body once per value.
type docCommand struct {
	Where string
	Words []string
}

func (c docCommand) String() string { return c.Where + ": " + strings.Join(c.Words, " ") }

// docCommands reads the simple commands of a Markdown file's shell
// blocks: each line (backslash-newline joined) split at operators, VAR=
// assignments dropped, `for V in A B; do CMD; done` expanded.
func docCommands(t *testing.T, file string) []docCommand {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	var out []docCommand
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		fence := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(fence, "```") {
			continue
		}
		lang := strings.TrimPrefix(fence, "```")
		start := i + 1
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
		}
		if lang != "sh" && lang != "bash" && lang != "shell" && lang != "" {
			continue
		}
		body := strings.ReplaceAll(strings.Join(lines[start:min(i, len(lines))], "\n"), "\\\n", " ")
		for k, line := range strings.Split(body, "\n") {
			where := fmt.Sprintf("%s:%d", file, start+k+1)
			words := shellWords(line)
			var loopVar string
			var loopValues []string
			if len(words) > 4 && words[0] == "for" && words[2] == "in" {
				j := slices.Index(words, "do")
				if j < 0 {
					t.Fatalf("%s: a for loop without do", where)
				}
				loopVar, loopValues = words[1], slices.DeleteFunc(slices.Clone(words[3:j]), func(w string) bool { return w == ";" })
				words = words[j+1:]
			}
			for s := 0; s < len(words); {
				e := s
				for e < len(words) && !isOperator(words[e]) {
					e++
				}
				cmd := words[s:e]
				for len(cmd) > 0 && isAssignment(cmd[0]) {
					cmd = cmd[1:]
				}
				if len(cmd) > 0 && cmd[0] != "done" {
					if loopVar == "" {
						out = append(out, docCommand{where, slices.Clone(cmd)})
					}
					for _, v := range loopValues {
						c := make([]string, len(cmd))
						for n, w := range cmd {
							c[n] = strings.ReplaceAll(w, "$"+loopVar, v)
						}
						out = append(out, docCommand{where, c})
					}
				}
				if e < len(words) && words[e] == "\x00#" {
					break
				}
				s = e + 1
			}
		}
	}
	return out
}

// TestDocsCommandsRead: the reader finds each kind of command, loops
// expanded, so that TestDocsCommands has something to check.
func TestDocsCommandsRead(t *testing.T) {
	count := map[string]int{}
	for _, f := range operatorDocs {
		for _, c := range docCommands(t, f) {
			count[c.Words[0]]++
		}
	}
	if count["kubectl"] < 10 || count["docker"] < 5 || count["gwsim"] < 6 || count["gwconform"] < 10 || count["helm"] < 1 {
		t.Errorf("commands found: %v", count)
	}
}

// TestDocsCommands reads every kubectl, docker, gwsim and gwconform
// command of docs/deploy.md, docs/redis.md and docs/load.md.
//
// kubectl and docker cannot run here (no cluster, no Docker engine): each
// file they name (-f, -k, a build context) must exist, a -k directory must
// be one TestKustomizeAndKubeconform builds and validates, an -f
// manifest must be Kubernetes objects, and a Compose service a command
// names must be in its file.
//
// gwsim and gwconform commands run for real, in a scratch folder, in the
// guides' order, with what they name stood in for: their hosts by gwsim
// replicas started here on one Redis (h1, h2, h3, staging.example.com,
// serving the fleet the guide's own `gwsim fleet` wrote) and a gwsim on
// the demo fleet (127.0.0.1:8080), a Redis URL by a redis-server, a
// Sentinel URL by a Redis primary, replica and three Sentinels. A server
// (gwsim serve) must start and answer /_sim/health, and is stopped; any
// other must exit 0. Only durations are shortened (1 s), rates capped
// (400/s), and --addr set to a free loopback port; the shards of a
// spread load ("on each of 4 machines") all run. Commands that read what
// only a cluster gives (kubectl cp's load-results/) are not run, and say so.
func TestDocsCommands(t *testing.T) {
	var cmds []docCommand
	for _, f := range operatorDocs {
		cmds = append(cmds, docCommands(t, f)...)
	}
	t.Run("kubectl and docker", func(t *testing.T) {
		for _, c := range cmds {
			switch c.Words[0] {
			case "kubectl":
				checkKubectl(t, c)
			case "docker":
				checkDocker(t, c)
			case "helm":
				checkHelm(t, c)
			}
		}
	})
	t.Run("gwsim and gwconform", func(t *testing.T) { runDocPrograms(t, cmds) })
}

func checkKubectl(t *testing.T, c docCommand) {
	t.Helper()
	for _, w := range c.Words {
		// create configmap/secret --from-file=[KEY=]PATH: the file exists.
		if v, ok := strings.CutPrefix(w, "--from-file="); ok {
			p := v[strings.LastIndex(v, "=")+1:]
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("%s: %v", c, err)
			}
		}
	}
	for i := 1; i+1 < len(c.Words); i++ {
		flag, p := c.Words[i], c.Words[i+1]
		switch flag {
		case "-k", "--kustomize":
			if !slices.Contains(kustomizations, p) {
				t.Errorf("%s: %s is not a kustomization TestKustomizeAndKubeconform builds (%v)", c, p, kustomizations)
			}
			if _, err := os.Stat(filepath.Join(root, p, "kustomization.yaml")); err != nil {
				t.Errorf("%s: %v", c, err)
			}
		case "-f", "--filename":
			if !slices.ContainsFunc(c.Words, func(s string) bool {
				return s == "apply" || s == "create" || s == "delete" || s == "replace" || s == "diff"
			}) {
				continue // kubectl logs -f: follow
			}
			b, err := os.ReadFile(filepath.Join(root, p))
			if err != nil {
				t.Errorf("%s: %v", c, err)
				continue
			}
			objs := k8sObjects(t, p, b)
			if len(objs) == 0 {
				t.Errorf("%s: %s holds no Kubernetes object", c, p)
			}
		}
	}
}

// checkHelm: a helm install, upgrade, template or lint names a chart of
// the repository (its Chart.yaml is there; TestHelmChart lints and
// renders it), every --set names a value of its values.yaml, and every
// -f file exists.
func checkHelm(t *testing.T, c docCommand) {
	t.Helper()
	w := c.Words
	if len(w) < 2 || !slices.Contains([]string{"install", "upgrade", "template", "lint"}, w[1]) {
		t.Errorf("%s: a helm command the docs test does not know", c)
		return
	}
	chart := ""
	for _, a := range w[2:] {
		if strings.Contains(a, "/") && !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") {
			chart = a
			break
		}
	}
	if chart != chartDir {
		t.Errorf("%s: names chart %q, not %s", c, chart, chartDir)
		return
	}
	b, err := os.ReadFile(filepath.Join(root, chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	for i := 2; i+1 < len(w); i++ {
		switch w[i] {
		case "--set", "--set-string":
			key, _, _ := strings.Cut(w[i+1], "=")
			var node any = values
			for _, part := range strings.Split(key, ".") {
				m, ok := node.(map[string]any)
				if !ok {
					node = nil
					break
				}
				node, ok = m[part]
				if !ok {
					node = nil
					break
				}
			}
			if node == nil {
				t.Errorf("%s: --set %s: the chart has no value %s", c, w[i+1], key)
			}
		case "-f", "--values":
			if _, err := os.Stat(filepath.Join(root, w[i+1])); err != nil {
				t.Errorf("%s: %v", c, err)
			}
		}
	}
}

func checkDocker(t *testing.T, c docCommand) {
	t.Helper()
	w := c.Words
	switch {
	case len(w) > 1 && w[1] == "build":
		ctx := w[len(w)-1]
		file := filepath.Join(ctx, "Dockerfile")
		if i := slices.Index(w, "-f"); i > 0 {
			file = w[i+1]
		}
		if _, err := os.Stat(filepath.Join(root, file)); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	case len(w) > 1 && w[1] == "compose":
		i := slices.Index(w, "-f")
		if i < 0 {
			t.Errorf("%s: which Compose file?", c)
			return
		}
		b, err := os.ReadFile(filepath.Join(root, w[i+1]))
		if err != nil {
			t.Errorf("%s: %v", c, err)
			return
		}
		var f struct{ Services map[string]any }
		if err := yaml.Unmarshal(b, &f); err != nil {
			t.Errorf("%s: %v", c, err)
			return
		}
		// run SERVICE, kill [-s SIG] SERVICE, logs SERVICE...: the last word.
		for _, sub := range []string{"run", "kill", "logs", "restart", "stop", "start"} {
			if slices.Contains(w, sub) && f.Services[w[len(w)-1]] == nil {
				t.Errorf("%s: %s has no service %s", c, w[i+1], w[len(w)-1])
			}
		}
	case len(w) > 1 && w[1] == "run":
		// The image's programs and flags: CheckPrograms in cmd/ reads them.
		if img, _, _, ok := dockerRun(w); !ok || !IsImage(img) {
			t.Errorf("%s: not our image", c)
		}
	case len(w) > 2 && (w[1] == "push" || w[1] == "buildx" && w[2] == "imagetools"):
		// Publishing: our image, by the tag make image gives it.
		img := w[len(w)-1]
		if !IsImage(img) || !strings.HasSuffix(img, ":"+chartAppVersion(t)) {
			t.Errorf("%s: not our image by the chart's appVersion %s (what make image tags)", c, chartAppVersion(t))
		}
	default:
		t.Errorf("%s: a docker command this test does not know", c)
	}
}

// docWorld is what the guides' programs run against.
type docWorld struct {
	dir, token    string
	gwsim, gwconf string
	hosts         map[string]string // scheme://host[:port] in the docs → a local URL
	redisURL      string
	redis         *redis.Client
	sentinelURL   string
	replicaRedis  *simtest.Redis
	ran, notRun   []string
}

func runDocPrograms(t *testing.T, cmds []docCommand) {
	w := &docWorld{dir: t.TempDir(), token: "docs-test-admin-token-0123456789abcdef", hosts: map[string]string{}}
	w.gwsim, w.gwconf = simtest.Binary(t, "gwsim"), simtest.Binary(t, "gwconform")
	other := simtest.StartRedis(t, false)
	w.redisURL = other.URL()
	w.redis = redis.NewClient(&redis.Options{Addr: other.Addr()})
	t.Cleanup(func() { w.redis.Close() })
	w.sentinelURL = simtest.StartSentinel(t).URL()
	demo := simtest.Serve(t, w.gwsim, "--admin-token", w.token)
	w.hosts["http://127.0.0.1:8080"] = demo.URL

	// The fleet first: the guides' own gwsim fleet writes fleet.yaml.
	made := false
	for _, c := range cmds {
		if c.Words[0] == "gwsim" && len(c.Words) > 1 && c.Words[1] == "fleet" {
			w.run(t, c)
			made = true
		}
	}
	if _, err := os.Stat(filepath.Join(w.dir, "fleet.yaml")); !made || err != nil {
		t.Fatalf("no guide's gwsim fleet wrote fleet.yaml: %v", err)
	}
	// Three replicas on one Redis serving it: h1, h2, h3 and staging.
	w.replicaRedis = simtest.StartRedis(t, false)
	for i, host := range []string{"http://h1:8081", "http://h2:8082", "http://h3:8083"} {
		p := simtest.Serve(t, w.gwsim, "--store", w.replicaRedis.URL(), "--fleet", filepath.Join(w.dir, "fleet.yaml"), "--admin-token", w.token)
		w.hosts[host] = p.URL
		if i == 0 {
			w.hosts["https://staging.example.com"] = p.URL
		}
	}
	for _, c := range cmds {
		if p := program(c.Words[0]); p == "" || (p == "gwsim" && len(c.Words) > 1 && c.Words[1] == "fleet") {
			continue
		}
		if slices.ContainsFunc(c.Words, func(s string) bool { return strings.Contains(s, "load-results/") }) {
			w.notRun = append(w.notRun, c.String()+" (reads load-results/, which kubectl cp brings from a cluster)")
			continue
		}
		w.run(t, c)
	}
	t.Logf("ran %d commands of the guides:\n  %s", len(w.ran), strings.Join(w.ran, "\n  "))
	t.Logf("not run:\n  %s", strings.Join(w.notRun, "\n  "))
	if len(w.ran) < 12 {
		t.Errorf("only %d commands ran", len(w.ran))
	}
}

var docURL = regexp.MustCompile(`^(https?://[^/,\s]+)`)

// args rewrites a command's arguments for this machine (see TestDocsCommands).
func (w *docWorld) args(t *testing.T, c docCommand) []string {
	t.Helper()
	var out []string
	for i := 1; i < len(c.Words); i++ {
		a := c.Words[i]
		a = strings.ReplaceAll(a, "$GWSIM_ADMIN_TOKEN", w.token)
		switch {
		case a == "--addr" && i+1 < len(c.Words):
			i++
			out = append(out, a, "127.0.0.1:0")
			continue
		case a == "--duration" && i+1 < len(c.Words):
			i++
			out = append(out, a, "1s")
			continue
		case a == "--rate" && i+1 < len(c.Words):
			i++
			r := c.Words[i]
			if len(r) > 3 {
				r = "400"
			}
			out = append(out, a, r)
			continue
		case strings.HasPrefix(a, "redis+sentinel://"):
			a = w.sentinelURL
		case strings.HasPrefix(a, "redis://"):
			a = w.redisURL
		case strings.HasPrefix(a, "/var/"):
			a = filepath.Join(w.dir, a)
			os.MkdirAll(filepath.Dir(a), 0o755)
		case !strings.HasPrefix(a, "-") && !strings.Contains(a, "://"):
			// A file of the scratch folder, named for a server started
			// from elsewhere.
			if _, err := os.Stat(filepath.Join(w.dir, a)); err == nil {
				a = filepath.Join(w.dir, a)
			}
		}
		// Every URL of a list (a,b,c) stands for a local one.
		parts := strings.Split(a, ",")
		for k, p := range parts {
			if m := docURL.FindString(p); m != "" && !strings.HasPrefix(a, "redis") {
				local, ok := w.hosts[m]
				if !ok {
					t.Errorf("%s: the test stands in for no %s", c, m)
					continue
				}
				parts[k] = local + strings.TrimPrefix(p, m)
			}
		}
		out = append(out, strings.Join(parts, ","))
	}
	return out
}

// run runs one command of a guide (see TestDocsCommands).
func (w *docWorld) run(t *testing.T, c docCommand) {
	t.Helper()
	args := w.args(t, c)
	bin := map[string]string{"gwsim": w.gwsim, "gwconform": w.gwconf}[program(c.Words[0])]
	if len(args) > 0 && args[0] == "serve" {
		// A server: a fresh store, then it must start and be healthy.
		w.redis.FlushAll(context.Background())
		p := simtest.Serve(t, bin, append(args[1:], "--admin-token", w.token)...)
		resp, err := http.Get(p.URL + "/_sim/health")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("%s: /_sim/health: %v %v\n%s", c, err, resp, p.Stderr())
		} else {
			resp.Body.Close()
		}
		p.Interrupt(10 * time.Second)
		w.ran = append(w.ran, c.String())
		return
	}
	// "On each of 4 machines, I = 0, 1, 2, 3": every shard, at once.
	runs := [][]string{args}
	if i := slices.Index(args, "--shard"); i >= 0 && strings.HasPrefix(args[i+1], "0/") {
		var n int
		fmt.Sscanf(args[i+1], "0/%d", &n)
		runs = nil
		for k := range n {
			r := make([]string, len(args))
			for j, a := range args {
				if j > 0 && args[j-1] == "--shard" {
					r[j] = fmt.Sprintf("%d/%d", k, n)
					continue
				}
				r[j] = strings.NewReplacer("shard-0", fmt.Sprintf("shard-%d", k), "acks-0", fmt.Sprintf("acks-%d", k)).Replace(a)
			}
			runs = append(runs, r)
		}
	}
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, r...)
			cmd.Dir = w.dir
			cmd.Env = append(os.Environ(), "GWSIM_ADMIN_TOKEN="+w.token)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Errorf("%s\n    ran as: %s %s\n    %v\n%s", c, filepath.Base(bin), strings.Join(r, " "), err, out.String())
			}
		}()
	}
	wg.Wait()
	w.ran = append(w.ran, c.String())
}

// secretFileLine is a guide's command that makes a file of the
// kustomization's secretGenerator.
var secretFileLine = regexp.MustCompile(`(?m)^printf .* > (deploy/k8s/[a-z-]+\.env)$`)

// TestDocsMakeTheSecretFiles runs docs/deploy.md's printf lines that make
// the files deploy/k8s/kustomization.yaml turns into Secrets, each the
// line its comment there gives too, in a scratch folder, several times:
// the admin token is of 32 characters or more, Redis's password of 20 or
// more, of letters, digits and -._~ only (it goes into gwsim's store URL
// unescaped), each on the key its Secret's references name.
func TestDocsMakeTheSecretFiles(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs/deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	kust, err := os.ReadFile(filepath.Join(root, "deploy/k8s/kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*regexp.Regexp{
		"deploy/k8s/admin-token.env":    regexp.MustCompile(`^token=[A-Za-z0-9]{32,}\n$`),
		"deploy/k8s/redis-password.env": regexp.MustCompile(`^password=[A-Za-z0-9._~-]{20,}\n$`),
	}
	found := map[string]bool{}
	for _, m := range secretFileLine.FindAllStringSubmatch(string(doc), -1) {
		line, file := m[0], m[1]
		re, ok := want[file]
		if !ok {
			t.Errorf("docs/deploy.md makes %s, which the kustomization does not read", file)
			continue
		}
		found[file] = true
		if !strings.Contains(string(kust), "#   "+line+"\n") {
			t.Errorf("deploy/k8s/kustomization.yaml does not give docs/deploy.md's line:\n%s", line)
		}
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "deploy/k8s"), 0o755); err != nil {
			t.Fatal(err)
		}
		for range 20 {
			cmd := exec.Command("sh", "-c", line)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v %s", line, err, out)
			}
			b, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			if !re.Match(b) {
				t.Fatalf("%s made a file that is not %s (its length: %d)", line, re, len(b))
			}
		}
	}
	for file := range want {
		if !found[file] {
			t.Errorf("docs/deploy.md does not say how to make %s", file)
		}
	}
}
