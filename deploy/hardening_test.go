package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// podSpecs are the pod templates of an object (Deployment, StatefulSet,
// DaemonSet, Job, CronJob, Pod), by a name for messages.
func podSpecs(o map[string]any) map[string]map[string]any {
	get := func(m map[string]any, path ...string) map[string]any {
		for _, p := range path {
			n, _ := m[p].(map[string]any)
			if n == nil {
				return nil
			}
			m = n
		}
		return m
	}
	out := map[string]map[string]any{}
	kind, _ := o["kind"].(string)
	name, _ := get(o, "metadata")["name"].(string)
	var spec map[string]any
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job":
		spec = get(o, "spec", "template", "spec")
	case "CronJob":
		spec = get(o, "spec", "jobTemplate", "spec", "template", "spec")
	case "Pod":
		spec = get(o, "spec")
	}
	if spec != nil {
		out[kind+"/"+name] = spec
	}
	return out
}

// containersOf are a pod's containers and init containers.
func containersOf(spec map[string]any) []map[string]any {
	var out []map[string]any
	for _, k := range []string{"initContainers", "containers", "ephemeralContainers"} {
		list, _ := spec[k].([]any)
		for _, c := range list {
			if m, ok := c.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

// restrictedProblems lists what keeps a pod from Pod Security Standards
// "restricted" (Kubernetes' pod-security admission, latest), field by
// field, and from our own rule on top: a read-only root file system in
// every container (gwsim, gwconform and Redis write only to volumes).
func restrictedProblems(spec map[string]any) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	psc, _ := spec["securityContext"].(map[string]any)
	for _, k := range []string{"hostNetwork", "hostPID", "hostIPC"} {
		if spec[k] == true {
			bad("%s is set", k)
		}
	}
	if psc["runAsUser"] == 0 {
		bad("the pod runs as user 0")
	}
	allowedVolumes := []string{"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
	vols, _ := spec["volumes"].([]any)
	for _, v := range vols {
		for k := range v.(map[string]any) {
			if k != "name" && !slices.Contains(allowedVolumes, k) {
				bad("volume type %s", k)
			}
		}
	}
	podSeccomp := seccompOK(psc)
	for _, c := range containersOf(spec) {
		name := c["name"]
		sc, _ := c["securityContext"].(map[string]any)
		if !(psc["runAsNonRoot"] == true && sc["runAsNonRoot"] != false) && sc["runAsNonRoot"] != true {
			bad("container %s: runAsNonRoot is not true", name)
		}
		if sc["runAsUser"] == 0 {
			bad("container %s: runAsUser 0", name)
		}
		if !podSeccomp && !seccompOK(sc) {
			bad("container %s: seccompProfile is not RuntimeDefault or Localhost (on the pod or the container)", name)
		}
		if s, ok := sc["seccompProfile"].(map[string]any); ok && s["type"] == "Unconfined" {
			bad("container %s: seccompProfile Unconfined", name)
		}
		if sc["allowPrivilegeEscalation"] != false {
			bad("container %s: allowPrivilegeEscalation is not false", name)
		}
		if sc["privileged"] == true {
			bad("container %s: privileged", name)
		}
		caps, _ := sc["capabilities"].(map[string]any)
		drop, _ := caps["drop"].([]any)
		if !slices.Contains(drop, any("ALL")) {
			bad("container %s: capabilities do not drop ALL", name)
		}
		add, _ := caps["add"].([]any)
		for _, a := range add {
			if a != "NET_BIND_SERVICE" {
				bad("container %s: adds capability %v", name, a)
			}
		}
		if sc["readOnlyRootFilesystem"] != true {
			bad("container %s: readOnlyRootFilesystem is not true", name)
		}
		ports, _ := c["ports"].([]any)
		for _, p := range ports {
			if hp, ok := p.(map[string]any)["hostPort"]; ok && hp != 0 {
				bad("container %s: hostPort %v", name, hp)
			}
		}
	}
	return out
}

func seccompOK(sc map[string]any) bool {
	s, _ := sc["seccompProfile"].(map[string]any)
	return s["type"] == "RuntimeDefault" || s["type"] == "Localhost"
}

// checkRestricted fails on every pod of objs that "restricted" refuses.
func checkRestricted(t *testing.T, where string, objs []k8sObject) {
	t.Helper()
	pods := 0
	for _, o := range objs {
		for name, spec := range podSpecs(o.raw) {
			pods++
			for _, p := range restrictedProblems(spec) {
				t.Errorf("%s: %s: %s", where, name, p)
			}
		}
	}
	if pods == 0 {
		t.Errorf("%s: no pod to check", where)
	}
}

// TestPodsRestricted reads every manifest under deploy/k8s* as written
// (no kustomize: it runs in make test) and checks every pod against Pod
// Security "restricted" field by field; and shows that the check refuses
// a pod missing each of the fields.
func TestPodsRestricted(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(root, "deploy/k8s*/*.yaml"))
	// Patches are parts of objects, checked whole by
	// TestKustomizeAndKubeconform once kustomize has built them.
	patches := map[string]bool{}
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			continue
		}
		docs, err := ParseYAML(f)
		if err != nil {
			t.Fatal(err)
		}
		var k struct {
			Patches []struct{ Path string } `yaml:"patches"`
		}
		docs[0].Decode(&k)
		for _, p := range k.Patches {
			patches[filepath.Join(filepath.Dir(f), p.Path)] = true
		}
	}
	pods := 0
	var objs []k8sObject
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" || patches[f] {
			continue
		}
		docs, err := ParseYAML(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			var m map[string]any
			if err := d.Decode(&m); err != nil {
				t.Fatal(err)
			}
			for name, spec := range podSpecs(m) {
				pods++
				for _, p := range restrictedProblems(spec) {
					t.Errorf("%s: %s: %s", filepath.Base(f), name, p)
				}
			}
			o := k8sObject{Kind: fmt.Sprint(m["kind"]), raw: m}
			if md, ok := m["metadata"].(map[string]any); ok {
				o.Metadata.Name = fmt.Sprint(md["name"])
			}
			objs = append(objs, o)
		}
	}
	// As written, each file's objects together (PodDisruptionBudgets and
	// NetworkPolicies sit beside their workloads).
	checkOperable(t, "deploy/k8s*", objs)
	if pods < 6 {
		t.Errorf("%d pods found under deploy/k8s*: want gwsim, Redis, the Jobs, the Sentinel nodes", pods)
	}
	good := func() map[string]any {
		return map[string]any{
			"securityContext": map[string]any{"runAsNonRoot": true, "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
			"containers": []any{map[string]any{"name": "c", "securityContext": map[string]any{
				"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": map[string]any{"drop": []any{"ALL"}}}}},
		}
	}
	if p := restrictedProblems(good()); len(p) != 0 {
		t.Fatalf("a restricted pod is refused: %v", p)
	}
	for what, spoil := range map[string]func(map[string]any){
		"runAsNonRoot":             func(s map[string]any) { delete(s["securityContext"].(map[string]any), "runAsNonRoot") },
		"seccompProfile":           func(s map[string]any) { delete(s["securityContext"].(map[string]any), "seccompProfile") },
		"allowPrivilegeEscalation": func(s map[string]any) { delete(container(s), "allowPrivilegeEscalation") },
		"readOnlyRootFilesystem":   func(s map[string]any) { container(s)["readOnlyRootFilesystem"] = false },
		"drop ALL":                 func(s map[string]any) { delete(container(s), "capabilities") },
		"hostPath": func(s map[string]any) {
			s["volumes"] = []any{map[string]any{"name": "h", "hostPath": map[string]any{"path": "/"}}}
		},
	} {
		s := good()
		spoil(s)
		if len(restrictedProblems(s)) == 0 {
			t.Errorf("a pod without %s passes", what)
		}
	}
}

