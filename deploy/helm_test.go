package deploy

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// helmTool is Helm 3, pinned, run with go run like kustomize: the newest
// v3 that builds with Go 1.26.
const helmTool = "helm.sh/helm/v3/cmd/helm@v3.22.0"

var updateHelmReadme = flag.Bool("update", false, "TestHelmChartReadme rewrites deploy/helm/gwsim/README.md")

// schemasOut is make deploy-check's folder for the schemas.
var schemasOut = flag.String("schemas", "", "TestKustomizeAndKubeconform and TestHelmChart write the strict JSON schemas they validate with into `DIR` (make deploy-check), for kubeconform -schema-location on the user's own manifests")

// schemaDir is where the strict schemas are written: -schemas, else a
// folder of the test's own.
func schemaDir(t *testing.T) string {
	t.Helper()
	if *schemasOut == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(*schemasOut, 0o755); err != nil {
		t.Fatal(err)
	}
	return *schemasOut
}

const chartDir = "deploy/helm/gwsim"

// TestHelmChartReadme: the chart's README is what HelmReadme makes of
// values.yaml (-update rewrites it), so that every value is in it with its
// default; a value without its "# -- " comment is refused. The chart's
// copy of the alerting rules is deploy/prometheus/gwsim-rules.yaml.
func TestHelmChartReadme(t *testing.T) {
	values, err := os.ReadFile(filepath.Join(root, chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := HelmReadme(values)
	if err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(root, chartDir, "README.md")
	if *updateHelmReadme {
		if err := os.WriteFile(readme, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(readme)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s is stale (or missing: %v): go test ./deploy -run TestHelmChartReadme -update", readme, err)
	}
	for _, key := range []string{"replicaCount", "auth.existingSecret", "fleet.configMap", "redis.mode", "ingress.host", "serviceMonitor.enabled", "prometheusRule.enabled", "resources", "image.digest"} {
		if !bytes.Contains(want, []byte("| `"+key+"` |")) {
			t.Errorf("the README does not give %s", key)
		}
	}
	if _, err := HelmReadme([]byte("# -- documented\na: 1\nb: 2\n")); err == nil || !strings.Contains(err.Error(), "b has no") {
		t.Errorf("a value without its comment: %v", err)
	}
	rules, _ := os.ReadFile(filepath.Join(root, "deploy/prometheus/gwsim-rules.yaml"))
	copyOf, _ := os.ReadFile(filepath.Join(root, chartDir, "files/gwsim-rules.yaml"))
	if len(rules) == 0 || !bytes.Equal(rules, copyOf) {
		t.Error("deploy/helm/gwsim/files/gwsim-rules.yaml is not deploy/prometheus/gwsim-rules.yaml: cp the latter over the former")
	}
}

// TestHelmChart: helm lint passes, and helm template renders, for each
// way of running it (one Redis, Sentinel, an external Redis, and every
// option on: Ingress, ServiceMonitor, PrometheusRule, a fleet, a digest;
// one Redis and Sentinel with a password, which checkRedisAuth checks),
// objects that kubeconform finds valid against Kubernetes' own schemas
// (the Prometheus Operator's kinds are checked here instead), whose pods
// pass Pod Security "restricted", with the budget, spread, policies and
// image of the kustomize recipes. Bad values fail with a message naming
// the value.
func TestHelmChart(t *testing.T) {
	simtest.Heavy(t)
	specDir := needModule(t, kubernetesSpec)
	spec, err := os.ReadFile(filepath.Join(specDir, "api", "openapi-spec", "swagger.json"))
	if err != nil {
		t.Fatal(err)
	}
	schemas := schemaDir(t)
	chart, err := filepath.Abs(filepath.Join(root, chartDir))
	if err != nil {
		t.Fatal(err)
	}
	secret := []string{"--set", "auth.existingSecret=gwsim-admin"}
	if out, err := goTool(t, helmTool, nil, append([]string{"lint", "--strict", chart}, secret...)...); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
	rules, err := os.ReadFile(filepath.Join(root, "deploy/prometheus/gwsim-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, set := range map[string][]string{
		"single":                   nil,
		"sentinel":                 {"redis.mode=sentinel"},
		"single with a password":   {"redis.auth.existingSecret=redis-auth"},
		"sentinel with a password": {"redis.mode=sentinel", "redis.auth.existingSecret=redis-auth"},
		"external":                 {"redis.mode=external", "redis.url=redis://redis.internal:6379/0", "networkPolicy.enabled=false"},
		"everything": {"fleet.configMap=gwsim-fleet", "ingress.enabled=true", "ingress.host=gwsim.staging.example.com",
			"ingress.tlsSecret=gwsim-tls", "serviceMonitor.enabled=true", "prometheusRule.enabled=true",
			"image.digest=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "allowedHosts={gwsim.internal}"},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"template", "gwsim", chart}, secret...)
			for _, s := range set {
				args = append(args, "--set", s)
			}
			out, err := goTool(t, helmTool, nil, args...)
			if err != nil {
				t.Fatalf("helm template: %v", err)
			}
			objs := k8sObjects(t, name, out)
			var plain []k8sObject
			var buf bytes.Buffer
			for _, o := range objs {
				switch o.Kind {
				case "ServiceMonitor", "PrometheusRule":
					checkOperatorKind(t, o, rules)
					continue
				}
				plain = append(plain, o)
				b, _ := yaml.Marshal(o.raw)
				buf.WriteString("---\n")
				buf.Write(b)
			}
			if err := writeSchemas(spec, schemas, plain); err != nil {
				t.Fatal(err)
			}
			kubeconform(t, schemas, buf.Bytes(), len(plain))
			checkRestricted(t, name, plain)
			checkHardened(t, name, plain)
			checkOperable(t, name, plain)
			text := string(out)
			if name == "everything" {
				for _, want := range []string{"gwsim.staging.example.com", "gwsim.internal", "@sha256:0123", "/etc/gwsim/fleet.yaml", "kind: ServiceMonitor", "kind: PrometheusRule", "kind: Ingress"} {
					if !strings.Contains(text, want) {
						t.Errorf("no %s", want)
					}
				}
			}
			if strings.HasPrefix(name, "sentinel") && (!strings.Contains(text, "redis+sentinel://") || !strings.Contains(text, "replicated")) {
				t.Error("sentinel: gwsim does not follow the Sentinels with --store-durability replicated")
			}
			switch name {
			case "single with a password":
				checkRedisAuth(t, name, objs, "redis-auth/password", "", "redis", "gwsim")
			case "sentinel with a password":
				checkRedisAuth(t, name, objs, "redis-auth/password", "", "redis-node", "redis-sentinel", "gwsim")
			}
		})
	}
	for _, c := range []struct {
		set  []string
		want string
	}{
		// values.schema.json names a value by its path.
		{nil, "/auth/existingSecret"},
		{append(slices.Clone(secret), "--set", "redis.mode=cluster"), "/redis/mode"},
		{append(slices.Clone(secret), "--set", "redis.mode=external"), "/redis/url"},
		{append(slices.Clone(secret), "--set", "image.tag=latest"), "/image/tag"},
		{append(slices.Clone(secret), "--set", "redis.durability=eventually"), "/redis/durability"},
		{append(slices.Clone(secret), "--set", "redis.durability=replicated"), "/redis/durability"},
	} {
		out, err := goTool(t, helmTool, nil, append([]string{"template", "gwsim", chart}, c.set...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("helm template %v: %v (want an error naming %s)\n%.200s", c.set, err, c.want, out)
		}
	}
}

// checkOperatorKind checks the Prometheus Operator's objects, which
// Kubernetes' schemas do not know: the ServiceMonitor scrapes /metrics of
// the gwsim Service with the admin token from its Secret; the
// PrometheusRule holds the groups of deploy/prometheus/gwsim-rules.yaml.
func checkOperatorKind(t *testing.T, o k8sObject, rules []byte) {
	t.Helper()
	spec, _ := o.raw["spec"].(map[string]any)
	switch o.Kind {
	case "ServiceMonitor":
		s := render(spec)
		for _, want := range []string{"path: /metrics", "port: http", "type: Bearer", "name: gwsim-admin", "app.kubernetes.io/name: gwsim"} {
			if !strings.Contains(s, want) {
				t.Errorf("ServiceMonitor lacks %s:\n%s", want, s)
			}
		}
	case "PrometheusRule":
		var want map[string]any
		if err := yaml.Unmarshal(rules, &want); err != nil {
			t.Fatal(err)
		}
		if render(spec) != render(want) {
			t.Errorf("the PrometheusRule is not deploy/prometheus/gwsim-rules.yaml:\n%s", render(spec))
		}
	}
}
