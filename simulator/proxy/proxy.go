// Package proxy is gwsim proxy: it stands in front of a real
// implementation of the interface, checks every request against the
// interface's rules and every answer too, and flags what breaks them on
// each side: in its journal and log, in the client report (GET
// /_sim/clients, gwsim clients) and in a report of the service's answers
// (GET /_sim/service). It changes nothing on the wire unless BlockInvalid
// is set; with a cassette Writer it records the upstream's answers for
// gwsim serve --replay.
//
// The rules are gwsim's own (gatewayapi/device, the codec, CONTRACT's
// table of codes and statuses); the harness's rule table lives under
// conformance/, which gwsim may not import.
package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator/cassette"
	"github.com/gwdmi/gwtools/simulator/clients"
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
	codes    map[string]int
	handler  http.Handler

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
	rt := cfg.Transport
	if rt == nil {
		rt = &http.Transport{Proxy: http.ProxyFromEnvironment, DisableCompression: true, MaxIdleConnsPerHost: 64,
			ResponseHeaderTimeout: cfg.Timeout, IdleConnTimeout: 90 * time.Second}
	}
	p := &Proxy{cfg: cfg, upstream: u, log: cfg.Logger,
		http: &http.Client{Transport: rt, Timeout: cfg.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		service: newServiceReport(redactURL(u)), journal: &journal{max: cfg.JournalSize},
		bearer: sha256.Sum256([]byte("Bearer " + cfg.AdminToken)), codes: server.Codes()}
	cc := clients.Config{Window: -1}
	if f := cfg.Fleet; f != nil {
		a := f.Authenticator()
		cc.Auth, cc.Location, cc.Window = a, f.Location(), f.Window()
		p.auth = a
		if cc.Window == 0 {
			cc.Window = -1
		}
	}
	p.clients = clients.New(cc)
	p.handler = p.routes()
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
	admin("GET /_sim/{$}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep := p.clients.Report()
		rep.Service = p.service.snapshot()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		rep.WriteHTML(w)
	}))
	for _, op := range device.Operations {
		mux.Handle(op.Path(), p.operation(op))
	}
	// Everything else goes to the upstream unchecked.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, p.cfg.MaxBody))
		if err != nil {
			p.fail(w, device.JSON, http.StatusBadRequest, device.Errorf(device.CodeMalformedBody, "", "the body could not be read"))
			return
		}
		res, answer, err := p.forward(r, body)
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
		if p.cfg.AdminToken != "" {
			sum := sha256.Sum256([]byte(r.Header.Get("Authorization")))
			if subtle.ConstantTimeCompare(sum[:], p.bearer[:]) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="gwsim proxy admin"`)
				writeJSON(w, http.StatusUnauthorized, map[string]any{"status": "error",
					"error": map[string]string{"code": device.CodeUnauthorized, "field": "Authorization",
						"message": "the admin API needs Authorization: Bearer <admin token>"}})
				return
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// operation checks a request of op, passes it on (unless it is blocked),
// checks the answer and relays it unchanged.
func (p *Proxy) operation(op device.Operation) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ct := r.Header.Get("Content-Type")
		format, _ := codec.FormatOf(ct)
		body, err := io.ReadAll(io.LimitReader(r.Body, p.cfg.MaxBody+1))
		if err != nil {
			p.fail(w, orJSON(format), http.StatusBadRequest, device.Errorf(device.CodeMalformedBody, "", "the body could not be read"))
			return
		}
		if int64(len(body)) > p.cfg.MaxBody {
			p.fail(w, orJSON(format), http.StatusRequestEntityTooLarge,
				device.Errorf(device.CodeBodyTooLarge, "", "the proxy reads bodies up to %d bytes", p.cfg.MaxBody))
			return
		}
		verdict := p.checkRequest(op, r, format, body)
		ent := Entry{Time: start.UTC(), Operation: op.Name(), Client: verdict.client, RequestViolation: verdict.violation()}
		if format != 0 {
			ent.Format = format.String()
		}
		var (
			res    *http.Response
			answer []byte
		)
		if verdict.err != nil && p.cfg.BlockInvalid {
			ent.Blocked = true
			res, answer = p.blocked(orJSON(format), verdict.err)
		} else {
			res, answer, err = p.forward(r, body)
			if err != nil {
				ent.Status, ent.AnswerViolations = http.StatusBadGateway, []string{"no answer: " + err.Error()}
				p.journal.add(ent)
				p.log.Warn("upstream did not answer", "operation", op.Name(), "err", err)
				p.unreachable(w, orJSON(format), err)
				return
			}
			ent.AnswerViolations = p.checkAnswer(op, format, verdict, res, answer)
		}
		ent.Status = res.StatusCode
		ent.DurationUS = time.Since(start).Microseconds()
		p.clients.Observe(clients.Exchange{Time: start, Done: time.Now(), Path: op.Path(), ContentType: ct, Body: body,
			Status: res.StatusCode, Header: res.Header, Answer: answer})
		p.journal.add(ent)
		if ent.RequestViolation != "" {
			p.log.Warn("the app broke the interface's rules", "client", ent.Client, "operation", op.Name(), "violation", ent.RequestViolation, "blocked", ent.Blocked)
		}
		for _, v := range ent.AnswerViolations {
			p.log.Warn("the service broke the interface's rules", "operation", op.Name(), "status", ent.Status, "violation", v)
		}
		if p.cfg.Record != nil && !ent.Blocked {
			if e, cred, ok := cassette.Request(op.Path(), ct, body); ok {
				e.Answer = cassette.Answer{Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"),
					RetryAfter: res.Header.Get("Retry-After"), Body: cred.Scrub(string(answer))}
				e.RecordedAt = start.UTC()
				if err := p.cfg.Record.Record(e); err != nil {
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
	if _, ok := r.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = nil // as the app sent it: none
	}
	res, err := p.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(res.Body, p.cfg.MaxBody))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the answer: %w", err)
	}
	return res, answer, nil
}

// relay writes the upstream's answer as it came.
func (p *Proxy) relay(w http.ResponseWriter, r *http.Request, res *http.Response, answer []byte) {
	for k, vs := range res.Header {
		w.Header()[k] = vs
	}
	for _, h := range hopByHop {
		w.Header().Del(h)
	}
	if r.Method != http.MethodHead {
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
	}
	w.WriteHeader(res.StatusCode)
	w.Write(answer)
}

func (p *Proxy) blocked(f device.Format, e *device.Error) (*http.Response, []byte) {
	h := http.Header{}
	h.Set("Content-Type", codec.ContentType(f))
	h.Set("X-Gwsim-Proxy", "blocked")
	return &http.Response{StatusCode: server.StatusOf(e.Code), Header: h}, codec.Error(f, e)
}

func (p *Proxy) fail(w http.ResponseWriter, f device.Format, status int, e *device.Error) {
	w.Header().Set("Content-Type", codec.ContentType(f))
	w.WriteHeader(status)
	w.Write(codec.Error(f, e))
}

func (p *Proxy) unreachable(w http.ResponseWriter, f device.Format, err error) {
	msg := "the upstream did not answer"
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
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
	// err is the first rule the request breaks (nil: none).
	err *device.Error
	// auth says the envelope failed the fleet's keys (only with a fleet).
	auth bool
}

func (v verdict) violation() string {
	if v.err == nil {
		return ""
	}
	return v.err.Error()
}

// checkRequest judges a request by the interface's rules (and the fleet's
// keys when there is one). The sign's value never enters a message.
func (p *Proxy) checkRequest(op device.Operation, r *http.Request, format device.Format, body []byte) verdict {
	var v verdict
	if r.Method != http.MethodPost {
		v.err = device.Errorf(device.CodeMethodNotAllowed, "", "%s is not allowed; use POST", r.Method)
		return v
	}
	if _, derr := codec.FormatOf(r.Header.Get("Content-Type")); derr != nil {
		v.err = derr
		return v
	}
	pairs, derr := codec.Decode(format, body)
	if derr != nil {
		v.err = derr
		return v
	}
	for _, pr := range pairs {
		if pr.Key == device.FieldAPIKey {
			v.client = clients.Mask(strings.TrimSpace(pr.Value.Text))
		}
	}
	req, derr := device.Parse(op, format, pairs)
	if derr != nil {
		if derr.Field == device.FieldSign {
			derr = device.Errorf(derr.Code, derr.Field, "sign must be 32 hexadecimal characters")
		}
		v.err = derr
		return v
	}
	if p.auth != nil {
		if aerr := p.auth.Check(&req.Envelope); aerr != nil {
			v.err, v.auth = aerr, true
		}
	}
	return v
}

// checkAnswer lists the rules an answer breaks.
func (p *Proxy) checkAnswer(op device.Operation, format device.Format, v verdict, res *http.Response, body []byte) []string {
	var out []string
	flag := func(id, msg string) {
		out = append(out, msg)
		p.service.flag(id, op.Name()+": "+msg)
	}
	p.service.count()
	status := res.StatusCode
	mt, _, err := mime.ParseMediaType(res.Header.Get("Content-Type"))
	var af device.Format
	switch {
	case err != nil:
	case mt == "application/json":
		af = device.JSON
	case mt == "application/xml" || mt == "text/xml":
		af = device.XML
	}
	if af == 0 {
		flag(AnswerFormat, fmt.Sprintf("answer %d has Content-Type %q, neither JSON nor XML", status, res.Header.Get("Content-Type")))
	} else if format != 0 && af != format {
		flag(AnswerFormat, fmt.Sprintf("answer %d is %s to a %s request", status, af, format))
	}
	st, code := readAnswer(af, body)
	switch {
	case status == http.StatusOK && st != "success":
		flag(AnswerBody, fmt.Sprintf("answer 200 has status %q, not success", st))
	case status != http.StatusOK && af != 0 && (st != "error" || code == ""):
		flag(AnswerBody, fmt.Sprintf("error answer %d has no status error with an error code", status))
	}
	invalid := v.err != nil && !v.auth
	switch {
	case invalid && status >= 200 && status < 300:
		flag(RefusesInvalid, fmt.Sprintf("accepted (%d) a request that breaks the rules: %s", status, v.err.Error()))
	case invalid && status >= 500:
		flag(No5xx, fmt.Sprintf("answered %d to bad input (%s)", status, v.err.Code))
	case v.err == nil && status == http.StatusBadRequest && isValidationCode(code):
		flag(AcceptsValid, fmt.Sprintf("refused a request that follows the rules: 400 %s", code))
	case v.auth && status >= 200 && status < 300:
		flag(RefusesInvalid, fmt.Sprintf("accepted (%d) a request the fleet's keys refuse: %s", status, v.err.Code))
	}
	if status == http.StatusTooManyRequests && res.Header.Get("Retry-After") == "" {
		flag(RetryAfter, "answer 429 has no Retry-After")
	}
	if want, ok := p.codes[code]; ok && code != "" && want != status {
		flag(StatusOfCode, fmt.Sprintf("error %s came with status %d; CONTRACT 4 gives it %d", code, status, want))
	}
	return out
}

func isValidationCode(c string) bool {
	switch c {
	case device.CodeInvalidField, device.CodeMissingField, device.CodeUnexpectedField, device.CodeMalformedBody:
		return true
	}
	return false
}

// readAnswer reads status and error.code of an answer body.
func readAnswer(f device.Format, body []byte) (status, code string) {
	var a struct {
		Status string `json:"status" xml:"status"`
		Error  struct {
			Code string `json:"code" xml:"code"`
		} `json:"error" xml:"error"`
	}
	switch f {
	case device.JSON:
		if json.Unmarshal(body, &a) != nil {
			return "", ""
		}
	case device.XML:
		if xmlUnmarshal(body, &a) != nil {
			return "", ""
		}
	default:
		return "", ""
	}
	return a.Status, a.Error.Code
}

// Open listens on addr and serves in the background.
func (p *Proxy) Open(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	p.ln = ln
	p.srv = &http.Server{Handler: p.handler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: p.cfg.Timeout + 30*time.Second, IdleTimeout: 60 * time.Second,
		ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)}
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
