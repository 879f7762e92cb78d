package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// DefaultDumpLimit bounds the devices /_sim/state lists unless ?limit= says
// otherwise, so that a million-device fleet does not answer 100 MB by default.
const DefaultDumpLimit = 100000

func (s *Server) adminRoutes(mux *http.ServeMux) {
	h := func(pattern string, fn http.HandlerFunc) { mux.Handle(pattern, s.admin(fn)) }
	if s.cfg.HealthNeedsToken {
		h("GET /_sim/health", s.health)
		h("GET /_sim/ready", s.ready)
	} else {
		// Open for probes, which carry no token.
		mux.HandleFunc("GET /_sim/health", s.health)
		mux.HandleFunc("GET /_sim/ready", s.ready)
	}
	s.dashboardRoutes(mux, h)
	h("GET /_sim/state", s.read(s.adminState))
	h("GET /_sim/gateways/{mac}/devices/{sn}", s.read(func(w http.ResponseWriter, r *http.Request) {
		d, ok, derr := s.store.Device(r.PathValue("mac"), r.PathValue("sn"))
		if derr != nil {
			adminError(w, derr)
			return
		}
		if !ok {
			adminError(w, device.Errorf(device.CodeDeviceNotFound, "sn", "no device %s on gateway %s", r.PathValue("sn"), r.PathValue("mac")))
			return
		}
		writeJSON(w, http.StatusOK, d)
	}))
	h("GET /_sim/gateways/{mac}/messages", s.read(func(w http.ResponseWriter, r *http.Request) {
		// ?limit=N: only the newest N (a poller that wants the latest
		// message need not read the whole log each time); default all.
		n, derr := limitParam(r, -1)
		if derr != nil {
			adminError(w, derr)
			return
		}
		msgs, total, ok, derr := s.store.Messages(r.PathValue("mac"))
		if derr != nil {
			adminError(w, derr)
			return
		}
		if !ok {
			adminError(w, device.Errorf(device.CodeGatewayNotFound, "mac", "no gateway %s", r.PathValue("mac")))
			return
		}
		if n >= 0 && n < len(msgs) {
			msgs = msgs[len(msgs)-n:]
		}
		w.Header().Set("X-Total-Count", strconv.FormatUint(total, 10))
		writeJSON(w, http.StatusOK, msgs)
	}))
	h("GET /_sim/journal", s.read(func(w http.ResponseWriter, r *http.Request) {
		n, derr := limitParam(r, 100)
		if derr != nil {
			adminError(w, derr)
			return
		}
		entries, total, derr := s.journal.Read(n)
		if derr != nil {
			adminError(w, derr)
			return
		}
		w.Header().Set("X-Total-Count", strconv.FormatUint(total, 10))
		writeJSON(w, http.StatusOK, entries)
	}))
	h("GET /_sim/journal/{id}", s.read(func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
		if err != nil || id == 0 {
			adminError(w, device.Errorf(device.CodeInvalidField, "id", "id must be a journal entry's id, a whole number above 0"))
			return
		}
		v, ok := s.exchanges.get(id, s.fleetKeys())
		if !ok {
			adminError(w, device.Errorf(device.CodeNotFound, "id", "request %d is no longer kept here: this replica keeps its last %d requests and answers", id, exchangeSlots))
			return
		}
		writeJSON(w, http.StatusOK, v)
	}))
	h("POST /_sim/reset", func(w http.ResponseWriter, r *http.Request) {
		if derr := s.store.Reset(); derr != nil {
			adminError(w, derr)
			return
		}
		s.log.Info("state reset to the fleet as loaded")
		s.changes.Publish(Change{Kind: "reset", Replica: s.cfg.Replica})
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	h("GET /_sim/faults", s.read(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.faults.get().shown())
	}))
	h("PUT /_sim/faults", s.putFaults)
	h("DELETE /_sim/faults", func(w http.ResponseWriter, r *http.Request) {
		if derr := s.setFaults(noFaults()); derr != nil {
			adminError(w, derr)
			return
		}
		s.hand.set(noFaults(), time.Now())
		s.changes.Publish(Change{Kind: "faults", Replica: s.cfg.Replica})
		writeJSON(w, http.StatusOK, s.faults.get().shown())
	})
	h("GET /_sim/openapi.yaml", s.openAPI)
	for pattern, handler := range s.cfg.Admin {
		h(pattern, handler.ServeHTTP)
	}
	if _, ok := s.cfg.Admin["GET /_sim/scenario"]; !ok {
		// No scenario loaded: say so, rather than that the call does not exist.
		noScenario := func(w http.ResponseWriter, r *http.Request) {
			adminError(w, device.Errorf(device.CodeNotFound, "", "no scenario is loaded: start gwsim serve with --scenario FILE (docs/scenarios.md)"))
		}
		h("/_sim/scenario", noScenario)
		h("/_sim/scenario/", noScenario)
	}
	h("/_sim/", func(w http.ResponseWriter, r *http.Request) {
		adminError(w, device.Errorf(device.CodeNotFound, "", "no admin call %s %s", r.Method, r.URL.Path))
	})
}

