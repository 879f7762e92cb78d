package deploy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// metricSpec is a metric's type and labels.
type metricSpec struct {
	Type   string
	Labels []string
}

// GwsimMetrics are the metrics gwsim serves at /metrics (its listener,
// behind the admin token when one is set): the only gwsim_ names the
// dashboard and docs/deploy.md may use. This is the one list; it is to be
// checked against the implementation (simulator/…/metrics) when both are
// on one branch.
var GwsimMetrics = map[string]metricSpec{
	"gwsim_requests_total":           {"counter", []string{"operation", "format", "status"}}, // operation: command|message|update_name|other; format: json|xml|none; status: the HTTP status
	"gwsim_request_duration_seconds": {"histogram", []string{"operation"}},
	"gwsim_errors_total":             {"counter", []string{"code"}}, // the error code, e.g. invalid_field
	"gwsim_store_errors_total":       {"counter", nil},
	"gwsim_redis_up":                 {"gauge", nil}, // 0 or 1
	"gwsim_store_writable":           {"gauge", nil}, // 0 or 1: 0 while a change would be refused for the store's sake
	"gwsim_events_clients":           {"gauge", nil}, // SSE streams open
	"gwsim_journal_entries":          {"gauge", nil},
	"gwsim_client_report_apps":       {"gauge", nil},
	"gwsim_proxy_violations_total":   {"counter", []string{"side"}},                          // side: app|service
	"gwsim_build_info":               {"gauge", []string{"version", "commit", "go_version"}}, // always 1
}

// DefaultCollectorMetrics are the metrics of client_golang's default Go
// and process collectors that the dashboard uses (their names are
// client_golang's, unchanged for years).
var DefaultCollectorMetrics = map[string]metricSpec{
	"go_goroutines":                 {"gauge", nil},
	"process_resident_memory_bytes": {"gauge", nil},
	"process_cpu_seconds_total":     {"counter", nil},
	"process_open_fds":              {"gauge", nil},
}

// Labels every scraped series has (Prometheus adds them) or that a
// histogram's buckets have.
var scrapeLabels = []string{"job", "instance"}

// knownMetric resolves a series name used in a query to its metric: a
// histogram's _bucket (with le), _sum and _count are its own.
func knownMetric(name string) (metricSpec, []string, bool) {
	if m, ok := GwsimMetrics[name]; ok && m.Type != "histogram" {
		return m, nil, true
	}
	if m, ok := DefaultCollectorMetrics[name]; ok {
		return m, nil, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if m, ok := GwsimMetrics[strings.TrimSuffix(name, suffix)]; ok && m.Type == "histogram" && strings.HasSuffix(name, suffix) {
			if suffix == "_bucket" {
				return m, []string{"le"}, true
			}
			return m, nil, true
		}
	}
	return metricSpec{}, nil, false
}

// promqlUse is what a PromQL expression uses: the series names, the
// labels matched on each, and the labels grouped by (by, without, on,
// ignoring).
type promqlUse struct {
	Series  []string
	Matched map[string][]string
	Grouped []string
}

var promqlKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true,
	"group_right": true, "and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true}

var promqlAggregations = map[string]bool{"sum": true, "min": true, "max": true, "avg": true, "count": true, "group": true,
	"stddev": true, "stdvar": true, "topk": true, "bottomk": true, "quantile": true, "count_values": true, "limitk": true, "limit_ratio": true}

