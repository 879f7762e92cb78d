package deploy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.yaml.in/yaml/v3"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestHelmChartRefusesWhatCannotWork: `helm lint --strict` and `helm
// template` agree, on the defaults and on each value set that renders a
// stack that cannot work: both refuse, with a message naming the values
// (values.schema.json, which lint applies too; the templates' own checks
// say more where the schema is skipped). The defaults need the admin
// token's Secret; redis.durability=replicated with redis.mode=single would
// refuse every change (no Redis replica ever confirms one); a Redis
// password is for the chart's own Redis (single or sentinel), not an
// external one (whose URL comes from the user's Secret as GWSIM_STORE).
func TestHelmChartRefusesWhatCannotWork(t *testing.T) {
	simtest.Heavy(t)
	chart, err := filepath.Abs(filepath.Join(root, chartDir))
	if err != nil {
		t.Fatal(err)
	}
	secret := []string{"--set", "auth.existingSecret=gwsim-admin"}
	for _, c := range []struct {
		name string
		set  []string
		want []string // each named in both refusals
	}{
		{"defaults", nil, []string{"auth", "existingSecret"}},
		{"replicated on one Redis", append(secret, "--set", "redis.durability=replicated"), []string{"redis", "durability"}},
		{"replicated on one Redis, said", append(secret, "--set", "redis.mode=single", "--set", "redis.durability=replicated"), []string{"redis", "durability"}},
		{"external without a URL", append(secret, "--set", "redis.mode=external"), []string{"redis", "url"}},
		{"a misspelt value", append(secret, "--set", "replicas=2"), []string{"replicas"}},
		{"latest", append(secret, "--set", "image.tag=latest"), []string{"image", "tag"}},
		{"a Redis password without the chart's Redis", append(slices.Clone(secret), "--set", "redis.mode=external", "--set", "redis.url=redis://redis.internal:6379/0", "--set", "redis.auth.existingSecret=redis-auth"), []string{"redis", "mode"}},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			lint, lerr := goTool(t, helmTool, nil, append([]string{"lint", "--strict", chart}, c.set...)...)
			tmpl, terr := goTool(t, helmTool, nil, append([]string{"template", "gwsim", chart}, c.set...)...)
			if lerr == nil || terr == nil {
				t.Fatalf("helm lint --strict: %v, helm template: %v (want both to refuse)\n%.300s\n%.300s", lerr, terr, lint, tmpl)
			}
			for _, w := range c.want {
				if !strings.Contains(string(lint)+lerr.Error(), w) || !strings.Contains(string(tmpl)+terr.Error(), w) {
					t.Errorf("the refusals do not name %s:\nlint: %s %s\ntemplate: %s %s", w, lerr, lint, terr, tmpl)
				}
			}
		})
	}
	// The template's own message, where the schema is skipped
	// (--skip-schema-validation): the whole reason.
	_, err = goTool(t, helmTool, nil, append([]string{"template", "gwsim", chart, "--skip-schema-validation"}, append(secret, "--set", "redis.durability=replicated")...)...)
	if err == nil || !strings.Contains(err.Error(), "redis.durability=replicated") || !strings.Contains(err.Error(), "redis.mode=single") {
		t.Errorf("without the schema: %v (want the template's message naming redis.durability=replicated and redis.mode=single)", err)
	}
	// A Redis password with an external Redis: the template says what to
	// do instead.
	_, err = goTool(t, helmTool, nil, append([]string{"template", "gwsim", chart, "--skip-schema-validation"}, append(slices.Clone(secret), "--set", "redis.mode=external",
		"--set", "redis.url=redis://redis.internal:6379/0", "--set", "redis.auth.existingSecret=redis-auth")...)...)
	if err == nil || !strings.Contains(err.Error(), "redis.mode=single or sentinel") || !strings.Contains(err.Error(), "GWSIM_STORE") {
		t.Errorf("redis.auth with redis.mode=external, without the schema: %v (want the template's message naming single or sentinel, and GWSIM_STORE)", err)
	}
	// What works lints and renders alike: a Redis password with either of
	// the chart's own Redis.
	for _, set := range [][]string{secret, append(slices.Clone(secret), "--set", "redis.mode=sentinel"), append(slices.Clone(secret), "--set", "redis.mode=sentinel", "--set", "redis.durability=primary"),
		append(slices.Clone(secret), "--set", "redis.auth.existingSecret=redis-auth"), append(slices.Clone(secret), "--set", "redis.mode=sentinel", "--set", "redis.auth.existingSecret=redis-auth")} {
		if out, err := goTool(t, helmTool, nil, append([]string{"lint", "--strict", chart}, set...)...); err != nil {
			t.Errorf("helm lint --strict %v: %v\n%s", set, err, out)
		}
		if out, err := goTool(t, helmTool, nil, append([]string{"template", "gwsim", chart}, set...)...); err != nil {
			t.Errorf("helm template %v: %v\n%.300s", set, err, out)
		}
	}
}

