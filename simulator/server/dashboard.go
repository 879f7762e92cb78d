package server

import (
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strings"

	"github.com/gwdmi/gwtools/simulator/store"
)

// dashboardDevices bounds the devices the dashboard lists.
const dashboardDevices = 500

var dashboardTmpl = template.Must(template.New("dash").Funcs(template.FuncMap{
	"state": func(m map[string]any) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s=%v", k, m[k])
		}
		return strings.Join(parts, "  ")
	},
	"ok": func(status int) bool { return status < 400 },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="3">
<title>gwsim dashboard</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.4em 0 .4em}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f4f4f4}code{font-size:12px}.ok{color:#176f2c}.bad{color:#b00020;font-weight:600}
.muted{color:#777}.pill{display:inline-block;padding:0 .5em;border-radius:1em;background:#eef}
</style></head><body>
<h1>gwsim</h1>
<div class="muted">{{.Accounts}} account(s), {{.Gateways}} gateway(s), {{.Devices}} device(s); {{.Requests}} request(s) served. Refreshes every 3 s.
Faults: latency {{.Faults.Latency}}, error rate {{.Faults.ErrorRate}}, offline {{if .Faults.OfflineGateways}}{{range .Faults.OfflineGateways}}<code>{{.}}</code> {{end}}{{else}}none{{end}}.</div>
{{range .State}}<h2>Account <code>{{.ID}}</code></h2>
{{range .Gateways}}<h3>Gateway <code>{{.MAC}}</code> <span class="pill">{{.MessagesTotal}} message(s)</span></h3>
<table><tr><th>sn</th><th>type</th><th>name</th><th>state</th></tr>
{{range .Devices}}<tr><td><code>{{.SN}}</code></td><td>{{.Type}}</td><td>{{.Name}}</td><td><code>{{state .State}}</code></td></tr>{{end}}</table>
{{if .Messages}}<p>Messages, oldest first:</p><table><tr><th>time (UTC)</th><th>type</th><th>value</th></tr>
{{range .Messages}}<tr><td>{{.Time.Format "15:04:05.000"}}</td><td>{{.Type}}</td><td><code>{{.Value}}</code></td></tr>{{end}}</table>{{end}}
{{end}}{{end}}
<h2>Last requests, newest first</h2>
<table><tr><th>time (UTC)</th><th>method</th><th>path</th><th>format</th><th>status</th><th>error</th><th>gateway / device</th></tr>
{{range .Journal}}<tr><td>{{.Time.Format "15:04:05.000"}}</td><td>{{.Method}}</td><td><code>{{.Path}}</code></td><td>{{.Format}}</td>
<td class="{{if ok .Status}}ok{{else}}bad{{end}}">{{.Status}}</td><td>{{.Code}}{{if .Field}} ({{.Field}}){{end}}</td><td><code>{{.MAC}} {{.SN}}</code></td></tr>
{{else}}<tr><td colspan="7" class="muted">No requests yet.</td></tr>{{end}}</table>
{{if .Truncated}}<p class="muted">Only the first {{.Limit}} devices are listed; GET /_sim/state has them all.</p>{{end}}
</body></html>`))

func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) {
	state, truncated, derr := s.store.Dump(dashboardDevices)
	if derr != nil {
		adminError(w, derr)
		return
	}
	for i := range state {
		for j := range state[i].Gateways {
			// The newest messages are the interesting ones on a dashboard.
			if m := state[i].Gateways[j].Messages; len(m) > 20 {
				state[i].Gateways[j].Messages = m[len(m)-20:]
			}
		}
	}
	entries, total := s.journal.Last(25)
	for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
		entries[i], entries[j] = entries[j], entries[i]
	}
	a, g, d := s.store.Counts()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	dashboardTmpl.Execute(w, struct {
		Accounts, Gateways, Devices int
		Requests                    uint64
		Faults                      Faults
		Journal                     []Entry
		State                       []store.AccountView
		Truncated                   bool
		Limit                       int
	}{a, g, d, total, s.faults.get(), entries, state, truncated, dashboardDevices})
}
