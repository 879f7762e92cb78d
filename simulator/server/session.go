package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// SessionCookie is the dashboard's sign-in cookie.
const SessionCookie = "gwsim_session"

// SessionLifetime is how long a dashboard sign-in lasts.
const SessionLifetime = 12 * time.Hour

// maxSessions bounds the sessions the in-memory SessionStore keeps; the
// oldest go first.
const maxSessions = 10000

// SessionStore keeps the dashboard's sign-ins by id, so that a cookie is
// honoured by whichever replica shares the store, and a sign-out ends the
// session for all of them. MemorySessions is the in-process one; a shared
// store (package redisstore) keeps them where every replica reads them.
type SessionStore interface {
	// Open records a session that lasts until expires.
	Open(id string, expires time.Time) *device.Error
	// Live says whether the session is open and not expired.
	Live(id string) (bool, *device.Error)
	// End forgets the session.
	End(id string) *device.Error
}

// MemorySessions is the in-process SessionStore.
type MemorySessions struct {
	now func() time.Time
	mu  sync.Mutex
	ids map[string]time.Time // id -> expiry
}

// NewMemorySessions returns an empty store; now is the clock (time.Now
// when nil).
func NewMemorySessions(now func() time.Time) *MemorySessions {
	if now == nil {
		now = time.Now
	}
	return &MemorySessions{now: now, ids: map[string]time.Time{}}
}

// Open implements SessionStore.
func (m *MemorySessions) Open(id string, expires time.Time) *device.Error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.ids) >= maxSessions {
		var oldest string
		for k, exp := range m.ids {
			if exp.Before(now) {
				delete(m.ids, k)
			} else if oldest == "" || exp.Before(m.ids[oldest]) {
				oldest = k
			}
		}
		if len(m.ids) >= maxSessions {
			delete(m.ids, oldest)
		}
	}
	m.ids[id] = expires
	return nil
}

// Live implements SessionStore.
func (m *MemorySessions) Live(id string) (bool, *device.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	exp, ok := m.ids[id]
	if !ok || exp.Before(m.now()) {
		delete(m.ids, id)
		return false, nil
	}
	return true, nil
}

// End implements SessionStore.
func (m *MemorySessions) End(id string) *device.Error {
	m.mu.Lock()
	delete(m.ids, id)
	m.mu.Unlock()
	return nil
}

// sessions are the dashboard's sign-ins. A cookie is "id.mac": a random id
// and the HMAC-SHA256 of it keyed by the admin token, so it is never the
// token and cannot be made without it (every replica started with the
// same token checks it alike); the id must also still be open in the
// SessionStore (sign-out ends it).
type sessions struct {
	key   []byte
	now   func() time.Time
	store SessionStore
}

func newSessions(token string, now func() time.Time, store SessionStore) *sessions {
	return &sessions{key: []byte("gwsim dashboard session\x00" + token), now: now, store: store}
}

func (ss *sessions) mac(id string) string {
	m := hmac.New(sha256.New, ss.key)
	m.Write([]byte(id))
	return hex.EncodeToString(m.Sum(nil))
}

// open starts a session and returns its cookie value.
func (ss *sessions) open() (string, *device.Error) {
	var b [16]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	if derr := ss.store.Open(id, ss.now().Add(SessionLifetime)); derr != nil {
		return "", derr
	}
	return id + "." + ss.mac(id), nil
}

// valid says whether a cookie value is a live session; it returns the id.
// A store that cannot be asked answers with its error.
func (ss *sessions) valid(v string) (string, bool, *device.Error) {
	id, sum, ok := strings.Cut(v, ".")
	if !ok || len(id) != 32 || !hmac.Equal([]byte(sum), []byte(ss.mac(id))) {
		return "", false, nil
	}
	live, derr := ss.store.Live(id)
	if derr != nil || !live {
		return "", false, derr
	}
	return id, true, nil
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
	if _, ok, derr := s.sessions.valid(c.Value); !ok {
		return false, derr
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
		return false, device.Errorf(device.CodeUnauthorized, "Origin", "a change made with the dashboard's cookie must come from the dashboard's own origin")
	}
	return true, nil
}

// sameOrigin says whether the request's Origin header names this server
// (guard.go, originIsHost). A browser always sends Origin on POST, PUT and
// DELETE from fetch.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return o != "" && originIsHost(o, r.Host)
}

func (s *Server) sessionCookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: SessionCookie, Value: value, Path: "/_sim/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
}

// signIn serves POST /_sim/session: {"token": "..."} in exchange for the
// session cookie (the guard has made sure the body is JSON). The token is
// never logged. Attempts are limited per client (SignInLimiter).
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
	if !s.signIns.Allow(w, r) {
		s.log.Warn("dashboard sign-in refused: too many attempts", "remote", r.RemoteAddr)
		return
	}
	var in struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<10)).Decode(&in); err != nil {
		adminError(w, device.Errorf(device.CodeMalformedBody, "", `sign in with a JSON object {"token": "<admin token>"}`))
		return
	}
	token := in.Token
	if !tokenMatches("Bearer "+token, s.bearer) {
		s.log.Warn("dashboard sign-in refused", "remote", r.RemoteAddr)
		adminError(w, device.Errorf(device.CodeUnauthorized, "token", "this is not the admin token"))
		return
	}
	value, derr := s.sessions.open()
	if derr != nil {
		adminError(w, derr)
		return
	}
	http.SetCookie(w, s.sessionCookie(r, value, int(SessionLifetime/time.Second)))
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
		id, ok, derr := s.sessions.valid(c.Value)
		if derr == nil && ok {
			derr = s.sessions.store.End(id)
		}
		if derr != nil {
			// Not signed out everywhere: say so rather than pretend.
			adminError(w, derr)
			return
		}
	}
	http.SetCookie(w, s.sessionCookie(r, "", -1))
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "signed_in": false, "token_required": s.cfg.AdminToken != ""})
}
