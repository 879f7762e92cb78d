package proxy

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/server"
)

// The live page is static HTML, CSS and plain JavaScript embedded in the
// binary. The page holds no data (it is open, so that it can offer the
// sign-in); the data comes from GET /_sim/clients and GET /_sim/journal,
// behind the admin token or the session cookie a sign-in sets.
//
//go:embed live
var liveFiles embed.FS

// SessionCookie is the live page's sign-in cookie.
const SessionCookie = "gwsim_proxy_session"

func (p *Proxy) liveRoutes(mux *http.ServeMux) {
	static, _ := fs.Sub(liveFiles, "live")
	files := http.StripPrefix("/_sim/static/", http.FileServerFS(static))
	mux.HandleFunc("GET /_sim/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		w.Header().Set("Referrer-Policy", "no-referrer")
		http.ServeFileFS(w, r, static, "index.html")
	})
	mux.HandleFunc("GET /_sim/static/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /_sim/session", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"token_required": p.cfg.AdminToken != "", "signed_in": p.authorized(r)})
	})
	mux.HandleFunc("POST /_sim/session", p.signIn)
	mux.HandleFunc("DELETE /_sim/session", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie(SessionCookie); err == nil {
			p.sessions.End(c.Value)
		}
		http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/_sim/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}

// signIn trades the admin token for a session cookie; the token itself is
// never kept by the browser.
func (p *Proxy) signIn(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Token string `json:"token"`
	}
	if !p.signIns.Allow(w, r) {
		p.log.Warn("live page sign-in refused: too many attempts", "remote", r.RemoteAddr)
		return
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&in); err != nil {
		adminError(w, http.StatusBadRequest, device.Errorf(device.CodeMalformedBody, "", `the body must be {"token":"…"}`))
		return
	}
	if p.cfg.AdminToken != "" {
		got, want := sha256.Sum256([]byte(in.Token)), sha256.Sum256([]byte(p.cfg.AdminToken))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			adminError(w, http.StatusUnauthorized, device.Errorf(device.CodeUnauthorized, "token", "the admin token is wrong"))
			return
		}
	}
	var b [32]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	expires := time.Now().Add(server.SessionLifetime)
	if derr := p.sessions.Open(id, expires); derr != nil {
		adminError(w, http.StatusServiceUnavailable, derr)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: id, Path: "/_sim/", Expires: expires, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// authorized: no admin token, the bearer token, or a live session cookie.
func (p *Proxy) authorized(r *http.Request) bool {
	if p.cfg.AdminToken == "" {
		return true
	}
	sum := sha256.Sum256([]byte(r.Header.Get("Authorization")))
	if subtle.ConstantTimeCompare(sum[:], p.bearer[:]) == 1 {
		return true
	}
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		ok, _ := p.sessions.Live(c.Value)
		// A change made with the cookie must come from the live page's
		// own origin (as in gwsim serve): a browser sends Origin with it.
		if ok && r.Method != http.MethodGet && r.Method != http.MethodHead {
			ok = server.SameOrigin(r)
		}
		return ok
	}
	return false
}

func adminError(w http.ResponseWriter, status int, e *device.Error) {
	writeJSON(w, status, map[string]any{"status": "error", "error": map[string]string{"code": e.Code, "field": e.Field, "message": e.Message}})
}
