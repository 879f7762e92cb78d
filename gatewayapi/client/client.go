// Package client talks to any implementation of the Gateway Device
// Management Interface for the conformance harness, the load generator and gwsim send.
// It sends exactly the fields it is given, signs what it sends, and reads
// answers defensively: the target may be broken or hostile, so every answer
// is bounded in time and size and nothing in it can make the client panic.
package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Defaults of Config.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultMaxResponseBytes = 1 << 20
)

// UserAgent names the client to targets, so that their logs tell the
// harness's requests from real traffic.
const UserAgent = "gwtools-client/1"

// NoContentType as Request.ContentType sends no Content-Type header at all.
// It holds a NUL byte, which no header value can carry, so it never
// collides with a Content-Type a check wants to send.
const NoContentType = "\x00none"

// SignMode says whether the client signs a request.
type SignMode int

const (
	// SignAuto replaces the value of every "sign" field with the Signer's
	// sign over the fields actually sent; with no sign field nothing is
	// added, so a check can leave the sign out.
	SignAuto SignMode = iota
	// SignKeep sends the fields as given, for checks of a wrong sign.
	SignKeep
)

// Request is one request to send. Its zero values are the ordinary
// choices, so a check spells out only what it does differently.
type Request struct {
	// Path is joined to the base URL, e.g. device.SendCommand.Path().
	Path string
	// Method is POST when empty.
	Method string
	// Format encodes Fields: JSON (also when zero) or XML.
	Format device.Format
	// ContentType is the header to send: the format's own type when empty,
	// none at all when NoContentType.
	ContentType string
	Fields      []Field
	Sign        SignMode
	// RawBody, when not nil, is sent as it is instead of the encoded
	// Fields and is not signed: for malformed bodies.
	RawBody []byte
	// Header holds extra headers; they replace the client's own of the same
	// name (Content-Type, User-Agent). A Host header sets the request's host.
	Header http.Header
	// Renew, when set, gives the fields of each attempt as it goes: the
	// first, once any wait of the client is over (a shared Retry-After, a
	// rate), and each one after an answer that asked to retry (429 or 503
	// with Retry-After), which is sent again as a new request, with its
	// timestamp renewed, and signed afresh (with SignAuto), never as old
	// bytes whose timestamp has aged by the wait. Without it the same
	// fields are signed again.
	Renew func() []Field
	// Vary, when set, gives the fields of the same request with its
	// timestamp moved by shift seconds, for a Ledger to send it in a
	// second where it repeats no other request.
	Vary func(shift int) []Field
	// Repeat sends the request as it is even when it repeats one sent
	// before: a check about replays (CONTRACT 1) means it to.
	Repeat bool
	// Tamper, when set, says what the request makes wrong on purpose; the
	// exchange keeps it, so that a line sending it again keeps it wrong.
	Tamper *Tamper
}

// Config is how a Client reaches and treats its target. It is read by New
// and not used afterwards.
type Config struct {
	// BaseURL is the target's base URL (http or https, no query); request
	// paths are appended to it.
	BaseURL string
	// Signer signs requests whose Sign is SignAuto and that carry a sign
	// field; such requests fail when it is nil.
	Signer Signer
	// Timeout bounds a whole exchange, reading the body included;
	// DefaultTimeout when zero.
	Timeout time.Duration
	// MaxResponseBytes is the most of a body that is read; the rest is not
	// read at all. DefaultMaxResponseBytes when zero.
	MaxResponseBytes int64
	// Rate is the most requests per second across all goroutines; zero is
	// unlimited.
	Rate float64
	// RatePerPath is the most requests per second to each path (each
	// operation), on top of Rate; zero is unlimited.
	RatePerPath float64
	// OnExchange is called after every exchange, failed ones included, from
	// the goroutine that called Do; it must be safe for concurrent use.
	OnExchange func(Exchange)
	// Transport replaces the client's own transport, for tests.
	Transport http.RoundTripper
	// SharedBackoff: an answer that asks to retry (429, 503 with
	// Retry-After) holds back every request of the client until its wait
	// is over, not only the one it answered, so that a target's rate limit
	// is honoured by the whole run and never turns into more refusals.
	SharedBackoff bool
	// RetryBudget is the most time the client waits in all, across every
	// request, for targets that answer 429 or 503 with Retry-After: such an
	// answer is waited out and the request sent again (signed afresh) while
	// the budget lasts, so a shared staging that sheds load is not blamed
	// for it. Zero: DefaultRetryBudget; negative: never retry.
	RetryBudget time.Duration
	// Ledger, when set, keeps every request the client sends, and varies
	// one that would repeat another before it goes (ledger.go).
	Ledger *Ledger
}