func container(spec map[string]any) map[string]any {
	return spec["containers"].([]any)[0].(map[string]any)["securityContext"].(map[string]any)
}

// checkHardened: gwsim has a PodDisruptionBudget and spreads over nodes;
// every Redis pod (Redis, the Sentinel nodes and Sentinels) is selected by
// a NetworkPolicy that lets in gwsim and nothing but gwsim and the Redis
// pods themselves; every image is by version tag, never latest, and our
// image the one deploy/k8s-image names.
func checkHardened(t *testing.T, where string, objs []k8sObject) {
	t.Helper()
	tag := imageTag(t)
	var pdb, spread bool
	policies := map[string][]string{} // selected app: the apps let in
	for _, o := range objs {
		spec, _ := o.raw["spec"].(map[string]any)
		switch o.Kind {
		case "PodDisruptionBudget":
			if strings.Contains(render(spec["selector"]), "app.kubernetes.io/name: gwsim") {
				pdb = true
			}
		case "Deployment":
			if o.Metadata.Name == "gwsim" {
				spread = strings.Contains(render(spec), "topologyKey: kubernetes.io/hostname")
			}
		case "NetworkPolicy":
			sel := render(spec["podSelector"])
			var from []string
			ingress, _ := spec["ingress"].([]any)
			for _, in := range ingress {
				peers, _ := in.(map[string]any)["from"].([]any)
				if len(peers) == 0 {
					from = append(from, "anyone")
				}
				for _, p := range peers {
					pm := p.(map[string]any)
					ps, _ := pm["podSelector"].(map[string]any)
					labels, _ := ps["matchLabels"].(map[string]any)
					if app, ok := labels["app.kubernetes.io/name"].(string); ok && len(pm) == 1 {
						from = append(from, app)
					} else {
						from = append(from, "other: "+render(pm))
					}
				}
			}
			for _, app := range []string{"redis", "redis-node", "redis-sentinel"} {
				if strings.Contains(sel, "app.kubernetes.io/name: "+app+"\n") {
					policies[app] = from
				}
			}
		}
		for name, ps := range podSpecs(o.raw) {
			tmpl, _ := spec["template"].(map[string]any)
			labels := render(tmpl["metadata"])
			for _, app := range []string{"redis", "redis-node", "redis-sentinel"} {
				if strings.Contains(labels, "app.kubernetes.io/name: "+app+"\n") {
					if _, ok := policies[app]; !ok {
						defer func() {
							if _, ok := policies[app]; !ok {
								t.Errorf("%s: %s: no NetworkPolicy selects its pods", where, name)
							}
						}()
					}
				}
			}
			for _, c := range containersOf(ps) {
				img, _ := c["image"].(string)
				switch {
				case strings.HasSuffix(img, ":latest") || !strings.Contains(img, ":"):
					t.Errorf("%s: %s: image %q is not by version tag", where, name, img)
				case IsImage(img) && strings.SplitN(img, "@", 2)[0] != "ghcr.io/gwdmi/gwtools:"+tag:
					t.Errorf("%s: %s: image %q, not ghcr.io/gwdmi/gwtools:%s (deploy/k8s-image; a digest may follow)", where, name, img, tag)
				case strings.HasPrefix(img, "redis:") && img != redisImage:
					t.Errorf("%s: %s: image %q, not %s as everywhere else", where, name, img, redisImage)
				}
			}
		}
	}
	for app, from := range policies {
		for _, f := range from {
			if f != "gwsim" && f != "redis-node" && f != "redis-sentinel" {
				t.Errorf("%s: the NetworkPolicy of %s lets in %s", where, app, f)
			}
		}
		if !slices.Contains(from, "gwsim") {
			t.Errorf("%s: the NetworkPolicy of %s does not let gwsim in", where, app)
		}
	}
	if where != "deploy/k8s-load" && (!pdb || !spread) {
		t.Errorf("%s: gwsim's PodDisruptionBudget %v, topology spread over nodes %v", where, pdb, spread)
	}
}

