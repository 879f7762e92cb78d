package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// SessionCookie is the dashboard's sign-in cookie.
const SessionCookie = "gwsim_session"

// SessionLifetime is how long a dashboard sign-in lasts.
const SessionLifetime = 12 * time.Hour

// maxSessions bounds the sessions kept; the oldest go first.
const maxSessions = 10000

// sessions are the dashboard's sign-ins. A cookie is "id.mac": a random id
// and the HMAC-SHA256 of it keyed by the admin token, so it is never the
// token and cannot be made without it; the id must also still be signed in
// (sign-out forgets it).
type sessions struct {
	key []byte
	now func() time.Time
	mu  sync.Mutex
	ids map[string]time.Time // id -> expiry
}

func newSessions(token string, now func() time.Time) *sessions {
	return &sessions{key: []byte("gwsim dashboard session\x00" + token), now: now, ids: map[string]time.Time{}}
}

func (ss *sessions) mac(id string) string {
	m := hmac.New(sha256.New, ss.key)
	m.Write([]byte(id))
	return hex.EncodeToString(m.Sum(nil))
}

// open starts a session and returns its cookie value.
func (ss *sessions) open() string {
	var b [16]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	now := ss.now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.ids) >= maxSessions {
		var oldest string
		for k, exp := range ss.ids {
			if exp.Before(now) {
				delete(ss.ids, k)
			} else if oldest == "" || exp.Before(ss.ids[oldest]) {
				oldest = k
			}
		}
		if len(ss.ids) >= maxSessions {
			delete(ss.ids, oldest)
		}
	}
	ss.ids[id] = now.Add(SessionLifetime)
	return id + "." + ss.mac(id)
}

// valid says whether a cookie value is a live session; it returns the id.
func (ss *sessions) valid(v string) (string, bool) {
	id, sum, ok := strings.Cut(v, ".")
	if !ok || len(id) != 32 || !hmac.Equal([]byte(sum), []byte(ss.mac(id))) {
		return "", false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	exp, ok := ss.ids[id]
	if !ok || exp.Before(ss.now()) {
		delete(ss.ids, id)
		return "", false
	}
	return id, true
}

func (ss *sessions) close(id string) {
	ss.mu.Lock()
	delete(ss.ids, id)
	ss.mu.Unlock()
}

// authorized says whether r may use the admin API: no token configured, the
// bearer header, or a signed-in cookie. A state-changing call made with the
// cookie must also come from this origin (CSRF, on top of SameSite=Strict).
func (s *Server) authorized(r *http.Request) (bool, *device.Error) {
	if s.cfg.AdminToken == "" {
		return true, nil
	}
	if tokenMatches(r.Header.Get("Authorization"), s.bearer) {
		return true, nil
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return false, nil
	}
	if _, ok := s.sessions.valid(c.Value); !ok {
		return false, nil
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
		return false, device.Errorf(device.CodeUnauthorized, "Origin", "a change made with the dashboard's cookie must come from the dashboard's own origin")
	}
	return true, nil
}

// sameOrigin says whether the request's Origin header names this server.
// A browser always sends Origin on POST, PUT and DELETE from fetch.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return false
	}
	u, err := url.Parse(o)
	if err != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return u.Scheme == scheme && strings.EqualFold(u.Host, r.Host)
}

func (s *Server) sessionCookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: SessionCookie, Value: value, Path: "/_sim/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
}

// signIn serves POST /_sim/session: {"token": "..."} (or a form field
// token) in exchange for the session cookie. The token is never logged.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if s.cfg.AdminToken == "" {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "signed_in": true, "token_required": false})
		return
	}
	if r.Header.Get("Origin") != "" && !sameOrigin(r) {
		adminError(w, device.Errorf(device.CodeUnauthorized, "Origin", "sign in from the dashboard's own origin"))
		return
	}
	var token string
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<10))
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/x-www-form-urlencoded":
		q, err := url.ParseQuery(string(body))
		if err != nil {
			adminError(w, device.Errorf(device.CodeMalformedBody, "", "the sign-in form could not be read"))
			return
		}
		token = q.Get("token")
	default:
		var in struct {
			Token string `json:"token"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			adminError(w, device.Errorf(device.CodeMalformedBody, "", `sign in with a JSON object {"token": "<admin token>"}`))
			return
		}
		token = in.Token
	}
	if !tokenMatches("Bearer "+token, s.bearer) {
		s.log.Warn("dashboard sign-in refused", "remote", r.RemoteAddr)
		adminError(w, device.Errorf(device.CodeUnauthorized, "token", "this is not the admin token"))
		return
	}
	http.SetCookie(w, s.sessionCookie(r, s.sessions.open(), int(SessionLifetime/time.Second)))
	s.log.Info("dashboard signed in", "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "signed_in": true, "token_required": true})
}

// session serves GET /_sim/session: whether this browser is signed in.
func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	ok, _ := s.authorized(r)
	writeJSON(w, http.StatusOK, map[string]any{"signed_in": ok, "token_required": s.cfg.AdminToken != ""})
}

// signOut serves DELETE /_sim/session: forgets the session, clears the cookie.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if c, err := r.Cookie(SessionCookie); err == nil && s.sessions != nil {
		if r.Header.Get("Origin") != "" && !sameOrigin(r) {
			adminError(w, device.Errorf(device.CodeUnauthorized, "Origin", "sign out from the dashboard's own origin"))
			return
		}
		if id, ok := s.sessions.valid(c.Value); ok {
			s.sessions.close(id)
		}
	}
	http.SetCookie(w, s.sessionCookie(r, "", -1))
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "signed_in": false, "token_required": s.cfg.AdminToken != ""})
}