// parsePromQL reads the names an expression uses, enough for the
// dashboard's queries: identifiers followed by "(" are functions or
// aggregations; a keyword's "(…)" is a list of labels; "{…}" holds label
// matchers of the series before it; "[…]" a range; strings and numbers
// are skipped.
func parsePromQL(expr string) (promqlUse, error) {
	use := promqlUse{Matched: map[string][]string{}}
	tok := regexp.MustCompile(`\s+|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\$\{?[A-Za-z_]\w*\}?|[A-Za-z_:][\w:]*|\d[\w.]*|\[[^\]]*\]|=~|!~|!=|==|>=|<=|[(){},=+\-*/^%<>]`)
	var toks []string
	rest := expr
	for rest != "" {
		loc := tok.FindStringIndex(rest)
		if loc == nil || loc[0] != 0 {
			return use, fmt.Errorf("cannot read %q at %q", expr, rest)
		}
		if t := strings.TrimSpace(rest[:loc[1]]); t != "" {
			toks = append(toks, t)
		}
		rest = rest[loc[1]:]
	}
	ident := regexp.MustCompile(`^[A-Za-z_:][\w:]*$`)
	last := ""
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		next := ""
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		switch {
		case t == "{": // matchers: label op value, …
			for i++; i < len(toks) && toks[i] != "}"; i++ {
				if ident.MatchString(toks[i]) && i+1 < len(toks) && strings.Contains("= != =~ !~", toks[i+1]) {
					if last == "" {
						return use, fmt.Errorf("%q: matchers with no series before them", expr)
					}
					use.Matched[last] = append(use.Matched[last], toks[i])
				}
			}
		case ident.MatchString(t) && promqlKeywords[strings.ToLower(t)]:
			if next == "(" {
				for i += 2; i < len(toks) && toks[i] != ")"; i++ {
					if ident.MatchString(toks[i]) {
						use.Grouped = append(use.Grouped, toks[i])
					}
				}
			}
		case ident.MatchString(t) && (next == "(" || promqlAggregations[t] && (next == "by" || next == "without")): // a function or an aggregation
		case ident.MatchString(t):
			use.Series = append(use.Series, t)
			last = t
		}
	}
	return use, nil
}

// checkQuery fails on a series or a label the metrics list lacks.
func checkQuery(t *testing.T, where, expr string) {
	t.Helper()
	for _, p := range queryProblems(where, expr) {
		t.Error(p)
	}
}

// queryProblems are the series and labels of a query that the metrics
// list lacks.
func queryProblems(where, expr string) []string {
	var out []string
	use, err := parsePromQL(expr)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", where, err)}
	}
	if len(use.Series) == 0 {
		out = append(out, fmt.Sprintf("%s: %q uses no metric", where, expr))
	}
	labels := slices.Clone(scrapeLabels)
	for _, s := range use.Series {
		m, extra, ok := knownMetric(s)
		if !ok {
			out = append(out, fmt.Sprintf("%s: %q uses %s, which gwsim does not serve (GwsimMetrics, DefaultCollectorMetrics)", where, expr, s))
			continue
		}
		own := append(append(slices.Clone(scrapeLabels), m.Labels...), extra...)
		for _, l := range use.Matched[s] {
			if !slices.Contains(own, l) {
				out = append(out, fmt.Sprintf("%s: %q matches label %s, which %s does not have (%v)", where, expr, l, s, own))
			}
		}
		labels = append(labels, own...)
	}
	for _, l := range use.Grouped {
		if !slices.Contains(labels, l) {
			out = append(out, fmt.Sprintf("%s: %q groups by %s, which none of its metrics has", where, expr, l))
		}
	}
	return out
}

