package main

// An implementation of the Gateway Device Management Interface written
// from docs/gateway-api.md and docs/CONTRACT.md alone, for the tests of
// independent_test.go: it imports nothing of the simulator and nothing of
// gatewayapi (neither its device table nor its validation), so that the
// harness is tried against a service that agrees with it only through
// the two texts. Its reads of CONTRACT 7 (a device, a gateway's messages,
// oldest first) are served on a port of their own, without any of
// gwsim's additions (no /_sim/faults, no ?limit=, no X-Total-Count).

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"math/rand"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// indepField is one field of a device type, from the table of section 2.3
// with the CONTRACT's ranges (3).
type indepField struct {
	name, json string // XML element and state key; JSON key
	kind       string // enum, int, dec, text
	values     []string
	min, max   float64
}

var indepTypes = map[string][]indepField{
	"Appliance Module":      {{name: "io", json: "io", kind: "enum", values: []string{"On", "Off"}}},
	"Appliance Module Plus": {{name: "opt", json: "opt", kind: "text", max: 32}, {name: "Relay1", json: "Relay1", kind: "enum", values: []string{"On", "Off"}}, {name: "Relay2", json: "Relay2", kind: "enum", values: []string{"On", "Off"}}},
	"Relay Module":          {{name: "io", json: "io", kind: "enum", values: []string{"On", "Off"}}},
	"Thermostat": {{name: "mode", json: "mode", kind: "enum", values: []string{"Auto", "Cool", "Heat", "Off"}},
		{name: "cooling_point", json: "cooling point", kind: "dec", min: -50, max: 100},
		{name: "heating_point", json: "heating point", kind: "dec", min: -50, max: 100},
		{name: "fan", json: "fan", kind: "enum", values: []string{"On", "Auto"}}},
	"Infrared Sensor": {{name: "io", json: "io", kind: "enum", values: []string{"On", "Off"}}, {name: "code", json: "code", kind: "int", min: 1, max: 4}},
	"Light Dimmer":    {{name: "dimming", json: "dimming", kind: "int", min: 1, max: 100}},
}

// The fields whose JSON key is not their XML name ("cooling point" and
// cooling_point), both ways, and the JSON keys of the numeric fields, from
// indepTypes: a type added there needs nothing else here.
var (
	indepFromJSON = map[string]string{}
	indepToJSON   = map[string]string{}
	indepNumeric  = map[string]bool{}
)

func init() {
	for _, fs := range indepTypes {
		for _, fd := range fs {
			if fd.json != fd.name {
				indepFromJSON[fd.json], indepToJSON[fd.name] = fd.name, fd.json
			}
			if fd.kind == "int" || fd.kind == "dec" {
				indepNumeric[fd.json] = true
			}
		}
	}
}

// indepXMLName is the XML name of a JSON key.
func indepXMLName(key string) string {
	if n, ok := indepFromJSON[key]; ok {
		return n
	}
	return key
}

// indepDeviation makes the target deviate in ways only effects show.
type indepDeviation struct {
	renameKeepsOld       bool // update_name answers success and keeps the old name
	refusedAppliesOthers bool // a command with one invalid field applies the valid ones first
	messageElsewhere     bool // a message is stored on another gateway of the account
	storeAsSent          bool // an enumerated value is stored as sent, not in its published case
	noChange             bool // success to every valid request, and nothing changes
	// Changes that land where they were not sent as well.
	renameSamePlace  bool // a rename also renames the device at the same place on the account's other gateways
	messageToFirst   bool // a message to a gateway other than the account's first is stored on the first
	commandElsewhere bool // a command also sets the device of the same type on the account's other gateways
}

// indepLatitudes are the freedoms the preamble of docs/CONTRACT.md gives a
// faithful service, each taken on its own (docs/latitudes.md): a target
// that takes any of them is still faithful, and the harness must pass it.
type indepLatitudes struct {
	rejectReplays bool // 401 replayed_request to a request accepted earlier inside the window (CONTRACT 1)
	lag           bool // each change visible at the observer 20–120 ms after its answer, in the order accepted
	messageCap    int  // keeps only the last N messages of a gateway (0: all)
	connClose     bool // Connection: close after every answer
	http10        bool // an HTTP/1.0 request answered in HTTP/1.0, its body ended by the closing connection
	pretty        bool // JSON and XML answers indented, their members in another order, characters escaped
	ownWording    bool // its own messages and reason phrases
	ownCodes      bool // error codes and fields no text names: 405 bad_method, another field of a command without fields, XML names in JSON errors
	rateLimit     int  // at most this many requests a second, then 429 rate_limited with Retry-After (0: none)
	faultOrder    bool // a bad request's faults checked in another order: authentication first, a type's fields last to first
}

