// Package clients keeps, per api_key, what an app did against the
// interface and judges it: which operations, device types and formats it
// exercised, every error it received, whether it handled those errors as
// the interface expects (waited out Retry-After, did not resend a refused
// or an already used request), its clock skew, its sign failures and the
// fields it sent that belong to another device type.
//
// It reads requests and answers as they were on the wire (an Exchange), so
// that gwsim serve and gwsim proxy, in front of any implementation, feed
// the same Recorder. It never keeps an api_key's secret, a sign or a body:
// a client is shown by its api_key's first four characters.
package clients

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/maphash"
	"maps"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	apiclient "github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// Exchange is one operation request and its answer, as they were on the
// wire. The Recorder reads it during Observe and keeps none of its bytes.
type Exchange struct {
	// Time is when the request arrived; Done when its answer was written
	// (Time when zero).
	Time, Done  time.Time
	Path        string
	ContentType string
	// Body is the request body (nil when it could not be read).
	Body []byte
	// Status, Header and Answer are the answer.
	Status int
	Header http.Header
	Answer []byte
	// Judged says the caller has judged the request by the interface's
	// rule table (gwsim proxy, with gatewayapi/oracle): Violation is the
	// rule it breaks ("" when none, never a secret) and SignBad that its
	// sign fails the fleet's key. The Recorder then takes that verdict
	// instead of validating the request itself.
	Judged    bool
	Violation string
	SignBad   bool
	// Format and Pairs are the request's format and fields as the caller
	// already decoded them from Body (gwsim serve hands its own over), so
	// that the Recorder does not decode the body a second time; Pairs nil:
	// the Recorder decodes Body itself.
	Format device.Format
	Pairs  []device.Pair
}

// Bounds of what a Recorder keeps.
const (
	// DefaultMaxClients is how many api_keys get a report of their own;
	// requests of further keys are counted together as OtherClients.
	DefaultMaxClients = 1000
	// maxCodes bounds the error codes kept per client (an upstream behind
	// the proxy may invent any); further codes count as "other".
	maxCodes = 64
	// maxPhases bounds the fault phases kept per client.
	maxPhases = 32
	// refusedRing and sentRing are how many refused requests and sent
	// requests a client's resends are compared with.
	refusedRing = 64
	sentRing    = 256
	// retrySlack is how early a request after a Retry-After may come and
	// still count as waiting: the client's and the server's clocks start
	// the wait at slightly different moments.
	retrySlack = 100 * time.Millisecond
	// maxExample bounds the text of an example kept in the report.
	maxExample = 300
)

// OtherClients is the name under which requests of api_keys beyond
// Config.MaxClients are counted; NoKey is the name of requests whose
// api_key could not be read.
const (
	OtherClients = "(other clients)"
	NoKey        = "(no api_key)"
)

// Config is how a Recorder judges. It is read by New.
type Config struct {
	// MaxClients bounds the clients with a report of their own
	// (DefaultMaxClients when 0).
	MaxClients int
	// Window is the timestamp window the clock judgement uses
	// (auth.DefaultWindow when 0; below 0: no window).
	Window time.Duration
	// Location is the zone timestamps are read in (UTC when nil).
	Location *time.Location
	// Auth, when set, checks each request's sign itself (gwsim proxy with
	// a fleet); otherwise sign failures are the answers' bad_signature.
	Auth *auth.Authenticator
	// Now is the clock skew is measured against (time.Now when nil).
	Now func() time.Time
	// Phases, when set, names the faults in force (a scenario's), so that
	// the report says how the app behaved during each.
	Phases func() []string
	// Trusted says the answers come from gwsim itself, whose 200 means the
	// request followed every rule: such a request is not validated again
	// (gwsim serve; never gwsim proxy, where the answers are judged too).
	Trusted bool
}

// Recorder keeps the clients' reports. It is safe for concurrent use.
type Recorder struct {
	cfg     Config
	seeds   [2]maphash.Seed
	mu      sync.Mutex
	clients map[string]*client
	other   *client
}

