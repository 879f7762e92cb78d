package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// The Kubernetes tools the manifests are checked with, pinned, run with
// go run (no install step; the module proxy is the only thing reached).
// Every kustomization must build with the kustomize embedded in the three
// newest kubectl minors (1.32: v5.5.0, 1.33: v5.6.0, 1.34: v5.7.1) and
// with the newest standalone that builds with Go 1.26 (v5.8.3 needs Go
// 1.27): people apply it with the kubectl they have.
var kustomizeTools = []string{
	"sigs.k8s.io/kustomize/kustomize/v5@v5.5.0",
	"sigs.k8s.io/kustomize/kustomize/v5@v5.6.0",
	"sigs.k8s.io/kustomize/kustomize/v5@v5.7.1",
	"sigs.k8s.io/kustomize/kustomize/v5@v5.8.2",
}

const (
	kubeconformTool = "github.com/yannh/kubeconform/cmd/kubeconform@v0.8.0"
	// The Kubernetes release whose OpenAPI document
	// (api/openapi-spec/swagger.json in the k8s.io/kubernetes module)
	// the JSON schemas are made from: kubeconform's own schemas are
	// downloaded from GitHub, which CI cannot reach.
	kubernetesSpec = "k8s.io/kubernetes@v1.36.3"
)

// kustomizations are the directories of every kustomization under
// deploy/ that builds on its own (TestKustomizeAndKubeconform checks that
// none is missing); components are the kustomize Components they share.
var (
	kustomizations = []string{"deploy/k8s", "deploy/k8s-load", "deploy/k8s-sentinel"}
	components     = []string{"deploy/k8s-image"}
)

// goTool runs a pinned Go program with go run, outside this module (so
// that go.mod and go.sum are not touched), and returns its stdout.
func goTool(t *testing.T, tool string, stdin []byte, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"run", tool}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-trimpath", "GO111MODULE=on")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("go run %s %s: %v\n%s%s", tool, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.Bytes(), err
}

// needModule downloads a module (go mod download, outside this module)
// and returns its directory. Where the module proxy cannot be reached
// the test is skipped with one line, except under CI=true, where it fails.
func needModule(t *testing.T, mod string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", mod)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-trimpath", "GO111MODULE=on")
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if err == nil {
		err = json.Unmarshal(out, &info)
	}
	if err == nil && info.Error != "" {
		err = fmt.Errorf("%s", info.Error)
	}
	if err != nil || info.Dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("go mod download %s: %v %s", mod, err, out)
		}
		t.Skipf("go mod download %s failed (no module proxy?): %v", mod, err)
	}
	return info.Dir
}

// buildPassword is Redis's password in what buildTree builds.
const buildPassword = "kustomize-test-redis-password-0123"

// buildTree is a copy of deploy/ with the files the user makes
// (deploy/k8s/admin-token.env and redis-password.env are not in the
// repository), for kustomize to build.
func buildTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "deploy"), os.DirFS(filepath.Join(root, "deploy"))); err != nil {
		t.Fatal(err)
	}
	for file, content := range map[string]string{
		"admin-token.env":    "token=kustomize-test-token-of-32-characters-or-more\n",
		"redis-password.env": "password=" + buildPassword + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, "deploy/k8s", file), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// stackApps are the apps of each kustomization whose Redis auth
// checkRedisAuth checks.
var stackApps = map[string][]string{
	"deploy/k8s":          {"redis", "gwsim"},
	"deploy/k8s-sentinel": {"redis-node", "redis-sentinel", "gwsim"},
}

// kustomizeBuild is kustomize build (tool: one of kustomizeTools) of a
// directory of the tree.
func kustomizeBuild(t *testing.T, tool, tree, dir string) []byte {
	t.Helper()
	out, err := goTool(t, tool, nil, "build", filepath.Join(tree, dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return out
}

// k8sObject is what the checks read of a built object.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
	raw map[string]any
}

func (o k8sObject) String() string { return o.Kind + "/" + o.Metadata.Name }

func k8sObjects(t *testing.T, where string, b []byte) []k8sObject {
	t.Helper()
	var out []k8sObject
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("%s: %v", where, err)
		}
		var o k8sObject
		if err := n.Decode(&o); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if err := n.Decode(&o.raw); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if o.Kind != "" {
			out = append(out, o)
		}
	}
	return out
}