type indepDevice struct {
	sn, typ, name string
	state         map[string]any // numbers as float64, text as string
}

type indepMessage struct {
	Type  string `json:"message_type"`
	Value string `json:"message_value"`
}

type indepGateway struct {
	mac      string
	account  string
	devices  map[string]*indepDevice
	messages []indepMessage
}

// indepTarget is the implementation: its store and what it deviates in.
type indepTarget struct {
	mu       sync.Mutex
	keys     map[string][2]string // api_key -> account, secret
	gateways map[string]*indepGateway
	order    []string // gateway MACs in fleet order
	window   time.Duration
	dev      indepDeviation
	lat      indepLatitudes
	token    string // bearer token of the reads, if any
	// The accepted requests, for refusing replays (CONTRACT 1): their key
	// and when each was accepted.
	accepted map[string]time.Time
	// Changes accepted and not yet visible at the observer, in the order
	// they were accepted (lat.lag).
	pending []indepPending
	// The requests of the current second, for the rate limit.
	rateSecond int64
	rateCount  int
}

// indepPending is a change accepted and visible at the observer from at.
type indepPending struct {
	at    time.Time
	apply func()
}

// indepFleet is the fleet both sides know: gwconform through the YAML
// file, the target through newIndepTarget. Two accounts; the tested
// gateway has one device of each type, a second gateway of the account a
// dimmer, the other account's gateway a relay.
type indepFleetDevice struct{ sn, typ, name, state string }

const (
	indepAccount  = "a1b2c3d4e5f60718293a4b5c"
	indepKey      = "vendor-key-1"
	indepSecret   = "vendor-secret-1"
	indepMAC      = "0a1b2c3d4e5f"
	indepMAC2     = "0a1b2c3d4e60"
	indepAccountB = "b1b2c3d4e5f60718293a4b5c"
	indepKeyB     = "vendor-key-2"
	indepSecretB  = "vendor-secret-2"
	indepMACB     = "1a1b2c3d4e5f"
)

var indepDevices = map[string][]indepFleetDevice{
	indepMAC: {
		{"111111111111111111111111111ab101", "Appliance Module", "Kettle", "io: \"Off\""},
		{"111111111111111111111111111ab102", "Appliance Module Plus", "Heater", "opt: normal, Relay1: \"Off\", Relay2: \"On\""},
		{"111111111111111111111111111ab103", "Relay Module", "Pump", "io: \"On\""},
		{"111111111111111111111111111ab104", "Thermostat", "Living", "mode: Auto, cooling_point: 24, heating_point: 19.5, fan: Auto"},
		{"111111111111111111111111111ab105", "Infrared Sensor", "Porch", "io: \"Off\", code: 2"},
		{"111111111111111111111111111ab106", "Light Dimmer", "Hall", "dimming: 40"},
	},
	indepMAC2: {{"22222222222222222222222222222201", "Light Dimmer", "Attic", "dimming: 10"}},
	indepMACB: {{"33333333333333333333333333333301", "Relay Module", "Barn", "io: \"Off\""}},
}

// indepFleetYAML is the fleet file gwconform reads; secret replaces the
// tested key's secret (a wrong one on purpose), key its name.
func indepFleetYAML(key, secret string) string {
	var b strings.Builder
	b.WriteString("sign: md5\naccounts:\n")
	acct := func(id, key, secret string, macs ...string) {
		fmt.Fprintf(&b, "  - myservice_id: %s\n    api_keys:\n      - {api_key: %s, secret: %s}\n    gateways:\n", id, key, secret)
		for _, mac := range macs {
			fmt.Fprintf(&b, "      - mac: %s\n        devices:\n", mac)
			for _, d := range indepDevices[mac] {
				fmt.Fprintf(&b, "          - {sn: %s, type: %s, name: %s, state: {%s}}\n", d.sn, d.typ, d.name, d.state)
			}
		}
	}
	acct(indepAccount, key, secret, indepMAC, indepMAC2)
	acct(indepAccountB, indepKeyB, indepSecretB, indepMACB)
	return b.String()
}

