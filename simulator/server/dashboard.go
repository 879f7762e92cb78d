package server

import (
	"embed"
	"io/fs"
	"net/http"
	"strconv"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/store"
)

// The dashboard is static HTML, CSS and plain JavaScript embedded in the
// binary: no build step, no framework. The page itself holds no data (it is
// open, so that it can offer the sign-in); the data comes from admin calls
// (GET /_sim/dashboard/data, GET /_sim/events) behind the token or cookie.
//
//go:embed dashboard
var dashboardFiles embed.FS

// DashboardPageSize is how many devices one page of the dashboard draws;
// DashboardMaxPages bounds the pages, so that a million-device fleet is
// never sent whole (GET /_sim/state?limit= has it all).
const (
	DashboardPageSize = 100
	DashboardMaxPages = 100
	// dashboardJournal is how many requests the dashboard lists.
	dashboardJournal = 50
	// dashboardMessages is how many of each gateway's newest messages it shows.
	dashboardMessages = 20
)

func (s *Server) dashboardRoutes(mux *http.ServeMux, h func(string, http.HandlerFunc)) {
	if s.cfg.AdminOff {
		return // every /_sim/ path but health falls to the admin catch-all: 404 admin_off
	}
	static, _ := fs.Sub(dashboardFiles, "dashboard")
	files := http.StripPrefix("/_sim/static/", http.FileServerFS(static))
	page := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		w.Header().Set("Referrer-Policy", "no-referrer")
		http.ServeFileFS(w, r, static, "index.html")
	}
	mux.HandleFunc("GET /_sim/{$}", page)
	mux.HandleFunc("GET /_sim/static/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /_sim/session", s.session)
	mux.HandleFunc("POST /_sim/session", s.signIn)
	mux.HandleFunc("DELETE /_sim/session", s.signOut)
	h("GET /_sim/dashboard/data", s.read(s.dashboardData))
	h("GET /_sim/events", s.events)
}

// DashboardData is what the dashboard draws: one page of devices, the
// newest requests, the faults in force.
type DashboardData struct {
	Accounts  int                 `json:"accounts"`
	Gateways  int                 `json:"gateways"`
	Devices   int                 `json:"devices"`
	Requests  uint64              `json:"requests"`
	Page      int                 `json:"page"`
	Pages     int                 `json:"pages"`
	PageSize  int                 `json:"page_size"`
	State     []store.AccountView `json:"state"`
	Journal   []Entry             `json:"journal"`
	Faults    Faults              `json:"faults"`
	Types     map[string][]string `json:"types"`
	AdminAuth bool                `json:"token_required"`
	// Replica names the gwsim process that serves this page.
	Replica string `json:"replica,omitempty"`
	// Replay says answers may come from a recording (gwsim serve
	// --replay); Names are the names of the devices the journal names,
	// by "mac/sn".
	Replay string            `json:"replay,omitempty"`
	Names  map[string]string `json:"names"`
}

func (s *Server) dashboardData(w http.ResponseWriter, r *http.Request) {
	page := 0
	if v := r.URL.Query().Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n >= DashboardMaxPages {
			adminError(w, device.Errorf(device.CodeInvalidField, "page", "page must be a whole number from 0 to %d, not %q", DashboardMaxPages-1, v))
			return
		}
		page = n
	}
	a, g, d := s.store.Counts()
	pages := (d + DashboardPageSize - 1) / DashboardPageSize
	if pages > DashboardMaxPages {
		pages = DashboardMaxPages
	}
	if pages == 0 {
		pages = 1
	}
	if page >= pages {
		page = pages - 1
	}
	all, _, derr := s.store.Dump((page + 1) * DashboardPageSize)
	if derr != nil {
		adminError(w, derr)
		return
	}
	state := pageOf(all, page*DashboardPageSize)
	entries, total, derr := s.journal.Read(dashboardJournal)
	if derr != nil {
		adminError(w, derr)
		return
	}
	for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
		entries[i], entries[j] = entries[j], entries[i]
	}
	types := map[string][]string{}
	for _, t := range device.Types {
		for _, f := range t.Fields {
			types[t.Name] = append(types[t.Name], f.Name)
		}
	}
	names := map[string]string{}
	for _, e := range entries {
		k := e.MAC + "/" + e.SN
		if _, done := names[k]; done || e.MAC == "" || e.SN == "" {
			continue
		}
		names[k] = ""
		if dv, ok, derr := s.store.Device(e.MAC, e.SN); derr == nil && ok {
			names[k] = dv.Name
		}
	}
	for k, v := range names {
		if v == "" {
			delete(names, k)
		}
	}
	writeJSON(w, http.StatusOK, DashboardData{Accounts: a, Gateways: g, Devices: d, Requests: total,
		Page: page, Pages: pages, PageSize: DashboardPageSize, State: state, Journal: entries,
		Faults: s.faults.get(), Types: types, AdminAuth: s.cfg.AdminToken != "", Replica: s.cfg.Replica,
		Replay: s.cfg.ReplayNote, Names: names})
}

// pageOf drops the first skip devices of a dump, and the gateways and
// accounts left empty by that, and keeps each gateway's newest messages.
func pageOf(all []store.AccountView, skip int) []store.AccountView {
	out := []store.AccountView{}
	for _, a := range all {
		av := store.AccountView{ID: a.ID, Gateways: []store.GatewayView{}}
		for _, g := range a.Gateways {
			if skip > 0 && skip >= len(g.Devices) {
				skip -= len(g.Devices)
				continue
			}
			g.Devices = g.Devices[skip:]
			skip = 0
			if len(g.Messages) > dashboardMessages {
				g.Messages = g.Messages[len(g.Messages)-dashboardMessages:]
			}
			av.Gateways = append(av.Gateways, g)
		}
		if len(av.Gateways) > 0 {
			out = append(out, av)
		}
	}
	return out
}
