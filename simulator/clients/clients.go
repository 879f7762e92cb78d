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
	"math"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

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
	Time, Done time.Time
	// Sent is when the request reached the server as its connection
	// shows it (zero: Time): when the connection was accepted, for its
	// first request (First), or when the request's first byte was read,
	// for a later one. Conn numbers the connection (0: not known). They
	// tell a request the app sent before an answer reached it (in flight)
	// from one it sent after: see Transit.
	Sent        time.Time
	Conn        uint32
	First       bool
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
	// Validated says the caller ran device.Parse on Pairs (gwsim serve):
	// Invalid is its error, nil when the fields are valid. With
	// Config.Trusted the Recorder then takes that verdict instead of
	// parsing the fields again.
	Validated bool
	Invalid   *device.Error
	// AnswerError, when set, is the error the answer carries, as the
	// caller wrote it (gwsim serve): its code, field and message are read
	// from it instead of from the answer's bytes.
	AnswerError *device.Error
	// RemoteAddr is the client's address (host, or host:port), the name
	// a request is judged under when no api_key can be read from its
	// bytes at all.
	RemoteAddr string
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
	// Transit is how long after an answer left a request that another
	// connection the app had open already carried may still have been
	// sent before the answer reached the app (the answer's way there,
	// the request's way back). A request is judged against an answer
	// when it was sent after the answer reached the app, as its
	// connection shows it: it came on the answer's own connection after
	// it, or on a connection opened after the answer left, or more than
	// Transit after the answer left on another one. Requests sent
	// together are never each other's retries, whatever their fields.
	Transit = 20 * time.Millisecond
	// BackoffFloor is the least an app waits before it retries an error
	// that carried no Retry-After (429 or 5xx): JudgeBackoff.
	BackoffFloor = 500 * time.Millisecond
	// maxTargets bounds the gateways and devices whose Retry-After and
	// back-off a client's report follows at once.
	maxTargets = 256
	// maxExample bounds the text of an example kept in the report.
	maxExample = 300
)

// OtherClients is the name under which requests of api_keys beyond
// Config.MaxClients are counted; NoKey is the name of requests whose
// api_key could not be read and whose client's address is not known
// either (a request with neither: an Exchange made without RemoteAddr).
// A request whose api_key cannot be read is judged under its client's
// address, named AddressPrefix + the address + ")".
const (
	OtherClients  = "(other clients)"
	NoKey         = "(no api_key)"
	AddressPrefix = "(address "
)

// addrKey starts the keys of clients known by their address only: no
// api_key read from a body starts with a NUL.
const addrKey = "\x00addr:"

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
	// the report says how the app behaved during each: every request is
	// counted under every fault in force when it arrived.
	Phases func() []string
	// Faults, when set (in place of Phases), are the faults that have
	// started (a scenario's steps, faults set by hand): each request is
	// counted under the one fault that answered it (hits), and the report
	// says, per fault, whether the app recovered after it ended.
	Faults func() []Fault
	// Trusted says the answers come from gwsim itself, whose 200 means the
	// request followed every rule: such a request is not validated again
	// (gwsim serve; never gwsim proxy, where the answers are judged too).
	Trusted bool
}

// Recorder keeps the clients' reports. It is safe for concurrent use.
//
// A request costs it, on the request's path, one pass over the fields
// the server already decoded (one 64-bit hash of each, to tell a resent
// request) and the append of a compact record to one of several stripes,
// whichever is free: requests never wait on each other, not even those
// of one api_key. The records are folded into the clients' reports in
// the order Observe took them: by the request that brings a stripe to
// foldAt records, and by every reader first (Report, Apps aside), so
// that a report read after Observe returns holds that request. Nothing
// on the path allocates once a client is known (the texts of the
// judgements' latest breaches are written when the report is read, not
// when the breach is seen).
type Recorder struct {
	cfg  Config
	seed maphash.Seed
	// fieldSeed seeds the fields' hashes (field); pathHash is each
	// operation's path hashed, the start of its requests' fingerprints.
	fieldSeed uint64
	pathHash  []fingerprint
	// stripes take the requests' records (see records.go); seq numbers
	// them in the order Observe took them.
	stripes []stripe
	// seq is written by every request, from every processor: on a cache
	// line of its own, so that the fields above, which every request
	// reads, do not move with it from one processor's cache to the
	// other's.
	_   [64]byte
	seq atomic.Uint64
	_   [56]byte
	// mu guards the clients' reports: the fold writes them, the readers
	// read them, and the fold's own state: folded is the number of the
	// last request folded; held are the stripes' buffers being folded
	// (by stripe), order the records in the order they are folded, carry
	// the records taken from a stripe before their turn (spare: its
	// other buffer).
	mu           sync.Mutex
	folded       uint64
	held         [][]record
	order        []*record
	carry, spare []record
	// keys finds a client by api_key without a lock: a map that is
	// copied, under newMu, when a client is added. own counts the clients
	// with a report of their own (at most MaxClients); other holds the
	// requests of the keys beyond (nil until there is one).
	keys  atomic.Pointer[map[string]*client]
	newMu sync.Mutex
	own   atomic.Int64
	other atomic.Pointer[client]
	// epoch counts Resets, so that a Snapshot taken across one is told.
	epoch atomic.Uint64
	// shared, when set, is the report every replica folds into (Share).
	shared *sharing
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
	r := &Recorder{cfg: cfg, seed: maphash.MakeSeed()}
	r.fieldSeed = maphash.String(r.seed, "fields")
	r.pathHash = make([]fingerprint, len(opPaths))
	for i, p := range opPaths {
		r.pathHash[i] = fingerprint(maphash.String(r.seed, p))
	}
	n := stripeCount()
	r.stripes = make([]stripe, n)
	r.held = make([][]record, n)
	r.keys.Store(&map[string]*client{})
	return r
}

// now is Config.Now's reading, or the wall clock's when it is not set.
func (r *Recorder) now() time.Time {
	if r.cfg.Now != nil {
		return r.cfg.Now()
	}
	return time.Now()
}

// resetLocal forgets every client this Recorder keeps, and the requests
// not folded yet, unless a Reset came after epoch (then it is done
// already).
func (r *Recorder) resetLocal(epoch uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lockStripes()
	defer r.unlockStripes()
	if r.epoch.Load() != epoch {
		return
	}
	for i := range r.stripes {
		st := &r.stripes[i]
		clear(st.recs)
		st.recs = st.recs[:0]
		st.key, st.c = "", nil
	}
	clear(r.carry)
	r.carry = r.carry[:0]
	r.folded = r.seq.Load()
	r.keys.Store(&map[string]*client{})
	r.own.Store(0)
	r.other.Store(nil)
	r.epoch.Add(1)
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
	JudgeBackoff     = "backs_off_without_retry_after"
	JudgeKnown       = "known_devices_only"
	JudgeTypes       = "matches_device_types"
	JudgeOwnAccount  = "own_account_only"
	judgementsNumber = 11
)

