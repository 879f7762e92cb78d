package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gwdmi/gwtools/conformance/rules"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// The mutation score of the harness: every deviation of
// conformance/rules/deviations.yaml is implemented here, and only here, as
// a wrapper around a fresh simulator; the full suite runs against each and
// must detect it at its rule's level. docs/checks.md states the score.

// req is one request a deviation looks at.
type req struct {
	r    *http.Request
	body string
	xml  bool
}

// field is a control field's value as sent, in either format.
func (q req) field(name string) (string, bool) {
	var re *regexp.Regexp
	if q.xml {
		xmlName := strings.ReplaceAll(name, " ", "_")
		re = regexp.MustCompile(`<` + regexp.QuoteMeta(xmlName) + `>([^<]*)</` + regexp.QuoteMeta(xmlName) + `>`)
	} else {
		re = regexp.MustCompile(`"` + regexp.QuoteMeta(name) + `":\s*"?([^",}]*)"?`)
	}
	m := re.FindStringSubmatch(q.body)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func (q req) is(name, value string) bool { v, ok := q.field(name); return ok && v == value }

func (q req) op(path string) bool { return q.r.URL.Path == path }

// point is a thermostat point as sent, in either format.
func (q req) point() []string {
	var out []string
	for _, n := range []string{"cooling point", "heating point"} {
		if v, ok := q.field(n); ok {
			out = append(out, v)
		}
	}
	return out
}

func answerSuccess(w http.ResponseWriter, q req) {
	if q.xml {
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><xml><status>success</status></xml>`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"status":"success"}`)
}

func answerError(w http.ResponseWriter, q req, status int, code, field string) {
	if q.xml {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><xml><status>error</status><error><code>%s</code><field>%s</field><message>refused</message></error></xml>`, code, field)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"status":"error","error":{"code":%q,"field":%q,"message":"refused"}}`, code, field)
}

// A deviation either answers a request itself (before: returns true), or
// rewrites the request body it forwards (rewrite), or the simulator's
// answer (after).
type deviation struct {
	before  func(w http.ResponseWriter, q req) bool
	rewrite func(q req) string
	after   func(q req, rec *httptest.ResponseRecorder)
	// method, where set, is the method the request is forwarded with.
	method func(q req) string
	// wire, when set, puts a transport double of its own in front of the
	// simulator instead (wiredouble_test.go): a bug of HTTP's own rules.
	wire wireBug
	// also, where it gives a body, sends that body to the same path
	// first, its answer discarded: a change made besides the one asked.
	also func(q req) (string, bool)
}

// accepts answers success where cond holds.
func accepts(cond func(q req) bool) deviation {
	return deviation{before: func(w http.ResponseWriter, q req) bool {
		if cond(q) {
			answerSuccess(w, q)
			return true
		}
		return false
	}}
}

// refuses answers 400 invalid_field where cond holds.
func refuses(field string, cond func(q req) bool) deviation {
	return deviation{before: func(w http.ResponseWriter, q req) bool {
		if cond(q) {
			answerError(w, q, 400, "invalid_field", field)
			return true
		}
		return false
	}}
}

const (
	demoAccount = "5f3a9c0e1b2d4f6a8c0e1b2d"
	demoMAC     = "a4c138f0e2b1"
	otherMAC    = "b5d249a1f3c2"
	// secondGatewaySN is the device on the demo account's second gateway.
	secondGatewaySN = "0123456789abcdef0123456789abcd07"
	otherSN         = "fedcba9876543210fedcba9876543210"
	messagePath     = "/v1/services/gateway/message"
	commandPath     = "/v1/services/gateway/command"
	renamePath      = "/v1/services/device/update_name"
	wrongSign       = "0123456789abcdef0123456789abcdef"
	canonicalEnu    = "On Off Auto Cool Heat"
)

func isEnum(v string) bool {
	for _, e := range strings.Fields(canonicalEnu) {
		if strings.EqualFold(v, e) {
			return true
		}
	}
	return false
}

func anyEnum(q req, pick func(v string) bool) bool {
	for _, n := range []string{"io", "Relay1", "Relay2", "mode", "fan"} {
		if v, ok := q.field(n); ok && isEnum(v) && pick(v) {
			return true
		}
	}
	return false
}

var deviations = map[string]deviation{
	"accepts-dimming-101":      accepts(func(q req) bool { return q.is("dimming", "101") }),
	"accepts-dimming-0":        accepts(func(q req) bool { return q.is("dimming", "0") }),
	"accepts-dimming-negative": accepts(func(q req) bool { v, _ := q.field("dimming"); return strings.HasPrefix(v, "-") }),
	"accepts-dimming-fraction": accepts(func(q req) bool { v, _ := q.field("dimming"); return strings.Contains(v, ".") }),
	"accepts-code-5":           accepts(func(q req) bool { return q.is("code", "5") }),
	"accepts-mode-other":       accepts(func(q req) bool { v, ok := q.field("mode"); return ok && v != "" && !isEnum(v) }),
	"accepts-fan-other":        accepts(func(q req) bool { v, ok := q.field("fan"); return ok && v != "" && !isEnum(v) }),
	"accepts-io-other":         accepts(func(q req) bool { v, ok := q.field("io"); return ok && v != "" && !isEnum(v) }),
	"accepts-unknown-type":     accepts(func(q req) bool { return q.is("type", "Toaster") }),
	"accepts-wrong-sign":       accepts(func(q req) bool { return q.is("sign", wrongSign) }),
	"accepts-unknown-key":      accepts(func(q req) bool { v, _ := q.field("api_key"); return strings.HasPrefix(v, "unknown-") }),
	"accepts-key-for-other-account": accepts(func(q req) bool {
		v, ok := q.field("myservice_id")
		return q.is("api_key", "demo-key") && ok && len(v) == 24 && !strings.EqualFold(v, demoAccount)
	}),
	"accepts-other-key-for-this-account": accepts(func(q req) bool {
		return q.is("api_key", "other-key") && q.is("myservice_id", demoAccount)
	}),
	"accepts-device-through-other-gateway": accepts(func(q req) bool {
		return q.is("mac", demoMAC) && (q.is("sn", otherSN) || q.is("sn", secondGatewaySN))
	}),
	"applies-command-to-other-accounts-device": {also: appliesToOtherAccountsDevice},
	"applies-relay2-alone-to-relay1":           {rewrite: relay2AsRelay1},
	"accepts-key-on-other-gateway":             accepts(func(q req) bool { return q.is("api_key", "demo-key") && q.is("mac", otherMAC) }),
	"accepts-timestamp-13-digits":              accepts(func(q req) bool { v, _ := q.field("timestamp"); return len(v) == 13 }),
	"accepts-mac-not-hex":                      accepts(func(q req) bool { v, _ := q.field("mac"); return strings.HasSuffix(v, "g") }),
	"accepts-sn-short":                         accepts(func(q req) bool { v, ok := q.field("sn"); return ok && len(v) == 31 }),
	"accepts-json-extra-member":                accepts(func(q req) bool { return !q.xml && strings.Contains(q.body, `,"extra":{}}`) }),
	"accepts-xml-extra-child":                  accepts(func(q req) bool { return q.xml && strings.Contains(q.body, "</control><extra>") }),
	"accepts-get":                              accepts(func(q req) bool { return q.r.Method == http.MethodGet && strings.HasPrefix(q.r.URL.Path, "/v1/") }),
	"accepts-text-plain":                       accepts(func(q req) bool { return strings.HasPrefix(q.r.Header.Get("Content-Type"), "text/plain") }),
	"accepts-v2-path":                          accepts(func(q req) bool { return strings.HasPrefix(q.r.URL.Path, "/v2/") }),
	"accepts-message-value-without-equals": accepts(func(q req) bool {
		v, ok := q.field("message_value")
		return q.op(messagePath) && ok && v != "" && !strings.Contains(v, "=")
	}),
	"accepts-rename-without-name": accepts(func(q req) bool { _, ok := q.field("name"); return q.op(renamePath) && !ok }),
	"refuses-dimming-100":         refuses("dimming", func(q req) bool { return q.is("dimming", "100") }),
	"refuses-dimming-1":           refuses("dimming", func(q req) bool { return q.is("dimming", "1") }),
	"refuses-code-4":              refuses("code", func(q req) bool { return q.is("code", "4") }),
	"refuses-negative-point": refuses("cooling_point", func(q req) bool {
		for _, v := range q.point() {
			if strings.HasPrefix(v, "-") {
				return true
			}
		}
		return false
	}),
	"refuses-zero-point": refuses("cooling_point", func(q req) bool {
		for _, v := range q.point() {
			if v == "0" {
				return true
			}
		}
		return false
	}),
	"refuses-mode-heat":    refuses("mode", func(q req) bool { return q.is("mode", "Heat") }),
	"refuses-fan-on":       refuses("fan", func(q req) bool { return q.is("fan", "On") }),
	"refuses-relay2-on":    refuses("Relay2", func(q req) bool { return q.is("Relay2", "On") }),
	"refuses-xml-messages": refuses("message_value", func(q req) bool { return q.xml && q.op(messagePath) }),
	"refuses-other-account-own-key": deviation{before: func(w http.ResponseWriter, q req) bool {
		if q.is("api_key", "other-key") && q.is("mac", otherMAC) {
			answerError(w, q, 401, "unknown_api_key", "api_key")
			return true
		}
		return false
	}},
	"refuses-enum-lower-case": refuses("mode", func(q req) bool {
		return anyEnum(q, func(v string) bool { return v == strings.ToLower(v) })
	}),
	"refuses-enum-upper-case": refuses("mode", func(q req) bool {
		return anyEnum(q, func(v string) bool { return v == strings.ToUpper(v) })
	}),
	"refuses-hex-upper-case": refuses("mac", func(q req) bool { v, _ := q.field("mac"); return v != strings.ToLower(v) }),
	"refuses-point-edges": refuses("cooling_point", func(q req) bool {
		for _, v := range q.point() {
			if v == "-50" || v == "100" {
				return true
			}
		}
		return false
	}),
	"refuses-json-numbers": refuses("dimming", func(q req) bool {
		return !q.xml && regexp.MustCompile(`"(dimming|code|cooling point|heating point)":\s*[-0-9]`).MatchString(q.body)
	}),
	"refuses-charset": deviation{before: func(w http.ResponseWriter, q req) bool {
		if strings.Contains(q.r.Header.Get("Content-Type"), "charset") {
			answerError(w, req{r: q.r, body: q.body}, 415, "unsupported_media_type", "")
			return true
		}
		return false
	}},
	"refuses-future-inside-window": deviation{before: func(w http.ResponseWriter, q req) bool {
		v, _ := q.field("timestamp")
		t, err := time.Parse("20060102150405", v)
		if err == nil && t.After(time.Now().UTC().Add(30*time.Second)) {
			answerError(w, q, 401, "stale_timestamp", "timestamp")
			return true
		}
		return false
	}},
	"accepts-future-timestamp": accepts(func(q req) bool {
		v, _ := q.field("timestamp")
		t, err := time.Parse("20060102150405", v)
		return err == nil && t.After(time.Now().UTC().Add(time.Hour))
	}),
	"accepts-point-101": accepts(func(q req) bool {
		for _, v := range q.point() {
			if f, err := strconv.ParseFloat(v, 64); err == nil && f > 100 && f <= 101 {
				return true
			}
		}
		return false
	}),
	"accepts-long-name": accepts(func(q req) bool { v, _ := q.field("name"); return len(v) == 65 }),
	"accepts-long-opt":  accepts(func(q req) bool { v, _ := q.field("opt"); return len(v) == 33 }),
	"answers-status-ok": {after: func(q req, rec *httptest.ResponseRecorder) {
		b := strings.Replace(rec.Body.String(), "success", "ok", 1)
		rec.Body = bytes.NewBufferString(b)
	}},
	"answers-result-member": {after: func(q req, rec *httptest.ResponseRecorder) {
		b := strings.Replace(rec.Body.String(), `{"status":"success"}`, `{"result":"success"}`, 1)
		b = strings.Replace(b, `<status>success</status>`, `<result>success</result>`, 1)
		rec.Body = bytes.NewBufferString(b)
	}},
	"answers-201": {after: func(q req, rec *httptest.ResponseRecorder) {
		if rec.Code == 200 {
			rec.Code = 201
		}
	}},
	"answers-xml-in-json": {after: func(q req, rec *httptest.ResponseRecorder) {
		if q.xml && rec.Code == 200 {
			rec.Header().Set("Content-Type", "application/json")
			rec.Body = bytes.NewBufferString(`{"status":"success"}`)
		}
	}},
	"answers-errors-200": {after: func(q req, rec *httptest.ResponseRecorder) {
		if rec.Code == 400 {
			rec.Code = 200
		}
	}},
	"answers-errors-500": {after: func(q req, rec *httptest.ResponseRecorder) {
		if rec.Code == 400 {
			rec.Code = 500
		}
	}},
	"answers-errors-without-field": {after: func(q req, rec *httptest.ResponseRecorder) {
		b := regexp.MustCompile(`"field":"[^"]*",|<field>[^<]*</field>`).ReplaceAllString(rec.Body.String(), "")
		rec.Body = bytes.NewBufferString(b)
	}},
	"answers-text-plain": {after: func(q req, rec *httptest.ResponseRecorder) {
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			rec.Header().Set("Content-Type", "text/plain")
		}
	}},
	// Four kinds of deviation that got through before the
	// oracle: an allowance of the CONTRACT that was only probed (INFO) ...
	"refuses-device-id-alias": refuses("device_id", func(q req) bool {
		_, id := q.field("device_id")
		_, sn := q.field("sn")
		return q.op(commandPath) && id && !sn
	}),
	"refuses-one-field-command": refuses("mode", func(q req) bool {
		if !q.op(commandPath) || !q.is("type", "Thermostat") {
			return false
		}
		for _, n := range []string{"mode", "cooling point", "heating point", "fan"} {
			if _, ok := q.field(n); !ok {
				return true
			}
		}
		return false
	}),
	"refuses-message-type-other": refuses("message_type", func(q req) bool {
		v, ok := q.field("message_type")
		return q.op(messagePath) && ok && v != "message"
	}),
	"refuses-format-argument": refuses("format", func(q req) bool { _, ok := q.field("format"); return ok }),
	// ... a boundary tested only far from its edge ...
	"accepts-window-plus-ten-seconds": accepts(func(q req) bool {
		v, _ := q.field("timestamp")
		t, err := time.Parse("20060102150405", v)
		d := time.Since(t)
		if d < 0 {
			d = -d
		}
		return err == nil && d > 300*time.Second && d <= 310*time.Second
	}),
	"accepts-point-just-above-100": accepts(func(q req) bool {
		for _, v := range q.point() {
			if f, err := strconv.ParseFloat(v, 64); err == nil && f > 100 && f < 100.1 {
				return true
			}
		}
		return false
	}),
	// ... a length rule tried only with ASCII text ...
	"refuses-long-multibyte-name": refuses("name", func(q req) bool {
		v, ok := q.field("name")
		v = strings.TrimSpace(v)
		return q.op(renamePath) && ok && len(v) > 64 && utf8.RuneCountInString(v) <= 64
	}),
	"accepts-65-combining-name": accepts(func(q req) bool {
		v, ok := q.field("name")
		if !q.op(renamePath) || !ok {
			return false
		}
		shown := 0
		for _, r := range strings.TrimSpace(v) {
			if !unicode.Is(unicode.Mn, r) {
				shown++
			}
		}
		return shown <= 64 && utf8.RuneCountInString(strings.TrimSpace(v)) > 64
	}),
	"refuses-astral-opt": refuses("opt", func(q req) bool {
		v, ok := q.field("opt")
		return ok && len(utf16.Encode([]rune(v))) > 32 && utf8.RuneCountInString(v) <= 32
	}),
	// ... and a form a rule allows that was never drawn.
	"refuses-json-exponent": refuses("dimming", func(q req) bool {
		return !q.xml && regexp.MustCompile(`"(dimming|code|cooling point|heating point)":\s*-?[0-9.]+[eE]`).MatchString(q.body)
	}),
	"refuses-mixed-case-hex": refuses("mac", func(q req) bool {
		for _, n := range []string{"mac", "myservice_id", "sn", "sign"} {
			if v, ok := q.field(n); ok && v != strings.ToLower(v) && v != strings.ToUpper(v) {
				return true
			}
		}
		return false
	}),
	"refuses-many-decimals": refuses("cooling_point", func(q req) bool {
		for _, v := range q.point() {
			if i := strings.IndexByte(v, '.'); i >= 0 && len(v)-i-1 > 2 {
				return true
			}
		}
		return false
	}),
	// Broken forms a lenient implementation takes, that no check tried.
	"accepts-padded-mac":      accepts(func(q req) bool { v, ok := q.field("mac"); return ok && v != strings.TrimSpace(v) }),
	"accepts-mac-with-colons": accepts(func(q req) bool { v, _ := q.field("mac"); return len(v) == 17 && strings.Count(v, ":") == 5 }),
	"accepts-iso-timestamp": accepts(func(q req) bool {
		v, _ := q.field("timestamp")
		_, err := time.Parse("2006-01-02T15:04:05", v)
		return err == nil
	}),
	"accepts-hex-point": accepts(func(q req) bool {
		for _, v := range q.point() {
			if strings.HasPrefix(strings.ToLower(v), "0x") {
				return true
			}
		}
		return false
	}),
	"accepts-uuid-sn": accepts(func(q req) bool { v, _ := q.field("sn"); return len(v) == 36 && strings.Count(v, "-") == 4 }),
	"accepts-timestamp-with-letter": accepts(func(q req) bool {
		v, _ := q.field("timestamp")
		return len(v) == 14 && strings.IndexFunc(v, unicode.IsLetter) >= 0
	}),
	"accepts-fields-as-attributes": accepts(func(q req) bool {
		return q.xml && regexp.MustCompile(`<control\s+[A-Za-z_]+=`).MatchString(q.body)
	}),
	"accepts-api-key-in-other-case": accepts(func(q req) bool {
		v, _ := q.field("api_key")
		return v != "demo-key" && strings.EqualFold(v, "demo-key")
	}),
	"accepts-padded-api-key": accepts(func(q req) bool {
		v, _ := q.field("api_key")
		return v != "demo-key" && strings.TrimSpace(v) == "demo-key"
	}),
	"accepts-field-name-in-other-case": accepts(func(q req) bool {
		return regexp.MustCompile(`"(Dimming|Mac|API_KEY|Name|Type|Cooling point)"\s*:|<(Dimming|Mac|API_KEY|Name|Type|Cooling_point)>`).MatchString(q.body)
	}),
	// Bug classes found only by forms generated from the
	// grammars (oracle.NearMiss), each in the instances no hand-picked
	// check sent.
	"accepts-json-number-syntax": {rewrite: func(q req) string {
		if q.xml {
			return q.body
		}
		return jsonNumberField.ReplaceAllStringFunc(q.body, func(m string) string {
			sub := jsonNumberField.FindStringSubmatch(m)
			if n, ok := lenientNumber(sub[2]); ok {
				return sub[1] + n
			}
			return m
		})
	}},
	"accepts-bare-doctype": {rewrite: func(q req) string {
		if !q.xml {
			return q.body
		}
		return strings.Replace(q.body, "<!DOCTYPE xml>", "", 1)
	}},
	"uses-last-duplicate-element": {rewrite: func(q req) string {
		if !q.xml || q.op(messagePath) {
			return q.body
		}
		body := q.body
		count := map[string]int{}
		for _, m := range xmlLeaf.FindAllStringSubmatch(body, -1) {
			count[m[1]]++
		}
		for name, n := range count {
			for ; n > 1; n-- {
				re := regexp.MustCompile(`<` + regexp.QuoteMeta(name) + `>[^<]*</` + regexp.QuoteMeta(name) + `>`)
				loc := re.FindStringIndex(body)
				body = body[:loc[0]] + body[loc[1]:]
			}
		}
		return body
	}},
	"accepts-sign-without-timestamp": {rewrite: resignWhen(func(sign, key, ts string) bool { return sign == md5Hex(key+demoSecret) })},
	"accepts-sign-without-secret":    {rewrite: resignWhen(func(sign, key, ts string) bool { return sign == md5Hex(key+ts) })},
	"compares-sign-prefix": {rewrite: resignWhen(func(sign, key, ts string) bool {
		right := md5Hex(key + demoSecret + ts)
		return len(sign) == 32 && strings.EqualFold(sign[:16], right[:16])
	})},
	"accepts-unlisted-methods": {method: func(q req) string {
		switch q.r.Method {
		case http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodPatch:
			return q.r.Method
		}
		if strings.HasPrefix(q.r.URL.Path, "/v1/") {
			return http.MethodPost
		}
		return q.r.Method
	}},
	"applies-dimming-off-by-one": {rewrite: func(q req) string {
		v, ok := q.field("dimming")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n <= 1 || n > 100 {
			return q.body
		}
		if q.xml {
			return strings.Replace(q.body, "<dimming>"+v+"</dimming>", "<dimming>"+strconv.Itoa(n-1)+"</dimming>", 1)
		}
		return regexp.MustCompile(`"dimming":\s*"?`+v+`"?`).ReplaceAllString(q.body, `"dimming":"`+strconv.Itoa(n-1)+`"`)
	}},
	"applies-enum-lower-case": {after: func(q req, rec *httptest.ResponseRecorder) {
		if strings.HasPrefix(q.r.URL.Path, "/_sim/gateways/") && strings.Contains(q.r.URL.Path, "/devices/") {
			var d map[string]any
			if json.Unmarshal(rec.Body.Bytes(), &d) == nil {
				if st, ok := d["state"].(map[string]any); ok {
					if m, ok := st["mode"].(string); ok {
						st["mode"] = strings.ToLower(m)
						b, _ := json.Marshal(d)
						rec.Body = bytes.NewBuffer(b)
					}
				}
			}
		}
	}},
}