// New makes an empty Recorder.
func New(cfg Config) *Recorder {
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.Window == 0 {
		cfg.Window = auth.DefaultWindow
	}
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Recorder{cfg: cfg, clients: map[string]*client{}, seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
}

// Reset forgets every client.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clients, r.other = map[string]*client{}, nil
}

// Judgement identifiers, in report order.
const (
	JudgeValid       = "valid_requests"
	JudgeForeign     = "no_foreign_fields"
	JudgeSign        = "signs_correctly"
	JudgeClock       = "clock_in_window"
	JudgeRetryAfter  = "waits_out_retry_after"
	JudgeResend400   = "no_resent_refused_request"
	JudgeNoReplay    = "no_replayed_request"
	judgementsNumber = 7
)

var judgements = [judgementsNumber]struct{ id, name string }{
	{JudgeValid, "app sent only valid requests"},
	{JudgeForeign, "app sent no fields that belong to another device type"},
	{JudgeSign, "app signed every request correctly"},
	{JudgeClock, "app's clock is within the timestamp window"},
	{JudgeRetryAfter, "app waited out Retry-After on 429 and 503"},
	{JudgeResend400, "app did not resend a refused (400) request unchanged"},
	{JudgeNoReplay, "app did not resend a request it had already sent (same timestamp and sign)"},
}

type violation struct {
	n      uint64
	latest string
	at     time.Time
}

type covKey struct {
	op     device.Operation
	typ    string
	format device.Format
}

type covCount struct{ sent, ok uint64 }

type errStat struct {
	status  int
	n       uint64
	example Example
}

// fingerprint identifies a request's fields whatever their order: the
// sums of a hash of each field under two seeds.
type fingerprint [2]uint64

type seen struct {
	fp fingerprint
	at time.Time
}

// window remembers the last n fingerprints with when they were seen: a
// ring for their order, a map to find one at once.
type window struct {
	ring  []seen
	next  int
	index map[fingerprint]time.Time
}

func newWindow(n int) window {
	return window{ring: make([]seen, 0, n), index: make(map[fingerprint]time.Time, n)}
}

// find says when fp was seen, if it is among the last n.
func (w *window) find(fp fingerprint) (time.Time, bool) {
	at, ok := w.index[fp]
	return at, ok
}

func (w *window) add(fp fingerprint, at time.Time) {
	if len(w.ring) < cap(w.ring) {
		w.ring = append(w.ring, seen{fp, at})
	} else {
		old := w.ring[w.next]
		if w.index[old.fp].Equal(old.at) {
			delete(w.index, old.fp)
		}
		w.ring[w.next] = seen{fp, at}
		w.next = (w.next + 1) % len(w.ring)
	}
	w.index[fp] = at
}

type phaseStat struct {
	requests, errors, early uint64
	codes                   map[string]uint64
}

type client struct {
	name, id    string
	first, last time.Time
	requests    uint64
	coverage    map[covKey]*covCount
	errors      map[string]*errStat
	judged      [judgementsNumber]violation
	// retryUntil is when the last Retry-After this client was given ends.
	retryUntil time.Time
	retryCode  string
	refused    window
	sent       window
	skewN      uint64
	skewLast   time.Duration
	skewMin    time.Duration
	skewMax    time.Duration
	phases     map[string]*phaseStat
	phaseOrder []string
}

// request is what Observe reads of a request before it takes the lock.
type request struct {
	op      device.Operation
	format  device.Format
	key     string
	typ     string
	skew    time.Duration
	hasTime bool
	// invalid is why the request breaks the interface's rules (nil: it
	// does not); foreign names a field of another device type.
	invalid *device.Error
	// violation, set from a Judged exchange, replaces invalid.
	violation string
	foreign   string
	signBad   bool
	// loose and exact fingerprint the request without and with its
	// timestamp and sign.
	loose, exact fingerprint
	sign         string
}

// answer is what Observe reads of an answer.
type answer struct {
	status     int
	code       string
	field      string
	message    string
	retryAfter time.Duration
	hasRetry   bool
}

