package oracle

import (
	"slices"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// A valid message, written by hand from published 2.1 and 4.2.
const (
	msgJSON = `{"control":{"api_key":"k","timestamp":"20260101120000","sign":"0123456789abcdef0123456789abcdef",` +
		`"myservice_id":"5f3a9c0e1b2d4f6a8c0e1b2d","mac":"a4c138f0e2b1","message_type":"message","message_value":"brightness=80"}}`
	msgXML = `<?xml version="1.0" encoding="UTF-8"?><xml><control><api_key>k</api_key><timestamp>20260101120000</timestamp>` +
		`<sign>0123456789abcdef0123456789abcdef</sign><myservice_id>5f3a9c0e1b2d4f6a8c0e1b2d</myservice_id><mac>a4c138f0e2b1</mac>` +
		`<message_type>message</message_type><message_value>brightness=80</message_value></control></xml>`
)

func judgeMsg(ct, body string) Verdict {
	_, _, v := JudgeRequest(device.SendMessage, Request{Method: "POST", ContentType: ct, Body: []byte(body)})
	return v
}

func TestJudgeRequestReadsBothFormats(t *testing.T) {
	for _, tc := range []struct{ ct, body string }{
		{"application/json", msgJSON},
		{"application/json; charset=utf-8", " \n" + msgJSON + "\n"},
		{"application/xml", msgXML},
		{"text/xml", strings.Replace(msgXML, "<control>", "<control><!-- c -->", 1)},
		{"application/xml", strings.Replace(msgXML, "<message_type>message</message_type>", "<message_type><![CDATA[mess]]>&#x61;ge</message_type>", 1)},
	} {
		if v := judgeMsg(tc.ct, tc.body); !v.OK || !v.Must || v.State["message_type"] != "message" {
			t.Errorf("%s %s: %+v", tc.ct, tc.body, v)
		}
	}
}

func TestJudgeRequestRefusesEachBrokenForm(t *testing.T) {
	for _, tc := range []struct {
		name, method, ct, body string
		status                 int
		codes                  []string // the verdict's code, then any of Also
	}{
		{"GET", "GET", "application/json", msgJSON, 405, []string{device.CodeMethodNotAllowed}},
		{"text/plain", "POST", "text/plain", msgJSON, 415, []string{device.CodeUnsupportedMediaType}},
		{"no Content-Type", "POST", "", msgJSON, 415, []string{device.CodeUnsupportedMediaType}},
		{"too large", "POST", "application/json", msgJSON + strings.Repeat(" ", MaxBody), 413, []string{device.CodeBodyTooLarge}},
		{"json null", "POST", "application/json", "null", 400, []string{device.CodeMalformedBody}},
		{"json array", "POST", "application/json", "[" + msgJSON + "]", 400, []string{device.CodeMalformedBody}},
		{"json two objects", "POST", "application/json", msgJSON + msgJSON, 400, []string{device.CodeMalformedBody}},
		{"json extra member", "POST", "application/json", strings.TrimSuffix(msgJSON, "}") + `,"x":{}}`, 400, []string{device.CodeMalformedBody, device.CodeUnexpectedField}},
		{"json Control", "POST", "application/json", strings.Replace(msgJSON, `"control"`, `"Control"`, 1), 400, []string{device.CodeMalformedBody, device.CodeUnexpectedField, device.CodeMissingField}},
		{"json control string", "POST", "application/json", `{"control":"x"}`, 400, []string{device.CodeMalformedBody}},
		{"json empty control", "POST", "application/json", `{"control":{}}`, 400, []string{device.CodeMalformedBody, device.CodeMissingField}},
		{"json trailing comma", "POST", "application/json", strings.TrimSuffix(msgJSON, "}}") + ",}}", 400, []string{device.CodeMalformedBody}},
		{"json number message_type", "POST", "application/json", strings.Replace(msgJSON, `"message"`, `7`, 1), 400, []string{device.CodeInvalidField}},
		{"json missing sign", "POST", "application/json", strings.Replace(msgJSON, `"sign":"0123456789abcdef0123456789abcdef",`, "", 1), 400, []string{device.CodeMissingField}},
		{"xml root XML", "POST", "application/xml", strings.NewReplacer("<xml>", "<XML>", "</xml>", "</XML>").Replace(msgXML), 400, []string{device.CodeMalformedBody, device.CodeMissingField}},
		{"xml extra child", "POST", "application/xml", strings.Replace(msgXML, "</control>", "</control><x>1</x>", 1), 400, []string{device.CodeMalformedBody, device.CodeUnexpectedField}},
		{"xml second root", "POST", "application/xml", msgXML + "<xml/>", 400, []string{device.CodeMalformedBody}},
		{"xml mismatched tag", "POST", "application/xml", strings.Replace(msgXML, "</message_type>", "</message_Type>", 1), 400, []string{device.CodeMalformedBody}},
		{"xml doctype", "POST", "application/xml", strings.Replace(msgXML, "<xml>", "<!DOCTYPE xml><xml>", 1), 400, []string{device.CodeMalformedBody}},
		{"xml entity", "POST", "application/xml", strings.Replace(msgXML, ">message<", ">mess&nbsp;age<", 1), 400, []string{device.CodeMalformedBody}},
		{"xml field with child", "POST", "application/xml", strings.Replace(msgXML, ">message<", "><v>message</v><", 1), 400, []string{device.CodeInvalidField, device.CodeMalformedBody}},
		{"xml Control", "POST", "application/xml", strings.NewReplacer("<control>", "<Control>", "</control>", "</Control>").Replace(msgXML), 400, []string{device.CodeMalformedBody, device.CodeUnexpectedField, device.CodeMissingField}},
		{"xml no control", "POST", "application/xml", `<xml></xml>`, 400, []string{device.CodeMalformedBody, device.CodeMissingField}},
		{"xml bad sign", "POST", "application/xml", strings.Replace(msgXML, "0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdeg", 1), 400, []string{device.CodeInvalidField}},
	} {
		_, _, v := JudgeRequest(device.SendMessage, Request{Method: tc.method, ContentType: tc.ct, Body: []byte(tc.body)})
		got := append([]string{v.Code}, v.Also...)
		if v.OK || v.Open || v.Status != tc.status || !slices.Equal(got, tc.codes) {
			t.Errorf("%s: %+v (codes %v), want %d %v", tc.name, v, got, tc.status, tc.codes)
		}
		if v.Quote == "" {
			t.Errorf("%s: refused (%s) without the sentence that forbids it", tc.name, v.Why)
		}
	}
}

func rulesOf(bs []Breach) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Rule)
	}
	return out
}