var judgements = [judgementsNumber]struct{ id, name string }{
	{JudgeValid, "app sent only valid requests"},
	{JudgeForeign, "app sent no fields that belong to another device type"},
	{JudgeSign, "app signed every request correctly"},
	{JudgeClock, "app's clock is within the timestamp window"},
	{JudgeRetryAfter, "app waited out Retry-After on 429, 503 and 504"},
	{JudgeResend400, "app did not resend a refused (400) request unchanged"},
	{JudgeNoReplay, "app did not resend an accepted request (same operation, fields, timestamp and sign)"},
	{JudgeBackoff, "app backed off at least " + BackoffFloor.String() + " before retrying an error without Retry-After"},
	{JudgeKnown, "app sent only to gateways and devices the fleet has"},
	{JudgeTypes, "app sent each command with the type of the device it names"},
	{JudgeOwnAccount, "app sent only a registered api_key, with its own account (myservice_id)"},
}

// violation counts the breaches of one judgement and keeps what its
// latest breach's text is written from (see text).
type violation struct {
	n    uint64
	at   time.Time
	what desc
	// kind picks the text; detail, err, d, t and code fill it.
	kind   breach
	detail string
	err    *device.Error
	d      time.Duration
	t      time.Time
	code   string
	status uint16
}

// breach is the form of a judgement's latest-breach text.
type breach uint8

const (
	breachDetail   breach = iota // what: detail
	breachError                  // what: err
	breachSign                   // what: the sign does not match
	breachSkew                   // what: timestamp d from gwsim's clock, outside the window
	breachStale                  // what: answered stale_timestamp
	breachEarly                  // what: arrived after a code answer left at t, d before its Retry-After ended
	breachResent                 // what: the same request as one refused with 400 at t (in format code)
	breachReplay                 // what: the same request as one accepted at t (in format code)
	breachReplayed               // what: answered replayed_request
	breachBackoff                // what: arrived d after a code answer without Retry-After left at t
)

// text is the latest breach as the report says it.
func (v *violation) text(window time.Duration) string {
	w := v.what.String()
	switch v.kind {
	case breachError:
		return clip(w + ": " + v.err.Error())
	case breachSign:
		return clip(w + ": the sign does not match md5(api_key + secret + timestamp)")
	case breachSkew:
		return clip(w + ": timestamp " + fmtSkew(v.d) + " from gwsim's clock, outside the window of ±" + window.String())
	case breachStale:
		return clip(w + ": answered stale_timestamp")
	case breachEarly:
		return clip(w + ": arrived " + v.at.Sub(v.t).Round(time.Millisecond).String() + " after a " + v.answerName() +
			" answer had left, " + v.d.Round(time.Millisecond).String() + " before its Retry-After ended")
	case breachBackoff:
		return clip(w + ": arrived " + v.d.Round(time.Millisecond).String() + " after a " + v.answerName() +
			" answer without Retry-After had left, sooner than the " + BackoffFloor.String() + " back-off floor")
	case breachResent:
		return clip(w + ": the same operation, fields, timestamp and sign as a request sent in " + v.code +
			" and refused with 400 at " + v.t.UTC().Format(rfc3339Milli))
	case breachReplay:
		return clip(w + ": the same operation, fields, timestamp and sign as a request sent in " + v.code +
			" and accepted at " + v.t.UTC().Format(rfc3339Milli) + " (a replay)")
	case breachReplayed:
		return clip(w + ": answered replayed_request")
	}
	return clip(w + ": " + v.detail)
}

// answerName is the answer a breach follows: "503 injected_fault".
func (v *violation) answerName() string {
	if v.code == "" {
		return strconv.Itoa(int(v.status))
	}
	return strconv.Itoa(int(v.status)) + " " + v.code
}

// rfc3339Milli is RFC 3339 with milliseconds: two requests of one second
// told apart.
const rfc3339Milli = "2006-01-02T15:04:05.000Z07:00"

// desc names a request in a report: its operation, device type (commands)
// and format, as "command Light Dimmer (json)".
type desc struct {
	op device.Operation
	// typ is the device type's device.Type.ID + 1, 0 for none.
	typ    uint8
	format device.Format
}

// typeName is the name of d's device type, "" when it has none.
func (d desc) typeName() string {
	if d.typ == 0 {
		return ""
	}
	return device.Types[d.typ-1].Name
}

func (d desc) String() string {
	w := d.op.Name()
	if d.typ != 0 {
		w += " " + d.typeName()
	}
	if d.format != 0 {
		w += " (" + d.format.String() + ")"
	}
	return w
}

// The coverage of a client is an array of counts, one for each
// operation, device type (or none) and format, at coverageIndex: a map
// keyed by desc cost the fold a tenth of its time in hashing.
var coverageSize = len(device.Operations) * (len(device.Types) + 1) * 2

// coverageIndex is d's place in a coverage array; d has a format and an
// operation of device.Operations (SendCommand, SendMessage, UpdateName).
func coverageIndex(d desc) int {
	return ((int(d.op)-1)*(len(device.Types)+1)+int(d.typ))*2 + int(d.format) - 1
}

// coverageDesc is the desc at place i of a coverage array.
func coverageDesc(i int) desc {
	return desc{op: device.Operation(i/2/(len(device.Types)+1) + 1), typ: uint8(i / 2 % (len(device.Types) + 1)), format: device.Format(i%2 + 1)}
}

type covCount struct{ sent, ok uint64 }

// errStat counts one error code; its latest example's text is written
// when the report is read.
type errStat struct {
	status  int
	n       uint64
	at      time.Time
	what    desc
	field   string
	message string
}

type phaseStat struct {
	requests, errors, early uint64
	codes                   map[string]uint64
	// devices counts the requests by the device (sn) or gateway (mac)
	// they went to; lat* are their latencies.
	devices                map[string]uint64
	latN                   uint64
	latSum, latMin, latMax time.Duration
	recovered              bool
	recoveredAfter         time.Duration
}

type client struct {
	name, id    string
	first, last time.Time
	requests    uint64
	coverage    []covCount
	errors      map[string]*errStat
	judged      [judgementsNumber]violation
	// retry holds the latest 429s and 503s with a Retry-After (a wait
	// for the whole service); targets the waits and back-offs of one
	// gateway or one device (targetKey).
	retry      waits
	targets    map[uint64]*targetWait
	refused    window
	sent       window
	skewN      uint64
	skewLast   time.Duration
	skewMin    time.Duration
	skewMax    time.Duration
	phases     map[string]*phaseStat
	phaseOrder []string
	// dirty says the client changed since the last Snapshot.
	dirty bool
}

