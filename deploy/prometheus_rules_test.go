package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gwdmi/gwtools/simulator/simtest"
)

// TestPrometheusRules: deploy/prometheus/gwsim-rules.yaml is what
// `promtool check rules` accepts, its unit tests (gwsim-rules.test.yaml:
// each alert fires on the series that should fire it, with its labels and
// annotations, and not before its time) pass under `promtool test rules`,
// and every gwsim metric and label its alerts use is one gwsim serves
// (GwsimMetrics). promtool is Debian's prometheus package (make tools):
// without it the test skips with one line, or fails under CI=true.
func TestPrometheusRules(t *testing.T) {
	rules := filepath.Join(root, "deploy/prometheus/gwsim-rules.yaml")
	b, err := os.ReadFile(rules)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	alerts := 0
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			alerts++
			if strings.HasPrefix(strings.TrimSpace(r.Expr), "up{") {
				continue // Prometheus's own series
			}
			for _, p := range queryProblems("alert "+r.Alert, r.Expr) {
				t.Error(p)
			}
		}
	}
	for _, want := range []string{"GwsimStoreNotWritable", "GwsimRedisDown", "GwsimServerErrors", "GwsimDown"} {
		if !strings.Contains(string(b), "alert: "+want+"\n") {
			t.Errorf("no alert %s", want)
		}
	}
	promtool := simtest.NeedTool(t, "promtool", "apt-get install -y prometheus")
	for _, args := range [][]string{
		{"check", "rules", "gwsim-rules.yaml"},
		{"test", "rules", "gwsim-rules.test.yaml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = filepath.Dir(rules)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	t.Logf("%d alerts", alerts)
}
