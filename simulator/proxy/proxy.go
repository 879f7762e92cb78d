// Package proxy is gwsim proxy: it stands in front of a real
// implementation of the interface, checks every request against the
// interface's rules and every answer too, and flags what breaks them on
// each side: in its journal and log, in the client report (GET
// /_sim/clients, gwsim clients) and in a report of the service's answers
// (GET /_sim/service). It changes nothing on the wire unless BlockInvalid
// is set, but for what would act on its own origin (relay); with a
// cassette Writer it records the upstream's answers for gwsim serve
// --replay.
//
// The rules are the harness's own rule table, gatewayapi/oracle, written
// from the published interface and the CONTRACT and independent of gwsim's
// validator: the proxy judges a request (method, Content-Type, size, body
// structure, every field) and an answer (format, body, status of each
// code, the refusal's code, Retry-After) as gwconform would. With a fleet
// it also checks the credentials (CONTRACT 1) with the fleet's keys.
package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
	"github.com/gwdmi/gwtools/simulator/cassette"
	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/internal/metrics"
	"github.com/gwdmi/gwtools/simulator/server"
)

// Defaults of Config.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultMaxBody     = 1 << 20
	DefaultJournalSize = 1000
)

// Config is what a Proxy does. It is read by New.
type Config struct {
	// Upstream is the implementation's base URL.
	Upstream string
	// Fleet, when set, gives the keys' secrets: the proxy then checks
	// signs and timestamps itself.
	Fleet *fleet.Fleet
	// Record, when set, writes each recordable answer to a cassette.
	Record *cassette.Writer
	// BlockInvalid answers a request that breaks the interface's rules
	// itself (400 and its code) instead of passing it on.
	BlockInvalid bool
	// AdminToken guards /_sim/ as in gwsim serve.
	AdminToken string
	Logger     *slog.Logger
	// Timeout bounds one exchange with the upstream; MaxBody the bodies
	// read on either side (a larger request is refused with 413).
	Timeout     time.Duration
	MaxBody     int64
	JournalSize int
	// Transport replaces the upstream transport, for tests.
	Transport http.RoundTripper
	// AllowedHosts are the Host names /_sim/ answers besides IP
	// addresses, localhost and the listen address (server.Guard).
	AllowedHosts []string
	// TrustedProxies are the balancers whose Forwarded or
	// X-Forwarded-For names the client the guess and sign-in limiters
	// count (server.ParseTrustedProxies); none: the connection's peer.
	TrustedProxies []netip.Prefix
	// MaxInFlight bounds the bytes of the bodies held at once across
	// every request in flight (DefaultMaxInFlight when 0); beyond, 503
	// proxy_busy with Retry-After.
	MaxInFlight int64
}

// Proxy is a running gwsim proxy.
type Proxy struct {
	cfg      Config
	upstream *url.URL
	log      *slog.Logger
	http     *http.Client
	clients  *clients.Recorder
	service  *serviceReport
	journal  *journal
	bearer   [sha256.Size]byte
	auth     *auth.Authenticator // the fleet's, when there is one
	sessions *server.MemorySessions
	signIns  *server.SignInLimiter
	guesses  *server.BearerLimiter
	guard    server.Guard
	handler  http.Handler
	metrics  *metrics.Proxy
	mem      *memBudget
	// recordFull logs once that the cassette's cap is reached.
	recordFull sync.Once
	// secrets masks the fleet's keys and secrets by value in what is
	// recorded (an upstream may echo them).
	secrets *client.ValueMasker

	ln  net.Listener
	srv *http.Server
}