// targetWait is what one gateway's or device's latest errors ask of the
// next requests to it: a Retry-After (retry) or, when an error carried
// none, a back-off (backoff: until the back-off floor ends).
type targetWait struct {
	retry, backoff waits
}

// wait is what one answer asks: no request sent after it reached the
// app (from, the answer's connection conn) before until. Unix
// nanoseconds; until 0: none.
type wait struct {
	from, until int64
	conn        uint32
	status      uint16
	code        string
}

// waits are the latest answers' waits: each request is judged against
// every one still in force, each from its own answer, so that a new
// refusal never restarts the grace of the requests already on their way.
type waits [4]wait

// add keeps w in place of the wait that ends first.
func (ws *waits) add(w wait) {
	k := 0
	for i := range ws {
		if ws[i].until < ws[k].until {
			k = i
		}
	}
	ws[k] = w
}

// breached is the wait a request sent at (on connection conn, the first
// request of a connection opened then when fresh) breaks, the one with
// the most time left, less slack; nil when none.
func (ws *waits) breached(at int64, conn uint32, fresh bool, slack int64) *wait {
	var worst *wait
	for i := range ws {
		w := &ws[i]
		if w.until == 0 || at >= w.until-slack || !sentAfter(at, conn, fresh, w.from, w.conn) {
			continue
		}
		if worst == nil || w.until > worst.until {
			worst = w
		}
	}
	return worst
}

// sentAfter says a request that reached gwsim at (Exchange.Sent) was
// sent after an answer that left at from on connection answered had
// reached the app: see Transit.
func sentAfter(at int64, conn uint32, fresh bool, from int64, answered uint32) bool {
	if at <= from {
		return false
	}
	return (conn != 0 && conn == answered) || fresh || at > from+int64(Transit)
}

// request is what Observe reads of a request, as its record keeps it: no
// credential (its api_key and sign are read, and dropped). Its small
// fields come first, packed into one word with the answer's (record).
type request struct {
	op      device.Operation
	format  device.Format
	hasTime bool
	signBad bool
	typ     uint8 // device.Type.ID + 1, 0: none
	// fresh says the request is its connection's first (Exchange.First).
	fresh bool
	skew  time.Duration
	// invalid is why the request breaks the interface's rules (nil: it
	// does not).
	invalid *device.Error
	// odd holds what few requests have (nil: nothing): a Judged
	// exchange's violation, a field of another device type.
	odd *oddity
	// gw and dev hash the gateway (mac) and the device (sn or
	// device_id) the request names, 0 for none: the targets of a
	// gateway's or a device's Retry-After and back-off.
	gw, dev uint32
	// exact fingerprints the request: its operation and every field but
	// format, by the name the field has in either format, hex and
	// enumerated values in lower case: the same request in JSON and XML
	// is the same (CONTRACT 1, replays). A body that cannot be read is
	// fingerprinted by its bytes.
	exact fingerprint
}

// oddity is what a request breaks beyond the interface's rules as Parse
// reads them: kept apart, so that the records of the requests that
// break nothing stay small (record).
type oddity struct {
	// violation, set from a Judged exchange, replaces invalid; foreign
	// names a field of another device type.
	violation, foreign string
}

// answer is what Observe reads of an answer.
type answer struct {
	status   uint16
	hasRetry bool
	// same is the answered request's operation and fields, its timestamp
	// and sign aside, in 32 bits (kept here, where the record has room).
	// Filled by read.
	same uint32
	// conn is the exchange's connection (Exchange.Conn).
	conn uint32
	// retryAfterMS is the Retry-After in milliseconds.
	retryAfterMS uint32
	// err holds the answer's error code, field and message (nil: none):
	// the error gwsim answered with itself, when it reads back the same,
	// so that nothing is copied.
	err *device.Error
}

// retryAfter is the answer's Retry-After.
func (a *answer) retryAfter() time.Duration {
	return time.Duration(a.retryAfterMS) * time.Millisecond
}

// noError and noOddity stand for none when read; never written.
var (
	noError  device.Error
	noOddity oddity
)

// e is the answer's error, empty when it has none.
func (a *answer) e() *device.Error {
	if a.err == nil {
		return &noError
	}
	return a.err
}

// Observe records one exchange: it reads the request and the answer on
// the caller's path and leaves the rest to the fold (records.go).
func (r *Recorder) Observe(ex Exchange) {
	op, ok := opOf(ex.Path)
	if !ok {
		return
	}
	// A timestamp's skew is measured against when the request arrived;
	// on the wall clock that is ex.Time, read already (a clock read is
	// a tenth of Observe's time on this machine).
	now := ex.Time
	if r.cfg.Now != nil || now.IsZero() {
		now = r.now()
	}
	rec := record{at: nanos(ex.Time), done: nanos(ex.Done)}
	if !ex.Sent.IsZero() && ex.Sent.Before(ex.Time) {
		rec.at = ex.Sent.UnixNano()
	}
	rec.a.conn, rec.q.fresh = ex.Conn, ex.First
	var ids [2]string // the request's mac and sn
	key, sign := r.read(&rec.q, &rec.a.same, &ids, op, &ex, now)
	q := &rec.q
	if ex.Judged {
		q.invalid, q.signBad = nil, ex.SignBad
		if ex.Violation != "" {
			if q.odd == nil {
				q.odd = &oddity{}
			}
			q.odd.violation = ex.Violation
		}
	}
	readAnswer(&rec.a, &ex, sign, key)
	if rec.a.err != nil && rec.a.err.Code == device.CodeTypeMismatch {
		// Covered under the type the device has, which the answer names,
		// not the one the app claimed.
		if t, ok := realType(rec.a.err.Message); ok {
			rec.q.typ = t.ID + 1
		}
	}
	if rec.done == 0 {
		rec.done = rec.at
	}
	if r.cfg.Faults != nil {
		if faults := r.cfg.Faults(); len(faults) > 0 {
			ae := rec.a.e()
			rec.hits = hits(faults, op, ids[0], ids[1], ae.Code, ae.Message, ex.Status == http.StatusOK, timeOf(rec.at))
		}
	} else if r.cfg.Phases != nil {
		for _, p := range r.cfg.Phases() {
			rec.hits = append(rec.hits, phaseHit{label: p})
		}
	}
	if key == "" && ex.RemoteAddr != "" {
		// No api_key in the bytes at all: the client's address names the
		// app, never an anonymous bucket its CI does not read.
		key = addrKey + hostOf(ex.RemoteAddr)
	}
	r.add(key, &rec)
}