var (
	jsonNumberField = regexp.MustCompile(`("(?:dimming|code|cooling point|heating point)":)([^",}]+)`)
	xmlLeaf         = regexp.MustCompile(`<([A-Za-z_][A-Za-z0-9_]*)>[^<]*</[A-Za-z_][A-Za-z0-9_]*>`)
)

const (
	demoSecret   = "demo-secret"
	otherAccount = "6e4b0d1f2c3e5a7b9d1f2c3e"
	otherSecret  = "other-secret"
)

// appliesToOtherAccountsDevice is the isolation bug of a service that
// finds a command's device by its sn alone: a command naming the sn of
// another account's device, sent through the tested account's own
// gateway, is refused (404, as it must be) and applied to that device all
// the same.
func appliesToOtherAccountsDevice(q req) (string, bool) {
	if !q.op(commandPath) || !q.is("api_key", "demo-key") || !q.is("mac", demoMAC) || !q.is("sn", otherSN) {
		return "", false
	}
	ts, _ := q.field("timestamp")
	sign, _ := q.field("sign")
	b := q.body
	for _, kv := range [][2]string{{"demo-key", "other-key"}, {demoAccount, otherAccount}, {demoMAC, otherMAC}, {sign, md5Hex("other-key" + otherSecret + ts)}} {
		b = strings.Replace(b, kv[0], kv[1], 1)
	}
	return b, true
}