func newIndepTarget(dev indepDeviation) *indepTarget {
	t := &indepTarget{keys: map[string][2]string{indepKey: {indepAccount, indepSecret}, indepKeyB: {indepAccountB, indepSecretB}},
		gateways: map[string]*indepGateway{}, window: 300 * time.Second, dev: dev, accepted: map[string]time.Time{}}
	for _, g := range []struct{ mac, account string }{{indepMAC, indepAccount}, {indepMAC2, indepAccount}, {indepMACB, indepAccountB}} {
		gw := &indepGateway{mac: g.mac, account: g.account, devices: map[string]*indepDevice{}}
		for _, d := range indepDevices[g.mac] {
			st := map[string]any{}
			for _, kv := range strings.Split(d.state, ",") {
				k, v, _ := strings.Cut(kv, ":")
				v = strings.Trim(strings.TrimSpace(v), `"`)
				if x, err := strconv.ParseFloat(v, 64); err == nil {
					st[strings.TrimSpace(k)] = x
				} else {
					st[strings.TrimSpace(k)] = v
				}
			}
			gw.devices[d.sn] = &indepDevice{sn: d.sn, typ: d.typ, name: d.name, state: st}
		}
		t.gateways[g.mac] = gw
		t.order = append(t.order, g.mac)
	}
	return t
}

// serve starts the interface and, on another port, its reads.
func (t *indepTarget) serve(tb testing.TB) (api, reads string) {
	a := httptest.NewUnstartedServer(http.HandlerFunc(t.api))
	if t.lat.ownWording {
		a.Listener = indepPhrases{a.Listener}
	}
	a.Start()
	r := httptest.NewServer(http.HandlerFunc(t.reads))
	tb.Cleanup(a.Close)
	tb.Cleanup(r.Close)
	return a.URL, r.URL
}

// effect applies an accepted change: at once, or, taking lat.lag, at the
// observer 20–120 ms after the answer and never before a change accepted
// earlier. It is called with t.mu held.
func (t *indepTarget) effect(apply func()) {
	if !t.lat.lag {
		apply()
		return
	}
	at := time.Now().Add(time.Duration(20+rand.Intn(101)) * time.Millisecond)
	if n := len(t.pending); n > 0 && t.pending[n-1].at.After(at) {
		at = t.pending[n-1].at
	}
	t.pending = append(t.pending, indepPending{at, apply})
}

// settle applies the pending changes whose time has come; t.mu held.
func (t *indepTarget) settle() {
	now := time.Now()
	n := 0
	for ; n < len(t.pending) && !t.pending[n].at.After(now); n++ {
		t.pending[n].apply()
	}
	t.pending = t.pending[n:]
}

// store keeps a message on a gateway, only the last lat.messageCap of them
// when it is set; t.mu held.
func (t *indepTarget) store(g *indepGateway, m indepMessage) {
	g.messages = append(g.messages, m)
	if c := t.lat.messageCap; c > 0 && len(g.messages) > c {
		g.messages = append([]indepMessage(nil), g.messages[len(g.messages)-c:]...)
	}
}

// ---- the reads of CONTRACT 7 ----