// TestJudgeAnswer: each way a service's answer breaks CONTRACT 4, in both
// formats, is named; the CONTRACT's own answers break nothing.
func TestJudgeAnswer(t *testing.T) {
	valid := judgeMsg("application/json", msgJSON)
	badDimming := Verdict{Status: 400, Code: device.CodeInvalidField, Field: "dimming", Must: true, Why: "dimming: 500 is above 100"}
	okBody := map[device.Format]string{device.JSON: `{"status":"success"}`,
		device.XML: `<?xml version="1.0" encoding="UTF-8"?><xml><status>success</status></xml>`}
	errBody := func(f device.Format, code string) string {
		if f == device.XML {
			return `<xml><status>error</status><error><code>` + code + `</code><field>dimming</field><message>m</message></error></xml>`
		}
		return `{"status":"error","error":{"code":"` + code + `","field":"dimming","message":"m"}}`
	}
	ct := map[device.Format]string{device.JSON: "application/json", device.XML: "application/xml; charset=utf-8"}
	for _, f := range []device.Format{device.JSON, device.XML} {
		other := device.XML
		if f == device.XML {
			other = device.JSON
		}
		for _, tc := range []struct {
			name string
			req  Verdict
			a    Answer
			want []string
		}{
			{"success", valid, Answer{200, ct[f], "", []byte(okBody[f])}, nil},
			{"refusal", badDimming, Answer{400, ct[f], "", []byte(errBody(f, "invalid_field"))}, nil},
			{"refused by a later stage", badDimming, Answer{401, ct[f], "", []byte(errBody(f, "bad_signature"))}, nil},
			{"429 with Retry-After", valid, Answer{429, ct[f], "2", []byte(errBody(f, "rate_limited"))}, nil},
			{"200 to an invalid request", badDimming, Answer{200, ct[f], "", []byte(okBody[f])}, []string{RuleRefusesInvalid}},
			{"wrong error code", badDimming, Answer{400, ct[f], "", []byte(errBody(f, "unexpected_field"))}, []string{RuleErrorCode}},
			{"code with another status", badDimming, Answer{422, ct[f], "", []byte(errBody(f, "invalid_field"))}, []string{RuleStatusOfCode}},
			{"500 to bad input", badDimming, Answer{500, ct[f], "", []byte(errBody(f, "internal"))}, []string{RuleNo5xx}},
			{"valid refused", valid, Answer{400, ct[f], "", []byte(errBody(f, "invalid_field"))}, []string{RuleAcceptsValid}},
			{"429 without Retry-After", valid, Answer{429, ct[f], "", []byte(errBody(f, "rate_limited"))}, []string{RuleRetryAfter}},
			{"429 with a bad Retry-After", valid, Answer{429, ct[f], "soon", []byte(errBody(f, "rate_limited"))}, []string{RuleRetryAfter}},
			{"text/plain", valid, Answer{200, "text/plain", "", []byte("ok")}, []string{RuleAnswerFormat}},
			{"other format", valid, Answer{200, ct[other], "", []byte(okBody[other])}, []string{RuleAnswerFormat}},
			{"200 with status error", valid, Answer{200, ct[f], "", []byte(errBody(f, "invalid_field"))}, []string{RuleAnswerBody}},
			{"error without code", badDimming, Answer{400, ct[f], "", []byte(strings.Replace(errBody(f, ""), "dimming", "d", 1))}, []string{RuleAnswerBody}},
			{"body that does not parse", valid, Answer{200, ct[f], "", []byte("{<")}, []string{RuleAnswerBody}},
		} {
			got := rulesOf(JudgeAnswer(f, tc.req, tc.a))
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s %s: %v, want %v (%+v)", f, tc.name, got, tc.want, JudgeAnswer(f, tc.req, tc.a))
			}
		}
	}
	// A success to a JSON request that is not an object with status is a
	// MUST breach; a refusal's form is the CONTRACT's.
	if b := JudgeAnswer(device.JSON, valid, Answer{200, "text/plain", "", []byte("ok")}); len(b) == 0 || !b[0].Must {
		t.Errorf("text/plain success: %+v", b)
	}
	if b := JudgeAnswer(device.JSON, badDimming, Answer{422, "application/json", "", []byte(errBody(device.JSON, "invalid_field"))}); len(b) != 1 || b[0].Must {
		t.Errorf("422: %+v", b)
	}
	// A request whose format could not be told is answered in JSON.
	if b := JudgeAnswer(0, Verdict{Status: 415, Code: device.CodeUnsupportedMediaType, Must: true}, Answer{415, "application/json", "", []byte(`{"status":"error","error":{"code":"unsupported_media_type","message":"m"}}`)}); len(b) != 0 {
		t.Errorf("415 in JSON: %+v", b)
	}
}

// An answer that gives an attribute twice in one tag is not XML (3.1,
// WFC Unique Att Spec), though Go's XML reader takes it.
func TestReadAnswerRefusesAnAttributeTwice(t *testing.T) {
	if _, err := ReadAnswer(device.XML, []byte(`<xml><status a="1" a="2">success</status></xml>`)); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("an attribute twice: %v, want not XML", err)
	}
	a, err := ReadAnswer(device.XML, []byte(`<xml x="1"><status a="1" b="1">success</status></xml>`))
	if err != nil || a.Status != "success" {
		t.Errorf("attributes once each: %+v %v, want success", a, err)
	}
}