// hostOf is the host of an address given as host:port (the address
// itself when it has no port): one app's connections share it.
func hostOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// nanos is t in Unix nanoseconds, 0 when t is zero (timeOf reads it back).
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// timeOf is the time nanos read, the zero time for 0.
func timeOf(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// observe folds one request into the client's report. Called with the
// Recorder's mu held, in the order Observe took the requests.
func (c *client) observe(window time.Duration, signFromAnswer bool, at, done time.Time, q *request, a *answer, hits []phaseHit) {
	c.dirty = true
	status, ae := int(a.status), a.e()
	what := desc{q.op, q.typ, q.format}
	c.count(at, what, status)
	c.judgeRequest(window, signFromAnswer, at, what, q, ae)
	early := c.judgeFollowing(at, what, q, a, ae)
	c.remember(at, done, status, q, a, ae)
	if status != http.StatusOK {
		c.countError(at, what, status, ae)
	}
	if len(hits) > 0 {
		code := ae.Code
		if code == "" && status != http.StatusOK {
			code = "http_" + strconv.Itoa(status)
		}
		for _, h := range hits {
			c.phase(h, at, done, status, code, early)
		}
	}
}

// count counts the request, when it came, and what it covered: its
// operation, type and format, sent and succeeded.
func (c *client) count(at time.Time, what desc, status int) {
	if c.requests == 0 {
		c.first = at
	}
	c.requests++
	c.last = at
	if what.format != 0 {
		if c.coverage == nil {
			c.coverage = make([]covCount, coverageSize)
		}
		cc := &c.coverage[coverageIndex(what)]
		cc.sent++
		if status == http.StatusOK {
			cc.ok++
		}
	}
}

// judgeRequest judges the request itself: valid, no foreign field, a
// right sign, and a clock near the server's.
func (c *client) judgeRequest(window time.Duration, signFromAnswer bool, at time.Time, what desc, q *request, ae *device.Error) {
	odd := q.odd
	if odd == nil {
		odd = &noOddity
	}
	if odd.violation != "" {
		c.flag(JudgeValid, at, what).detailed(breachDetail, odd.violation)
	} else if q.invalid != nil {
		v := c.flag(JudgeValid, at, what)
		v.kind, v.err = breachError, q.invalid
	}
	if odd.foreign != "" {
		c.flag(JudgeForeign, at, what).detailed(breachDetail, odd.foreign)
	}
	if q.signBad || (signFromAnswer && ae.Code == device.CodeBadSignature) {
		c.flag(JudgeSign, at, what).kind = breachSign
	}
	c.judgeClock(window, at, what, q, ae)
}

// judgeClock keeps the skew of the request's timestamp and flags one
// outside the window, or a timestamp the server called stale.
func (c *client) judgeClock(window time.Duration, at time.Time, what desc, q *request, ae *device.Error) {
	if !q.hasTime {
		if ae.Code == device.CodeStaleTimestamp {
			c.flag(JudgeClock, at, what).kind = breachStale
		}
		return
	}
	c.skewN++
	c.skewLast = q.skew
	if c.skewN == 1 || q.skew < c.skewMin {
		c.skewMin = q.skew
	}
	if c.skewN == 1 || q.skew > c.skewMax {
		c.skewMax = q.skew
	}
	if window > 0 && (q.skew > window || q.skew < -window) {
		v := c.flag(JudgeClock, at, what)
		v.kind, v.d = breachSkew, q.skew
	} else if ae.Code == device.CodeStaleTimestamp {
		c.flag(JudgeClock, at, what).kind = breachStale // the service's window, or its zone, is not ours
	}
}

// judgeFollowing judges how the request follows earlier answers: Retry-
// After kept, a refused request not sent again, no replay, known devices.
// A request is judged against an answer only when it arrived after that
// answer had left (retrySlack later: it may have been on its way). It
// says the request came before an answer allowed it.
func (c *client) judgeFollowing(at time.Time, what desc, q *request, a *answer, ae *device.Error) (early bool) {
	ns := at.UnixNano()
	if w := c.retry.breached(ns, a.conn, q.fresh, int64(retrySlack)); w != nil {
		early = true
		v := c.flag(JudgeRetryAfter, at, what)
		v.kind, v.t, v.d, v.status, v.code = breachEarly, timeOf(w.from), time.Duration(w.until-ns), w.status, w.code
	}
	if len(c.targets) > 0 {
		early = c.waits(at, what, q, a, early)
	}
	if q.exact != 0 {
		if seenAt, f, ok := c.refused.find(q.exact); ok {
			v := c.flag(JudgeResend400, at, what)
			v.kind, v.t, v.code = breachResent, seenAt, formatName(f)
		}
	}
	replay := false
	if q.format != 0 {
		if seenAt, f, ok := c.sent.find(q.exact); ok {
			replay = true
			v := c.flag(JudgeNoReplay, at, what)
			v.kind, v.t, v.code = breachReplay, seenAt, formatName(f)
		}
	}
	if ae.Code == device.CodeReplayedRequest && !replay {
		c.flag(JudgeNoReplay, at, what).kind = breachReplayed
	}
	var refused string
	switch ae.Code {
	case device.CodeGatewayNotFound, device.CodeDeviceNotFound:
		refused = JudgeKnown
	case device.CodeTypeMismatch:
		refused = JudgeTypes
	case device.CodeUnknownAPIKey, device.CodeAccountMismatch:
		refused = JudgeOwnAccount
	}
	if refused != "" {
		v := c.flag(refused, at, what)
		v.kind, v.err = breachError, ae
	}
	return early
}

// remember keeps what the answer asks of the next request: an accepted
// request is not to be replayed, a refused one not sent again, and what
// the answer asks to wait for.
func (c *client) remember(at, done time.Time, status int, q *request, a *answer, ae *device.Error) {
	if status == http.StatusOK && q.format != 0 {
		c.sent.add(q.exact, at, q.format) // accepted: a replay of it is one
	}
	if status == http.StatusBadRequest && q.exact != 0 {
		c.refused.add(q.exact, at, q.format)
	}
	c.asks(done, status, ae.Code, q, a)
}

// countError counts an answer other than success under its code
// ("http_N" without one; beyond maxCodes codes, "other") and keeps it as
// the code's latest example.
func (c *client) countError(at time.Time, what desc, status int, ae *device.Error) {
	code := ae.Code
	if code == "" {
		code = "http_" + strconv.Itoa(status)
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
	es.status = status
	es.at, es.what, es.field, es.message = at.UTC(), what, ae.Field, ae.Message
}

// formatName is "json", "xml", or "an unreadable body" for 0.
func formatName(f device.Format) string {
	if f == 0 {
		return "an unreadable body"
	}
	return f.String()
}

// targetKey is the key of a gateway's wait (dev 0) or of one of its
// devices'.
func targetKey(gw, dev uint32) uint64 { return uint64(gw)<<32 | uint64(dev) }

// waits judges a request against the Retry-After and the back-off its
// gateway's and its device's last errors asked for; it says whether the
// request came before a Retry-After ended.
func (c *client) waits(at time.Time, what desc, q *request, a *answer, early bool) bool {
	backedOff := false
	ns := at.UnixNano()
	for _, k := range [2]uint64{targetKey(q.gw, 0), targetKey(q.gw, q.dev)} {
		tw := c.targets[k]
		if tw == nil {
			continue
		}
		if w := tw.retry.breached(ns, a.conn, q.fresh, int64(retrySlack)); w != nil && !early {
			early = true
			v := c.flag(JudgeRetryAfter, at, what)
			v.kind, v.t, v.d, v.status, v.code = breachEarly, timeOf(w.from), time.Duration(w.until-ns), w.status, w.code
		}
		if w := tw.backoff.breached(ns, a.conn, q.fresh, 0); w != nil && !backedOff {
			backedOff = true
			v := c.flag(JudgeBackoff, at, what)
			v.kind, v.t, v.d, v.status, v.code = breachBackoff, timeOf(w.from), time.Duration(ns-w.from), w.status, w.code
		}
		if q.dev == 0 {
			break // the gateway's own wait only
		}
	}
	return early
}

// asks keeps what an answer asks of the next request: a Retry-After on
// 429 or 503 for every request of the app; on another error, a
// Retry-After, or without one a back-off (429 and 5xx), for the requests
// to the same gateway (gateway_offline) or device.
func (c *client) asks(done time.Time, status int, code string, q *request, a *answer) {
	if status == http.StatusOK {
		if len(c.targets) > 0 {
			delete(c.targets, targetKey(q.gw, 0))
			delete(c.targets, targetKey(q.gw, q.dev))
		}
		return
	}
	wide := status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
	from := done.UnixNano()
	if a.hasRetry && wide {
		c.retry.add(wait{from: from, until: from + int64(a.retryAfter()), conn: a.conn, status: a.status, code: code})
		return
	}
	if !a.hasRetry && status != http.StatusTooManyRequests && status < 500 {
		return // a refusal: nothing to wait for
	}
	k := targetKey(q.gw, q.dev)
	if code == device.CodeGatewayOffline || q.dev == 0 {
		k = targetKey(q.gw, 0)
	}
	w := c.targets[k]
	if w == nil {
		if c.targets == nil {
			c.targets = map[uint64]*targetWait{}
		}
		if len(c.targets) >= maxTargets {
			clear(c.targets)
		}
		w = &targetWait{}
		c.targets[k] = w
	}
	if a.hasRetry {
		w.retry.add(wait{from: from, until: from + int64(a.retryAfter()), conn: a.conn, status: a.status, code: code})
	} else {
		w.backoff.add(wait{from: from, until: from + int64(BackoffFloor), conn: a.conn, status: a.status, code: code})
	}
}

// judgementIndex is each judgement's place in judgements.
var judgementIndex = func() map[string]int {
	m := map[string]int{}
	for i, j := range judgements {
		m[j.id] = i
	}
	return m
}()

func (c *client) judgement(id string) *violation { return &c.judged[judgementIndex[id]] }

// flag counts a breach of judgement id by the request at, and returns the
// violation for the caller to say what the breach was (its kind and
// details); what it said of an earlier breach is cleared.
func (c *client) flag(id string, at time.Time, what desc) *violation {
	v := c.judgement(id)
	n := v.n + 1
	*v = violation{n: n, at: at.UTC(), what: what}
	return v
}

func (v *violation) detailed(kind breach, detail string) {
	v.kind, v.detail = kind, detail
}

// client is the client of key, made on first sight; beyond MaxClients
// every new key shares OtherClients. It is called with a stripe locked,
// so that no Reset comes between finding the client and recording the
// request.
func (r *Recorder) client(key string) *client {
	if c, ok := (*r.keys.Load())[key]; ok {
		return c
	}
	if r.own.Load() >= int64(r.cfg.MaxClients) {
		if c := r.other.Load(); c != nil {
			return c
		}
	}
	r.newMu.Lock()
	defer r.newMu.Unlock()
	keys := *r.keys.Load()
	if c, ok := keys[key]; ok {
		return c
	}
	if r.own.Load() >= int64(r.cfg.MaxClients) {
		c := r.other.Load()
		if c == nil {
			c = newClient(OtherClients, "")
			r.other.Store(c)
		}
		return c
	}
	key = strings.Clone(key) // the decoded field's string is kept
	name, id := NoKey, ""
	if addr, ok := strings.CutPrefix(key, addrKey); ok {
		name = AddressPrefix + addr + ")"
	} else if key != "" {
		name, id = Mask(key), idOf(key)
	}
	c := newClient(name, id)
	next := make(map[string]*client, len(keys)+1)
	maps.Copy(next, keys)
	next[key] = c
	r.keys.Store(&next)
	r.own.Add(1)
	return c
}

func newClient(name, id string) *client {
	return &client{name: name, id: id, errors: map[string]*errStat{},
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
		if opPaths[op] == path {
			return op, true
		}
	}
	return 0, false
}

// opPaths is each operation's path, at its number.
var opPaths = func() []string {
	var paths []string
	for _, op := range device.Operations {
		paths = append(paths, make([]string, max(0, int(op)+1-len(paths)))...)
		paths[op] = op.Path()
	}
	return paths
}()

// read parses and judges a request by the interface's own rules
// (gatewayapi/device), whatever the server answered; with Config.Trusted a
// request gwsim answered 200 is taken as valid.
//
// It fills q, which is zero, in place (a request is copied once, into its
// stripe), and returns the request's api_key and sign, which no record
// keeps.
func (r *Recorder) read(q *request, same *uint32, ids *[2]string, op device.Operation, ex *Exchange, now time.Time) (key, sign string) {
	q.op = op
	format, pairs := ex.Format, ex.Pairs
	if pairs == nil || format == 0 {
		var pp *[]device.Pair
		var derr *device.Error
		format, pairs, pp, derr = decodePairs(ex)
		if pp != nil {
			defer putPairs(pp)
		}
		if derr != nil {
			q.invalid = derr
			q.exact = r.hashOf(ex.Path, ex.Body)
			*same = uint32(q.exact) | 1
			return keyIn(ex.Body), ""
		}
	}
	q.format = format
	key, sign = r.readFields(q, same, ids, op, pairs, now)
	r.judgeFields(q, op, format, pairs, ex)
	return key, sign
}

// decodePairs decodes a request the server did not hand over decoded,
// into a buffer of pairsPool; pp, when not nil, is that buffer, for
// putPairs once the pairs are no longer read.
func decodePairs(ex *Exchange) (format device.Format, pairs []device.Pair, pp *[]device.Pair, derr *device.Error) {
	format, derr = codec.FormatOf(ex.ContentType)
	if derr != nil {
		return format, nil, nil, derr
	}
	pp = pairsPool.Get().(*[]device.Pair)
	pairs, derr = codec.DecodeInto(format, ex.Body, *pp)
	if cap(pairs) <= 64 {
		*pp = pairs[:0]
	}
	return format, pairs, pp, derr
}

// putPairs empties a buffer of decodePairs and returns it to pairsPool.
func putPairs(pp *[]device.Pair) {
	clear((*pp)[:cap(*pp)])
	*pp = (*pp)[:0]
	pairsPool.Put(pp)
}

// readFields reads the request's fields into q: its fingerprint (exact,
// and same without the timestamp and sign), its gateway and device, its
// clock's skew and its type; ids gets its mac and sn. It returns the
// api_key (at most device.MaxAPIKeyLen) and the sign.
func (r *Recorder) readFields(q *request, same *uint32, ids *[2]string, op device.Operation, pairs []device.Pair, now time.Time) (key, sign string) {
	q.exact = r.pathHash[op]
	var stamp fingerprint // the timestamp's and the sign's share of exact
	for _, p := range pairs {
		name, fold := canonical(p.Key)
		if name == device.FieldFormat {
			continue // says the format, which either format may carry
		}
		value := p.Value.Text
		var f fingerprint
		switch fold {
		case hexCase:
			f = r.hashLower(name, value)
		case wordCase:
			f = r.field(name, canonicalWord(value))
		default:
			f = r.field(name, value)
		}
		q.exact += f
		switch name {
		case device.FieldMAC:
			q.gw = uint32(f) | 1
			ids[0] = value
		case device.FieldSN:
			if q.dev == 0 || p.Key == device.FieldSN {
				q.dev = uint32(f) | 1
				ids[1] = value
			}
		case device.FieldAPIKey:
			key = strings.TrimSpace(p.Value.Text)
		case device.FieldSign:
			sign = strings.TrimSpace(p.Value.Text)
			stamp += f
		case device.FieldTimestamp:
			stamp += f
			if d, ok := r.skewOf(strings.TrimSpace(p.Value.Text), now); ok {
				q.skew, q.hasTime = d, true
			}
		case device.FieldType:
			if t, ok := device.LookupType(strings.TrimSpace(p.Value.Text)); ok {
				q.typ = t.ID + 1
			}
		}
	}
	*same = uint32(q.exact-stamp) | 1
	if q.gw != 0 && q.dev != 0 {
		q.dev ^= q.gw &^ 1 // one device: its sn on its gateway
	}
	if len(key) > device.MaxAPIKeyLen {
		key = key[:device.MaxAPIKeyLen]
	}
	return key, sign
}

// skewOf is how far the clock that wrote timestamp ts is behind now, to
// the second; false when ts is no timestamp. A timestamp names a whole
// second, [t, t+1s): a clock that is right is off by less than a second,
// never -1 s.
func (r *Recorder) skewOf(ts string, now time.Time) (time.Duration, bool) {
	t, ok := timestampUnix(ts, r.cfg.Location)
	if !ok {
		return 0, false
	}
	d := sinceUnix(t, now)
	if d < 0 {
		d = min(d+time.Second, 0)
	}
	return d.Round(time.Second), true
}

// judgeFields judges the request by the interface's rules, or takes
// gwsim's verdict where Config.Trusted allows: a foreign field of a
// command, the first rule broken, and a wrong sign when Config.Auth can
// tell.
func (r *Recorder) judgeFields(q *request, op device.Operation, format device.Format, pairs []device.Pair, ex *Exchange) {
	if r.cfg.Trusted && ex.Status == http.StatusOK {
		return // gwsim checked every rule, the sign included
	}
	if op == device.SendCommand && q.typ != 0 {
		if f := foreignField(pairs, device.Types[q.typ-1], format); f != "" {
			q.odd = &oddity{foreign: f}
		}
	}
	if r.cfg.Trusted && ex.Validated && r.cfg.Auth == nil {
		// gwsim's own verdict on these very fields.
		if derr := ex.Invalid; derr != nil {
			if derr.Field == device.FieldSign {
				derr = device.Errorf(derr.Code, derr.Field, "sign must be 32 hexadecimal characters")
			}
			q.invalid = derr
		}
		return
	}
	req, derr := device.Parse(op, format, pairs)
	if derr != nil {
		if derr.Field == device.FieldSign {
			derr = device.Errorf(derr.Code, derr.Field, "sign must be 32 hexadecimal characters")
		}
		q.invalid = derr
		return
	}
	if r.cfg.Auth != nil {
		if aerr := r.cfg.Auth.Check(&req.Envelope); aerr != nil && aerr.Code == device.CodeBadSignature {
			q.signBad = true
		}
	}
}

// timestampUnix reads a timestamp in device.TimestampLayout (14 digits)
// in loc, as time.ParseInLocation does (the same timestamps accepted,
// the same instant), without its general parser and, in UTC, without
// time.Date: the Unix second it names.
func timestampUnix(s string, loc *time.Location) (int64, bool) {
	if len(s) != len(device.TimestampLayout) {
		return 0, false
	}
	var d [14]int
	for i := range d {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d[i] = int(c - '0')
	}
	year := d[0]*1000 + d[1]*100 + d[2]*10 + d[3]
	month, day := d[4]*10+d[5], d[6]*10+d[7]
	hour, minute, sec := d[8]*10+d[9], d[10]*10+d[11], d[12]*10+d[13]
	if month < 1 || month > 12 || day < 1 || day > device.DaysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	clock := int64(hour*3600 + minute*60 + sec)
	if loc == time.UTC {
		return daysFromCivil(year, month, day)*86400 + clock, true
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, 0, loc).Unix(), true
}

// daysFromCivil is the number of days from 1970-01-01 to year-month-day
// (Howard Hinnant's days_from_civil).
func daysFromCivil(year, month, day int) int64 {
	y := int64(year)
	if month <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	m := int64(month)
	if m > 2 {
		m -= 3
	} else {
		m += 9
	}
	doy := (153*m+2)/5 + int64(day) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// sinceUnix is the time from now to the Unix second unix, as
// time.Unix(unix, 0).Sub(now) says it (saturated where a Duration
// cannot hold it).
func sinceUnix(unix int64, now time.Time) time.Duration {
	const most = 9_000_000_000 // seconds: about 285 years, well within a Duration
	if s := unix - now.Unix(); s > -most && s < most {
		return time.Duration(s)*time.Second - time.Duration(now.Nanosecond())
	}
	return time.Unix(unix, 0).Sub(now)
}

// pairsPool holds the pair slices requests are decoded into.
var pairsPool = sync.Pool{New: func() any { p := make([]device.Pair, 0, 16); return &p }}

// canonical is the name a field has in either format (the thermostat's
// points by their XML names, device_id as sn), and whether its value is
// read in any letter case (hex and enumerated values): the same request
// in JSON and in XML fingerprints alike.
func canonical(key string) (name string, fold valueCase) {
	switch key {
	case "cooling point":
		return "cooling_point", asIs
	case "heating point":
		return "heating_point", asIs
	case device.FieldDeviceID:
		return device.FieldSN, hexCase
	case device.FieldSign, device.FieldAccount, device.FieldMAC, device.FieldSN:
		return key, hexCase
	case "io", "mode", "fan", "Relay1", "Relay2":
		return key, wordCase
	}
	return key, asIs
}

// valueCase is how a field's value is read: as it is, hex in either
// case, or an enumerated word in any case.
type valueCase uint8

const (
	asIs valueCase = iota
	hexCase
	wordCase
)

// enumWords are the enumerated values of every device type, in their
// canonical case.
var enumWords = func() []string {
	var out []string
	for _, t := range device.Types {
		for _, f := range t.Fields {
			if f.Kind == device.Enum {
				for _, v := range f.Values {
					if !slices.Contains(out, v) {
						out = append(out, v)
					}
				}
			}
		}
	}
	return out
}()

// canonicalWord is an enumerated value in its canonical case (the
// interface reads them in any case), v itself when it is none; no copy.
func canonicalWord(v string) string {
	for _, w := range enumWords {
		if len(w) == len(v) && strings.EqualFold(w, v) {
			return w
		}
	}
	return v
}

// hashLower is r.field(name, value) over value in lower case, without a
// copy on the heap for a value of up to 64 bytes.
func (r *Recorder) hashLower(name, value string) fingerprint {
	if !hasUpper(value) {
		return r.field(name, value)
	}
	if len(value) > 64 {
		return r.field(name, strings.ToLower(value))
	}
	var buf [64]byte
	for i := 0; i < len(value); i++ {
		c := value[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return r.field(name, unsafe.String(&buf[0], len(value)))
}

// hasUpper says s has an upper-case ASCII letter: eight bytes at a time
// (a hex field is 12 to 32 bytes, four of them a request).
func hasUpper(s string) bool {
	const lo, hi, top = 0x3F3F3F3F3F3F3F3F, 0x2525252525252525, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := le64(s[i:])
		if w&top != 0 {
			break // a byte beyond ASCII: byte by byte
		}
		// A byte b has its top bit set in b+0x3F when b >= 'A', and in
		// b+0x25 when b > 'Z'.
		if (w+lo)&^(w+hi)&top != 0 {
			return true
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}

// keyIn reads the api_key of a body that could not be decoded as its
// Content-Type says (none, a wrong one, a body almost JSON or XML):
// "api_key": "…" or <api_key>…</api_key>, the first found; "" when the
// body shows none.
func keyIn(body []byte) string {
	s := string(body) // no copy kept: the key is cloned when it names a new client
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], device.FieldAPIKey)
		if j < 0 {
			return ""
		}
		j += i
		i = j + len(device.FieldAPIKey)
		var v string
		switch {
		case j > 0 && s[j-1] == '"' && i < len(s) && s[i] == '"':
			k := skipSpaces(s, i+1)
			if k >= len(s) || s[k] != ':' {
				continue
			}
			k = skipSpaces(s, k+1)
			if k >= len(s) || s[k] != '"' {
				continue
			}
			end := strings.IndexAny(s[k+1:], "\"\\")
			if end < 0 {
				continue
			}
			v = s[k+1 : k+1+end]
		case j > 0 && s[j-1] == '<' && i < len(s) && s[i] == '>':
			end := strings.IndexByte(s[i+1:], '<')
			if end < 0 {
				continue
			}
			v = s[i+1 : i+1+end]
		default:
			continue
		}
		if v = strings.TrimSpace(v); v != "" {
			if len(v) > device.MaxAPIKeyLen {
				v = v[:device.MaxAPIKeyLen]
			}
			return v
		}
	}
	return ""
}

func skipSpaces(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// hashOf hashes a request that could not be decoded: its path and body,
// in order (the same bytes under another Content-Type are the same
// request).
func (r *Recorder) hashOf(path string, body []byte) fingerprint {
	var h maphash.Hash
	h.SetSeed(r.seed)
	for _, p := range []string{path} {
		h.WriteString(strconv.Itoa(len(p)))
		h.WriteByte(':')
		h.WriteString(p)
	}
	h.WriteString(strconv.Itoa(len(body)))
	h.WriteByte(':')
	h.Write(body)
	return fingerprint(h.Sum64())
}

// foreignField names the first field of a command that is not a field of
// its own type but is one of another type's.
func foreignField(pairs []device.Pair, own *device.Type, format device.Format) string {
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
					return p.Key + " (a field of " + t.Name + ") sent to " + device.A(own.Name)
				}
			}
		}
	}
	return ""
}