// Retries of answers that ask for them (429 and 503 with Retry-After).
const (
	DefaultRetryBudget = 2 * time.Minute
	// MaxRetryAfter is the longest single wait; a target asking for more is
	// taken at its word: the answer stands.
	MaxRetryAfter = 30 * time.Second
	// MaxRetries is the most times one request is sent again.
	MaxRetries = 5
)

// Client sends requests to one target. It is safe for concurrent use.
type Client struct {
	base       string
	baseURL    BaseURL
	signer     Signer
	timeout    time.Duration
	max        int64
	onExchange func(Exchange)
	http       *http.Client
	limit      *limiter
	perPath    float64
	pathMu     sync.Mutex
	pathLimits map[string]*limiter
	retry      retryBudget
	backoff    *backoff
	ledger     *Ledger
}

// BaseURL is a target's base URL, checked and normalized once by
// ParseBaseURL: http or https, a host, no query or fragment, no trailing
// slash. A command checks its flag with ParseBaseURL and hands the value
// to NewAt, so that what the flag says is read in one place.
type BaseURL struct {
	// url is what requests go to, user information included; redacted is
	// the same without it, for what is printed or stored; parsed is url
	// as read.
	url, redacted string
	parsed        url.URL
}

// ParseBaseURL checks raw as a target's base URL. Its errors quote raw
// without its user information (a password in a URL is printed nowhere)
// and say what is wrong, for the caller to prefix with its flag's name.
func ParseBaseURL(raw string) (BaseURL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // ue quotes raw whole
		}
		return BaseURL{}, fmt.Errorf("does not parse: %v", err)
	}
	shown := *u
	shown.User = nil
	q := strings.TrimRight(shown.String(), "/")
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return BaseURL{}, fmt.Errorf("%q must start with http:// or https://", q)
	case u.Host == "" || u.Hostname() == "":
		return BaseURL{}, fmt.Errorf("%q has no host", q)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return BaseURL{}, fmt.Errorf("%q must not have a query or fragment; paths are appended to it", q)
	}
	b := BaseURL{url: strings.TrimRight(u.String(), "/"), redacted: q}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	b.parsed = *u
	return b, nil
}

// URL is the base URL as parsed, user information included: a copy the
// caller may change.
func (b BaseURL) URL() *url.URL {
	u := b.parsed
	if u.User != nil {
		user := *u.User
		u.User = &user
	}
	return &u
}

// String is the base URL requests go to, user information included.
func (b BaseURL) String() string { return b.url }

// Redacted is the base URL without its user information: what a console,
// a report or a log shows.
func (b BaseURL) Redacted() string { return b.redacted }

// New checks cfg and makes a Client; cfg.BaseURL is read by ParseBaseURL.
func New(cfg Config) (*Client, error) {
	base, err := ParseBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("client: base URL %w", err)
	}
	cfg.BaseURL = ""
	return NewAt(base, cfg)
}

