package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

const root = ".."

// TestYAMLParses: every YAML recipe parses, and each is what it claims to
// be: Kubernetes objects with apiVersion and kind, a Compose file with
// services, workflows with jobs, a fleet that gwsim would load.
func TestYAMLParses(t *testing.T) {
	files, err := YAMLFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 8 {
		t.Fatalf("only %d YAML files under deploy/: %v", len(files), files)
	}
	kinds := map[string]bool{}
	for _, f := range files {
		docs, err := ParseYAML(f)
		if err != nil {
			t.Error(err)
			continue
		}
		rel, _ := filepath.Rel(root, f)
		for _, d := range docs {
			var m map[string]any
			if err := d.Decode(&m); err != nil {
				t.Errorf("%s: not a mapping: %v", rel, err)
				continue
			}
			switch {
			case rel == "deploy/k8s/fleet.yaml":
				b, _ := os.ReadFile(f)
				if _, err := fleet.Parse(b); err != nil {
					t.Errorf("%s: gwsim would refuse the fleet: %v", rel, err)
				}
			case strings.HasPrefix(rel, "deploy/k8s/"):
				if m["apiVersion"] == nil || m["kind"] == nil {
					t.Errorf("%s: a document without apiVersion or kind", rel)
				}
				kinds[m["kind"].(string)] = true
			case rel == "deploy/compose.yaml":
				services, _ := m["services"].(map[string]any)
				for _, s := range []string{"redis", "gwsim", "lb"} {
					if services[s] == nil {
						t.Errorf("%s: no service %s", rel, s)
					}
				}
				g := services["gwsim"].(map[string]any)
				if g["deploy"].(map[string]any)["replicas"] != 3 {
					t.Errorf("%s: gwsim replicas %v", rel, g["deploy"])
				}
				if !strings.Contains(strings.Join(toStrings(services["redis"].(map[string]any)["command"]), " "), "--appendonly yes") {
					t.Errorf("%s: redis without AOF", rel)
				}
			case rel == "deploy/ci/github-actions.yaml":
				if len(m["jobs"].(map[string]any)) < 2 {
					t.Errorf("%s: jobs %v", rel, m["jobs"])
				}
			case rel == "deploy/ci/gitlab-ci.yaml":
				if m["conformance:staging"] == nil || m["app-tests"] == nil {
					t.Errorf("%s: jobs missing", rel)
				}
			}
		}
	}
	for _, k := range []string{"Deployment", "Service", "StatefulSet", "Job", "PersistentVolumeClaim", "Kustomization", "Namespace"} {
		if !kinds[k] {
			t.Errorf("no Kubernetes %s in deploy/k8s", k)
		}
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestKubernetesManifests: the Deployment has both probes on gwsim's port
// and resource requests, takes the admin token from the Secret and the
// fleet from the ConfigMap; the Job keeps its reports on a volume; the
// kustomization lists every manifest and makes the Secrets from files the
// user makes; Redis requires its password (checkRedisAuth).
func TestKubernetesManifests(t *testing.T) {
	objs := map[string]map[string]any{}
	files, _ := filepath.Glob(filepath.Join(root, "deploy/k8s/*.yaml"))
	for _, f := range files {
		docs, err := ParseYAML(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			var m map[string]any
			d.Decode(&m)
			if k, ok := m["kind"].(string); ok && objs[k] == nil {
				objs[k] = m
			}
		}
	}
	container := func(kind string) map[string]any {
		spec := objs[kind]["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		return spec["containers"].([]any)[0].(map[string]any)
	}
	c := container("Deployment")
	text := render(c)
	for _, want := range []string{"readinessProbe", "/_sim/ready", "livenessProbe", "timeoutSeconds", "requests", "secretKeyRef", "gwsim-admin", "GWSIM_ADMIN_TOKEN", "/etc/gwsim"} {
		if !strings.Contains(text, want) {
			t.Errorf("Deployment container lacks %s", want)
		}
	}
	if !strings.Contains(render(objs["Deployment"]), "gwsim-fleet") {
		t.Error("Deployment does not mount the fleet ConfigMap")
	}
	job := render(objs["Job"])
	for _, want := range []string{"gwconform", "http://gwsim:8080", "--observer", "--report-dir", "persistentVolumeClaim", "gwconform-reports"} {
		if !strings.Contains(job, want) {
			t.Errorf("Job lacks %s", want)
		}
	}
	kust := objs["Kustomization"]
	listed := toStrings(kust["resources"])
	for _, f := range files {
		base := filepath.Base(f)
		if base == "kustomization.yaml" || base == "fleet.yaml" {
			continue
		}
		if !slices.Contains(listed, base) {
			t.Errorf("kustomization.yaml does not list %s", base)
		}
	}
	if !strings.Contains(render(kust), "gwsim-fleet") || !strings.Contains(render(kust), "gwsim-admin") {
		t.Error("kustomization.yaml does not generate the fleet ConfigMap and the admin Secret")
	}
	// No token or password ships: admin-token.env and redis-password.env
	// are the user's to make (ignored by git), and kustomize fails
	// without them, so no known token or Redis password is deployed.
	for _, f := range []string{"deploy/k8s/admin-token.env", "deploy/k8s/redis-password.env"} {
		if out, err := exec.Command("git", "-C", root, "ls-files", f).Output(); err != nil || len(out) > 0 {
			t.Errorf("%s is in the repository (%v): a known secret would be deployed", f, err)
		}
		if out, err := exec.Command("git", "-C", root, "check-ignore", "-q", f).CombinedOutput(); err != nil {
			t.Errorf("%s is not ignored by git, so a user's secret could be committed: %v %s", f, err, out)
		}
		if !strings.Contains(render(kust), filepath.Base(f)) {
			t.Errorf("kustomization.yaml does not make a Secret from %s", filepath.Base(f))
		}
	}
	// Redis requires the password, as the manifests are written (the
	// Sentinel overlay's gwsim is a patch: TestKustomizeAndKubeconform
	// checks it built).
	for _, c := range []struct {
		glob string
		apps []string
	}{
		{"deploy/k8s/*.yaml", []string{"redis", "gwsim"}},
		{"deploy/k8s-sentinel/redis-sentinel.yaml", []string{"redis-node", "redis-sentinel"}},
	} {
		var objs []k8sObject
		files, _ := filepath.Glob(filepath.Join(root, c.glob))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			objs = append(objs, k8sObjects(t, f, b)...)
		}
		checkRedisAuth(t, c.glob, objs, "redis-auth/password", "", c.apps...)
	}
}

// TestLoadJob: deploy/k8s-load/load-job.yaml is an Indexed Job whose shard
// count is told to gwconform (GWCONFORM_SHARDS = completions = the
// merge's --expect), writing to a volume every node can write, and a
// merge of the results on the same volume.
func TestLoadJob(t *testing.T) {
	docs, err := ParseYAML(filepath.Join(root, "deploy/k8s-load/load-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]map[string]any{}
	var claim map[string]any
	for _, d := range docs {
		var m map[string]any
		d.Decode(&m)
		switch m["kind"] {
		case "Job":
			jobs[m["metadata"].(map[string]any)["name"].(string)] = m
		case "PersistentVolumeClaim":
			claim = m
		}
	}
	shards, merge := jobs["gwconform-load"], jobs["gwconform-load-merge"]
	if shards == nil || merge == nil || claim == nil {
		t.Fatalf("want the Jobs gwconform-load and gwconform-load-merge and a claim: %v", jobs)
	}
	spec := shards["spec"].(map[string]any)
	if spec["completionMode"] != "Indexed" || spec["completions"] != spec["parallelism"] {
		t.Errorf("the shards' Job: completionMode %v, completions %v, parallelism %v", spec["completionMode"], spec["completions"], spec["parallelism"])
	}
	n := fmt.Sprint(spec["completions"])
	text := render(shards)
	for _, want := range []string{"GWCONFORM_SHARDS", "value: \"" + n + "\"", "--report-dir", "gwconform-load-results", "job-completion-index"} {
		if !strings.Contains(text, want) {
			t.Errorf("the shards' Job lacks %s", want)
		}
	}
	if m := render(merge); !strings.Contains(m, "- --expect\n") || !strings.Contains(m, "- \""+n+"\"") || !strings.Contains(m, "gwconform-load-results") {
		t.Errorf("the merge Job does not expect %s results on the shared volume:\n%s", n, m)
	}
	if !strings.Contains(render(claim), "ReadWriteMany") {
		t.Error("the results' claim is not ReadWriteMany: shards on several nodes write to it")
	}
}

func render(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}

// TestRecipesQuoted: docs/ci.md quotes each CI recipe file whole, so the
// page and the files cannot drift apart.
func TestRecipesQuoted(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs/ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"deploy/ci/github-actions.yaml", "deploy/ci/gitlab-ci.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "```yaml\n"+string(b)+"```") {
			t.Errorf("docs/ci.md does not quote %s as it is", f)
		}
	}
}

// TestDockerfile: a build stage and a run stage, static binaries, a
// non-root user, the health check on /_sim/health, both programs copied,
// and every package it builds exists as a main package.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ins := ParseDockerfile(string(b))
	var froms, users, health, copies, runs []string
	stageOf := map[string]bool{}
	env := ""
	for _, in := range ins {
		switch in.Cmd {
		case "FROM":
			froms = append(froms, in.Args)
			if f := strings.Fields(in.Args); len(f) == 3 && strings.EqualFold(f[1], "AS") {
				stageOf[f[2]] = true
			}
			users = nil // USER of the last stage counts
		case "USER":
			users = append(users, in.Args)
		case "HEALTHCHECK":
			health = append(health, in.Args)
		case "COPY":
			copies = append(copies, in.Args)
		case "RUN":
			runs = append(runs, in.Args)
		case "ENV":
			env += " " + in.Args
		}
	}
	if len(froms) < 2 {
		t.Errorf("not multi-stage: FROM %v", froms)
	}
	if len(users) == 0 || slices.ContainsFunc(users, func(u string) bool {
		name, _, _ := strings.Cut(u, ":")
		return name == "root" || name == "0"
	}) {
		t.Errorf("final stage user %v: must be set and not root", users)
	}
	if len(health) != 1 || !strings.Contains(health[0], "/_sim/health") {
		t.Errorf("HEALTHCHECK %v", health)
	}
	if !strings.Contains(env, "CGO_ENABLED=0") {
		t.Error("binaries not built with CGO_ENABLED=0")
	}
	fromStage := regexp.MustCompile(`--from=(\S+)`)
	copied := ""
	for _, c := range copies {
		if m := fromStage.FindStringSubmatch(c); m != nil {
			if !stageOf[m[1]] {
				t.Errorf("COPY --from=%s: no such stage", m[1])
			}
			copied += c
		}
	}
	built := regexp.MustCompile(`go build [^&]*?(\./cmd/\S+)`)
	var pkgs []string
	for _, r := range runs {
		for _, m := range built.FindAllStringSubmatch(r, -1) {
			pkgs = append(pkgs, m[1])
		}
	}
	for _, want := range []string{"./cmd/gwsim", "./cmd/gwconform"} {
		if !slices.Contains(pkgs, want) {
			t.Errorf("the Dockerfile does not build %s (builds %v)", want, pkgs)
		}
		if !strings.Contains(copied, filepath.Base(want)) {
			t.Errorf("the run stage does not get %s", filepath.Base(want))
		}
	}
	for _, p := range pkgs {
		src, err := os.ReadFile(filepath.Join(root, p, "main.go"))
		if err != nil || !strings.Contains(string(src), "package main") {
			t.Errorf("%s is not a main package: %v", p, err)
		}
	}
}

// TestCommandLinesFound: the reader finds the command lines a person
// would, so that the flag checks in cmd/ have something to check.
func TestCommandLinesFound(t *testing.T) {
	lines, err := All(root)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, l := range lines {
		count[l.Program]++
	}
	if count["gwsim"] < 10 || count["gwconform"] < 6 {
		t.Errorf("found %v command lines:\n%v", count, lines)
	}
	cases := []struct {
		text string
		want []string
	}{
		{`gwsim serve --addr 0.0.0.0:8080 &`, []string{"gwsim serve --addr 0.0.0.0:8080"}},
		{`"$RUNNER_TEMP/bin/gwconform" run --target "$STAGING_URL" \` + "\n" + `  --report-dir reports | tee out`, []string{"gwconform run --target $STAGING_URL --report-dir reports"}},
		{`go build -o bin/gwsim ./cmd/gwsim && bin/gwsim send message a=1 # done`, []string{"gwsim send message a=1"}},
		{`docker run --rm -v "$PWD:/r" img gwconform run --report-dir /r`, []string{"gwconform run --report-dir /r"}},
		{`GOBIN=x go install github.com/gwdmi/gwtools/cmd/gwconform@latest`, nil},
		{`go run ./cmd/gwsim serve --fleet 'my fleet.yaml' 2>&1`, []string{"gwsim serve --fleet my fleet.yaml"}},
		{`echo gwsim is great`, nil},
		{`kubectl -n gwsim rollout status deployment/gwsim`, nil},
		{`kubectl -n gwsim exec deploy/gwsim -- gwsim send message a=1`, []string{"gwsim send message a=1"}},
	}
	for _, tc := range cases {
		var got []string
		for _, l := range FromShell("t", tc.text) {
			got = append(got, l.Program+" "+strings.Join(l.Args, " "))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestHeavyTestsAreMarkedOnTheirFirstLine: make test runs go test -short
// and make test-heavy does not, and every simtest.Heavy call is the first
// statement of a top-level test, so a suite-level test is skipped whole by
// make test (never half run) and run whole by make test-heavy.
func TestHeavyTestsAreMarkedOnTheirFirstLine(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	recipe := func(target string) string {
		m := regexp.MustCompile(`(?m)^` + target + `:.*\n((?:\t.*\n)+)`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("the Makefile has no %s target", target)
		}
		return string(m[1])
	}
	if r := recipe("test-race"); !strings.Contains(r, " -short ") {
		t.Errorf("make test-race does not run go test -short: %s", r)
	}
	if r := recipe("test-heavy"); strings.Contains(r, "-short") || strings.Contains(r, "-run") {
		t.Errorf("make test-heavy must run every test: %s", r)
	}
	marked := 0
	call := regexp.MustCompile(`(?m)^\t+simtest\.Heavy\(`)
	first := regexp.MustCompile(`(?m)^func Test\w+\((\w+) \*testing\.T\) \{\n\t+simtest\.Heavy\((\w+)\)\n`)
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		calls := len(call.FindAll(src, -1))
		ok := first.FindAllSubmatch(src, -1)
		for _, m := range ok {
			if string(m[1]) != string(m[2]) {
				t.Errorf("%s: simtest.Heavy(%s) in a test of %s", path, m[2], m[1])
			}
		}
		if calls != len(ok) {
			t.Errorf("%s: %d simtest.Heavy calls, %d of them on a test's first line", path, calls, len(ok))
		}
		marked += len(ok)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if marked < 2 {
		t.Errorf("only %d suite-level tests found", marked)
	}
}

// TestContainerLines: every documented docker run of our image works as
// written. It goes through the image's entrypoint rule (Entrypoint) to a
// program and arguments, which the programs' own flag parsing then checks
// (TestRecipeCommandLines in cmd/gwsim and cmd/gwconform); a bind-mounted
// directory that gwconform writes reports to comes with --user, since the
// image's uid cannot write a host directory it does not own; and
// host.docker.internal comes with the --add-host it needs on Linux.
func TestContainerLines(t *testing.T) {
	lines, err := All(root)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, l := range lines {
		if l.Docker == nil {
			continue
		}
		runs[l.Program]++
		if l.Program == "" {
			t.Errorf("%s: docker run %q runs no program", l.Where, l.Docker)
			continue
		}
		words := strings.Join(l.Docker, " ")
		reportDir := ""
		for i, a := range l.Args {
			if a == "--report-dir" && i+1 < len(l.Args) {
				reportDir = l.Args[i+1]
			}
		}
		user, addHost := false, false
		for i := 0; i < len(l.Docker); i++ {
			w := l.Docker[i]
			next := ""
			if i+1 < len(l.Docker) {
				next = l.Docker[i+1]
			}
			switch {
			case w == "--user" || w == "-u":
				user = next != ""
			case strings.HasPrefix(w, "--user="):
				user = true
			case w == "--add-host=host.docker.internal:host-gateway" || (w == "--add-host" && next == "host.docker.internal:host-gateway"):
				addHost = true
			case (w == "-v" || w == "--volume") && reportDir != "":
				host, ctr, _ := strings.Cut(next, ":")
				ctr, _, _ = strings.Cut(ctr, ":")
				bind := strings.HasPrefix(host, "/") || strings.HasPrefix(host, ".") || strings.HasPrefix(host, "$") || strings.HasPrefix(host, "~")
				if bind && (reportDir == ctr || strings.HasPrefix(reportDir, ctr+"/")) {
					defer func(where string) {
						if !user {
							t.Errorf("%s: reports go to the bind mount %s, which uid 10001 may not write: add --user \"$(id -u):$(id -g)\"", where, next)
						}
					}(l.Where)
				}
			}
		}
		if strings.Contains(words, "host.docker.internal") && !addHost {
			t.Errorf("%s: host.docker.internal without --add-host=host.docker.internal:host-gateway (needed on Linux)", l.Where)
		}
	}
	if runs["gwsim"] < 3 || runs["gwconform"] < 2 {
		t.Errorf("docker run lines of our image found: %v; want gwsim's and gwconform's", runs)
	}
	// Compose: a run of the conformance service, which writes to a bind
	// mount, as the user.
	doc, err := os.ReadFile(filepath.Join(root, "docs/deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(doc), "\n") {
		if strings.Contains(line, "docker compose") && strings.Contains(line, " run ") && strings.Contains(line, "conformance") &&
			!strings.Contains(line, `--user "$(id -u):$(id -g)"`) {
			t.Errorf("docs/deploy.md:%d: the conformance service writes to a bind mount: run it with --user", i+1)
		}
	}
}

// TestEntrypointRule: the image's rule as the recipes are read with it,
// and docker run lines read through it (cmd/gwsim's TestEntrypointRule
// holds gwsim's own Entry to the same).
func TestEntrypointRule(t *testing.T) {
	for _, tc := range []struct {
		line, want string
	}{
		{`docker run --rm -p 8080:8080 gwtools serve --addr 0.0.0.0:8080`, "gwsim serve --addr 0.0.0.0:8080"},
		{`docker run --rm gwtools gwsim serve --seed 1`, "gwsim serve --seed 1"},
		{`docker run --rm -v "$PWD/r:/reports" --user "$(id -u):$(id -g)" ghcr.io/gwdmi/gwtools:latest gwconform run --report-dir /reports`, "gwconform run --report-dir /reports"},
		{`podman run --rm --add-host=host.docker.internal:host-gateway gwtools:local gwconform --version`, "gwconform --version"},
		{`docker run --rm --entrypoint gwconform gwtools run`, "gwconform run"},
		{`docker run --rm -p 8080:8080 gwtools`, " "}, // the image's CMD, filled in by All
		{`docker run --rm redis:7 redis-server`, ""},
	} {
		var got []string
		for _, l := range FromShell("t", tc.line) {
			got = append(got, l.Program+" "+strings.Join(l.Args, " "))
		}
		if strings.Join(got, "|") != tc.want {
			t.Errorf("%s: read as %q, want %q", tc.line, got, tc.want)
		}
	}
	if !IsImage("gwtools") || !IsImage("ghcr.io/gwdmi/gwtools:v1.2") || !IsImage("gwtools@sha256:ab") || IsImage("gwtoolsx") || IsImage("registry:5000/other") {
		t.Error("IsImage")
	}
}

// TestKubernetesRollsAndWaits: the conformance Job waits for gwsim's
// health, boundedly, before it runs; the fleet's ConfigMap name carries a
// hash, so that a changed fleet rolls the Deployment; the docs say that a
// changed fleet needs --store-reset and wait for the Job in a way that
// ends when it fails.
func TestKubernetesRollsAndWaits(t *testing.T) {
	docs, err := ParseYAML(filepath.Join(root, "deploy/k8s/conformance-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var job map[string]any
	for _, d := range docs {
		var m map[string]any
		d.Decode(&m)
		if m["kind"] == "Job" {
			job = m
		}
	}
	spec := job["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	inits, _ := spec["initContainers"].([]any)
	if len(inits) != 1 {
		t.Fatalf("the Job has %d init containers, want one that waits for gwsim", len(inits))
	}
	wait := render(inits[0])
	for _, want := range []string{"http://gwsim:8080/_sim/health", "seq 150", "exit 1", "image: gwtools"} {
		if !strings.Contains(wait, want) {
			t.Errorf("the Job's wait lacks %q:\n%s", want, wait)
		}
	}
	kust, err := os.ReadFile(filepath.Join(root, "deploy/k8s/kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		GeneratorOptions struct {
			DisableNameSuffixHash bool `yaml:"disableNameSuffixHash"`
		} `yaml:"generatorOptions"`
		ConfigMapGenerator []struct {
			Name    string `yaml:"name"`
			Options struct {
				DisableNameSuffixHash bool `yaml:"disableNameSuffixHash"`
			} `yaml:"options"`
		} `yaml:"configMapGenerator"`
	}
	if err := yaml.Unmarshal(kust, &k); err != nil {
		t.Fatal(err)
	}
	if k.GeneratorOptions.DisableNameSuffixHash {
		t.Error("kustomization.yaml: disableNameSuffixHash for every generator: a changed fleet would not roll the pods")
	}
	for _, g := range k.ConfigMapGenerator {
		if g.Name == "gwsim-fleet" && g.Options.DisableNameSuffixHash {
			t.Error("kustomization.yaml: gwsim-fleet without its hash: a changed fleet would not roll the pods")
		}
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs/deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	if !strings.Contains(text, "**Changing the fleet.**") || !strings.Contains(text, "needs `--store-reset`") {
		t.Error("docs/deploy.md does not say that a changed fleet needs --store-reset")
	}
	for _, bad := range []string{"wait --for=condition=complete job/gwconform", "--timeout=10m"} {
		if strings.Contains(text, "```sh\n") && strings.Contains(codeBlocks(text), bad) {
			t.Errorf("docs/deploy.md tells to run %q, which waits its whole timeout on a failed run", bad)
		}
	}
}

// codeBlocks is the text of a Markdown page's fenced blocks.
func codeBlocks(md string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if in {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