// Observe records one exchange.
func (r *Recorder) Observe(ex Exchange) {
	op, ok := opOf(ex.Path)
	if !ok {
		return
	}
	now := r.cfg.Now()
	q := r.read(op, ex, now)
	if ex.Judged {
		q.invalid, q.signBad = nil, ex.SignBad
		q.violation = ex.Violation
	}
	a := readAnswer(ex)
	a.message = scrub(a.message, q.sign, q.key)
	done := ex.Done
	if done.IsZero() {
		done = ex.Time
	}
	var phases []string
	if r.cfg.Phases != nil {
		phases = r.cfg.Phases()
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.client(q.key)
	if c.requests == 0 {
		c.first = ex.Time
	}
	c.requests++
	c.last = ex.Time
	if q.format != 0 {
		k := covKey{op, q.typ, q.format}
		cc := c.coverage[k]
		if cc == nil {
			cc = &covCount{}
			c.coverage[k] = cc
		}
		cc.sent++
		if a.status == http.StatusOK {
			cc.ok++
		}
	}
	// what names the request in a judgement's example; built only when one
	// is needed.
	what := func() string {
		w := op.Name()
		if q.typ != "" {
			w += " " + q.typ
		}
		if q.format != 0 {
			w += " (" + q.format.String() + ")"
		}
		return w
	}

	// Judgements on the request itself.
	if q.violation != "" {
		c.flag(JudgeValid, ex.Time, what()+": "+q.violation)
	} else if q.invalid != nil {
		c.flag(JudgeValid, ex.Time, what()+": "+q.invalid.Error())
	}
	if q.foreign != "" {
		c.flag(JudgeForeign, ex.Time, what()+": "+q.foreign)
	}
	if q.signBad || (r.cfg.Auth == nil && a.code == device.CodeBadSignature) {
		c.flag(JudgeSign, ex.Time, what()+": the sign does not match md5(api_key + secret + timestamp)")
	}
	if q.hasTime {
		c.skewN++
		c.skewLast = q.skew
		if c.skewN == 1 || q.skew < c.skewMin {
			c.skewMin = q.skew
		}
		if c.skewN == 1 || q.skew > c.skewMax {
			c.skewMax = q.skew
		}
		if r.cfg.Window > 0 && (q.skew > r.cfg.Window || q.skew < -r.cfg.Window) {
			c.flag(JudgeClock, ex.Time, what()+": timestamp "+fmtSkew(q.skew)+" from gwsim's clock, outside the window of ±"+r.cfg.Window.String())
		}
	} else if a.code == device.CodeStaleTimestamp {
		c.flag(JudgeClock, ex.Time, what()+": answered stale_timestamp")
	}

	// Judgements on how the request follows earlier answers.
	early := false
	if !c.retryUntil.IsZero() && ex.Time.Before(c.retryUntil.Add(-retrySlack)) {
		early = true
		c.flag(JudgeRetryAfter, ex.Time, what()+": sent "+c.retryUntil.Sub(ex.Time).Round(time.Millisecond).String()+
			" before the Retry-After of a "+c.retryCode+" answer ended")
	}
	if at, ok := c.refused.find(q.loose); ok {
		c.flag(JudgeResend400, ex.Time, what()+": the same fields as a request refused with 400 at "+at.UTC().Format(time.RFC3339))
	}
	if q.format != 0 {
		if at, ok := c.sent.find(q.exact); ok {
			c.flag(JudgeNoReplay, ex.Time, what()+": the same body, timestamp and sign as a request sent at "+at.UTC().Format(time.RFC3339))
		}
		c.sent.add(q.exact, ex.Time)
	} else if a.code == device.CodeReplayedRequest {
		c.flag(JudgeNoReplay, ex.Time, what()+": answered replayed_request")
	}

	// What the answer asks of the next request.
	if a.status == http.StatusBadRequest {
		c.refused.add(q.loose, ex.Time)
	}
	if a.hasRetry && (a.status == http.StatusTooManyRequests || a.status == http.StatusServiceUnavailable) {
		if until := done.Add(a.retryAfter); until.After(c.retryUntil) {
			c.retryUntil = until
			c.retryCode = strconv.Itoa(a.status)
		}
	}
	if a.status != http.StatusOK {
		code := a.code
		if code == "" {
			code = "http_" + strconv.Itoa(a.status)
		}
		es := c.errors[code]
		if es == nil {
			if len(c.errors) >= maxCodes-1 {
				code = "other"
				es = c.errors[code]
			}
			if es == nil {
				es = &errStat{}
				c.errors[code] = es
			}
		}
		es.n++
		es.status = a.status
		es.example = Example{Time: ex.Time.UTC(), Operation: what(), Field: a.field, Message: clip(a.message)}
	}
	for _, p := range phases {
		ps := c.phases[p]
		if ps == nil {
			if len(c.phases) >= maxPhases {
				continue
			}
			ps = &phaseStat{codes: map[string]uint64{}}
			c.phases[p] = ps
			c.phaseOrder = append(c.phaseOrder, p)
		}
		ps.requests++
		if early {
			ps.early++
		}
		if a.status != http.StatusOK {
			ps.errors++
			code := a.code
			if code == "" {
				code = "http_" + strconv.Itoa(a.status)
			}
			if _, ok := ps.codes[code]; ok || len(ps.codes) < maxCodes {
				ps.codes[code]++
			}
		}
	}
}

func (c *client) flag(id string, at time.Time, what string) {
	for i := range judgements {
		if judgements[i].id == id {
			v := &c.judged[i]
			v.n++
			v.latest, v.at = clip(what), at.UTC()
			return
		}
	}
}

// client is the client of key, made on first sight; beyond MaxClients
// every new key shares OtherClients. Called with r.mu held.
func (r *Recorder) client(key string) *client {
	if c, ok := r.clients[key]; ok {
		return c
	}
	if len(r.clients) >= r.cfg.MaxClients {
		if r.other == nil {
			r.other = newClient(OtherClients, "")
		}
		return r.other
	}
	name, id := NoKey, ""
	if key != "" {
		name, id = Mask(key), idOf(key)
	}
	c := newClient(name, id)
	r.clients[key] = c
	return c
}

func newClient(name, id string) *client {
	return &client{name: name, id: id, coverage: map[covKey]*covCount{}, errors: map[string]*errStat{},
		phases: map[string]*phaseStat{}, refused: newWindow(refusedRing), sent: newWindow(sentRing)}
}

// Mask shows an api_key by its first four characters and an ellipsis.
func Mask(key string) string {
	n := 0
	for i := range key {
		if n == 4 {
			return key[:i] + "…"
		}
		n++
	}
	return key + "…"
}

// idOf tells apart keys that Mask shows alike: the first 8 hex
// characters of the key's SHA-256.
func idOf(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:4])
}