// NewAt checks cfg and makes a Client for base, which ParseBaseURL has
// read already; cfg.BaseURL must be empty.
func NewAt(base BaseURL, cfg Config) (*Client, error) {
	switch {
	case base.url == "":
		return nil, errors.New("client: no base URL (ParseBaseURL makes one)")
	case cfg.BaseURL != "":
		return nil, errors.New("client: the base URL is given twice: leave Config.BaseURL empty with NewAt")
	}
	if cfg.Timeout < 0 || cfg.MaxResponseBytes < 0 {
		return nil, errors.New("client: Timeout and MaxResponseBytes must not be negative")
	}
	if cfg.Rate < 0 || math.IsNaN(cfg.Rate) || cfg.RatePerPath < 0 || math.IsNaN(cfg.RatePerPath) {
		return nil, fmt.Errorf("client: Rate %v and RatePerPath %v must be zero (unlimited) or positive", cfg.Rate, cfg.RatePerPath)
	}
	c := &Client{
		base:       base.url,
		baseURL:    base,
		signer:     cfg.Signer,
		timeout:    cfg.Timeout,
		max:        cfg.MaxResponseBytes,
		onExchange: cfg.OnExchange,
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.max == 0 {
		c.max = DefaultMaxResponseBytes
	}
	switch {
	case cfg.RetryBudget == 0:
		c.retry.left = DefaultRetryBudget
	case cfg.RetryBudget > 0:
		c.retry.left = cfg.RetryBudget
	}
	rt := cfg.Transport
	if rt == nil {
		rt = newTransport(c.timeout)
	}
	c.http = &http.Client{
		Transport: rt,
		// A harness must see what the target answered, and must never be
		// led to another host with the target's credentials.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if cfg.SharedBackoff {
		c.backoff = &backoff{}
	}
	c.ledger = cfg.Ledger
	if cfg.Rate > 0 && !math.IsInf(cfg.Rate, 1) {
		c.limit = &limiter{interval: time.Duration(float64(time.Second) / cfg.Rate)}
	}
	if cfg.RatePerPath > 0 && !math.IsInf(cfg.RatePerPath, 1) {
		c.perPath = cfg.RatePerPath
	}
	return c, nil
}

// newTransport is the client's own transport. Compression is off so that
// a gzip bomb arrives as the bytes it is and the size limit applies to them.
// Proxies come from the environment (HTTPS_PROXY, NO_PROXY) as in any Go
// program, because CI often reaches staging only through one; loopback
// targets never go through a proxy.
func newTransport(timeout time.Duration) *http.Transport {
	step := min(timeout, 10*time.Second)
	return &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            (&net.Dialer{Timeout: step, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:    step,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 256 << 10,
		DisableCompression:     true,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        90 * time.Second,
	}
}

// CloseIdleConnections closes the connections kept for reuse, for a
// program that is done with the target.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Reach reports whether the target can be connected to, within the
// client's timeout, through the client's own transport (its proxy, TLS
// and timeouts). It sends HEAD to the base URL and is content once a
// connection (TLS included) is made: what the target then does with a
// request (never answer, answer garbage, close the connection) is its
// behaviour, for the requests that follow to meet. The error says why no
// connection was made (refused, unknown host, no route, dial or TLS
// handshake timed out), without the URL.
func (c *Client) Reach(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var connected atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodHead, c.base+"/", nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", UserAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		if connected.Load() {
			return nil
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			return ue.Err
		}
		return err
	}
	resp.Body.Close()
	return nil
}

// Timeout is the bound of one exchange the client was given (Config.Timeout
// with its default): what a sender of its own to the same target waits.
func (c *Client) Timeout() time.Duration { return c.timeout }

// Base is the base URL the client sends to, as ParseBaseURL read it.
func (c *Client) Base() BaseURL { return c.baseURL }

// URL is the full address of a request path on the target.
func (c *Client) URL(path string) string {
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return c.base + path
}

// errTimeout tells the client's own timeout from the caller's cancellation.
var errTimeout = errors.New("timeout")

