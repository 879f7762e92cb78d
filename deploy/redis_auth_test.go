package deploy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// envEntry is one entry of a container's env, in order: its value, or the
// Secret (NAME/KEY) it comes from.
type envEntry struct{ name, value, secret string }

func envOf(c map[string]any) []envEntry {
	var out []envEntry
	list, _ := c["env"].([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		en := envEntry{name: fmt.Sprint(m["name"])}
		if v, ok := m["value"].(string); ok {
			en.value = v
		}
		if vf, ok := m["valueFrom"].(map[string]any); ok {
			if ref, ok := vf["secretKeyRef"].(map[string]any); ok {
				en.secret = fmt.Sprint(ref["name"], "/", ref["key"])
			}
		}
		out = append(out, en)
	}
	return out
}

// wordsOf are a container's command and args.
func wordsOf(c map[string]any) []string {
	var out []string
	for _, k := range []string{"command", "args"} {
		list, _ := c[k].([]any)
		for _, w := range list {
			out = append(out, fmt.Sprint(w))
		}
	}
	return out
}

// appOf is the app.kubernetes.io/name label of a workload's pods.
func appOf(o map[string]any) string {
	spec, _ := o["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	meta, _ := tmpl["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	app, _ := labels["app.kubernetes.io/name"].(string)
	return app
}

var (
	storeWithPassword = regexp.MustCompile(`^(redis|rediss|redis\+sentinel)://:\$\(REDIS_PASSWORD\)@[^/@]+/`)
	sentinelMonitor   = regexp.MustCompile(`sentinel monitor (\S+) `)
)

// checkRedisAuth: the stack's Redis requires the password of the Secret
// secret (NAME/KEY), and every part of it that talks to Redis gives it,
// from the environment: one Redis runs with --requirepass
// $(REDIS_PASSWORD); a Sentinel setup's nodes with --requirepass and
// --masterauth (a replica authenticates to its primary) and each Sentinel
// with sentinel auth-pass for the primary it monitors and requirepass
// (the Sentinels require it too), its file written for its own user only;
// the nodes' and the Sentinels' scripts, which ask the Sentinels who the
// primary is, and every redis-cli probe have REDISCLI_AUTH; gwsim has no
// --store and no password in its args, GWSIM_STORE composed from
// REDIS_PASSWORD, an entry before it (Kubernetes expands $(VAR) from
// earlier entries only), and with a redis+sentinel:// store
// GWSIM_SENTINEL_PASSWORD from the Secret. No pod spec holds the password
// itself (password, when given: the one the build was given), and no
// script puts $(REDIS_PASSWORD) in a shell's arguments. want are the apps
// that must be there.
func checkRedisAuth(t *testing.T, where string, objs []k8sObject, secret, password string, want ...string) {
	t.Helper()
	for _, p := range redisAuthProblems(objs, secret, password, want...) {
		t.Errorf("%s: %s", where, p)
	}
}

// redisAuthProblems lists what checkRedisAuth finds wrong.
func redisAuthProblems(objs []k8sObject, secret, password string, want ...string) []string {
	var out []string
	found := map[string]bool{}
	for _, o := range objs {
		app := appOf(o.raw)
		for name, ps := range podSpecs(o.raw) {
			if password != "" && strings.Contains(render(ps), password) {
				out = append(out, name+": the password itself is in the pod spec")
			}
			for _, c := range containersOf(ps) {
				cname := fmt.Sprint(c["name"])
				words := wordsOf(c)
				argv := strings.Join(words, " ")
				env := envOf(c)
				from := func(v string) int {
					return slices.IndexFunc(env, func(e envEntry) bool { return e.name == v && e.secret == secret })
				}
				bad := func(format string, args ...any) {
					out = append(out, fmt.Sprintf("%s: container %s: %s", name, cname, fmt.Sprintf(format, args...)))
				}
				for _, probe := range []string{"readinessProbe", "livenessProbe", "startupProbe"} {
					p, _ := c[probe].(map[string]any)
					ex, _ := p["exec"].(map[string]any)
					cmd := wordsOf(map[string]any{"command": ex["command"]})
					if slices.Contains(cmd, "redis-cli") && from("REDISCLI_AUTH") < 0 {
						bad("its %s runs redis-cli without REDISCLI_AUTH from the Secret %s: Redis (or the Sentinel) would refuse it", probe, secret)
					}
				}
				if strings.Contains(argv, "$(REDIS_PASSWORD)") && !(app == "redis" && cname == "redis") {
					bad("$(REDIS_PASSWORD) in its command or args: the password would be in its arguments")
				}
				switch {
				case app == "redis" && cname == "redis":
					found[app] = true
					if i := slices.Index(words, "--requirepass"); i < 0 || i+1 >= len(words) || words[i+1] != "$(REDIS_PASSWORD)" {
						bad("Redis does not run with --requirepass $(REDIS_PASSWORD): %s", argv)
					}
					if from("REDIS_PASSWORD") < 0 {
						bad("no REDIS_PASSWORD from the Secret %s", secret)
					}
				case app == "redis-node" && cname == "redis":
					found[app] = true
					for _, w := range []string{`--requirepass "$REDIS_PASSWORD"`, `--masterauth "$REDIS_PASSWORD"`} {
						if !strings.Contains(argv, w) {
							bad("the Redis node does not run with %s", w)
						}
					}
					if from("REDIS_PASSWORD") < 0 {
						bad("no REDIS_PASSWORD from the Secret %s", secret)
					}
					asksSentinels(argv, from, bad)
				case app == "redis-sentinel":
					found[app] = true
					m := sentinelMonitor.FindStringSubmatch(argv)
					if m == nil || !strings.Contains(argv, `"sentinel auth-pass `+m[1]+` $REDIS_PASSWORD"`) {
						bad("the Sentinel's file has no sentinel auth-pass with $REDIS_PASSWORD for the primary it monitors")
					}
					if !strings.Contains(argv, `"requirepass $REDIS_PASSWORD"`) {
						bad("the Sentinel's file has no requirepass $REDIS_PASSWORD: anyone who reaches it could point it at another Redis")
					}
					if !strings.Contains(argv, "umask 077") {
						bad("the Sentinel's file, which holds the password, is not written with umask 077")
					}
					if from("REDIS_PASSWORD") < 0 {
						bad("no REDIS_PASSWORD from the Secret %s", secret)
					}
					asksSentinels(argv, from, bad)
				case app == "gwsim" && cname == "gwsim":
					found[app] = true
					for _, w := range words {
						if w == "--store" || strings.HasPrefix(w, "--store=") {
							bad("--store in its args (it would win over GWSIM_STORE): %s", argv)
						}
					}
					if strings.Contains(argv, "REDIS_PASSWORD") {
						bad("REDIS_PASSWORD in its args: %s", argv)
					}
					pw := from("REDIS_PASSWORD")
					st := slices.IndexFunc(env, func(e envEntry) bool { return e.name == "GWSIM_STORE" })
					switch {
					case pw < 0:
						bad("no REDIS_PASSWORD from the Secret %s", secret)
					case st < 0:
						bad("no GWSIM_STORE")
					case st < pw:
						bad("GWSIM_STORE comes before REDIS_PASSWORD: Kubernetes would leave $(REDIS_PASSWORD) unexpanded")
					case !storeWithPassword.MatchString(env[st].value):
						bad("GWSIM_STORE %q is not a URL with :$(REDIS_PASSWORD)@", env[st].value)
					case strings.HasPrefix(env[st].value, "redis+sentinel://") && from("GWSIM_SENTINEL_PASSWORD") < 0:
						bad("GWSIM_STORE is redis+sentinel:// but there is no GWSIM_SENTINEL_PASSWORD from the Secret %s: the Sentinels would refuse gwsim", secret)
					}
				}
			}
		}
	}
	for _, app := range want {
		if !found[app] {
			out = append(out, "no "+app+" to check")
		}
	}
	return out
}

// asksSentinels: a script that asks the Sentinels who the primary is
// (redis-cli … -p 26379) gives them the password (REDISCLI_AUTH from the
// Secret, not unset), and stops on their refusal rather than take it for
// a host name.
func asksSentinels(argv string, from func(string) int, bad func(string, ...any)) {
	if !strings.Contains(argv, "-p 26379 sentinel get-master-addr-by-name") {
		bad("its script does not ask the Sentinels who the primary is")
		return
	}
	if from("REDISCLI_AUTH") < 0 || strings.Contains(argv, "unset REDISCLI_AUTH") {
		bad("its script asks the Sentinels without REDISCLI_AUTH from the Secret: they would answer NOAUTH")
	}
	if !strings.Contains(argv, `case "$primary" in *' '*)`) {
		bad("its script would take a refusal of the Sentinels (NOAUTH …) for the primary's name")
	}
}

// TestRedisAuthCheck: checkRedisAuth refuses a stack that drops the
// password anywhere, so that its pass on the manifests means something.
func TestRedisAuthCheck(t *testing.T) {
	good := func() []k8sObject {
		objs := k8sObjects(t, "good", []byte(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: redis}
spec:
  template:
    metadata: {labels: {app.kubernetes.io/name: redis}}
    spec:
      containers:
        - name: redis
          command: [redis-server, --requirepass, $(REDIS_PASSWORD)]
          env:
            - {name: REDIS_PASSWORD, valueFrom: {secretKeyRef: {name: redis-auth, key: password}}}
            - {name: REDISCLI_AUTH, valueFrom: {secretKeyRef: {name: redis-auth, key: password}}}
          readinessProbe: {exec: {command: [redis-cli, ping]}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: redis-sentinel}
spec:
  template:
    metadata: {labels: {app.kubernetes.io/name: redis-sentinel}}
    spec:
      containers:
        - name: sentinel
          command: [sh, -c, "umask 077\nprimary=$(redis-cli -h redis-sentinel -p 26379 sentinel get-master-addr-by-name gwsim)\ncase \"$primary\" in *' '*) exit 1;; esac\nprintf '%s\\n' \"sentinel monitor gwsim $primary 6379 2\" \"sentinel auth-pass gwsim $REDIS_PASSWORD\" \"requirepass $REDIS_PASSWORD\" > /conf/sentinel.conf"]
          env:
            - {name: REDIS_PASSWORD, valueFrom: {secretKeyRef: {name: redis-auth, key: password}}}
            - {name: REDISCLI_AUTH, valueFrom: {secretKeyRef: {name: redis-auth, key: password}}}
          readinessProbe: {exec: {command: [redis-cli, -p, "26379", ping]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: gwsim}
spec:
  template:
    metadata: {labels: {app.kubernetes.io/name: gwsim}}
    spec:
      containers:
        - name: gwsim
          args: [serve]
          env:
            - {name: REDIS_PASSWORD, valueFrom: {secretKeyRef: {name: redis-auth, key: password}}}
            - {name: GWSIM_STORE, value: "redis://:$(REDIS_PASSWORD)@redis:6379/0"}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: redis-node}
spec:
  template:
    metadata: {labels: {app.kubernetes.io/name: redis-node}}
    spec:
      containers:
        - name: redis
          command: [sh, -c, "primary=$(redis-cli -h redis-sentinel -p 26379 sentinel get-master-addr-by-name gwsim)\ncase \"$primary\" in *' '*) exit 1;; esac\nexec redis-server --requirepass \"$REDIS_PASSWORD\" --masterauth \"$REDIS_PASSWORD\""]
          env:
            - {name: REDIS_PASSWORD, valueFrom: {secretKeyRef: {name: redis-auth, key: password}}}
            - {name: REDISCLI_AUTH, valueFrom: {secretKeyRef: {name: redis-auth, key: password}}}
          readinessProbe: {exec: {command: [redis-cli, ping]}}
`))
		return objs
	}
	ctr := func(objs []k8sObject, i int) map[string]any {
		return objs[i].raw["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	}
	apps := []string{"redis", "redis-sentinel", "gwsim", "redis-node"}
	if p := redisAuthProblems(good(), "redis-auth/password", "s3cret", apps...); len(p) > 0 {
		t.Fatalf("a stack with the password everywhere is refused: %v", p)
	}
	onSentinel := good()
	gw := ctr(onSentinel, 2)
	gw["env"].([]any)[1].(map[string]any)["value"] = "redis+sentinel://:$(REDIS_PASSWORD)@redis-sentinel:26379/gwsim/0"
	gw["env"] = append(gw["env"].([]any), map[string]any{"name": "GWSIM_SENTINEL_PASSWORD",
		"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "redis-auth", "key": "password"}}})
	if p := redisAuthProblems(onSentinel, "redis-auth/password", "s3cret", apps...); len(p) > 0 {
		t.Fatalf("gwsim on Sentinel with GWSIM_SENTINEL_PASSWORD is refused: %v", p)
	}
	for what, spoil := range map[string]func([]k8sObject){
		"Redis without --requirepass": func(o []k8sObject) { ctr(o, 0)["command"] = []any{"redis-server"} },
		"the probe without REDISCLI_AUTH": func(o []k8sObject) {
			c := ctr(o, 0)
			c["env"] = c["env"].([]any)[:1]
		},
		"the Sentinel without auth-pass": func(o []k8sObject) {
			c := ctr(o, 1)
			c["command"].([]any)[2] = strings.Replace(c["command"].([]any)[2].(string), ` "sentinel auth-pass gwsim $REDIS_PASSWORD"`, "", 1)
		},
		"the Sentinel without requirepass": func(o []k8sObject) {
			c := ctr(o, 1)
			c["command"].([]any)[2] = strings.Replace(c["command"].([]any)[2].(string), ` "requirepass $REDIS_PASSWORD"`, "", 1)
		},
		"the Sentinel's probe and script without REDISCLI_AUTH": func(o []k8sObject) {
			c := ctr(o, 1)
			c["env"] = c["env"].([]any)[:1]
		},
		"the Sentinel's script taking a refusal for the primary": func(o []k8sObject) {
			c := ctr(o, 1)
			c["command"].([]any)[2] = strings.Replace(c["command"].([]any)[2].(string), "case \"$primary\" in *' '*) exit 1;; esac\n", "", 1)
		},
		"the node's script asking the Sentinels without the password": func(o []k8sObject) {
			c := ctr(o, 3)
			c["command"].([]any)[2] = "unset REDISCLI_AUTH\n" + c["command"].([]any)[2].(string)
		},
		"gwsim on Sentinel without GWSIM_SENTINEL_PASSWORD": func(o []k8sObject) {
			ctr(o, 2)["env"].([]any)[1].(map[string]any)["value"] = "redis+sentinel://:$(REDIS_PASSWORD)@redis-sentinel:26379/gwsim/0"
		},
		"gwsim with --store": func(o []k8sObject) { ctr(o, 2)["args"] = []any{"serve", "--store", "redis://redis:6379/0"} },
		"gwsim with the password in args": func(o []k8sObject) {
			ctr(o, 2)["args"] = []any{"serve", "--store", "redis://:$(REDIS_PASSWORD)@redis:6379/0"}
		},
		"GWSIM_STORE without the password": func(o []k8sObject) {
			ctr(o, 2)["env"].([]any)[1].(map[string]any)["value"] = "redis://redis:6379/0"
		},
		"GWSIM_STORE before REDIS_PASSWORD": func(o []k8sObject) {
			e := ctr(o, 2)["env"].([]any)
			e[0], e[1] = e[1], e[0]
		},
		"the password itself": func(o []k8sObject) {
			ctr(o, 2)["env"].([]any)[1].(map[string]any)["value"] = "redis://:s3cret@redis:6379/0"
		},
		"gwsim gone": func(o []k8sObject) {
			o[2].raw["spec"].(map[string]any)["template"].(map[string]any)["metadata"] = map[string]any{}
		},
	} {
		objs := good()
		spoil(objs)
		if len(redisAuthProblems(objs, "redis-auth/password", "s3cret", apps...)) == 0 {
			t.Errorf("a stack with %s passes", what)
		}
	}
}
