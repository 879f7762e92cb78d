package deploy

import (
	"fmt"
	"os"
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
// kustomization lists every manifest.
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
			if k, ok := m["kind"].(string); ok && objs[k] == nil && filepath.Base(f) != "load-job.yaml" {
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
	for _, want := range []string{"readinessProbe", "/_sim/health", "livenessProbe", "requests", "secretKeyRef", "gwsim-admin", "GWSIM_ADMIN_TOKEN", "/etc/gwsim"} {
		if !strings.Contains(text, want) {
			t.Errorf("Deployment container lacks %s", want)
		}
	}
	if !strings.Contains(render(objs["Deployment"]), "gwsim-fleet") {
		t.Error("Deployment does not mount the fleet ConfigMap")
	}
	job := render(objs["Job"])
	for _, want := range []string{"gwconform", "http://gwsim:8080", "--report-dir", "persistentVolumeClaim", "gwconform-reports"} {
		if !strings.Contains(job, want) {
			t.Errorf("Job lacks %s", want)
		}
	}
	kust := objs["Kustomization"]
	listed := toStrings(kust["resources"])
	for _, f := range files {
		base := filepath.Base(f)
		if base == "kustomization.yaml" || base == "fleet.yaml" || base == "load-job.yaml" { // the load is started on demand
			continue
		}
		if !slices.Contains(listed, base) {
			t.Errorf("kustomization.yaml does not list %s", base)
		}
	}
	if !strings.Contains(render(kust), "gwsim-fleet") || !strings.Contains(render(kust), "gwsim-admin") {
		t.Error("kustomization.yaml does not generate the fleet ConfigMap and the admin Secret")
	}
	if _, err := os.Stat(filepath.Join(root, "deploy/k8s/admin-token.env")); err != nil {
		t.Error(err)
	}
}

// TestLoadJob: deploy/k8s/load-job.yaml is an Indexed Job whose shard
// count is told to gwconform (GWCONFORM_SHARDS = completions = the
// merge's --expect), writing to a volume every node can write, and a
// merge of the results on the same volume.
func TestLoadJob(t *testing.T) {
	docs, err := ParseYAML(filepath.Join(root, "deploy/k8s/load-job.yaml"))
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