func opOf(path string) (device.Operation, bool) {
	for _, op := range device.Operations {
		if op.Path() == path {
			return op, true
		}
	}
	return 0, false
}

// read parses and judges a request by the interface's own rules
// (gatewayapi/device), whatever the server answered; with Config.Trusted a
// request gwsim answered 200 is taken as valid.
func (r *Recorder) read(op device.Operation, ex Exchange, now time.Time) request {
	q := request{op: op}
	format, pairs := ex.Format, ex.Pairs
	if pairs == nil || format == 0 {
		var derr *device.Error
		format, derr = codec.FormatOf(ex.ContentType)
		if derr != nil {
			q.invalid = derr
			q.loose = r.hashOf(ex.Path, ex.ContentType, string(ex.Body))
			return q
		}
		pp := pairsPool.Get().(*[]device.Pair)
		defer func() {
			clear((*pp)[:cap(*pp)])
			*pp = (*pp)[:0]
			pairsPool.Put(pp)
		}()
		pairs, derr = codec.DecodeInto(format, ex.Body, *pp)
		if cap(pairs) <= 64 {
			*pp = pairs[:0]
		}
		if derr != nil {
			q.invalid = derr
			q.loose = r.hashOf(ex.Path, ex.ContentType, string(ex.Body))
			return q
		}
	}
	q.format = format
	q.loose, q.exact = r.hashOf(ex.Path), r.hashOf(ex.Path)
	for _, p := range pairs {
		f := r.field(p.Key, p.Value.Text)
		q.exact[0] += f[0]
		q.exact[1] += f[1]
		switch p.Key {
		case device.FieldAPIKey:
			q.key = strings.Clone(strings.TrimSpace(p.Value.Text))
		case device.FieldSign:
			q.sign = strings.TrimSpace(p.Value.Text)
			continue
		case device.FieldTimestamp:
			if t, err := time.ParseInLocation(device.TimestampLayout, strings.TrimSpace(p.Value.Text), r.cfg.Location); err == nil {
				q.skew, q.hasTime = t.Sub(now).Round(time.Second), true
			}
			continue
		case device.FieldType:
			if t, ok := device.LookupType(strings.TrimSpace(p.Value.Text)); ok {
				q.typ = t.Name
			}
		}
		q.loose[0] += f[0]
		q.loose[1] += f[1]
	}
	if len(q.key) > device.MaxAPIKeyLen {
		q.key = q.key[:device.MaxAPIKeyLen]
	}
	if r.cfg.Trusted && ex.Status == http.StatusOK {
		return q // gwsim checked every rule, the sign included
	}
	if op == device.SendCommand && q.typ != "" {
		q.foreign = foreignField(pairs, q.typ, format)
	}
	req, derr := device.Parse(op, format, pairs)
	if derr != nil {
		if derr.Field == device.FieldSign {
			derr = device.Errorf(derr.Code, derr.Field, "sign must be 32 hexadecimal characters")
		}
		q.invalid = derr
		return q
	}
	if r.cfg.Auth != nil {
		if aerr := r.cfg.Auth.Check(&req.Envelope); aerr != nil && aerr.Code == device.CodeBadSignature {
			q.signBad = true
		}
	}
	return q
}