// readAnswer reads the status, error code and Retry-After of an answer,
// in JSON or XML; what it cannot read stays empty. A sign or an api_key
// the message repeats is scrubbed from it (scrub).
// It fills a, which is zero.
func readAnswer(a *answer, ex *Exchange, sign, key string) {
	a.status = uint16(min(max(ex.Status, 0), math.MaxUint16))
	if ex.Status == http.StatusOK {
		return // no error, and a Retry-After counts on errors only (observe)
	}
	if v := strings.TrimSpace(headerValue(ex.Header, "Retry-After")); v != "" {
		if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
			a.retryAfterMS, a.hasRetry = uint32(min(secs, math.MaxUint32/1000)*1000), true
		} else if t, err := http.ParseTime(v); err == nil {
			a.retryAfterMS, a.hasRetry = uint32(min(max(t.Sub(ex.Time), 0)/time.Millisecond, math.MaxUint32)), true
		}
	}
	var code, field, message string
	own := ex.AnswerError
	if own != nil && plain(own.Code) && plain(own.Field) && plain(own.Message) {
		code, field, message = clip(own.Code), clip(own.Field), own.Message
	} else {
		own = nil
		p := apiclient.ParseAnswer(headerValue(ex.Header, "Content-Type"), ex.Answer)
		code, field, message = clip(p.ErrorCode), clip(p.ErrorField), p.ErrorMessage
	}
	if message != "" {
		message = scrub(message, sign, key)
	}
	if own != nil && code == own.Code && field == own.Field && message == own.Message {
		a.err = own // gwsim's own error, as it reads back: kept, not copied
		return
	}
	if code != "" || field != "" || message != "" {
		a.err = &device.Error{Code: code, Field: field, Message: message}
	}
}