// TestKustomizeAndKubeconform: every kustomization under deploy/ builds
// with each kustomize of kustomizeTools, and what it builds, with the load
// Jobs beside it, is valid for kubeconform against the JSON schemas of
// Kubernetes' own OpenAPI document, strictly: every field known
// (additionalProperties false), every type and enum right, every required
// field there. Every version builds the same objects. Beyond the schemas:
// every namespaced object is in the namespace gwsim, every ConfigMap,
// Secret, claim and Service a pod or a URL names is one the build makes
// (or, for the load Jobs, one the stack makes), and every pod passes Pod
// Security "restricted" (checkRestricted) with the images, disruption
// budget, spread and network policies of checkHardened. Without the admin
// token file or Redis's password file the user makes, the build fails;
// the Redis of deploy/k8s and deploy/k8s-sentinel requires the password,
// which gwsim gets from the environment (checkRedisAuth). kubeconform is shown to
// refuse a broken Deployment, so that a pass means something.
func TestKustomizeAndKubeconform(t *testing.T) {
	simtest.Heavy(t)
	specDir := needModule(t, kubernetesSpec)
	schemas := schemaDir(t)
	spec, err := os.ReadFile(filepath.Join(specDir, "api", "openapi-spec", "swagger.json"))
	if err != nil {
		t.Fatal(err)
	}

	var found, foundComponents []string
	filepath.WalkDir(filepath.Join(root, "deploy"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "kustomization.yaml" {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			b, _ := os.ReadFile(p)
			if strings.Contains(string(b), "\nkind: Component\n") {
				foundComponents = append(foundComponents, filepath.ToSlash(rel))
			} else {
				found = append(found, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	slices.Sort(found)
	slices.Sort(foundComponents)
	if !slices.Equal(found, kustomizations) || !slices.Equal(foundComponents, components) {
		t.Errorf("the kustomizations under deploy/ are %v and the components %v; the test builds %v with %v", found, foundComponents, kustomizations, components)
	}

	tree := buildTree(t)
	newest := kustomizeTools[len(kustomizeTools)-1]
	load := k8sObjects(t, "deploy/k8s-load", kustomizeBuild(t, newest, tree, "deploy/k8s-load"))
	built := map[string]string{} // dir: what the newest kustomize builds, normalised
	for _, tool := range slices.Backward(kustomizeTools) {
		version := tool[strings.LastIndex(tool, "@")+1:]
		for _, dir := range kustomizations {
			t.Run(version+"/"+filepath.Base(dir), func(t *testing.T) {
				out := kustomizeBuild(t, tool, tree, dir)
				objs := k8sObjects(t, dir, out)
				if least := map[bool]int{true: 3, false: 8}[dir == "deploy/k8s-load"]; len(objs) < least {
					t.Fatalf("kustomize build %s: %d objects", dir, len(objs))
				}
				if n := normalised(t, objs); tool == newest {
					built[dir] = n
				} else if n != built[dir] {
					t.Errorf("kustomize %s builds %s otherwise than %s", version, dir, newest)
				}
				if err := writeSchemas(spec, schemas, append(slices.Clone(objs), load...)); err != nil {
					t.Fatal(err)
				}
				all, want := out, len(objs)
				if dir != "deploy/k8s-load" {
					all = append(append(slices.Clone(out), "\n---\n"...), kustomizeBuild(t, newest, tree, "deploy/k8s-load")...)
					want += len(load)
				}
				kubeconform(t, schemas, all, want)
				if dir != "deploy/k8s-load" {
					checkReferences(t, dir, objs, load)
					checkRedisAuth(t, dir, objs, "redis-auth/password", buildPassword, stackApps[dir]...)
				}
				checkRestricted(t, dir, objs)
				checkHardened(t, dir, objs)
				checkOperable(t, dir, objs)
			})
		}
	}
	// Without the token file, or Redis's password file, that the user
	// makes, nothing builds: no known token or password is ever deployed.
	for _, file := range []string{"admin-token.env", "redis-password.env"} {
		p := filepath.Join(tree, "deploy/k8s", file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		for _, dir := range []string{"deploy/k8s", "deploy/k8s-sentinel"} {
			if out, err := goTool(t, newest, nil, "build", filepath.Join(tree, dir)); err == nil || !strings.Contains(err.Error(), file) {
				t.Errorf("%s built without %s: %v\n%.300s", dir, file, err, out)
			}
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A Deployment with a field misspelt, a wrong type and a container
	// without its image: kubeconform must refuse it.
	broken := []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: broken}
spec:
  replica: 3
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      containers:
        - name: x
          ports: [{containerPort: "eighty"}]
`)
	if err := writeSchemas(spec, schemas, k8sObjects(t, "broken", broken)); err != nil {
		t.Fatal(err)
	}
	out, err := goTool(t, kubeconformTool, broken, "-strict", "-summary", "-output", "json",
		"-schema-location", filepath.Join(schemas, "{{.ResourceKind}}{{.KindSuffix}}.json"), "-")
	if err == nil || !strings.Contains(string(out), "replica") || !strings.Contains(string(out), "containerPort") {
		t.Errorf("kubeconform did not refuse a broken Deployment: %v\n%s", err, out)
	}
}

// normalised is the objects as sorted JSON lines: what two builds must
// share.
func normalised(t *testing.T, objs []k8sObject) string {
	t.Helper()
	var lines []string
	for _, o := range objs {
		b, err := json.Marshal(o.raw)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// kubeconform validates the manifests strictly against the schemas in
// dir, with no schema missing, and wants every object valid.
func kubeconform(t *testing.T, dir string, manifests []byte, objects int) {
	t.Helper()
	out, err := goTool(t, kubeconformTool, manifests, "-strict", "-summary", "-output", "json",
		"-schema-location", filepath.Join(dir, "{{.ResourceKind}}{{.KindSuffix}}.json"), "-")
	var res struct {
		Resources []struct{ Kind, Name, Status, Msg string }
		Summary   struct{ Valid, Invalid, Errors, Skipped int }
	}
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		t.Fatalf("kubeconform: %v %v\n%s", err, jerr, out)
	}
	for _, r := range res.Resources {
		if r.Status != "statusValid" {
			t.Errorf("kubeconform: %s %s: %s %s", r.Kind, r.Name, r.Status, r.Msg)
		}
	}
	if res.Summary.Valid != objects || res.Summary.Invalid+res.Summary.Errors+res.Summary.Skipped != 0 {
		t.Errorf("kubeconform: %+v for %d objects", res.Summary, objects)
	} else if err != nil {
		t.Errorf("kubeconform: %v", err)
	}
}

// checkReferences: what kubeconform cannot see across objects.
func checkReferences(t *testing.T, dir string, objs, load []k8sObject) {
	t.Helper()
	have := map[string]bool{}
	for _, o := range append(slices.Clone(objs), load...) {
		have[o.Kind+"/"+o.Metadata.Name] = true
	}
	clusterWide := map[string]bool{"Namespace": true}
	for _, o := range objs {
		if !clusterWide[o.Kind] && o.Metadata.Namespace != "gwsim" {
			t.Errorf("%s: %s is in namespace %q, not gwsim", dir, o, o.Metadata.Namespace)
		}
	}
	for _, o := range append(slices.Clone(objs), load...) {
		for _, ref := range podReferences(o.raw) {
			if !have[ref] {
				t.Errorf("%s: %s names %s, which the build does not make", dir, o, ref)
			}
		}
	}
	for _, want := range []string{"Deployment/gwsim", "Service/gwsim", "Job/gwconform", "Secret/gwsim-admin", "ConfigMap/gwsim-fleet-current"} {
		if !have[want] {
			t.Errorf("%s: no %s", dir, want)
		}
	}
}

// podReferences are the ConfigMaps, Secrets and claims a pod template
// names, and the Services its http:// arguments name (host:port).
func podReferences(obj map[string]any) []string {
	var refs []string
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				switch k {
				case "configMap", "configMapKeyRef":
					if m, ok := c.(map[string]any); ok {
						refs = append(refs, fmt.Sprint("ConfigMap/", m["name"]))
					}
				case "secret":
					if m, ok := c.(map[string]any); ok {
						refs = append(refs, fmt.Sprint("Secret/", m["secretName"]))
					}
				case "secretKeyRef":
					if m, ok := c.(map[string]any); ok {
						refs = append(refs, fmt.Sprint("Secret/", m["name"]))
					}
				case "persistentVolumeClaim":
					if m, ok := c.(map[string]any); ok {
						refs = append(refs, fmt.Sprint("PersistentVolumeClaim/", m["claimName"]))
					}
				}
				walk(k, c)
			}
		case []any:
			for _, c := range x {
				walk(key, c)
			}
		case string:
			if key != "args" && key != "command" {
				return
			}
			for _, w := range strings.Fields(x) {
				if i := strings.Index(w, "http://"); i >= 0 {
					host := strings.SplitN(strings.TrimPrefix(w[i:], "http://"), "/", 2)[0]
					host = strings.SplitN(host, ":", 2)[0]
					if host != "" && !strings.ContainsAny(host, "$.") && host != "localhost" {
						refs = append(refs, "Service/"+host)
					}
				}
			}
		}
	}
	walk("", obj)
	return refs
}

// writeSchemas writes, for each kind of the objects, the standalone
// strict JSON schema kubeconform looks for
// ({{.ResourceKind}}{{.KindSuffix}}.json, e.g. deployment-apps-v1.json)
// from Kubernetes' OpenAPI (Swagger 2) document: the kind's definition
// with every definition it reaches, each object closed to unknown fields
// as kubeconform's -strict schemas are, and int-or-string and quantities
// taking either form, as the API server does.
func writeSchemas(spec []byte, dir string, objs []k8sObject) error {
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(spec, &doc); err != nil {
		return err
	}
	type gvk struct{ Group, Version, Kind string }
	byGVK := map[gvk]string{}
	for name, d := range doc.Definitions {
		list, _ := d["x-kubernetes-group-version-kind"].([]any)
		for _, x := range list {
			m := x.(map[string]any)
			byGVK[gvk{m["group"].(string), m["version"].(string), m["kind"].(string)}] = name
		}
	}
	for _, o := range objs {
		group, version := "", o.APIVersion
		if i := strings.LastIndex(o.APIVersion, "/"); i >= 0 {
			group, version = o.APIVersion[:i], o.APIVersion[i+1:]
		}
		name, ok := byGVK[gvk{group, version, o.Kind}]
		if !ok {
			continue // no schema: kubeconform says so, and the test fails
		}
		suffix := "-" + strings.ToLower(strings.Split(strings.SplitN(o.APIVersion, "/", 2)[0], ".")[0])
		if group != "" {
			suffix += "-" + strings.ToLower(version)
		}
		defs := map[string]any{}
		var reach func(n string)
		reach = func(n string) {
			if _, ok := defs[n]; ok {
				return
			}
			d := doc.Definitions[n]
			defs[n] = nil
			defs[n] = strictSchema(n, d, reach)
		}
		reach(name)
		schema := map[string]any{"$ref": "#/definitions/" + name, "definitions": defs}
		b, err := json.Marshal(schema)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, strings.ToLower(o.Kind)+suffix+".json"), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// strictSchema copies a definition: objects with properties take no
// other field, $refs are followed (reach), int-or-string and quantities
// take a string or a number.
func strictSchema(name string, d map[string]any, reach func(string)) map[string]any {
	switch name {
	case "io.k8s.apimachinery.pkg.util.intstr.IntOrString", "io.k8s.apimachinery.pkg.api.resource.Quantity":
		return map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}, map[string]any{"type": "number"}}}
	}
	var copyOf func(v any) any
	copyOf = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, c := range x {
				if k == "$ref" {
					ref := strings.TrimPrefix(c.(string), "#/definitions/")
					reach(ref)
				}
				out[k] = copyOf(c)
			}
			if _, ok := out["properties"]; ok && out["additionalProperties"] == nil && out["x-kubernetes-preserve-unknown-fields"] == nil {
				out["additionalProperties"] = false
			}
			if out["format"] == "int-or-string" {
				delete(out, "type")
				delete(out, "format")
				out["anyOf"] = []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, c := range x {
				out[i] = copyOf(c)
			}
			return out
		}
		return v
	}
	return copyOf(d).(map[string]any)
}
