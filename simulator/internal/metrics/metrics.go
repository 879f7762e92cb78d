// Package metrics is gwsim's Prometheus metrics: what a platform team
// scrapes from GET /metrics on the admin listener of gwsim serve and gwsim
// proxy. Each Server or Proxy has a registry of its own (no package-level
// registry), so that tests and simulators in one process never collide.
//
// The names are a published interface (deploy/ holds a Grafana dashboard
// written against them):
//
//	gwsim_requests_total{operation,format,status} counter
//	gwsim_request_duration_seconds{operation}     histogram
//	gwsim_errors_total{code}                      counter
//	gwsim_store_errors_total                      counter
//	gwsim_redis_up                                gauge (only on a Redis store)
//	gwsim_store_writable                          gauge
//	gwsim_events_clients                          gauge
//	gwsim_journal_entries                         gauge
//	gwsim_client_report_apps                      gauge
//	gwsim_proxy_violations_total{side}            counter (gwsim proxy)
//	gwsim_build_info{version,commit,go_version}   gauge, always 1
//
// A label named code is always the interface's error code
// (gwsim_errors_total); an HTTP status is always status.
//
// plus the Go runtime's go_* and the process's process_* collectors.
//
// A request costs the metrics a few atomic adds: the counters of each
// label set are resolved once, on first use, and kept in fixed arrays
// indexed by operation, format and status, so that the request path
// builds no label string and looks nothing up in a map.
package metrics

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/version"
)

// Metric names.
const (
	Requests         = "gwsim_requests_total"
	Duration         = "gwsim_request_duration_seconds"
	Errors           = "gwsim_errors_total"
	StoreErrors      = "gwsim_store_errors_total"
	RedisUp          = "gwsim_redis_up"
	StoreWritable    = "gwsim_store_writable"
	EventsClients    = "gwsim_events_clients"
	JournalEntries   = "gwsim_journal_entries"
	ClientReportApps = "gwsim_client_report_apps"
	ProxyViolations  = "gwsim_proxy_violations_total"
	BuildInfo        = "gwsim_build_info"
)

// Operation label values; OpOther is a request to no operation's path.
const (
	OpCommand    = "command"
	OpMessage    = "message"
	OpUpdateName = "update_name"
	OpOther      = "other"
)

// Format label values; FormatNone is a request whose format could not be
// told.
const (
	FormatJSON = "json"
	FormatXML  = "xml"
	FormatNone = "none"
)

// DurationBuckets are the histogram's buckets, in seconds: from 100 µs (a
// request on loopback) to 60 s (the largest injected latency).
var DurationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Gauges are read when /metrics is scraped, never on a request's path.
// A nil function leaves its gauge out.
type Gauges struct {
	// RedisUp is 1 while the Redis store answers, 0 while it does not;
	// nil on a store that is not Redis.
	RedisUp func() bool
	// StoreWritable is 1 while a change would be accepted by the store,
	// 0 while one would be refused for the store's sake (it cannot be
	// reached, has no primary, or no replica confirms a write under
	// --store-durability replicated).
	StoreWritable func() bool
	// EventsClients is the number of open GET /_sim/events streams.
	EventsClients func() int
	// JournalEntries is the number of entries the journal keeps now.
	JournalEntries func() int
	// ClientReportApps is the number of apps (api_keys) the client report
	// has a report of.
	ClientReportApps func() int
}

// numOps are the operation label values by index: device.Operation
// (1..3) and 0 for other.
var opNames = [...]string{OpOther, OpCommand, OpMessage, OpUpdateName}

var formatNames = [...]string{FormatNone, FormatJSON, FormatXML}

// statuses are the HTTP statuses with a slot of their own: 100 to 599.
const (
	minStatus = 100
	statuses  = 500
)

// Server is one gwsim server's metrics.
type Server struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	errorVec *prometheus.CounterVec
	// byStatus[op][format][status-100] is resolved on first use.
	byStatus [len(opNames)][len(formatNames)][statuses]atomic.Pointer[prometheus.Counter]
	duration [len(opNames)]prometheus.Observer
	// errs are the counters of the known error codes, by index in codes;
	// an unknown code is resolved on each use (never gwsim's own).
	errs        []prometheus.Counter
	storeErrors prometheus.Counter
}

// codes are the error codes gwsim answers with, in a fixed order.
var codes = []string{
	device.CodeInvalidField, device.CodeMissingField, device.CodeUnexpectedField, device.CodeMalformedBody,
	device.CodeBadRequest, device.CodeUnsupportedMediaType, device.CodeBodyTooLarge, device.CodeMethodNotAllowed,
	device.CodeNotFound, device.CodeUnknownAPIKey, device.CodeAccountMismatch, device.CodeBadSignature,
	device.CodeStaleTimestamp, device.CodeReplayedRequest, device.CodeGatewayNotFound, device.CodeDeviceNotFound,
	device.CodeTypeMismatch, device.CodeGatewayOffline, device.CodeInjectedFault, device.CodeRateLimited,
	device.CodeUnauthorized, device.CodeTimeout, device.CodeStorageFailed, device.CodeStorageUnavailable,
	device.CodeDeviceUnreachable,
}