// redisImage is the Redis image of every manifest.
const redisImage = "redis:7.4.2-alpine"

// imageTag is the tag deploy/k8s-image gives our image.
func imageTag(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy/k8s-image/kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "newTag: "); ok {
			return v
		}
	}
	t.Fatal("deploy/k8s-image names no newTag")
	return ""
}

// checkOperable: what keeps a stack answering through its own upkeep.
// Every pod mounts no service account token (none of them calls the
// Kubernetes API); every probe has a timeoutSeconds (the default, 1 s, is
// shorter than a store's timeout: a probe would fail by its own timeout
// rather than on the answer); gwsim's readiness asks /_sim/ready, which
// answers while the store is lost (the replica stays behind its Service
// and apps get the documented 503 with Retry-After), not /_sim/health;
// every Redis, Redis node and Sentinel workload has a PodDisruptionBudget;
// and where there are NetworkPolicies (the chart's can be turned off), one
// selects gwsim's pods.
func checkOperable(t *testing.T, where string, objs []k8sObject) {
	t.Helper()
	pdbs := map[string]bool{}
	var policies, gwsimPolicy bool
	workloads := map[string]string{} // app: the object
	for _, o := range objs {
		spec, _ := o.raw["spec"].(map[string]any)
		switch o.Kind {
		case "PodDisruptionBudget":
			sel, _ := spec["selector"].(map[string]any)
			labels, _ := sel["matchLabels"].(map[string]any)
			if app, ok := labels["app.kubernetes.io/name"].(string); ok {
				pdbs[app] = true
			}
		case "NetworkPolicy":
			policies = true
			if strings.Contains(render(spec["podSelector"]), "app.kubernetes.io/name: gwsim\n") {
				gwsimPolicy = true
			}
		}
		for name, ps := range podSpecs(o.raw) {
			if v, ok := ps["automountServiceAccountToken"].(bool); !ok || v {
				t.Errorf("%s: %s: automountServiceAccountToken is not false", where, name)
			}
			tmpl, _ := spec["template"].(map[string]any)
			meta, _ := tmpl["metadata"].(map[string]any)
			labels, _ := meta["labels"].(map[string]any)
			app, _ := labels["app.kubernetes.io/name"].(string)
			if o.Kind == "Deployment" || o.Kind == "StatefulSet" {
				workloads[app] = o.String()
			}
			for _, c := range containersOf(ps) {
				for _, probe := range []string{"readinessProbe", "livenessProbe", "startupProbe"} {
					p, ok := c[probe].(map[string]any)
					if !ok {
						continue
					}
					if _, ok := p["timeoutSeconds"]; !ok {
						t.Errorf("%s: %s: container %v: %s has no timeoutSeconds", where, name, c["name"], probe)
					}
				}
				if app == "gwsim" && c["name"] == "gwsim" {
					r, _ := c["readinessProbe"].(map[string]any)
					get, _ := r["httpGet"].(map[string]any)
					if get["path"] != "/_sim/ready" {
						t.Errorf("%s: %s: gwsim's readinessProbe is %s, want httpGet /_sim/ready", where, name, render(r))
					}
				}
			}
		}
	}
	for _, app := range []string{"gwsim", "redis", "redis-node", "redis-sentinel"} {
		if w, ok := workloads[app]; ok && !pdbs[app] {
			t.Errorf("%s: %s has no PodDisruptionBudget", where, w)
		}
	}
	if _, ok := workloads["gwsim"]; ok && policies && !gwsimPolicy {
		t.Errorf("%s: NetworkPolicies, but none selects gwsim's pods", where)
	}
}