// TestGrafanaDashboard: deploy/monitoring/grafana-dashboard.json parses,
// is a dashboard (uid, title, panels placed on the grid), every panel has
// a query, and every metric and label its queries and template variables
// use is one gwsim serves (GwsimMetrics) or one of the default
// collectors'; every gwsim metric is shown somewhere.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "deploy/monitoring/grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID, Title    string
		SchemaVersion int
		Panels        []map[string]any
		Templating    struct {
			List []struct {
				Name, Type, Definition string
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 30 || len(d.Panels) < 10 {
		t.Fatalf("not a dashboard: uid %q, title %q, schema %d, %d panels", d.UID, d.Title, d.SchemaVersion, len(d.Panels))
	}
	used := map[string]bool{}
	queries := 0
	for _, p := range d.Panels {
		title, _ := p["title"].(string)
		if _, ok := p["gridPos"].(map[string]any); !ok {
			t.Errorf("panel %q has no gridPos", title)
		}
		if p["type"] == "row" {
			continue
		}
		targets, _ := p["targets"].([]any)
		if len(targets) == 0 {
			t.Errorf("panel %q has no query", title)
		}
		for _, x := range targets {
			expr, _ := x.(map[string]any)["expr"].(string)
			queries++
			checkQuery(t, "panel "+title, expr)
			use, _ := parsePromQL(expr)
			for _, s := range use.Series {
				used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(s, "_bucket"), "_sum"), "_count")] = true
			}
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(series, label)", v.Name, v.Definition)
			continue
		}
		checkQuery(t, "variable "+v.Name, m[1])
		checkQuery(t, "variable "+v.Name, m[1]+" * on ("+m[2]+") "+m[1])
	}
	for name := range GwsimMetrics {
		if !used[name] {
			t.Errorf("the dashboard does not show %s", name)
		}
	}
	t.Logf("%d panels, %d queries", len(d.Panels), queries)
}

// TestPromQLReader: the reader finds the series and labels a query uses,
// so that TestGrafanaDashboard can fail.
func TestPromQLReader(t *testing.T) {
	use, err := parsePromQL(`histogram_quantile(0.99, sum by (le, operation) (rate(gwsim_request_duration_seconds_bucket{job=~"$job", code!="200"}[$__rate_interval]))) / on(instance) gwsim_redis_up`)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(use.Series, []string{"gwsim_request_duration_seconds_bucket", "gwsim_redis_up"}) ||
		!slices.Equal(use.Matched["gwsim_request_duration_seconds_bucket"], []string{"job", "code"}) ||
		!slices.Equal(use.Grouped, []string{"le", "operation", "instance"}) {
		t.Errorf("%+v", use)
	}
	for _, bad := range []string{
		`rate(gwsim_request_total[5m])`,                          // misspelt
		`sum by (code) (rate(gwsim_requests_total[5m]))`,         // no such label: an HTTP status is status
		`rate(gwsim_errors_total{operation="command"}[5m])`,      // a label of another metric
		`histogram_quantile(0.9, rate(gwsim_errors_bucket[1m]))`, // not a histogram
	} {
		if len(queryProblems("bad", bad)) == 0 {
			t.Errorf("%q passes the check", bad)
		}
	}
}