// NewServer makes a server's registry with gwsim's metrics, the gauges
// given, and the Go and process collectors.
func NewServer(g Gauges) *Server {
	m := &Server{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo())
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: Requests,
		Help: "Operation requests answered, by operation (command, message, update_name, other), format (json, xml, none) and HTTP status (status; the error code is gwsim_errors_total's code)."},
		[]string{"operation", "format", "status"})
	hist := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: Duration,
		Help: "Time from a request's arrival to its answer, by operation, in seconds.", Buckets: DurationBuckets},
		[]string{"operation"})
	m.errorVec = prometheus.NewCounterVec(prometheus.CounterOpts{Name: Errors,
		Help: "Error answers by the interface's error code (invalid_field, bad_signature, ...)."}, []string{"code"})
	m.storeErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: StoreErrors,
		Help: "Requests answered 503 because the store failed or could not be reached (storage_failed, storage_unavailable)."})
	m.reg.MustRegister(m.requests, hist, m.errorVec, m.storeErrors)
	for i, name := range opNames {
		m.duration[i] = hist.WithLabelValues(name)
	}
	m.errs = make([]prometheus.Counter, len(codes))
	for i, c := range codes {
		m.errs[i] = m.errorVec.WithLabelValues(c)
	}
	gauge := func(name, help string, f func() float64) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	if g.RedisUp != nil {
		gauge(RedisUp, "1 while the Redis store answers, 0 while it cannot be reached.", func() float64 { return b2f(g.RedisUp()) })
	}
	if g.StoreWritable != nil {
		gauge(StoreWritable, "1 while the store takes changes, 0 while a change would be refused for the store's sake (unreachable, no primary, no replica confirming writes under --store-durability replicated).",
			func() float64 { return b2f(g.StoreWritable()) })
	}
	if g.EventsClients != nil {
		gauge(EventsClients, "Open event streams (GET /_sim/events: dashboards watching this replica).", func() float64 { return float64(g.EventsClients()) })
	}
	if g.JournalEntries != nil {
		gauge(JournalEntries, "Requests the journal keeps now (bounded by --journal-size).", func() float64 { return float64(g.JournalEntries()) })
	}
	if g.ClientReportApps != nil {
		gauge(ClientReportApps, "Apps (api_keys) the client report has a report of.", func() float64 { return float64(g.ClientReportApps()) })
	}
	return m
}

// buildInfo is gwsim_build_info: 1, labelled with the running build's
// version, commit and Go version (the same as gwsim --version).
func buildInfo() prometheus.Collector {
	v := version.Get()
	commit := v.Commit
	if commit == "" {
		commit = "unknown"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: BuildInfo,
		Help:        "1, labelled with the build running: version, commit and Go version (as gwsim --version says).",
		ConstLabels: prometheus.Labels{"version": v.Version, "commit": commit, "go_version": v.GoVersion}})
	g.Set(1)
	return g
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Registry is the server's registry (for tests and further collectors).
func (m *Server) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in Prometheus's text format.
func (m *Server) Handler() http.Handler { return Handler(m.reg) }

// Handler serves reg in Prometheus's exposition formats.
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

// Request counts one answered request: op is 0 for a path that is no
// operation, format 0 when it could not be told, code the error code of
// an error answer ("" for a success).
func (m *Server) Request(op device.Operation, format device.Format, status int, code string, took time.Duration) {
	o, f := int(op), int(format)
	if o < 0 || o >= len(opNames) {
		o = 0
	}
	if f < 0 || f >= len(formatNames) {
		f = 0
	}
	m.duration[o].Observe(took.Seconds())
	if s := status - minStatus; s >= 0 && s < statuses {
		slot := &m.byStatus[o][f][s]
		c := slot.Load()
		if c == nil {
			n := m.requests.WithLabelValues(opNames[o], formatNames[f], itoa(status))
			slot.CompareAndSwap(nil, &n)
			c = slot.Load()
		}
		(*c).Inc()
	} else {
		m.requests.WithLabelValues(opNames[o], formatNames[f], itoa(status)).Inc()
	}
	if code == "" {
		return
	}
	if code == device.CodeStorageFailed || code == device.CodeStorageUnavailable {
		m.storeErrors.Inc()
	}
	for i, c := range codes {
		if c == code {
			m.errs[i].Inc()
			return
		}
	}
	m.errorVec.WithLabelValues(code).Inc()
}

// itoa is strconv.Itoa for the three-digit statuses, without importing
// strconv for one call.
func itoa(n int) string {
	if n < 0 || n > 999 {
		n = 0
	}
	return string([]byte{byte('0' + n/100), byte('0' + n/10%10), byte('0' + n%10)})
}

// Proxy is gwsim proxy's metrics: the violations of the interface's rules
// it saw, by side (app: a request broke them; service: an answer did).
type Proxy struct {
	reg          *prometheus.Registry
	app, service prometheus.Counter
}

// NewProxy makes a proxy's registry with its counters, the Go and process
// collectors and the gauges given.
func NewProxy(g Gauges) *Proxy {
	p := &Proxy{reg: prometheus.NewRegistry()}
	p.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo())
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: ProxyViolations,
		Help: "Breaches of the interface's rules gwsim proxy saw, by side: app (a request) or service (an answer)."}, []string{"side"})
	p.reg.MustRegister(vec)
	p.app, p.service = vec.WithLabelValues("app"), vec.WithLabelValues("service")
	if g.ClientReportApps != nil {
		p.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: ClientReportApps,
			Help: "Apps (api_keys) the client report has a report of."}, func() float64 { return float64(g.ClientReportApps()) }))
	}
	return p
}

// Violations counts an exchange's breaches: app of the request (0 or 1),
// service of the answer.
func (p *Proxy) Violations(app, service int) {
	if app > 0 {
		p.app.Add(float64(app))
	}
	if service > 0 {
		p.service.Add(float64(service))
	}
}

// Registry is the proxy's registry.
func (p *Proxy) Registry() *prometheus.Registry { return p.reg }

// Handler serves the registry in Prometheus's text format.
func (p *Proxy) Handler() http.Handler { return Handler(p.reg) }
