package clients_test

import (
	"bytes"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/codec"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator/clients"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json from the Recorder")

// script is a fixed sequence of exchanges that breaks every judgement at
// least once, from three api_keys (one beyond MaxClients), no api_key and
// no format, in JSON and XML, during two fault phases, each at a fixed
// time. Its report was written by the Recorder before the request path
// was made cheaper (testdata/*.golden.json): the report's content must
// stay the same.
func script(t *testing.T, trusted bool) *clients.Report {
	base := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	now := base
	var phases []string
	r := clients.New(clients.Config{MaxClients: 2, Window: 300 * time.Second, Now: func() time.Time { return now },
		Phases: func() []string { return phases }, Trusted: trusted})
	ok := func(f device.Format) []byte { return codec.Success(f) }
	answerErrors := map[string]*device.Error{}
	errAnswer := func(f device.Format, code, field, msg string) []byte {
		e := device.Errorf(code, field, "%s", msg)
		b := codec.Error(f, e)
		answerErrors[string(b)] = e
		return b
	}
	type step struct {
		after       time.Duration
		key, secret string
		skew        time.Duration
		op          device.Operation
		format      device.Format
		fields      []simtest.F
		status      int
		answer      []byte
		retryAfter  string
		phases      []string
		rawType     string
		rawBody     string
		sameAsLast  bool
	}
	dim := func(level string) []simtest.F {
		return []simtest.F{simtest.S("mac", simtest.MACA), simtest.S("sn", simtest.SN('a', 5)), simtest.S("type", "Light Dimmer"), simtest.N("dimming", level)}
	}
	foreign := []simtest.F{simtest.S("mac", simtest.MACA), simtest.S("sn", simtest.SN('a', 1)), simtest.S("type", "Appliance Module"),
		simtest.S("io", "On"), simtest.S("Relay2", "On")}
	msg := []simtest.F{simtest.S("mac", simtest.MACA), simtest.S("message_type", "message"), simtest.S("message_value", "x=1")}
	rename := []simtest.F{simtest.S("mac", simtest.MACA), simtest.S("sn", simtest.SN('a', 5)), simtest.S("name", "Hall")}
	const k1, s1, k2, s2, k3 = "app-one-key", "secret-one", "app-two-key", "secret-two", "app-three-key"
	steps := []step{
		{key: k1, secret: s1, op: device.SendCommand, format: device.JSON, fields: dim("40"), status: 200},
		{after: 300 * time.Millisecond, sameAsLast: true, status: 200}, // a replay
		{after: time.Second, key: k1, secret: s1, op: device.SendMessage, format: device.XML, fields: msg, status: 200},
		{after: time.Second, key: k1, secret: s1, op: device.SendCommand, format: device.XML, fields: dim("400"), status: 400,
			answer: errAnswer(device.XML, device.CodeInvalidField, "dimming", "dimming must be 0 to 100")},
		{after: 2 * time.Second, key: k1, secret: s1, op: device.SendCommand, format: device.XML, fields: dim("400"), status: 400, // resent, re-signed
			answer: errAnswer(device.XML, device.CodeInvalidField, "dimming", "dimming must be 0 to 100")},
		{after: time.Second, key: k1, secret: s1, op: device.SendCommand, format: device.JSON, fields: foreign, status: 400,
			answer: errAnswer(device.JSON, device.CodeUnexpectedField, "Relay2", "Relay2 is not a field of Appliance Module")},
		{after: time.Second, key: k1, secret: s1, op: device.UpdateName, format: device.JSON, fields: rename, status: 429, retryAfter: "2",
			answer: errAnswer(device.JSON, device.CodeRateLimited, "", "retry after 2 s"), phases: []string{"rate limit"}},
		{after: 500 * time.Millisecond, key: k1, secret: s1, op: device.UpdateName, format: device.JSON, fields: rename, status: 200, phases: []string{"rate limit"}},
		{after: 3 * time.Second, key: k1, secret: s1, skew: 20 * time.Minute, op: device.SendMessage, format: device.JSON, fields: msg, status: 401,
			answer: errAnswer(device.JSON, device.CodeStaleTimestamp, "timestamp", "timestamp is outside the window"), phases: []string{"rate limit", "latency"}},
		{after: time.Second, key: k1, secret: "wrong", op: device.SendMessage, format: device.JSON, fields: msg, status: 401,
			answer: errAnswer(device.JSON, device.CodeBadSignature, "sign", "sign does not match"), phases: []string{"latency"}},
		{after: time.Second, key: k1, secret: s1, op: device.SendCommand, format: device.JSON, fields: dim("55"), status: 503, retryAfter: "1",
			answer: errAnswer(device.JSON, device.CodeInjectedFault, "", "injected failure")},
		{after: 2 * time.Second, key: k2, secret: s2, skew: -7 * time.Second, op: device.SendCommand, format: device.XML, fields: dim("10"), status: 200},
		{after: time.Second, key: k2, secret: s2, op: device.SendCommand, format: device.JSON, fields: dim("10"), status: 404,
			answer: errAnswer(device.JSON, device.CodeGatewayNotFound, "mac", "no gateway")},
		{after: time.Second, key: k3, secret: "s3", op: device.SendMessage, format: device.JSON, fields: msg, status: 401,
			answer: errAnswer(device.JSON, device.CodeUnknownAPIKey, "api_key", "unknown api_key")},
		{after: time.Second, rawType: "application/json", rawBody: `{"control":`, op: device.SendMessage, status: 400,
			answer: errAnswer(device.JSON, device.CodeMalformedBody, "", "the body is not JSON")},
		{after: time.Second, rawType: "text/plain", rawBody: "hello", op: device.SendCommand, status: 415,
			answer: errAnswer(device.JSON, device.CodeUnsupportedMediaType, "Content-Type", "use JSON or XML")},
		{after: time.Second, rawType: "application/json", rawBody: `{"control":{"api_key":"` + k2 + `"}}`, op: device.SendMessage, status: 418,
			answer: []byte("teapot")},
	}
	var last clients.Exchange
	for i, s := range steps {
		now = now.Add(s.after)
		phases = s.phases
		ex := last
		if !s.sameAsLast {
			ex = clients.Exchange{Path: s.op.Path()}
			if s.rawType != "" {
				ex.ContentType, ex.Body = s.rawType, []byte(s.rawBody)
			} else {
				ts := auth.Timestamp(now.Add(s.skew), time.UTC)
				fields := append([]simtest.F{simtest.S("api_key", s.key), simtest.S("timestamp", ts), simtest.S("sign", auth.Sign(s.key, s.secret, ts)),
					simtest.S("myservice_id", simtest.AccountA)}, s.fields...)
				ex.ContentType, ex.Body = simtest.ContentType(s.format), simtest.Body(s.format, fields)
			}
		}
		ex.Time, ex.Done = now, now.Add(time.Millisecond)
		ex.Status, ex.Answer = s.status, s.answer
		if ex.Answer == nil && s.status == 200 {
			f, _ := codec.FormatOf(ex.ContentType)
			ex.Answer = ok(f)
		}
		ex.Header = http.Header{}
		if ex.Status != 200 {
			ex.Header.Set("Content-Type", "application/json")
			if bytes.HasPrefix(ex.Answer, []byte("<")) {
				ex.Header.Set("Content-Type", "application/xml")
			}
		}
		if s.retryAfter != "" {
			ex.Header.Set("Retry-After", s.retryAfter)
		}
		if trusted && !s.sameAsLast {
			// As gwsim serve does: the fields it decoded handed over.
			if f, derr := codec.FormatOf(ex.ContentType); derr == nil {
				if pairs, derr := codec.DecodeInto(f, ex.Body, nil); derr == nil {
					ex.Format, ex.Pairs = f, pairs
					// and its own verdict on them, and the error it answered.
					_, ex.Invalid = device.Parse(s.op, f, pairs)
					ex.Validated = true
					ex.AnswerError = answerErrors[string(ex.Answer)]
				}
			}
		}
		r.Observe(ex)
		last = ex
		_ = i
	}
	rep := r.Report()
	return rep
}

// TestReportContentUnchanged: the report of the fixed script is, member
// for member, the one the Recorder wrote before its request path was made
// cheaper, with gwsim serve's trust in its own 200s and without.
func TestReportContentUnchanged(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		t.Run("trusted="+strconv.FormatBool(trusted), func(t *testing.T) {
			var b bytes.Buffer
			if err := script(t, trusted).WriteJSON(&b); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "script-trusted-"+strconv.FormatBool(trusted)+".golden.json")
			if *update {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("the report changed:\n%s\nwant:\n%s", b.String(), want)
			}
		})
	}
}