// TestHelmAlertsWhateverTheReleaseName: a release named gw-staging, with
// the ServiceMonitor and the PrometheusRule. The Prometheus Operator names
// a target's job after the Service's label that the ServiceMonitor's
// jobLabel names (else after the Service, that is the release): the
// rules, as the chart ships them, are unit-tested by promtool on the
// series the Operator makes of this release, and each alert fires there
// (GwsimDown: up == 0; GwsimStoreNotWritable and GwsimRedisDown).
func TestHelmAlertsWhateverTheReleaseName(t *testing.T) {
	simtest.Heavy(t)
	promtool := simtest.NeedTool(t, "promtool", "apt-get install -y prometheus")
	chart, err := filepath.Abs(filepath.Join(root, chartDir))
	if err != nil {
		t.Fatal(err)
	}
	const release = "gw-staging"
	out, err := goTool(t, helmTool, nil, "template", release, chart, "--namespace", "staging", "--set", "auth.existingSecret=gwsim-admin",
		"--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var service, monitor, rule map[string]any
	for _, o := range k8sObjects(t, release, out) {
		switch {
		case o.Kind == "Service" && o.Metadata.Name == release:
			service = o.raw
		case o.Kind == "ServiceMonitor":
			monitor = o.raw
		case o.Kind == "PrometheusRule":
			rule = o.raw
		}
	}
	if service == nil || monitor == nil || rule == nil {
		t.Fatalf("Service %s, ServiceMonitor, PrometheusRule: %v %v %v", release, service != nil, monitor != nil, rule != nil)
	}
	// The job label, as the Operator sets it.
	job := release
	if l, ok := monitor["spec"].(map[string]any)["jobLabel"].(string); ok {
		labels := service["metadata"].(map[string]any)["labels"].(map[string]any)
		if v, ok := labels[l].(string); ok {
			job = v
		}
	}
	dir := t.TempDir()
	b, err := yaml.Marshal(rule["spec"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	target := fmt.Sprintf(`job=%q, namespace="staging", service=%q, endpoint="http", pod="%s-7d9f8-abcde", instance="10.0.0.5:8080"`, job, release, release)
	labels := fmt.Sprintf(`{severity: critical, job: %q, namespace: staging, service: %q, endpoint: http, pod: "%s-7d9f8-abcde", instance: "10.0.0.5:8080"}`, job, release, release)
	test := fmt.Sprintf(`rule_files: [rules.yaml]
evaluation_interval: 30s
tests:
  - interval: 30s
    input_series:
      - series: 'up{%[1]s}'
        values: '0x10'
      - series: 'gwsim_store_writable{%[1]s}'
        values: '0x10'
      - series: 'gwsim_redis_up{%[1]s}'
        values: '0x10'
    alert_rule_test:
      - eval_time: 5m
        alertname: GwsimDown
        exp_alerts:
          - exp_labels: %[2]s
            exp_annotations:
              summary: "gwsim 10.0.0.5:8080 cannot be scraped"
              description: "Prometheus has not scraped 10.0.0.5:8080 for 2 minutes: the replica is down, or /metrics refuses the token Prometheus sends."
`, target, labels)
	for _, alert := range []string{"GwsimStoreNotWritable", "GwsimRedisDown"} {
		// Fires: its labels are the instance's, whatever the release.
		test += fmt.Sprintf("      - eval_time: 5m\n        alertname: %s\n        exp_alerts:\n          - exp_labels: {severity: critical, job: %q, instance: \"10.0.0.5:8080\"}\n            exp_annotations:\n%s",
			alert, job, annotations(t, rule, alert, "10.0.0.5:8080"))
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.test.yaml"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool, "test", "rules", "rules.test.yaml")
	cmd.Dir = dir
	res, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(res), "SUCCESS") {
		t.Errorf("promtool test rules, release %s (job %q): %v\n%s\n%s", release, job, err, res, test)
	}
	t.Logf("release %s: job %q", release, job)
}

// annotations gives an alert's annotations with $labels.instance filled
// in, as promtool's exp_annotations lines.
func annotations(t *testing.T, rule map[string]any, alert, instance string) string {
	t.Helper()
	var b strings.Builder
	for _, g := range rule["spec"].(map[string]any)["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			rm := r.(map[string]any)
			if rm["alert"] != alert {
				continue
			}
			for _, k := range []string{"summary", "description"} {
				v := strings.ReplaceAll(fmt.Sprint(rm["annotations"].(map[string]any)[k]), "{{ $labels.instance }}", instance)
				fmt.Fprintf(&b, "              %s: %q\n", k, v)
			}
		}
	}
	if b.Len() == 0 {
		t.Fatalf("no alert %s", alert)
	}
	return b.String()
}

// TestHelmRedisPassword: with redis.auth.existingSecret, the chart's
// Redis requires the Secret's password and gwsim reaches it with the URL
// from its environment, the password in no pod's args of gwsim. Run for
// real: the rendered Redis command and gwsim's GWSIM_STORE, $(VAR)
// expanded as Kubernetes does (the Service's name stood in for by a
// loopback port), start a redis-server that refuses a client without the
// password and a gwsim that serves changes through it; with the
// password wrong, gwsim refuses to start and its error shows no
// password.
func TestHelmRedisPassword(t *testing.T) {
	simtest.Heavy(t)
	simtest.NeedTool(t, "redis-server", "apt-get install -y redis-server")
	chart, err := filepath.Abs(filepath.Join(root, chartDir))
	if err != nil {
		t.Fatal(err)
	}
	out, err := goTool(t, helmTool, nil, "template", "gwsim", chart, "--set", "auth.existingSecret=gwsim-admin",
		"--set", "redis.auth.existingSecret=redis-auth")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var redisCmd []string
	var store string
	var gwsimArgs []string
	for _, o := range k8sObjects(t, "auth", out) {
		for _, ps := range podSpecs(o.raw) {
			for _, c := range containersOf(ps) {
				switch c["name"] {
				case "redis":
					redisCmd = toStrings(c["command"])
					if !strings.Contains(render(c["env"]), "REDISCLI_AUTH") {
						t.Error("the Redis container has no REDISCLI_AUTH: its redis-cli probes would be refused")
					}
				case "gwsim":
					gwsimArgs = toStrings(c["args"])
					for _, e := range c["env"].([]any) {
						if em := e.(map[string]any); em["name"] == "GWSIM_STORE" {
							store, _ = em["value"].(string)
						}
					}
				}
			}
		}
	}
	if len(redisCmd) == 0 || store == "" || slices.Contains(gwsimArgs, "--store") || strings.Contains(strings.Join(gwsimArgs, " "), "REDIS_PASSWORD") {
		t.Fatalf("redis %v, gwsim GWSIM_STORE %q, args %v (want the URL from the environment only)", redisCmd, store, gwsimArgs)
	}
	const password = "s3cret-Pass_word.0123456789"
	port := freeLoopbackPort(t)
	expand := strings.NewReplacer("$(REDIS_PASSWORD)", password)
	args := []string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1"}
	for _, w := range redisCmd[1:] {
		if w == "/data" {
			w = t.TempDir()
		}
		args = append(args, expand.Replace(w))
	}
	rs := exec.Command(redisCmd[0], args...)
	if err := rs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Process.Kill(); rs.Wait() })
	url := regexp.MustCompile(`@[^/]+/`).ReplaceAllString(expand.Replace(store), fmt.Sprintf("@127.0.0.1:%d/", port))
	// Redis refuses a client without the password.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := goredis.NewClient(&goredis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
		err := c.Set(context.Background(), "k", "v", 0).Err()
		c.Close()
		if err != nil && strings.Contains(err.Error(), "NOAUTH") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Redis without the password: %v (want NOAUTH)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	gwsim := simtest.Binary(t, "gwsim")
	fleetFile := filepath.Join(t.TempDir(), "fleet.yaml")
	ff, err := os.Create(fleetFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := simtest.Fleet().WriteYAML(ff); err != nil {
		t.Fatal(err)
	}
	ff.Close()
	p := exec.Command(gwsim, "serve", "--addr", "127.0.0.1:0", "--log-level", "warn", "--fleet", fleetFile)
	p.Env = append(os.Environ(), "GWSIM_STORE="+url)
	stdout, err := p.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	p.Stderr = &stderr
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Process.Kill(); p.Wait() })
	base := ""
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(sc.Text()); m != "" {
			base = m
			break
		}
	}
	if base == "" {
		t.Fatalf("gwsim on the chart's Redis did not start:\n%s", stderr.String())
	}
	go io.Copy(io.Discard, stdout)
	c := simtest.NewClient(t, base)
	c.Send(device.UpdateName, device.JSON, append(c.Envelope(), simtest.S("sn", simtest.SN('a', 1)), simtest.S("name", "Behind a password"))).OK(t, device.JSON)
	if status, _, body := c.Admin(http.MethodGet, "/_sim/health", ""); status != http.StatusOK {
		t.Errorf("health on the chart's Redis with its password: %d %s", status, body)
	}
	// The password wrong: gwsim stops, saying so without it.
	bad := strings.Replace(url, password, "wrong-password-0123", 1)
	res, _ := exec.Command(gwsim, "serve", "--addr", "127.0.0.1:0", "--fleet", fleetFile, "--store", bad).CombinedOutput()
	if !strings.Contains(string(res), "127.0.0.1") || strings.Contains(string(res), "wrong-password") {
		t.Errorf("gwsim with a wrong password: %s (want an error naming Redis, without the password)", res)
	}
}