// Do sends req and reads the answer. It returns an error only when no
// complete HTTP answer came (refused, reset, timed out, cut mid-body) or the
// request could not be built or signed; the Exchange is filled either way,
// and when the body was cut by the network the partial Response comes too.
// A body cut at MaxResponseBytes is not an error: Response.Truncated says so.
func (c *Client) Do(ctx context.Context, req Request) (*Response, Exchange, error) {
	var earlier []Exchange
	// moved counts the sends again after a refusal as a replay (below),
	// apart from the retries a Retry-After asks for.
	moved := 0
	for attempt := 0; ; attempt++ {
		ex := Exchange{Method: req.Method, URL: c.URL(req.Path), Retries: attempt, Tamper: req.Tamper}
		if ex.Method == "" {
			ex.Method = http.MethodPost
		}
		resp, err := c.do(ctx, req, &ex)
		if err != nil {
			ex.Error = err.Error()
		}
		if err == nil && c.ledger != nil && refusedAsReplay(resp) && !ex.Repeated && req.movable() && c.ledger.mayMove(req, moved) && !sentBefore(earlier, ex) {
			// Refused as a replay of a request this run did not send:
			// another sender (an earlier run, another client of a shared
			// service) sent the same fields in that second, and often in
			// the seconds around it. The ledger keeps that second as used,
			// and the request goes again in the next free one, as a new
			// request (CONTRACT 1), until the ledger has no second left.
			moved++
			if c.onExchange != nil {
				c.onExchange(ex)
			}
			earlier = append(earlier, ex)
			continue
		}
		if err == nil && attempt-moved < MaxRetries {
			if d, ok := RetryAfter(resp, time.Now()); ok && c.retry.take(d) {
				ex.RetriedAfter = d
				c.backoff.hold(d)
				if c.onExchange != nil {
					c.onExchange(ex)
				}
				if werr := sleep(ctx, d); werr != nil {
					ex.Earlier = earlier
					return resp, ex, nil
				}
				earlier = append(earlier, ex)
				continue
			}
		}
		if c.onExchange != nil {
			c.onExchange(ex)
		}
		ex.Earlier = earlier
		return resp, ex, err
	}
}

// Retried is how many requests were sent again after a 429 or 503 with
// Retry-After, and how long the client waited for them in all.
func (c *Client) Retried() (n int, waited time.Duration) {
	c.retry.mu.Lock()
	defer c.retry.mu.Unlock()
	return c.retry.n, c.retry.waited
}

// backoff is the time before which no request of the client is sent
// (Config.SharedBackoff); nil holds nothing back.
type backoff struct {
	mu    sync.Mutex
	until time.Time
}

// hold holds every request back for d from now, or longer if it already is.
func (b *backoff) hold(d time.Duration) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if at := time.Now().Add(d); at.After(b.until) {
		b.until = at
	}
}

// wait blocks until the hold is over.
func (b *backoff) wait(ctx context.Context) error {
	if b == nil {
		return ctx.Err()
	}
	b.mu.Lock()
	d := time.Until(b.until)
	b.mu.Unlock()
	if d <= 0 {
		return ctx.Err()
	}
	return sleep(ctx, d)
}

// retryBudget is the time left for waiting out Retry-After answers.
type retryBudget struct {
	mu     sync.Mutex
	left   time.Duration
	n      int
	waited time.Duration
}

func (b *retryBudget) take(d time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if d > b.left {
		return false
	}
	b.left -= d
	b.n++
	b.waited += d
	return true
}