func (t *indepTarget) reads(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if t.token != "" && r.Header.Get("Authorization") != "Bearer "+t.token {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"status":"error","error":{"code":"unauthorized","message":"a bearer token is needed"}}`)
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	t.mu.Lock()
	defer t.mu.Unlock()
	t.settle()
	if r.Method == http.MethodGet && len(parts) >= 3 && parts[0] == "_sim" && parts[1] == "gateways" {
		if g, ok := t.gateways[strings.ToLower(parts[2])]; ok {
			switch {
			case len(parts) == 5 && parts[3] == "devices":
				if d, ok := g.devices[strings.ToLower(parts[4])]; ok {
					json.NewEncoder(w).Encode(map[string]any{"sn": d.sn, "type": d.typ, "name": d.name, "state": d.state})
					return
				}
			case len(parts) == 4 && parts[3] == "messages":
				msgs := append([]indepMessage{}, g.messages...)
				json.NewEncoder(w).Encode(msgs)
				return
			}
		}
	}
	w.WriteHeader(http.StatusNotFound)
	io.WriteString(w, `{"status":"error","error":{"code":"not_found","message":"no such thing"}}`)
}

// ---- the interface ----

// indepReason is the target's own reason phrase of each status it answers
// (lat.ownWording): RFC 9112 lets a server write any, and a client ignore it.
var indepReason = map[int]string{200: "Done", 400: "Not Understood", 401: "Who Are You", 403: "Not Yours",
	404: "Nothing Here", 405: "Only POST Here", 409: "Another Type", 413: "Too Much",
	415: "Unknown Media", 429: "Slow Down"}

// indepPhrases gives each connection's answers the target's own reason
// phrases: net/http writes each answer's status line at the start of a
// write of its own.
type indepPhrases struct{ net.Listener }

func (l indepPhrases) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return indepPhraseConn{c}, nil
}

type indepPhraseConn struct{ net.Conn }

func (c indepPhraseConn) Write(b []byte) (int, error) {
	eol := bytes.Index(b, []byte("\r\n"))
	if !bytes.HasPrefix(b, []byte("HTTP/1.")) || eol < 12 {
		return c.Conn.Write(b)
	}
	code, _ := strconv.Atoi(string(b[9:12]))
	phrase, ok := indepReason[code]
	if !ok {
		return c.Conn.Write(b)
	}
	out := append(append(append([]byte(nil), b[:13]...), phrase...), b[eol:]...)
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// api answers the interface, taking the latitudes that change how an
// answer is sent: Connection: close, and an HTTP/1.0 request answered in
// HTTP/1.0 with the body ended by closing the connection.
func (t *indepTarget) api(w http.ResponseWriter, r *http.Request) {
	if t.lat.connClose {
		w.Header().Set("Connection", "close")
	}
	if !t.lat.http10 || r.ProtoAtLeast(1, 1) {
		t.answer(w, r)
		return
	}
	rec := httptest.NewRecorder()
	t.answer(rec, r)
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	phrase := http.StatusText(rec.Code)
	if p, ok := indepReason[rec.Code]; ok && t.lat.ownWording {
		phrase = p
	}
	fmt.Fprintf(buf, "HTTP/1.0 %d %s\r\n", rec.Code, phrase)
	rec.Header().Del("Content-Length")
	rec.Header().Set("Connection", "close")
	rec.Header().Write(buf)
	buf.WriteString("\r\n")
	buf.Write(rec.Body.Bytes())
	buf.Flush()
}

type indepErr struct {
	status      int
	code, field string
	msg         string
}

var (
	indepPaths = map[string]string{"/v1/services/gateway/command": "command", "/v1/services/gateway/message": "message", "/v1/services/device/update_name": "update_name"}
	hexOf      = func(n int) *regexp.Regexp { return regexp.MustCompile(fmt.Sprintf(`^[0-9A-Fa-f]{%d}$`, n)) }
	indepHex   = map[string]*regexp.Regexp{"myservice_id": hexOf(24), "mac": hexOf(12), "sign": hexOf(32), "sn": hexOf(32), "device_id": hexOf(32)}
	indepValue = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*=[+-]?([0-9]+(\.[0-9]+)?|\.[0-9]+)$`)
	indepDec   = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$`)
	indepInt   = regexp.MustCompile(`^[+-]?[0-9]+$`)
)

func (t *indepTarget) answer(w http.ResponseWriter, r *http.Request) {
	// The format, where the Content-Type tells it: errors come in it.
	format := ""
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil {
		switch mt {
		case "application/json":
			format = "json"
		case "application/xml", "text/xml":
			format = "xml"
		}
	}
	fail := func(e indepErr) { t.write(w, format, e) }
	if t.lat.rateLimit > 0 {
		t.mu.Lock()
		if now := time.Now().Unix(); now != t.rateSecond {
			t.rateSecond, t.rateCount = now, 0
		}
		t.rateCount++
		over := t.rateCount > t.lat.rateLimit
		t.mu.Unlock()
		if over {
			io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10))
			w.Header().Set("Retry-After", "1")
			fail(indepErr{429, "rate_limited", "", "too many requests in this second"})
			return
		}
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		if t.lat.ownCodes {
			fail(indepErr{405, "bad_method", "method", "only POST"})
		} else {
			fail(indepErr{405, "method_not_allowed", "", "only POST"})
		}
		return
	}
	// The path as sent: an encoded slash is not a separator.
	op, ok := indepPaths[r.URL.EscapedPath()]
	if !ok {
		fail(indepErr{404, "not_found", "", "no such operation"})
		return
	}
	if format == "" {
		fail(indepErr{415, "unsupported_media_type", "", "Content-Type must be application/json or application/xml"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10+1))
	if err != nil {
		fail(indepErr{400, "malformed_body", "", "cannot read the body"})
		return
	}
	if len(body) > 64<<10 {
		fail(indepErr{413, "body_too_large", "", "the body is over 64 KiB"})
		return
	}
	var fields []indepKV
	var perr *indepErr
	if format == "json" {
		fields, perr = indepParseJSON(body)
	} else {
		fields, perr = indepParseXML(body)
	}
	if perr != nil {
		fail(*perr)
		return
	}
	if e := t.handle(op, format, fields); e != nil {
		fail(*e)
		return
	}
	t.write(w, format, indepErr{status: 200})
}

type indepKV struct{ key, value string }

func indepParseJSON(b []byte) ([]indepKV, *indepErr) {
	malformed := &indepErr{400, "malformed_body", "", "the body is not one JSON object with the single member control"}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, malformed
	}
	var fields []indepKV
	seenControl := false
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, malformed
		}
		if k != "control" {
			return nil, &indepErr{400, "unexpected_field", fmt.Sprint(k), "only control may be in the body"}
		}
		if seenControl {
			return nil, malformed
		}
		seenControl = true
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return nil, malformed
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, malformed
			}
			key := kt.(string)
			vt, err := dec.Token()
			if err != nil {
				return nil, malformed
			}
			var v string
			switch x := vt.(type) {
			case string:
				v = x
			case json.Number:
				// CONTRACT 2: a number only where the field is numeric.
				if !indepNumeric[key] {
					return nil, &indepErr{400, "invalid_field", key, key + " must be a string"}
				}
				// Any JSON number syntax; its value decides (21.0, 2.1e1).
				n, err := x.Float64()
				if err != nil {
					return nil, &indepErr{400, "invalid_field", key, key + " is out of range"}
				}
				v = strconv.FormatFloat(n, 'f', -1, 64)
			default:
				return nil, &indepErr{400, "invalid_field", key, key + " must be a string or a number"}
			}
			if seen[key] {
				return nil, malformed
			}
			seen[key] = true
			fields = append(fields, indepKV{key, v})
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
			return nil, malformed
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, malformed
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, malformed
	}
	if !seenControl {
		return nil, &indepErr{400, "missing_field", "control", "the body has no control"}
	}
	return fields, nil
}

func indepParseXML(b []byte) ([]indepKV, *indepErr) {
	malformed := &indepErr{400, "malformed_body", "", "the body is not <xml><control>…</control></xml>"}
	dec := xml.NewDecoder(bytes.NewReader(b))
	depth, roots, controls := 0, 0, 0
	var fields []indepKV
	var cur *indepKV
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, malformed
		}
		switch x := tok.(type) {
		case xml.Directive:
			return nil, malformed
		case xml.StartElement:
			depth++
			switch depth {
			case 1:
				roots++
				if roots > 1 || x.Name.Local != "xml" {
					return nil, malformed
				}
			case 2:
				if x.Name.Local != "control" {
					return nil, &indepErr{400, "unexpected_field", x.Name.Local, "only control may be in xml"}
				}
				controls++
				if controls > 1 {
					return nil, malformed
				}
			case 3:
				fields = append(fields, indepKV{key: x.Name.Local})
				cur = &fields[len(fields)-1]
			default:
				return nil, malformed
			}
		case xml.EndElement:
			depth--
			cur = nil
		case xml.CharData:
			if depth == 3 && cur != nil {
				cur.value += string(x)
			} else if strings.TrimSpace(string(x)) != "" {
				return nil, malformed
			}
		}
	}
	if roots != 1 {
		return nil, malformed
	}
	if controls == 0 {
		return nil, &indepErr{400, "missing_field", "control", "the body has no control"}
	}
	seen := map[string]bool{}
	for _, f := range fields {
		if seen[f.key] {
			return nil, malformed
		}
		seen[f.key] = true
	}
	return fields, nil
}

// handle checks a request's fields and applies it.
func (t *indepTarget) handle(op, format string, kvs []indepKV) (refused *indepErr) {
	// The fields by their XML name; the JSON keys with a space are the
	// published ones, their XML form is not a JSON key.
	f := map[string]string{}
	for _, kv := range kvs {
		key := kv.key
		if format == "json" {
			if j, ok := indepToJSON[key]; ok {
				return &indepErr{400, "unexpected_field", key, key + " is written " + j + " in JSON"}
			}
			key = indepXMLName(key)
		} else if strings.Contains(key, " ") {
			return &indepErr{400, "unexpected_field", key, "unknown field"}
		}
		f[key] = kv.value
	}
	wire := func(name string) string {
		if format == "json" && !t.lat.ownCodes {
			if j, ok := indepToJSON[name]; ok {
				return j
			}
		}
		return name
	}
	bad := func(name, msg string) *indepErr { return &indepErr{400, "invalid_field", wire(name), msg} }
	// The envelope's fields, and which fields the operation takes: taking
	// lat.faultOrder, the second is checked first.
	envelope := func() *indepErr {
		if v, ok := f["format"]; ok && v != format {
			return bad("format", "format must be "+format)
		}
		for _, n := range []string{"api_key", "timestamp", "sign", "myservice_id", "mac"} {
			if _, ok := f[n]; !ok {
				return &indepErr{400, "missing_field", n, n + " is required"}
			}
		}
		for _, n := range []string{"myservice_id", "mac", "sign"} {
			if !indepHex[n].MatchString(f[n]) {
				return bad(n, n+" must be hexadecimal of the published length")
			}
		}
		ts := f["timestamp"]
		if _, err := time.ParseInLocation("20060102150405", ts, time.UTC); len(ts) != 14 || err != nil {
			return bad("timestamp", "timestamp must be YYYYMMDDHHMMSS")
		}
		return nil
	}
	// Which fields each operation takes.
	allowed := map[string]bool{"api_key": true, "timestamp": true, "sign": true, "myservice_id": true, "mac": true, "format": true}
	switch op {
	case "command":
		for _, n := range []string{"sn", "device_id", "type"} {
			allowed[n] = true
		}
		for _, fs := range indepTypes {
			for _, fd := range fs {
				allowed[fd.name] = true
			}
		}
	case "message":
		allowed["message_type"], allowed["message_value"] = true, true
	case "update_name":
		allowed["sn"], allowed["name"] = true, true
	}
	fieldsOf := func() *indepErr {
		for _, kv := range kvs {
			name := kv.key
			if format == "json" {
				name = indepXMLName(name)
			}
			if !allowed[name] {
				return &indepErr{400, "unexpected_field", kv.key, kv.key + " is not a field of " + op}
			}
		}
		return nil
	}
	checks := []func() *indepErr{envelope, fieldsOf}
	if t.lat.faultOrder {
		checks[0], checks[1] = fieldsOf, envelope
	}
	for _, check := range checks {
		if e := check(); e != nil {
			return e
		}
	}
	ts := f["timestamp"]
	when, _ := time.ParseInLocation("20060102150405", ts, time.UTC)
	// Authentication (CONTRACT 1).
	key, ok := t.keys[f["api_key"]]
	if !ok {
		return &indepErr{401, "unknown_api_key", "api_key", "the api_key is not registered"}
	}
	if d := time.Since(when); t.window > 0 && (d > t.window || d < -t.window) {
		return &indepErr{401, "stale_timestamp", "timestamp", "the timestamp is outside the window"}
	}
	sum := md5.Sum([]byte(f["api_key"] + key[1] + ts))
	if !strings.EqualFold(hex.EncodeToString(sum[:]), f["sign"]) {
		return &indepErr{401, "bad_signature", "sign", "the sign does not match"}
	}
	if !strings.EqualFold(key[0], f["myservice_id"]) {
		return &indepErr{403, "account_mismatch", "myservice_id", "the api_key belongs to another account"}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lat.rejectReplays {
		// CONTRACT 1: the operation and fields (in either format: by their
		// XML names, hexadecimal in lower case), timestamp and sign of a
		// request accepted earlier inside the window.
		parts := make([]string, 0, len(f))
		for k, v := range f {
			if indepHex[k] != nil {
				v = strings.ToLower(v)
			}
			parts = append(parts, k+"="+v)
		}
		sort.Strings(parts)
		key := op + "\x00" + strings.Join(parts, "\x00")
		if at, ok := t.accepted[key]; ok && time.Since(at) <= t.window {
			return &indepErr{401, "replayed_request", "", "this request was accepted before"}
		}
		defer func() {
			if refused == nil {
				t.accepted[key] = time.Now()
			}
		}()
	}
	switch op {
	case "message":
		mtype, ok := f["message_type"]
		if !ok {
			return &indepErr{400, "missing_field", "message_type", "message_type is required"}
		}
		mval, ok := f["message_value"]
		if !ok {
			return &indepErr{400, "missing_field", "message_value", "message_value is required"}
		}
		if mtype == "" || strings.IndexFunc(mtype, unicode.IsSpace) >= 0 {
			return bad("message_type", "message_type must be a token")
		}
		if !indepValue.MatchString(mval) {
			return bad("message_value", "message_value must be <setting_name>=<number>")
		}
		g, gerr := t.gateway(f)
		if gerr != nil {
			return gerr
		}
		if t.dev.noChange {
			return nil
		}
		if t.dev.messageToFirst {
			for _, mac := range t.order {
				if o := t.gateways[mac]; o.account == g.account {
					g = o
					break
				}
			}
		}
		if t.dev.messageElsewhere {
			for _, mac := range t.order {
				if o := t.gateways[mac]; o != g && o.account == g.account {
					g = o
					break
				}
			}
		}
		t.effect(func() { t.store(g, indepMessage{mtype, mval}) })
		return nil
	case "update_name":
		sn, ok := f["sn"]
		if !ok {
			return &indepErr{400, "missing_field", "sn", "sn is required"}
		}
		if !indepHex["sn"].MatchString(sn) {
			return bad("sn", "sn must be 32 hexadecimal characters")
		}
		name, ok := f["name"]
		if !ok {
			return &indepErr{400, "missing_field", "name", "name is required"}
		}
		name = strings.TrimSpace(name)
		if n := utf8.RuneCountInString(name); n < 1 || n > 64 || strings.IndexFunc(name, unicode.IsControl) >= 0 {
			return bad("name", "name must be 1 to 64 characters without control characters")
		}
		g, gerr := t.gateway(f)
		if gerr != nil {
			return gerr
		}
		d, ok := g.devices[strings.ToLower(sn)]
		if !ok {
			return &indepErr{404, "device_not_found", "sn", "no such device on the gateway"}
		}
		if !t.dev.noChange && !t.dev.renameKeepsOld {
			t.effect(func() { d.name = name })
		}
		if t.dev.renameSamePlace {
			at := -1
			for i, fd := range indepDevices[g.mac] {
				if fd.sn == d.sn {
					at = i
				}
			}
			for _, o := range t.gateways {
				if o != g && o.account == g.account && at >= 0 && at < len(indepDevices[o.mac]) {
					o.devices[indepDevices[o.mac][at].sn].name = name
				}
			}
		}
		return nil
	}
	// send command
	sn, hasSN := f["sn"]
	if id, ok := f["device_id"]; ok {
		if !indepHex["device_id"].MatchString(id) {
			return bad("device_id", "device_id must be 32 hexadecimal characters")
		}
		if hasSN && !strings.EqualFold(id, sn) {
			if t.lat.ownCodes {
				return &indepErr{400, "conflicting_fields", "sn", "device_id and sn name different devices"}
			}
			return bad("device_id", "device_id and sn name different devices")
		}
		sn, hasSN = id, true
	}
	if !hasSN {
		return &indepErr{400, "missing_field", "sn", "sn is required"}
	}
	if !indepHex["sn"].MatchString(sn) {
		return bad("sn", "sn must be 32 hexadecimal characters")
	}
	typ, ok := f["type"]
	if !ok {
		return &indepErr{400, "missing_field", "type", "type is required"}
	}
	fields, ok := indepTypes[typ]
	if !ok {
		return bad("type", "unknown device type")
	}
	own := map[string]bool{}
	for _, fd := range fields {
		own[fd.name] = true
	}
	for _, kv := range kvs {
		name := kv.key
		if format == "json" {
			name = indepXMLName(name)
		}
		if !allowed[name] || (!own[name] && !map[string]bool{"api_key": true, "timestamp": true, "sign": true, "myservice_id": true, "mac": true, "format": true, "sn": true, "device_id": true, "type": true}[name]) {
			return &indepErr{400, "unexpected_field", kv.key, kv.key + " is not a field of a " + typ}
		}
	}
	g, gerr := t.gateway(f)
	if gerr != nil {
		return gerr
	}
	d, ok := g.devices[strings.ToLower(sn)]
	if !ok {
		return &indepErr{404, "device_not_found", "sn", "no such device on the gateway"}
	}
	if d.typ != typ {
		return &indepErr{409, "type_mismatch", "type", "the device is a " + d.typ}
	}
	next := map[string]any{}
	for k, v := range d.state {
		next[k] = v
	}
	carried := false
	var invalid *indepErr
	changes := map[string]any{}
	order := fields
	if t.lat.faultOrder {
		order = make([]indepField, len(fields))
		for i, fd := range fields {
			order[len(fields)-1-i] = fd
		}
	}
	for _, fd := range order {
		raw, ok := f[fd.name]
		if !ok {
			continue
		}
		carried = true
		v, ok := indepValueOf(fd, raw, t.dev.storeAsSent)
		if !ok {
			if invalid == nil {
				invalid = bad(fd.name, fd.name+" is not one of its values")
			}
			continue
		}
		next[fd.name] = v
		changes[fd.name] = v
	}
	if invalid != nil {
		if t.dev.refusedAppliesOthers {
			d.state = next
		}
		return invalid
	}
	if !carried {
		field := wire(fields[0].name)
		if t.lat.ownCodes {
			// CONTRACT 3 names no field here: the type's last one.
			field = fields[len(fields)-1].name
		}
		return &indepErr{400, "missing_field", field, "a command carries at least one field of its type"}
	}
	if !t.dev.noChange {
		t.effect(func() {
			for k, v := range changes {
				d.state[k] = v
			}
		})
	}
	if t.dev.commandElsewhere {
		for _, o := range t.gateways {
			if o == g || o.account != g.account {
				continue
			}
			for _, od := range o.devices {
				if od.typ == d.typ {
					od.state = map[string]any{}
					for k, v := range next {
						od.state[k] = v
					}
				}
			}
		}
	}
	return nil
}

// gateway is the request's gateway, of the request's account.
func (t *indepTarget) gateway(f map[string]string) (*indepGateway, *indepErr) {
	g, ok := t.gateways[strings.ToLower(f["mac"])]
	if !ok || !strings.EqualFold(g.account, f["myservice_id"]) {
		return nil, &indepErr{404, "gateway_not_found", "mac", "the account has no such gateway"}
	}
	return g, nil
}

// indepValueOf reads a value of a field as the table allows it.
func indepValueOf(fd indepField, raw string, asSent bool) (any, bool) {
	v := raw // the texts let only a name be trimmed
	switch fd.kind {
	case "enum":
		for _, a := range fd.values {
			if strings.EqualFold(a, v) {
				if asSent {
					return v, true
				}
				return a, true
			}
		}
		return nil, false
	case "int":
		if !indepInt.MatchString(v) {
			return nil, false
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n < fd.min || n > fd.max {
			return nil, false
		}
		return n, true
	case "dec":
		if !indepDec.MatchString(v) {
			return nil, false
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(n) || n < fd.min || n > fd.max {
			return nil, false
		}
		if n == 0 {
			n = 0 // -0 is stored as 0
		}
		return n, true
	}
	if v == "" || utf8.RuneCountInString(v) > int(fd.max) {
		return nil, false
	}
	return v, true
}

// write answers in the request's format (JSON where it is unknown), in
// the target's own layout, order and escapes when it takes lat.pretty, and
// its own words when it takes lat.ownWording.
func (t *indepTarget) write(w http.ResponseWriter, format string, e indepErr) {
	if t.lat.ownWording && e.status != 200 {
		e.msg = "Anfrage abgelehnt (" + e.code + ")"
	}
	if !t.lat.pretty {
		indepWrite(w, format, e)
		return
	}
	if format == "xml" {
		w.Header().Set("Content-Type", "application/xml; charset=utf-8")
		w.WriteHeader(e.status)
		var b strings.Builder
		b.WriteString("<?xml version='1.0' encoding='UTF-8'?>\n<!-- the gateway service -->\n<xml>\n")
		if e.status != 200 {
			b.WriteString("  <error>\n    <message><![CDATA[" + strings.ReplaceAll(e.msg, "]]>", "]]]]><![CDATA[>") + "]]></message>\n")
			b.WriteString("    <field>" + indepXMLRefs(e.field) + "</field>\n    <code>" + indepXMLRefs(e.code) + "</code>\n  </error>\n")
			b.WriteString("  <status>" + indepXMLRefs("error") + "</status>\n</xml>\n")
		} else {
			b.WriteString("  <status >" + indepXMLRefs("success") + "</status >\n</xml>\n")
		}
		io.WriteString(w, b.String())
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(e.status)
	if e.status == 200 {
		io.WriteString(w, "{\n    "+indepJSONEsc("status")+" : "+indepJSONEsc("success")+"\n}\n")
		return
	}
	io.WriteString(w, "{\n    "+indepJSONEsc("error")+": {\n        "+indepJSONEsc("message")+": "+indepJSONEsc(e.msg)+
		",\n        "+indepJSONEsc("field")+": "+indepJSONEsc(e.field)+",\n        "+indepJSONEsc("code")+": "+indepJSONEsc(e.code)+
		"\n    },\n    "+indepJSONEsc("status")+": "+indepJSONEsc("error")+"\n}\n")
}

// indepJSONEsc writes a JSON string with its first character and every one
// that is not a letter or digit as a \u escape, "/" as "\/".
func indepJSONEsc(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range v {
		switch {
		case r == '/':
			b.WriteString(`\/`)
		case i == 0 || r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r)):
			if r > 0xFFFF {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(&b, `\u%04X`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// indepXMLRefs writes XML text with its first character and every one that
// is not a letter or digit as a character reference.
func indepXMLRefs(v string) string {
	var b strings.Builder
	for i, r := range v {
		if i == 0 || r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r)) {
			fmt.Fprintf(&b, "&#%d;", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// indepWrite answers in the request's format (JSON where it is unknown).
func indepWrite(w http.ResponseWriter, format string, e indepErr) {
	if format == "xml" {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(e.status)
		if e.status == 200 {
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><xml><status>success</status></xml>`)
			return
		}
		var b bytes.Buffer
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><xml><status>error</status><error><code>`)
		xml.EscapeText(&b, []byte(e.code))
		b.WriteString("</code><field>")
		xml.EscapeText(&b, []byte(e.field))
		b.WriteString("</field><message>")
		xml.EscapeText(&b, []byte(e.msg))
		b.WriteString("</message></error></xml>")
		w.Write(b.Bytes())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	if e.status == 200 {
		io.WriteString(w, `{"status":"success"}`)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"status": "error", "error": map[string]string{"code": e.code, "field": e.field, "message": e.msg}})
}