// admin wraps an admin handler with the optional token check: the bearer
// header, or the dashboard's sign-in cookie.
func (s *Server) admin(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.AdminOff {
			w.Header().Set("Cache-Control", "no-store")
			writeJSON(w, http.StatusNotFound, map[string]any{"status": "error", "error": map[string]string{
				"code": "admin_off", "field": "path", "message": "the admin API is off (gwsim serve --admin off): only /_sim/health and /_sim/ready answer"}})
			return
		}
		// The right token is never held back, whoever else guessed wrong
		// from the same address; a held-back client's wrong ones get 429.
		if ok, derr := s.authorized(r); !ok {
			if s.cfg.AdminToken != "" && s.guesses.Held(w, r) {
				return
			}
			if r.Header.Get("Authorization") != "" && s.guesses.Failed(w, r) {
				s.log.Warn("admin request refused: too many wrong tokens", "remote", r.RemoteAddr)
				return
			}
			if derr == nil {
				derr = device.Errorf(device.CodeUnauthorized, "Authorization", "the admin API needs Authorization: Bearer <admin token> (or the dashboard's sign-in)")
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="gwsim admin"`)
			adminError(w, derr)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		next(w, r)
	})
}

// tokenMatches compares an Authorization header with the SHA-256 of the
// expected one in constant time: hashing first hides the token's length
// too, which subtle.ConstantTimeCompare alone returns early on.
func tokenMatches(got string, want [sha256.Size]byte) bool {
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(sum[:], want[:]) == 1
}

func (s *Server) adminState(w http.ResponseWriter, r *http.Request) {
	n, derr := limitParam(r, DefaultDumpLimit)
	if derr != nil {
		adminError(w, derr)
		return
	}
	accounts, truncated, derr := s.store.Dump(n)
	if derr != nil {
		adminError(w, derr)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"accounts": accounts, "truncated": truncated})
}

func (s *Server) putFaults(w http.ResponseWriter, r *http.Request) {
	var f Faults
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		adminError(w, device.Errorf(device.CodeMalformedBody, "", "faults must be a JSON object {latency, error_rate, offline_gateways, unreachable_devices, slow_devices, operation_error_rates}: %v", err))
		return
	}
	if err := f.check(); err != nil {
		field := strings.SplitN(err.Error(), " ", 2)[0]
		adminError(w, device.Errorf(device.CodeInvalidField, field, "%v", err))
		return
	}
	if derr := s.checkNames(&f); derr != nil {
		adminError(w, derr)
		return
	}
	if derr := s.setFaults(f); derr != nil {
		adminError(w, derr)
		return
	}
	s.hand.set(f, time.Now())
	s.changes.Publish(Change{Kind: "faults", Replica: s.cfg.Replica})
	s.log.Info("faults set", "latency", f.Latency.String(), "error_rate", f.ErrorRate, "offline_gateways", f.OfflineGateways,
		"unreachable_devices", len(f.UnreachableDevices), "slow_devices", len(f.SlowDevices), "operation_error_rates", f.OperationErrorRates)
	writeJSON(w, http.StatusOK, s.faults.get().shown())
}

func limitParam(r *http.Request, def int) (int, *device.Error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, device.Errorf(device.CodeInvalidField, "limit", "limit must be a whole number >= 0, not %q", v)
	}
	return n, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func adminError(w http.ResponseWriter, e *device.Error) {
	if e.Code == device.CodeStorageUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, StatusOf(e.Code), map[string]any{"status": "error",
		"error": map[string]string{"code": e.Code, "field": e.Field, "message": e.Message}})
}

// fleetKeys are the registered api_keys and their secrets (nil without an
// authenticator), to mask by value.
func (s *Server) fleetKeys() map[string]auth.Key {
	if s.cfg.Auth == nil {
		return nil
	}
	return s.cfg.Auth.Keys
}