// RetryAfter is the wait an answer asks for before the request is sent
// again (429 or 503 with Retry-After, in seconds or as a date), at most
// MaxRetryAfter; ok is false when it asks for none. Senders of their own
// (the harness's raw-wire checks) honour it as the client does.
func RetryAfter(r *Response, now time.Time) (time.Duration, bool) {
	if r == nil || (r.Status != http.StatusTooManyRequests && r.Status != http.StatusServiceUnavailable) {
		return 0, false
	}
	v := strings.TrimSpace(r.Header.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if secs, err := strconv.Atoi(v); err == nil {
		if secs < 0 {
			return 0, false
		}
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = max(t.Sub(now), 0)
	} else {
		return 0, false
	}
	if d > MaxRetryAfter {
		return 0, false
	}
	// Retry-After: 0 still means "later": wait a little, not at once.
	return max(d, 50*time.Millisecond), true
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Client) do(ctx context.Context, req Request, ex *Exchange) (resp *Response, err error) {
	// Every wait comes before the body is written: a request held back
	// (a shared Retry-After, a rate) is written, timestamp and sign, when
	// it goes, so that what a check tests does not age while it waits.
	if err := c.backoff.wait(ctx); err != nil {
		return nil, err
	}
	if err := c.pathLimit(req.Path).wait(ctx); err != nil {
		return nil, err
	}
	if err := c.limit.wait(ctx); err != nil {
		return nil, err
	}
	if req.Renew != nil && req.RawBody == nil {
		req.Fields = req.Renew()
	}
	body, settle, repeated, err := c.body(ctx, req)
	ex.Repeated = repeated
	if err != nil {
		return nil, err
	}
	if settle != nil {
		// Accepted, for the ledger: a 2xx, or no complete answer (it may
		// have been taken all the same).
		// A refusal as a replay says another sender's request with the
		// same fields was taken in that second: it stays used.
		defer func() { settle(resp == nil || resp.Status/100 == 2 || refusedAsReplay(resp)) }()
	}
	ex.RequestBody = string(body)
	hreq, err := http.NewRequest(ex.Method, ex.URL, strings.NewReader(ex.RequestBody))
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	hreq.Header.Set("User-Agent", UserAgent)
	ex.RequestHeaders = map[string]string{"User-Agent": UserAgent}
	switch ct := req.ContentType; ct {
	case NoContentType:
		// Recorded empty so that Exchange.Curl removes curl's own type.
		ex.RequestHeaders["Content-Type"] = ""
	case "":
		ct = "application/json"
		if req.Format == device.XML {
			ct = "application/xml"
		}
		fallthrough
	default:
		hreq.Header.Set("Content-Type", ct)
		ex.RequestHeaders["Content-Type"] = ct
	}
	for k, vs := range req.Header {
		k = http.CanonicalHeaderKey(k)
		if k == "Host" {
			if len(vs) > 0 {
				hreq.Host = vs[0]
				ex.RequestHeaders[k] = vs[0]
			}
			continue
		}
		hreq.Header[k] = vs
		ex.RequestHeaders[k] = strings.Join(vs, ", ")
	}

	start := time.Now()
	defer func() { ex.Duration = time.Since(start) }()
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, errTimeout)
	defer cancel()
	hresp, err := c.http.Do(hreq.WithContext(ctx))
	if err != nil {
		return nil, c.explain(ctx, err)
	}
	defer hresp.Body.Close()
	r := &Response{Status: hresp.StatusCode, ContentType: hresp.Header.Get("Content-Type"), Header: hresp.Header}
	ex.Status = r.Status
	ex.ResponseHeaders = make(map[string]string, len(hresp.Header))
	for k, vs := range hresp.Header {
		ex.ResponseHeaders[k] = strings.Join(vs, ", ")
	}
	r.Body, err = io.ReadAll(io.LimitReader(hresp.Body, c.max+1))
	if int64(len(r.Body)) > c.max {
		r.Body, r.Truncated = r.Body[:c.max], true
		err = nil // what is left unread cannot fail us
	}
	ex.ResponseBody, ex.Truncated = string(r.Body), r.Truncated
	r.parseBody()
	if err != nil {
		return r, fmt.Errorf("reading the body after %d bytes: %w", len(r.Body), c.explain(ctx, err))
	}
	return r, nil
}

// sentBefore says ex's body was sent already by this call: the ledger
// had no other second for it.
func sentBefore(earlier []Exchange, ex Exchange) bool {
	for _, e := range earlier {
		if e.RequestBody == ex.RequestBody {
			return true
		}
	}
	return false
}

// refusedAsReplay says resp is CONTRACT 1's refusal of a replay.
func refusedAsReplay(resp *Response) bool {
	return resp != nil && resp.Status == http.StatusUnauthorized && resp.ErrorCode == device.CodeReplayedRequest
}