// pairsPool holds the pair slices requests are decoded into.
var pairsPool = sync.Pool{New: func() any { p := make([]device.Pair, 0, 16); return &p }}

// field hashes one field under both seeds.
func (r *Recorder) field(key, value string) fingerprint {
	var fp fingerprint
	for i := range fp {
		var h maphash.Hash
		h.SetSeed(r.seeds[i])
		h.WriteString(key)
		h.WriteByte(0)
		h.WriteString(value)
		fp[i] = h.Sum64()
	}
	return fp
}

// hashOf hashes parts in order under both seeds.
func (r *Recorder) hashOf(parts ...string) fingerprint {
	var fp fingerprint
	for i := range fp {
		var h maphash.Hash
		h.SetSeed(r.seeds[i])
		for _, p := range parts {
			h.WriteString(strconv.Itoa(len(p)))
			h.WriteByte(':')
			h.WriteString(p)
		}
		fp[i] = h.Sum64()
	}
	return fp
}

// foreignField names the first field of a command that is not a field of
// its own type but is one of another type's.
func foreignField(pairs []device.Pair, typ string, format device.Format) string {
	own, _ := device.LookupType(typ)
	for _, p := range pairs {
		mine := false
		for i := range own.Fields {
			if own.Fields[i].WireName(format) == p.Key {
				mine = true
			}
		}
		if mine {
			continue
		}
		for _, t := range device.Types {
			for i := range t.Fields {
				if t.Fields[i].WireName(format) == p.Key {
					return p.Key + " (a field of " + t.Name + ") sent to a " + typ
				}
			}
		}
	}
	return ""
}

// readAnswer reads the status, error code and Retry-After of an answer,
// in JSON or XML; what it cannot read stays empty.
func readAnswer(ex Exchange) answer {
	a := answer{status: ex.Status}
	if v := strings.TrimSpace(ex.Header.Get("Retry-After")); v != "" {
		if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
			a.retryAfter, a.hasRetry = time.Duration(secs)*time.Second, true
		} else if t, err := http.ParseTime(v); err == nil {
			a.retryAfter, a.hasRetry = max(t.Sub(ex.Time), 0), true
		}
	}
	if ex.Status == http.StatusOK {
		return a
	}
	p := apiclient.ParseAnswer(ex.Header.Get("Content-Type"), ex.Answer)
	a.code, a.field, a.message = clip(p.ErrorCode), clip(p.ErrorField), p.ErrorMessage
	return a
}

