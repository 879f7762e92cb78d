package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// helmReadmeIntro opens the chart's README; the values table follows,
// made from values.yaml by HelmReadme.
const helmReadmeIntro = `# gwsim Helm chart

<!-- Made by HelmReadme (deploy/helmreadme.go) from values.yaml: do not edit.
     go test ./deploy -run TestHelmChartReadme -update rewrites it. -->

gwsim, the simulator of the Gateway Device Management Interface, as a
shared staging service: replicas sharing one fleet's state in Redis (one
Redis with AOF, three Redis nodes with Sentinel, or your own), every pod
under Pod Security "restricted", a PodDisruptionBudget, topology spread,
NetworkPolicies that let only gwsim reach Redis, and optionally an
Ingress, a ServiceMonitor and a PrometheusRule with the alerts of
deploy/prometheus/gwsim-rules.yaml. What each part does, and what to do
when it fails, is in docs/deploy.md and docs/redis.md.

The admin token comes from a Secret you make first (the chart never makes
one, so no known token is deployed); the fleet from a ConfigMap you make
(or gwsim's demo fleet):

` + "```sh" + `
kubectl create namespace gwsim
kubectl -n gwsim create secret generic gwsim-admin --from-literal=token="$(head -c 32 /dev/urandom | base64 | tr -d '/+=')"
kubectl -n gwsim create configmap gwsim-fleet --from-file=fleet.yaml=deploy/k8s/fleet.yaml
helm install gwsim deploy/helm/gwsim -n gwsim --set auth.existingSecret=gwsim-admin --set fleet.configMap=gwsim-fleet
` + "```" + `

With Sentinel: ` + "`--set redis.mode=sentinel`" + `. Behind an Ingress:
` + "`--set ingress.enabled=true --set ingress.host=gwsim.staging.example.com`" + `
(the host is added to gwsim's ` + "`--allowed-hosts`" + `, without which /_sim/
answers 421 there).

## Values

| key | default | what |
|---|---|---|
`

// HelmReadme is the chart's README.md: an introduction and a table of
// every value of values.yaml, with its default and the comment above it
// ("# -- what it is"). A value without such a comment is an error: every
// value is documented.
func HelmReadme(values []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(values, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("values.yaml is not a mapping")
	}
	var b bytes.Buffer
	b.WriteString(helmReadmeIntro)
	var walk func(prefix string, m *yaml.Node) error
	walk = func(prefix string, m *yaml.Node) error {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			key := prefix + k.Value
			doc := helmComment(k.HeadComment)
			if v.Kind == yaml.MappingNode && doc == "" && len(v.Content) > 0 {
				if err := walk(key+".", v); err != nil {
					return err
				}
				continue
			}
			if doc == "" {
				return fmt.Errorf("values.yaml: %s has no \"# -- \" comment saying what it is", key)
			}
			var val any
			if err := v.Decode(&val); err != nil {
				return fmt.Errorf("values.yaml: %s: %v", key, err)
			}
			j, err := json.Marshal(val)
			if err != nil {
				return fmt.Errorf("values.yaml: %s: %v", key, err)
			}
			fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", key, strings.ReplaceAll(string(j), "|", `\|`), strings.ReplaceAll(doc, "|", `\|`))
		}
		return nil
	}
	if err := walk("", doc.Content[0]); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// helmComment is the text of a value's "# -- " comment, its lines joined.
func helmComment(c string) string {
	var out []string
	on := false
	for _, line := range strings.Split(c, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
		if rest, ok := strings.CutPrefix(line, "-- "); ok {
			on, out = true, []string{rest}
			continue
		}
		if on && line != "" {
			out = append(out, line)
		}
	}
	return strings.Join(out, " ")
}