// movable says a Ledger may send the request in another second: its
// timestamp can be moved or renewed, and it is no repeat on purpose.
func (r Request) movable() bool {
	return !r.Repeat && r.RawBody == nil && (r.Vary != nil || r.Renew != nil)
}

// body is the bytes to send: RawBody as it is, or the fields encoded after
// signing them; with a Ledger, also the func to tell it whether the request
// was accepted (nil: nothing to tell).
func (c *Client) body(ctx context.Context, req Request) ([]byte, func(accepted bool), bool, error) {
	sign := func(fields []Field) ([]Field, error) {
		if req.Sign == SignAuto {
			return c.sign(ctx, fields)
		}
		return fields, nil
	}
	if req.RawBody != nil {
		// Sent as it is; its fields, when it has them, are those it was
		// encoded from: kept, so that no later request repeats them.
		if c.ledger != nil && len(req.Fields) > 0 {
			if fields, err := sign(req.Fields); err == nil {
				return req.RawBody, c.ledger.record(req, fields), false, nil
			}
		}
		return req.RawBody, nil, false, nil
	}
	fields, err := sign(req.Fields)
	if err != nil {
		return nil, nil, false, err
	}
	var settle func(bool)
	repeated := false
	if c.ledger != nil {
		if fields, settle, repeated, err = c.ledger.claim(ctx, req, fields, sign); err != nil {
			return nil, nil, false, err
		}
	}
	b, err := Encode(req.Format, fields)
	return b, settle, repeated, err
}

// sign returns a copy of fields with every sign field set to the Signer's
// sign over the other fields; the caller's slice is never changed, so one
// field list can be reused across requests and goroutines.
func (c *Client) sign(ctx context.Context, fields []Field) ([]Field, error) {
	rest := make([]Field, 0, len(fields))
	for _, f := range fields {
		if f.Key != device.FieldSign {
			rest = append(rest, f)
		}
	}
	if len(rest) == len(fields) {
		return fields, nil
	}
	if c.signer == nil {
		return nil, errors.New("client: the request has a sign field to fill but the client has no Signer; use SignKeep or set Config.Signer")
	}
	s, err := c.signer.Sign(ctx, rest)
	if err != nil {
		return nil, fmt.Errorf("client: signing: %w", err)
	}
	out := make([]Field, len(fields))
	for i, f := range fields {
		if f.Key == device.FieldSign {
			f.Value = s
		}
		out[i] = f
	}
	return out, nil
}

// explain turns the client's own timeout into a message that says so,
// whichever of its limits fired first: the exchange's deadline, or the
// transport's dial, TLS or response-header timeout, which are never longer.
// The caller's own cancellation is not a timeout and is left as it is.
func (c *Client) explain(ctx context.Context, err error) error {
	var ne net.Error
	if errors.Is(context.Cause(ctx), errTimeout) || (ctx.Err() == nil && errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("no complete answer within %s: %w", c.timeout, err)
	}
	return err
}

// pathLimit is the limiter of one path, or nil when paths are not limited.
func (c *Client) pathLimit(path string) *limiter {
	if c.perPath == 0 {
		return nil
	}
	c.pathMu.Lock()
	defer c.pathMu.Unlock()
	l, ok := c.pathLimits[path]
	if !ok {
		if c.pathLimits == nil {
			c.pathLimits = map[string]*limiter{}
		}
		l = &limiter{interval: time.Duration(float64(time.Second) / c.perPath)}
		c.pathLimits[path] = l
	}
	return l
}

// limiter spaces requests at least interval apart across all goroutines:
// a token bucket holding one token, so no burst can exceed the rate.
type limiter struct {
	interval time.Duration
	mu       sync.Mutex
	next     time.Time
}

// wait blocks until the caller's turn. A nil limiter never waits.
func (l *limiter) wait(ctx context.Context) error {
	if l == nil {
		return ctx.Err()
	}
	l.mu.Lock()
	now := time.Now()
	at := l.next
	if at.Before(now) {
		at = now
	}
	l.next = at.Add(l.interval)
	l.mu.Unlock()
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