// scrub removes a sign and an api_key from text an upstream wrote, so
// that no report carries them even if the upstream echoes them.
func scrub(s, sign, key string) string {
	if len(sign) >= 8 && s != "" {
		// Either case is the same sign.
		s = regexp.MustCompile("(?i)"+regexp.QuoteMeta(sign)).ReplaceAllString(s, "<sign>")
	}
	if key != "" {
		s = strings.ReplaceAll(s, key, Mask(key))
	}
	return s
}

func clip(s string) string {
	if len(s) <= maxExample {
		return s
	}
	return strings.ToValidUTF8(s[:maxExample], "") + "…"
}

func fmtSkew(d time.Duration) string {
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// Report is what the Recorder knows now.
func (r *Recorder) Report() *Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := &Report{Generated: r.cfg.Now().UTC(), Clients: []Client{}}
	if r.cfg.Window > 0 {
		rep.WindowSeconds = int64(r.cfg.Window / time.Second)
	}
	for _, c := range r.clients {
		rep.Clients = append(rep.Clients, c.report())
	}
	sort.Slice(rep.Clients, func(i, j int) bool {
		a, b := rep.Clients[i], rep.Clients[j]
		if a.Client != b.Client {
			return a.Client < b.Client
		}
		return a.ID < b.ID
	})
	if r.other != nil {
		rep.Clients = append(rep.Clients, r.other.report())
	}
	return rep
}

func (c *client) report() Client {
	out := Client{Client: c.name, ID: c.id, First: c.first.UTC(), Last: c.last.UTC(), Requests: c.requests,
		Coverage: []Coverage{}, Errors: []ErrorCount{}, Phases: []Phase{}}
	for k, v := range c.coverage {
		out.Coverage = append(out.Coverage, Coverage{Operation: k.op.Name(), Type: k.typ, Format: k.format.String(), Sent: v.sent, Succeeded: v.ok})
	}
	sort.Slice(out.Coverage, func(i, j int) bool {
		a, b := out.Coverage[i], out.Coverage[j]
		if a.Operation != b.Operation {
			return a.Operation < b.Operation
		}
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		return a.Format < b.Format
	})
	for code, e := range c.errors {
		out.Errors = append(out.Errors, ErrorCount{Code: code, Status: e.status, Count: e.n, Latest: e.example})
	}
	sort.Slice(out.Errors, func(i, j int) bool {
		if out.Errors[i].Count != out.Errors[j].Count {
			return out.Errors[i].Count > out.Errors[j].Count
		}
		return out.Errors[i].Code < out.Errors[j].Code
	})
	for i, j := range judgements {
		v := c.judged[i]
		out.Judgements = append(out.Judgements, Judgement{ID: j.id, Name: j.name, Passed: v.n == 0, Violations: v.n, Latest: v.latest, LatestTime: stamp(v.at)})
		if j.id == JudgeSign {
			out.SignFailures = v.n
		}
		if j.id == JudgeForeign {
			out.ForeignFields = v.n
		}
	}
	if c.skewN > 0 {
		out.Skew = &Skew{Samples: c.skewN, LastSeconds: int64(c.skewLast / time.Second),
			MinSeconds: int64(c.skewMin / time.Second), MaxSeconds: int64(c.skewMax / time.Second)}
	}
	for _, name := range c.phaseOrder {
		p := c.phases[name]
		out.Phases = append(out.Phases, Phase{Phase: name, Requests: p.requests, Errors: p.errors, RetriedEarly: p.early, Codes: maps.Clone(p.codes)})
	}
	return out
}

// Apps is how many clients have a report now (the (other clients) group
// counts as one).
func (r *Recorder) Apps() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.clients)
	if r.other != nil {
		n++
	}
	return n
}
