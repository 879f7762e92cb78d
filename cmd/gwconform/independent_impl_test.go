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
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
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
	token    string // bearer token of the reads, if any
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
		gateways: map[string]*indepGateway{}, window: 300 * time.Second, dev: dev}
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
	a := httptest.NewServer(http.HandlerFunc(t.api))
	r := httptest.NewServer(http.HandlerFunc(t.reads))
	tb.Cleanup(a.Close)
	tb.Cleanup(r.Close)
	return a.URL, r.URL
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

func (t *indepTarget) api(w http.ResponseWriter, r *http.Request) {
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
	fail := func(e indepErr) { indepWrite(w, format, e) }
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		fail(indepErr{405, "method_not_allowed", "", "only POST"})
		return
	}
	op, ok := indepPaths[r.URL.Path]
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
	indepWrite(w, format, indepErr{status: 200})
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
				v = x.String()
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
func (t *indepTarget) handle(op, format string, kvs []indepKV) *indepErr {
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
		if format == "json" {
			if j, ok := indepToJSON[name]; ok {
				return j
			}
		}
		return name
	}
	bad := func(name, msg string) *indepErr { return &indepErr{400, "invalid_field", wire(name), msg} }
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
	when, err := time.ParseInLocation("20060102150405", ts, time.UTC)
	if len(ts) != 14 || err != nil {
		return bad("timestamp", "timestamp must be YYYYMMDDHHMMSS")
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
	for _, kv := range kvs {
		name := kv.key
		if format == "json" {
			name = indepXMLName(name)
		}
		if !allowed[name] {
			return &indepErr{400, "unexpected_field", kv.key, kv.key + " is not a field of " + op}
		}
	}
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
		g.messages = append(g.messages, indepMessage{mtype, mval})
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
			d.name = name
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
	for _, fd := range fields {
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
	}
	if invalid != nil {
		if t.dev.refusedAppliesOthers {
			d.state = next
		}
		return invalid
	}
	if !carried {
		return &indepErr{400, "missing_field", wire(fields[0].name), "a command carries at least one field of its type"}
	}
	if !t.dev.noChange {
		d.state = next
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