// realType is the device type a type_mismatch answer says the device
// has: gwsim's "device … is a Relay Module, not a Light Dimmer"; false
// when the message names none.
func realType(message string) (*device.Type, bool) {
	_, rest, ok := strings.Cut(message, " is ")
	if !ok {
		return nil, false
	}
	name, _, ok := strings.Cut(rest, ", not ")
	if !ok {
		return nil, false
	}
	name = strings.TrimPrefix(strings.TrimPrefix(name, "an "), "a ")
	return device.LookupType(name)
}

// headerValue is h.Get(key) for a key in canonical form, as net/http and
// Header().Set keep an answer's: without Get's canonicalising of the key
// on every request.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// plain says s reads back the same from a JSON or an XML answer: valid
// UTF-8 without control characters other than tab and newline (XML
// replaces those, and reads a carriage return as a newline).
func plain(s string) bool {
	for _, r := range s {
		if (r < 0x20 && r != '\t' && r != '\n') || r == utf8.RuneError || r == 0xFFFE || r == 0xFFFF {
			return false
		}
	}
	return true
}

// scrub removes a sign and an api_key from text an upstream wrote, so
// that no report carries them even if the upstream echoes them.
func scrub(s, sign, key string) string {
	if len(sign) >= 8 && s != "" {
		s = replaceFold(s, sign, "<sign>")
	}
	if key != "" && strings.Contains(s, key) {
		s = strings.ReplaceAll(s, key, Mask(key))
	}
	return s
}