// New checks cfg and builds a proxy; Open starts it listening.
func New(cfg Config) (*Proxy, error) {
	u, err := url.Parse(cfg.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("--upstream %q must be a base URL such as https://api.example.com", cfg.Upstream)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.JournalSize <= 0 {
		cfg.JournalSize = DefaultJournalSize
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	rt := cfg.Transport
	if rt == nil {
		rt = &http.Transport{Proxy: http.ProxyFromEnvironment, DisableCompression: true, MaxIdleConnsPerHost: 64,
			ResponseHeaderTimeout: cfg.Timeout, IdleConnTimeout: 90 * time.Second}
	}
	p := &Proxy{cfg: cfg, upstream: u, log: cfg.Logger, mem: &memBudget{max: cfg.MaxInFlight},
		http: &http.Client{Transport: rt, Timeout: cfg.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		service: newServiceReport(redactURL(u)), journal: &journal{max: cfg.JournalSize},
		bearer: sha256.Sum256([]byte("Bearer " + cfg.AdminToken)), sessions: server.NewMemorySessions(nil),
		signIns: server.NewSignInLimiter().Behind(cfg.TrustedProxies), guesses: server.NewBearerLimiter(nil, nil).Behind(cfg.TrustedProxies), guard: server.Guard{AllowedHosts: cfg.AllowedHosts, Log: cfg.Logger}}
	p.secrets = &client.ValueMasker{}
	cc := clients.Config{Window: -1}
	if f := cfg.Fleet; f != nil {
		n := 0
		for k, v := range f.Authenticator().Keys {
			if n++; n > 10000 {
				break
			}
			p.secrets.Add("key", k)
			p.secrets.Add("secret", v.Secret)
		}
		a := f.Authenticator()
		cc.Auth, cc.Location, cc.Window = a, f.Location(), f.Window()
		p.auth = a
		if cc.Window == 0 {
			cc.Window = -1
		}
	}
	p.clients = clients.New(cc)
	p.metrics = metrics.NewProxy(metrics.Gauges{ClientReportApps: p.clients.Apps})
	// The guard keeps other sites out of /_sim/ (DNS rebinding,
	// cross-site changes, form bodies), as in gwsim serve.
	p.handler = cleanPaths(p.bounded(p.guard.Wrap(p.routes())))
	return p, nil
}

// redactURL drops a user:password from the upstream's URL for reports.
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// Clients is the proxy's client report.
func (p *Proxy) Clients() *clients.Recorder { return p.clients }

// Handler is the proxy's whole HTTP handler.
func (p *Proxy) Handler() http.Handler { return p.handler }

func (p *Proxy) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_sim/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "upstream": p.service.upstream})
	})
	admin := func(pattern string, h http.Handler) { mux.Handle(pattern, p.admin(h)) }
	report := p.clients.HandlerWith(p.service.snapshot)
	admin("GET /_sim/clients", report)
	admin("DELETE /_sim/clients", report)
	admin("GET /_sim/service", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, p.service.snapshot())
	}))
	admin("GET /_sim/journal", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, p.journal.last())
	}))
	admin("GET /metrics", p.metrics.Handler())
	p.liveRoutes(mux)
	// The report of both sides as one self-contained page (as gwsim
	// clients --format html writes it).
	admin("GET /_sim/report", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep := p.clients.Report()
		rep.Service = p.service.snapshot()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		rep.WriteHTML(w)
	}))
	for _, op := range device.Operations {
		mux.Handle(op.Path(), p.operation(op))
	}
	// /_sim/ is the proxy's own: nothing under it is passed on, not even
	// a CORS pre-flight, which is answered here without any
	// Access-Control-Allow-Origin (no other origin may call /_sim/).
	mux.HandleFunc("OPTIONS /_sim/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD, POST, DELETE, OPTIONS")
		w.Header().Set("Vary", "Origin")
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/_sim/", func(w http.ResponseWriter, r *http.Request) {
		adminError(w, http.StatusNotFound, device.Errorf(device.CodeNotFound, "", "no admin call %s %s on the proxy", r.Method, r.URL.Path))
	})
	// Everything else goes to the upstream unchecked.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(limited(r.Context(), r.Body), p.cfg.MaxBody+1))
		if p.overBudget(w, device.JSON, err) {
			return
		}
		if err != nil {
			p.fail(w, device.JSON, http.StatusBadRequest, device.Errorf(device.CodeMalformedBody, "", "the body could not be read"))
			return
		}
		if int64(len(body)) > p.cfg.MaxBody {
			p.fail(w, device.JSON, http.StatusRequestEntityTooLarge,
				device.Errorf(device.CodeBodyTooLarge, "", "the proxy passes on bodies up to %d bytes", p.cfg.MaxBody))
			return
		}
		res, answer, err := p.forward(r, body)
		if p.overBudget(w, device.JSON, err) {
			return
		}
		if err != nil {
			p.unreachable(w, device.JSON, err)
			return
		}
		p.relay(w, r, res, answer)
	})
	return mux
}