// relay2AsRelay1 is the bug of a service that stores a command's second
// relay in the first one's place when the first is not sent: a Relay2
// command sent alone to an Appliance Module Plus lands in Relay1. The
// sign covers the key and the timestamp only, so it still holds.
func relay2AsRelay1(q req) string {
	_, one := q.field("Relay1")
	if !q.op(commandPath) || one {
		return q.body
	}
	if _, two := q.field("Relay2"); !two {
		return q.body
	}
	if q.xml {
		return strings.ReplaceAll(strings.ReplaceAll(q.body, "<Relay2>", "<Relay1>"), "</Relay2>", "</Relay1>")
	}
	return strings.Replace(q.body, `"Relay2"`, `"Relay1"`, 1)
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// lenientNumber reads a JSON value's literal as a lenient parser would:
// a plus sign, leading zeros, a point at either end, 0x, 0o and 0b, _
// between digits; ok is false for a JSON number (left as it is) and for
// what no reading takes.
func lenientNumber(lit string) (string, bool) {
	lit = strings.TrimSpace(lit)
	if json.Valid([]byte(lit)) {
		return "", false
	}
	t := strings.ReplaceAll(strings.TrimPrefix(lit, "+"), "_", "")
	if n, err := strconv.ParseInt(t, 0, 64); err == nil {
		return strconv.FormatInt(n, 10), true
	}
	if f, err := strconv.ParseFloat(strings.TrimSuffix(t, "."), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return strconv.FormatFloat(f, 'f', -1, 64), true
	}
	return "", false
}

// resignWhen forwards a request whose sign meets cond (given the sign,
// the api_key and the timestamp sent) with the right sign in its place:
// the target accepts it.
func resignWhen(cond func(sign, key, ts string) bool) func(q req) string {
	return func(q req) string {
		sign, _ := q.field("sign")
		key, _ := q.field("api_key")
		ts, _ := q.field("timestamp")
		if key != "demo-key" || !cond(strings.ToLower(sign), key, ts) {
			return q.body
		}
		return strings.Replace(q.body, sign, md5Hex(key+demoSecret+ts), 1)
	}
}

// deviationEnv names the deviation this test binary, started again as
// gwconform run, serves as its embedded target ("" for the faithful
// simulator). The run, its target and the deviation share one process, as
// a run against the embedded simulator does: a full run costs a third of
// the CPU of one against another process.
const deviationEnv = "GWCONFORM_TEST_DEVIATION"

// runDeviation is gwconform run with the embedded simulator behind the
// deviation id.
func runDeviation(id string, args []string) int {
	var d *deviation
	if id != "" {
		impl, ok := deviations[id]
		if !ok {
			fmt.Fprintf(os.Stderr, "no deviation %q\n", id)
			return 2
		}
		d = &impl
	}
	if len(args) == 0 || args[0] != "run" {
		fmt.Fprintln(os.Stderr, "usage: run [flags]")
		return 2
	}
	m := &runMain{Stdout: os.Stdout, Stderr: os.Stderr, StartEmbedded: func(f *fleet.Fleet) (Embedded, error) {
		sim := simulator.New(simulator.Options{Fleet: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if d != nil && d.wire != 0 {
			return startWireServer(sim.Server.Handler(), d.wire)
		}
		return deviantServer{httptest.NewServer(deviant(sim.Server.Handler(), d))}, nil
	}}
	return lifecycle(context.Background(), "gwconform", m, args[1:], m.Stderr)
}

type deviantServer struct{ *httptest.Server }

func (s deviantServer) URL() string  { return s.Server.URL }
func (s deviantServer) Close() error { s.Server.Close(); return nil }

// deviant wraps the simulator's handler h in deviation d (nil: h as it is).
func deviant(h http.Handler, d *deviation) http.Handler {
	if d == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		ct := r.Header.Get("Content-Type")
		q := req{r: r, body: string(body), xml: strings.Contains(ct, "xml") || strings.HasPrefix(strings.TrimSpace(string(body)), "<")}
		if d.before != nil && d.before(w, q) {
			return
		}
		if d.also != nil {
			if extra, ok := d.also(q); ok {
				r2 := r.Clone(r.Context())
				r2.Body = io.NopCloser(strings.NewReader(extra))
				r2.ContentLength = int64(len(extra))
				h.ServeHTTP(httptest.NewRecorder(), r2)
			}
		}
		if d.rewrite != nil {
			body = []byte(d.rewrite(q))
		}
		if d.method != nil {
			r.Method = d.method(q)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		if d.after == nil {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		d.after(q, rec)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}

type mutantResult struct {
	ID    string   `json:"id"`
	Level string   `json:"level"`
	Tags  []string `json:"tags"`
	Out   string   `json:"outcome"`
}

// TestMutationScore runs the full suite against the faithful simulator
// (must pass at --fail-on should) and against every deviation, a few at a
// time: each must be detected at its rule's level (a MUST rule's by a
// failed MUST check, so the run fails at --fail-on must; a CONTRACT rule's
// by a failed MUST or SHOULD check, --fail-on should), and by a check that
// carries its rule's label.
func TestMutationScore(t *testing.T) {
	simtest.Heavy(t)
	ds := rules.Deviations()
	if len(ds) < 40 {
		t.Fatalf("only %d deviations", len(ds))
	}
	listed := map[string]bool{}
	for _, d := range ds {
		listed[d.ID] = true
		if _, ok := deviations[d.ID]; !ok {
			t.Errorf("deviation %s is listed in deviations.yaml but not implemented", d.ID)
		}
	}
	for id := range deviations {
		if _, control := wireFaithfulDoubles[id]; !listed[id] && !control {
			t.Errorf("deviation %s is implemented but not listed in deviations.yaml (docs/checks.md)", id)
		}
	}
	type job struct {
		dev  *rules.Deviation
		impl *deviation
	}
	jobs := []job{{}}
	for i := range ds {
		if impl, ok := deviations[ds[i].ID]; ok {
			impl := impl
			jobs = append(jobs, job{&ds[i], &impl})
		}
	}
	// Each run computes more than it waits, its target in its own
	// process: one more run than cores keeps them busy.
	workers := runtime.NumCPU() + 1
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		detected int
		ran      int
		next     = make(chan job)
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				name := "faithful"
				if j.dev != nil {
					name = j.dev.ID
				}
				// A subtest each, so that -run 'TestMutationScore/ID' runs
				// one deviation (and /faithful the faithful simulator).
				t.Run(name, func(t *testing.T) {
					id := ""
					if j.dev != nil {
						id = j.dev.ID
					}
					// One thread each: a run is a request and its answer in
					// turn, and the runs side by side keep the cores busy.
					r := runGwconform(t, os.Args[0], []string{deviationEnv + "=" + id, "GOMAXPROCS=1"}, "--fail-on", "should", "--skip-preflight")
					b, err := os.ReadFile(filepath.Join(r.dir, "report.json"))
					var doc struct {
						Results []mutantResult `json:"results"`
					}
					if err == nil {
						b, err = expandReport(b)
					}
					if err == nil {
						err = json.Unmarshal(b, &doc)
					}
					mu.Lock()
					if err != nil {
						t.Errorf("%v: report.json: %v (exit %d)\n%s", j.dev, err, r.code, r.stderr)
						mu.Unlock()
						return
					}
					var must, should, onRule []string
					for _, res := range doc.Results {
						if res.Out != "failed" {
							continue
						}
						switch res.Level {
						case "MUST":
							must = append(must, res.ID)
						case "SHOULD":
							should = append(should, res.ID)
						}
						if j.dev != nil {
							rule, _ := rules.Lookup(j.dev.Rule)
							for _, tag := range res.Tags {
								// Caught by a check of its own rule, at the
								// rule's level (MUST), or any level (SHOULD).
								if tag == "rule:"+j.dev.Rule && (rule.Level == "SHOULD" || res.Level == "MUST") {
									onRule = append(onRule, res.ID)
								}
							}
						}
					}
					if j.dev == nil {
						if r.code != 0 || len(must)+len(should) > 0 {
							t.Errorf("the faithful simulator: exit %d, failed %v %v\n%s", r.code, must, should, tail(r.stdout))
						}
						mu.Unlock()
						return
					}
					ran++
					rule, _ := rules.Lookup(j.dev.Rule)
					ok := len(onRule) > 0 && (len(must) > 0 || rule.Level == "SHOULD" && len(should) > 0)
					if ok && r.code == 1 {
						detected++
						t.Logf("%s (%s, %s): detected by %d MUST and %d SHOULD checks, %d of its rule, e.g. %v", j.dev.ID, j.dev.Rule, rule.Level,
							len(must), len(should), len(onRule), first(append(onRule, append(must, should...)...), 2))
					} else {
						t.Errorf("%s (%s, %s) NOT detected at its level by a check of its rule: exit %d, failed MUST %v SHOULD %v, of its rule %v",
							j.dev.ID, j.dev.Rule, rule.Level, r.code, first(must, 5), first(should, 5), first(onRule, 5))
					}
					mu.Unlock()
				})
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	t.Logf("mutation score: %d of %d deviations detected (%d listed)", detected, ran, len(ds))
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