// replaceFold replaces every occurrence of old in s, in either case, with
// new: a sign in upper or lower case is the same sign.
func replaceFold(s, old, new string) string {
	for i := 0; i < len(old); i++ {
		if old[i] >= utf8.RuneSelf {
			return regexp.MustCompile("(?i)"+regexp.QuoteMeta(old)).ReplaceAllString(s, new)
		}
	}
	var b strings.Builder
	last := 0
	for i := 0; i+len(old) <= len(s); {
		if strings.EqualFold(s[i:i+len(old)], old) {
			b.WriteString(s[last:i])
			b.WriteString(new)
			i += len(old)
			last = i
			continue
		}
		i++
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
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
	rep := &Report{Generated: r.now().UTC(), Clients: []Client{}}
	if r.cfg.Window > 0 {
		rep.WindowSeconds = int64(r.cfg.Window / time.Second)
	}
	if r.shared != nil {
		r.sharedReport(rep)
		return rep
	}
	own, other := r.snapshot(false)
	rep.Clients = append(own, other...)
	rep.Scope = ScopeProcess
	r.recoveries(rep.Clients)
	return rep
}

// recoveries says, for each phase of a fault that Config.Faults knows,
// whether the app recovered after it ended.
func (r *Recorder) recoveries(cs []Client) {
	if r.cfg.Faults == nil {
		return
	}
	ends := map[string]time.Time{}
	for _, f := range r.cfg.Faults() {
		ends[f.Label] = f.End
	}
	for i := range cs {
		for j := range cs[i].Phases {
			p := &cs[i].Phases[j]
			end, known := ends[p.Phase]
			if !known {
				continue
			}
			if p.Recovery == nil {
				p.Recovery = &Recovery{}
			}
			rc := p.Recovery
			rc.Ended = !end.IsZero()
			switch {
			case rc.Recovered:
			case !rc.Ended:
				rc.Text = "the fault is in force"
			default:
				rc.Text = "not recovered: no request to what the fault hit has succeeded since it ended at " + end.UTC().Format(time.RFC3339)
			}
		}
	}
}

// snapshot reports every client (dirtyOnly: those changed since the last
// snapshot that asked, whose changes it then clears), those with a
// report of their own sorted by name and id, and OtherClients apart. It
// folds every request observed so far first.
func (r *Recorder) snapshot(dirtyOnly bool) (own, other []Client) {
	own = []Client{}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.foldLocked()
	take := func(c *client, out *[]Client) {
		if c.requests == 0 || (dirtyOnly && !c.dirty) {
			return // made by a request not recorded yet, or unchanged
		}
		if dirtyOnly {
			c.dirty = false
		}
		*out = append(*out, c.report(r.cfg.Window))
	}
	for _, c := range *r.keys.Load() {
		take(c, &own)
	}
	if c := r.other.Load(); c != nil {
		take(c, &other)
	}
	sortClients(own)
	return own, other
}

func sortClients(cs []Client) {
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.Client != b.Client {
			return a.Client < b.Client
		}
		return a.ID < b.ID
	})
}