func (p *Proxy) admin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The right token is never held back, whoever else guessed wrong
		// from the same address; a held-back client's wrong ones get 429.
		if !p.authorized(r) {
			if p.cfg.AdminToken != "" && p.guesses.Held(w, r) {
				return
			}
			if r.Header.Get("Authorization") != "" && p.guesses.Failed(w, r) {
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="gwsim proxy admin"`)
			adminError(w, http.StatusUnauthorized, device.Errorf(device.CodeUnauthorized, "Authorization",
				"the admin API needs Authorization: Bearer <admin token>, or a sign-in on the live page /_sim/"))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// operation checks a request of op, passes it on (unless it is blocked),
// checks the answer and relays it (relay).
func (p *Proxy) operation(op device.Operation) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sent, conn, first := server.SentBy(r, start)
		ct := r.Header.Get("Content-Type")
		format, _ := codec.FormatOf(ct)
		body, err := io.ReadAll(io.LimitReader(limited(r.Context(), r.Body), p.cfg.MaxBody+1))
		if p.overBudget(w, orJSON(format), err) {
			return
		}
		if err != nil {
			p.fail(w, orJSON(format), http.StatusBadRequest, device.Errorf(device.CodeMalformedBody, "", "the body could not be read"))
			return
		}
		if int64(len(body)) > p.cfg.MaxBody {
			p.fail(w, orJSON(format), http.StatusRequestEntityTooLarge,
				device.Errorf(device.CodeBodyTooLarge, "", "the proxy reads bodies up to %d bytes", p.cfg.MaxBody))
			return
		}
		verdict := p.checkRequest(op, r, body)
		ent := Entry{Time: start.UTC(), Operation: op.Name(), Client: verdict.client, RequestViolation: verdict.violation()}
		if format != 0 {
			ent.Format = format.String()
		}
		var (
			res    *http.Response
			answer []byte
		)
		if verdict.refused() && p.cfg.BlockInvalid {
			ent.Blocked = true
			res, answer = p.blocked(orJSON(verdict.format), verdict)
		} else {
			res, answer, err = p.forward(r, body)
			if p.overBudget(w, orJSON(format), err) {
				return
			}
			if err != nil {
				ent.Status, ent.AnswerViolations = http.StatusBadGateway, []string{"no answer: " + err.Error()}
				p.journal.add(ent)
				p.metrics.Violations(violations(ent))
				p.log.Warn("upstream did not answer", "operation", op.Name(), "err", err)
				p.unreachable(w, orJSON(format), err)
				return
			}
			ent.AnswerViolations = p.checkAnswer(op, verdict, res, answer)
		}
		ent.Status = res.StatusCode
		ent.DurationUS = time.Since(start).Microseconds()
		p.clients.Observe(clients.Exchange{Time: start, Done: time.Now(), Sent: sent, Conn: conn, First: first,
			Path: op.Path(), ContentType: ct, Body: body, RemoteAddr: r.RemoteAddr,
			Status: res.StatusCode, Header: res.Header, Answer: answer,
			Judged: true, Violation: verdict.fieldViolation(), SignBad: verdict.signBad})
		p.journal.add(ent)
		p.metrics.Violations(violations(ent))
		if ent.RequestViolation != "" {
			p.log.Warn("the app broke the interface's rules", "client", ent.Client, "operation", op.Name(), "violation", ent.RequestViolation, "blocked", ent.Blocked)
		}
		for _, v := range ent.AnswerViolations {
			p.log.Warn("the service broke the interface's rules", "operation", op.Name(), "status", ent.Status, "violation", v)
		}
		if p.cfg.Record != nil && !ent.Blocked && p.authenticated(verdict, res.StatusCode) {
			if e, cred, ok := cassette.Request(op.Path(), ct, body); ok {
				e.Answer = cassette.Answer{Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"),
					RetryAfter: res.Header.Get("Retry-After"), Body: p.secrets.Mask(cred.Scrub(string(answer)))}
				e.RecordedAt = start.UTC()
				switch err := p.cfg.Record.Record(e); {
				case errors.Is(err, cassette.ErrFull):
					p.recordFull.Do(func() {
						n, b := p.cfg.Record.Caps()
						p.log.Warn("cassette: the cap is reached, nothing more is recorded (gwsim proxy --record-max-entries, --record-max-mib)",
							"max_entries", n, "max_mib", b>>20)
					})
				case err != nil:
					p.log.Error("cassette: the answer could not be recorded", "err", err)
				}
			}
		}
		p.relay(w, r, res, answer)
	})
}

// hop-by-hop headers are the connection's, not the message's.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forward sends the request on to the upstream as it came.
func (p *Proxy) forward(r *http.Request, body []byte) (*http.Response, []byte, error) {
	u := *p.upstream
	u.Path = p.upstream.Path + r.URL.Path
	u.RawQuery = r.URL.RawQuery
	ctx, cancel := context.WithTimeout(r.Context(), p.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header = r.Header.Clone()
	for _, h := range hopByHop {
		req.Header.Del(h)
	}
	p.dropOwnCredentials(req.Header)
	if _, ok := r.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = nil // as the app sent it: none
	}
	res, err := p.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(limited(r.Context(), res.Body), p.cfg.MaxBody+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the answer: %w", err)
	}
	if int64(len(answer)) > p.cfg.MaxBody {
		return nil, nil, &tooLargeError{p.cfg.MaxBody}
	}
	return res, answer, nil
}

// tooLargeError is an upstream's answer over MaxBody: answered 502, never
// cut short and passed on as if whole.
type tooLargeError struct{ max int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("the upstream's answer is larger than the %d bytes the proxy passes on", e.max)
}

// dropOwnCredentials takes the proxy's own credentials out of a request
// passed on, in every form a server might take them: its admin token in
// any Authorization header (Bearer in any case, Basic with the token as
// user or password, or the token anywhere in the value) and its session
// cookie under any case of its name never reach the upstream, on any
// path. The app's own Authorization and cookies are passed on.
func (p *Proxy) dropOwnCredentials(h http.Header) {
	if tok := p.cfg.AdminToken; tok != "" {
		var kept []string
		for _, v := range h.Values("Authorization") {
			if !carriesToken(v, tok) {
				kept = append(kept, v)
			}
		}
		h.Del("Authorization")
		for _, v := range kept {
			h.Add("Authorization", v)
		}
	}
	cookies := h.Values("Cookie")
	if len(cookies) == 0 {
		return
	}
	var kept []string
	for _, line := range cookies {
		for _, c := range strings.Split(line, ";") {
			c = strings.TrimSpace(c)
			if name, _, _ := strings.Cut(c, "="); c != "" && !strings.EqualFold(strings.TrimSpace(name), SessionCookie) {
				kept = append(kept, c)
			}
		}
	}
	h.Del("Cookie")
	if len(kept) > 0 {
		h.Set("Cookie", strings.Join(kept, "; "))
	}
}

// carriesToken says whether an Authorization value holds tok: as it is
// (whatever the scheme and its case), or in a Basic value's base64.
func carriesToken(v, tok string) bool {
	if strings.Contains(v, tok) {
		return true
	}
	scheme, cred, _ := strings.Cut(strings.TrimSpace(v), " ")
	if !strings.EqualFold(scheme, "basic") {
		return false
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(strings.TrimSpace(cred))
	}
	return err == nil && strings.Contains(string(b), tok)
}

// relay writes the upstream's answer with only the headers an API answer
// needs (relayedHeaders, an allow-list): nothing that would act on the
// proxy's origin, where its live page and session cookie live, is
// relayed, and every answer is served with a CSP sandbox (an HTML or SVG
// answer runs no script and has no origin of its own) and nosniff.
func (p *Proxy) relay(w http.ResponseWriter, r *http.Request, res *http.Response, answer []byte) {
	for k, vs := range res.Header {
		if relayedHeaders[textproto.CanonicalMIMEHeaderKey(k)] || res.Request == ownAnswer {
			w.Header()[k] = vs
		}
	}
	w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodHead {
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
	}
	w.WriteHeader(res.StatusCode)
	w.Write(answer)
}

// authenticated says whether a request's credentials were accepted, so
// that its answer may be recorded: by the fleet's keys when the proxy has
// them, else by the upstream's answering it with success. A request that
// failed authentication (or whose credentials nobody checked and the
// upstream refused) leaves nothing on disk.
func (p *Proxy) authenticated(v verdict, status int) bool {
	if p.auth != nil {
		return v.authed
	}
	return status >= 200 && status < 300
}

// ownAnswer marks a response the proxy made itself (blocked): all its
// headers are the proxy's and are written.
var ownAnswer = &http.Request{}

// blocked is the proxy's own refusal of a request that breaks a rule: the
// rule table's status, code and field.
func (p *Proxy) blocked(f device.Format, v verdict) (*http.Response, []byte) {
	h := http.Header{}
	h.Set("Content-Type", codec.ContentType(f))
	h.Set("X-Gwsim-Proxy", "blocked")
	if v.rule.Code == device.CodeMethodNotAllowed {
		h.Set("Allow", http.MethodPost)
	}
	status := v.rule.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	return &http.Response{StatusCode: status, Header: h, Request: ownAnswer}, codec.Error(f, &device.Error{Code: v.rule.Code, Field: v.rule.Field, Message: v.scrub(v.rule.Why)})
}

func (p *Proxy) fail(w http.ResponseWriter, f device.Format, status int, e *device.Error) {
	w.Header().Set("Content-Type", codec.ContentType(f))
	w.WriteHeader(status)
	w.Write(codec.Error(f, e))
}

func (p *Proxy) unreachable(w http.ResponseWriter, f device.Format, err error) {
	msg := "the upstream did not answer"
	var ne net.Error
	var big *tooLargeError
	switch {
	case errors.As(err, &big):
		msg = big.Error()
	case errors.As(err, &ne) && ne.Timeout():
		msg = fmt.Sprintf("the upstream did not answer within %s", p.cfg.Timeout)
	}
	w.Header().Set("X-Gwsim-Proxy", "upstream-unreachable")
	p.fail(w, f, http.StatusBadGateway, device.Errorf("upstream_unreachable", "", "%s", msg))
}

func orJSON(f device.Format) device.Format {
	if f == 0 {
		return device.JSON
	}
	return f
}

// verdict is what the proxy found of a request.
type verdict struct {
	client string
	format device.Format
	// rule is the rule table's verdict (gatewayapi/oracle); with a fleet,
	// a request valid by the table whose credentials the fleet refuses
	// becomes that refusal.
	rule oracle.Verdict
	// auth says the credentials failed the fleet's keys; signBad that the
	// sign did.
	auth, signBad bool
	// authed: the fleet's keys accepted the credentials.
	authed bool
	// secrets are the api_key and sign as sent, kept out of every message.
	secrets []string
}

// refused reports whether the request breaks a rule (an Open verdict
// breaks none).
func (v verdict) refused() bool { return !v.rule.OK && !v.rule.Open }

func (v verdict) violation() string {
	if !v.refused() {
		return ""
	}
	level := "SHOULD"
	if v.rule.Must {
		level = "MUST"
	}
	return v.scrub(v.rule.Code + " (" + level + "): " + v.rule.Why)
}

// fieldViolation is the violation of the request's own form, without the
// credentials the client report judges apart (signs_correctly).
func (v verdict) fieldViolation() string {
	if v.auth {
		return ""
	}
	return v.violation()
}

// scrub takes the api_key and sign as sent out of a message.
func (v verdict) scrub(s string) string {
	for _, x := range v.secrets {
		if len(x) >= 4 {
			s = strings.ReplaceAll(s, x, "…")
		}
	}
	return s
}

// checkRequest judges a request by the interface's rule table
// (gatewayapi/oracle, the harness's), and by the fleet's keys when there
// is one. The sign's value never enters a message.
func (p *Proxy) checkRequest(op device.Operation, r *http.Request, body []byte) verdict {
	var v verdict
	format, sent, rule := oracle.JudgeRequest(op, oracle.Request{Method: r.Method, ContentType: r.Header.Get("Content-Type"), Body: body})
	v.format, v.rule = format, rule
	get := map[string]oracle.Value{}
	for _, s := range sent {
		switch s.Key {
		case device.FieldAPIKey:
			v.client = clients.Mask(strings.TrimSpace(s.Value.Raw))
			v.secrets = append(v.secrets, s.Value.Raw, strings.TrimSpace(s.Value.Raw))
		case device.FieldSign:
			v.secrets = append(v.secrets, s.Value.Raw, strings.TrimSpace(s.Value.Raw))
		}
		get[s.Key] = s.Value
	}
	if p.auth != nil {
		// The credentials are checked whatever else the request breaks:
		// only an authenticated request's answer is recorded.
		stored := func(f *oracle.Field) string {
			s, _ := f.Judge(format, get[f.Name]).Stored.(string)
			return s
		}
		e := device.Envelope{APIKey: stored(&oracle.APIKey), Timestamp: stored(&oracle.TimestampF), Sign: stored(&oracle.Sign),
			AccountID: stored(&oracle.Account), MAC: stored(&oracle.MAC)}
		e.Time, _ = time.Parse(oracle.TimestampLayout, e.Timestamp)
		aerr := p.auth.Check(&e)
		v.authed = aerr == nil
		if aerr != nil && rule.OK {
			v.auth, v.signBad = true, aerr.Code == device.CodeBadSignature
			v.rule = oracle.Verdict{Status: oracle.Statuses[aerr.Code], Code: aerr.Code, Field: aerr.Field,
				Why: aerr.Message + " (CONTRACT 1, by the fleet's keys)"}
		}
	}
	return v
}

// checkAnswer lists the rules an answer breaks, by the rule table.
func (p *Proxy) checkAnswer(op device.Operation, v verdict, res *http.Response, body []byte) []string {
	p.service.count()
	breaches := oracle.JudgeAnswer(v.format, v.rule, oracle.Answer{Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"),
		RetryAfter: res.Header.Get("Retry-After"), Body: body})
	var out []string
	for _, b := range breaches {
		level := "SHOULD"
		if b.Must {
			level = "MUST"
		}
		msg := v.scrub(b.Rule + " (" + level + "): " + b.Why)
		out = append(out, msg)
		p.service.flag(b.Rule, op.Name()+" ("+orJSON(v.format).String()+"): "+msg)
	}
	return out
}

// Open listens on addr and serves in the background.
func (p *Proxy) Open(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// Each request's send time as its connection shows it, for the
	// client report's judgements (server.TrackSent).
	ln = server.TrackSent(ln)
	p.ln = ln
	if host, _, err := net.SplitHostPort(addr); err == nil {
		p.guard.ListenHost = host
	}
	p.srv = &http.Server{Handler: p.handler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: p.cfg.Timeout + 30*time.Second, IdleTimeout: 60 * time.Second,
		ErrorLog:    slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
		ConnContext: server.SentContext, ConnState: server.SentIdle}
	go func() {
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error("serve stopped", "err", err)
		}
	}()
	return nil
}

// URL is the proxy's base URL.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Close stops the proxy, letting exchanges in flight finish.
func (p *Proxy) Close() error {
	if p.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Timeout)
	defer cancel()
	return p.srv.Shutdown(ctx)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// Entry is one exchange in the proxy's journal.
type Entry struct {
	Time             time.Time `json:"time"`
	Operation        string    `json:"operation"`
	Format           string    `json:"format,omitempty"`
	Client           string    `json:"client,omitempty"`
	Status           int       `json:"status"`
	DurationUS       int64     `json:"duration_us"`
	RequestViolation string    `json:"request_violation,omitempty"`
	AnswerViolations []string  `json:"answer_violations,omitempty"`
	Blocked          bool      `json:"blocked,omitempty"`
}

type journal struct {
	mu      sync.Mutex
	entries []Entry
	next    int
	max     int
}

func (j *journal) add(e Entry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.entries) < j.max {
		j.entries = append(j.entries, e)
		return
	}
	j.entries[j.next] = e
	j.next = (j.next + 1) % j.max
}

// last is the journal, oldest first.
func (j *journal) last() []Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Entry, 0, len(j.entries))
	out = append(out, j.entries[j.next:]...)
	return append(out, j.entries[:j.next]...)
}

// violations are an exchange's breaches by side, as the journal names
// them: the request's (0 or 1) and the answer's.
func violations(e Entry) (app, service int) {
	if e.RequestViolation != "" {
		app = 1
	}
	return app, len(e.AnswerViolations)
}

// Metrics is the proxy's Prometheus metrics.
func (p *Proxy) Metrics() *metrics.Proxy { return p.metrics }