// TestPrometheusScrape: deploy/monitoring/prometheus.yaml scrapes
// /metrics with the admin token as a bearer token, from a file, and keeps
// each replica apart.
func TestPrometheusScrape(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "deploy/monitoring/prometheus.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			Authorization struct {
				Type            string
				CredentialsFile string `yaml:"credentials_file"`
				Credentials     string
			}
			StaticConfigs  []map[string]any `yaml:"static_configs"`
			KubernetesSD   []map[string]any `yaml:"kubernetes_sd_configs"`
			RelabelConfigs []map[string]any `yaml:"relabel_configs"`
			Unknown        map[string]any   `yaml:",inline"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.ScrapeConfigs) != 2 {
		t.Fatalf("%d scrape configs", len(c.ScrapeConfigs))
	}
	for _, s := range c.ScrapeConfigs {
		if s.MetricsPath != "/metrics" || s.Authorization.Type != "Bearer" || s.Authorization.CredentialsFile == "" || s.Authorization.Credentials != "" {
			t.Errorf("%s: path %q, authorization %+v (want /metrics, a Bearer token from a file)", s.JobName, s.MetricsPath, s.Authorization)
		}
		if len(s.Unknown) > 0 {
			t.Errorf("%s: keys this test does not know: %v", s.JobName, s.Unknown)
		}
	}
	k := render(c.ScrapeConfigs[1])
	for _, want := range []string{"role: pod", "gwsim", "__meta_kubernetes_pod_label_app_kubernetes_io_name", "__meta_kubernetes_pod_container_port_name", "action: keep"} {
		if !strings.Contains(k, want) {
			t.Errorf("the Kubernetes scrape lacks %s", want)
		}
	}
	// The Deployment's labels and port are what the scrape keeps.
	g, err := os.ReadFile(filepath.Join(root, "deploy/k8s/gwsim.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(g), "app.kubernetes.io/name: gwsim") || !strings.Contains(string(g), "{name: http, containerPort: 8080}") {
		t.Error("deploy/k8s/gwsim.yaml lost the label or the port name the scrape keeps")
	}
}

// TestServedMetricsMatchTheList: a real gwsim serve (the built binary),
// after requests in JSON and XML, good and bad, serves at /metrics behind
// its admin token only metrics of GwsimMetrics (gwsim_…) with their type
// and labels, and the request, latency and error metrics among them; the
// default collectors' too.
func TestServedMetricsMatchTheList(t *testing.T) {
	dir := t.TempDir()
	fl := filepath.Join(dir, "fleet.yaml")
	fh, err := os.Create(fl)
	if err != nil {
		t.Fatal(err)
	}
	if err := simtest.Fleet().WriteYAML(fh); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	p := simtest.Serve(t, simtest.Binary(t, "gwsim"), "--fleet", fl, "--admin-token", "metrics-token-0123456789abcdef0123456789")
	c := simtest.NewClient(t, p.URL)
	for _, f := range []device.Format{device.JSON, device.XML} {
		c.Send(device.SendMessage, f, append(c.Envelope(), simtest.S("message_type", "alarm"), simtest.S("message_value", "m=1"))).OK(t, f)
		c.Send(device.UpdateName, f, append(c.Envelope(), simtest.S("sn", "nope"), simtest.S("name", "x"))).Fail(t, f, http.StatusBadRequest, device.CodeInvalidField, "sn")
	}
	get := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, p.URL+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("metrics-token-0123456789abcdef0123456789")
	if code != http.StatusOK {
		t.Fatalf("/metrics with the token: %d\n%s", code, body)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d, want 401", code)
	}
	types := map[string]string{}
	labels := map[string]map[string]bool{}
	sample := regexp.MustCompile(`^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? `)
	label := regexp.MustCompile(`([a-zA-Z_]\w*)="`)
	for _, line := range strings.Split(body, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
			continue
		}
		if m := sample.FindStringSubmatch(line); m != nil {
			name := m[1]
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				if base := strings.TrimSuffix(name, s); types[base] == "histogram" {
					name = base
				}
			}
			if labels[name] == nil {
				labels[name] = map[string]bool{}
			}
			for _, l := range label.FindAllStringSubmatch(m[2], -1) {
				if l[1] != "le" {
					labels[name][l[1]] = true
				}
			}
		}
	}
	for name, typ := range types {
		if !strings.HasPrefix(name, "gwsim_") {
			continue
		}
		want, ok := GwsimMetrics[name]
		if !ok {
			t.Errorf("gwsim serves %s, which GwsimMetrics (and so the dashboard and the docs) lacks", name)
			continue
		}
		if typ != want.Type {
			t.Errorf("%s is a %s, GwsimMetrics says %s", name, typ, want.Type)
		}
		for l := range labels[name] {
			if !slices.Contains(want.Labels, l) {
				t.Errorf("%s has the label %s, GwsimMetrics says %v", name, l, want.Labels)
			}
		}
	}
	for _, name := range []string{"gwsim_requests_total", "gwsim_request_duration_seconds", "gwsim_errors_total"} {
		if len(labels[name]) != len(GwsimMetrics[name].Labels) {
			t.Errorf("%s after requests: labels %v, want %v", name, labels[name], GwsimMetrics[name].Labels)
		}
	}
	for name := range DefaultCollectorMetrics {
		if types[name] == "" {
			t.Errorf("no %s: the default collectors are not registered", name)
		}
	}
}