func (c *client) report(window time.Duration) Client {
	out := Client{Client: c.name, ID: c.id, First: c.first.UTC(), Last: c.last.UTC(), Requests: c.requests,
		Coverage: []Coverage{}, Errors: []ErrorCount{}, Phases: []Phase{}}
	for i, v := range c.coverage {
		if v.sent == 0 {
			continue
		}
		k := coverageDesc(i)
		out.Coverage = append(out.Coverage, Coverage{Operation: k.op.Name(), Type: k.typeName(), Format: k.format.String(), Sent: v.sent, Succeeded: v.ok})
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
		out.Errors = append(out.Errors, ErrorCount{Code: code, Status: e.status, Count: e.n,
			Latest: Example{Time: e.at, Operation: e.what.String(), Field: e.field, Message: clip(e.message)}})
	}
	sort.Slice(out.Errors, func(i, j int) bool {
		if out.Errors[i].Count != out.Errors[j].Count {
			return out.Errors[i].Count > out.Errors[j].Count
		}
		return out.Errors[i].Code < out.Errors[j].Code
	})
	for i, j := range judgements {
		v := &c.judged[i]
		var latest string
		if v.n > 0 {
			latest = v.text(window)
		}
		out.Judgements = append(out.Judgements, Judgement{ID: j.id, Name: j.name, Passed: v.n == 0, Violations: v.n, Latest: latest, LatestTime: stamp(v.at)})
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
		out.Phases = append(out.Phases, c.phases[name].report(name))
	}
	out.fillUntried()
	return out
}

// Apps is how many clients have a report now (the (other clients) group
// counts as one).
func (r *Recorder) Apps() int {
	n := int(r.own.Load())
	if r.other.Load() != nil {
		n++
	}
	return n
}
