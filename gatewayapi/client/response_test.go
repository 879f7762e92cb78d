package client

import (
	"bytes"
	"math/rand"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

func TestParseBody(t *testing.T) {
	cases := []struct {
		name, ct, body string
		truncated      bool
		want           Response // Format, StatusField, Error* compared
		parseErr       string   // substring of ParseError; "" = none expected
	}{
		{name: "json success", ct: "application/json", body: `{"status":"success"}`,
			want: Response{Format: device.JSON, StatusField: "success"}},
		{name: "json error payload", ct: "application/json; charset=utf-8",
			body: `{"status":"error","error":{"code":"invalid_field","field":"dimming","message":"dimming must be an integer from 1 to 100"}}`,
			want: Response{Format: device.JSON, StatusField: "error", ErrorCode: "invalid_field", ErrorField: "dimming",
				ErrorMessage: "dimming must be an integer from 1 to 100"}},
		{name: "xml success", ct: "application/xml", body: `<?xml version="1.0" encoding="UTF-8"?><xml><status>success</status></xml>`,
			want: Response{Format: device.XML, StatusField: "success"}},
		{name: "xml error payload pretty", ct: "text/xml",
			body: "<xml>\n  <status>\n    error\n  </status>\n  <error><code>bad_signature</code><field>sign</field>" +
				"<message>a &lt; b</message></error>\n</xml>",
			want: Response{Format: device.XML, StatusField: "error", ErrorCode: "bad_signature", ErrorField: "sign", ErrorMessage: "a < b"}},
		{name: "xml other root, nested status ignored", ct: "application/xml",
			body: `<response><data><status>success</status></data></response>`,
			want: Response{Format: device.XML}},
		{name: "json sniffed", ct: "text/plain", body: ` {"status":"success"}`,
			want: Response{Format: device.JSON, StatusField: "success"}},
		{name: "xml sniffed", ct: "", body: "\xef\xbb\xbf<xml><status>success</status></xml>",
			want: Response{Format: device.XML, StatusField: "success"}},
		{name: "json declared, xml sent", ct: "application/json", body: `<xml><status>success</status></xml>`,
			want: Response{Format: device.JSON}, parseErr: "not a JSON object"},
		{name: "json status not a string", ct: "application/json", body: `{"status":true,"error":"oops"}`,
			want: Response{Format: device.JSON}},
		{name: "json member names are exact", ct: "application/json", body: `{"STATUS":"success"}`,
			want: Response{Format: device.JSON}},
		{name: "json array", ct: "application/json", body: `["success"]`,
			want: Response{Format: device.JSON}, parseErr: "not a JSON object"},
		{name: "json trailing garbage", ct: "application/json", body: `{"status":"success"} x`,
			want: Response{Format: device.JSON}, parseErr: "not a JSON object"},
		{name: "json invalid utf-8", ct: "application/json", body: "{\"status\":\"succ\xffess\"}",
			want: Response{Format: device.JSON}, parseErr: "UTF-8"},
		{name: "xml invalid utf-8", ct: "application/xml", body: "<xml><status>succ\xffess</status></xml>",
			want: Response{Format: device.XML}, parseErr: "not XML"},
		{name: "xml latin-1 declared", ct: "application/xml",
			body: "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><xml><status>error</status><error><message>caf\xe9</message></error></xml>",
			want: Response{Format: device.XML, StatusField: "error", ErrorMessage: "café"}},
		{name: "xml attribute twice", ct: "application/xml", body: `<xml><status a="1" a="2">success</status></xml>`,
			want: Response{Format: device.XML}, parseErr: "given twice"},
		{name: "xml attributes once each", ct: "application/xml", body: `<xml a="1" b="1"><status a="1" b="2">success</status></xml>`,
			want: Response{Format: device.XML, StatusField: "success"}},
		{name: "xml unclosed", ct: "application/xml", body: `<xml><status>success</status>`,
			want: Response{Format: device.XML}, parseErr: "not XML"},
		{name: "xml entity bomb", ct: "application/xml",
			body: `<!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><xml><status>&b;</status></xml>`,
			want: Response{Format: device.XML}, parseErr: "not XML"},
		{name: "html", ct: "text/html", body: `<html><body>502 Bad Gateway</body></html>`,
			want: Response{Format: device.XML}},
		{name: "plain text", ct: "text/plain", body: `Internal Server Error`, parseErr: "neither JSON nor XML"},
		{name: "empty", ct: "application/json", body: "", want: Response{Format: device.JSON}, parseErr: "empty body"},
		{name: "truncated", ct: "application/json", body: `{"status":"succ`, truncated: true,
			want: Response{Format: device.JSON}, parseErr: "cut at the response limit"},
		{name: "deep json", ct: "application/json", body: strings.Repeat("[", 100000),
			want: Response{Format: device.JSON}, parseErr: "not a JSON object"},
		{name: "deep xml", ct: "application/xml", body: strings.Repeat("<a>", 100000),
			want: Response{Format: device.XML}, parseErr: "not XML"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &Response{ContentType: tc.ct, Body: []byte(tc.body), Truncated: tc.truncated}
			r.parseBody()
			got := Response{Format: r.Format, StatusField: r.StatusField, ErrorCode: r.ErrorCode,
				ErrorField: r.ErrorField, ErrorMessage: r.ErrorMessage}
			if got.Format != tc.want.Format || got.StatusField != tc.want.StatusField || got.ErrorCode != tc.want.ErrorCode ||
				got.ErrorField != tc.want.ErrorField || got.ErrorMessage != tc.want.ErrorMessage {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if tc.parseErr == "" && r.ParseError != "" {
				t.Errorf("unexpected ParseError %q", r.ParseError)
			}
			if tc.parseErr != "" && !strings.Contains(r.ParseError, tc.parseErr) {
				t.Errorf("ParseError %q does not mention %q", r.ParseError, tc.parseErr)
			}
		})
	}
}

func TestSuccess(t *testing.T) {
	if (*Response)(nil).Success() {
		t.Error("nil response succeeded")
	}
	if (&Response{Status: 201, StatusField: "success"}).Success() {
		t.Error("201 succeeded")
	}
	if (&Response{Status: 200, StatusField: "Success"}).Success() {
		t.Error("status Success (capital) succeeded")
	}
	if !(&Response{Status: 200, StatusField: "success"}).Success() {
		t.Error("200 success failed")
	}
}

// FuzzParseBody: no body, however broken, may panic the client.
func FuzzParseBody(f *testing.F) {
	for _, s := range []string{`{"status":"success"}`, `<xml><status>success</status></xml>`, "\xff\xfe<\x00x", `{"error":{"code":[1]}}`,
		`<?xml version="1.0" encoding="UTF-16"?><xml/>`, `<?xml version="1.0" encoding="nonsense"?><xml/>`, `<a xmlns:p="u"><p:status>x</p:status></a>`} {
		f.Add("application/json", []byte(s))
		f.Add("application/xml", []byte(s))
		f.Add("", []byte(s))
	}
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		r := &Response{ContentType: ct, Body: body}
		r.parseBody()
		if r.ParseError != "" && (r.StatusField != "" || r.ErrorCode != "") {
			t.Fatalf("fields read from a body that did not parse: %+v", r)
		}
	})
}

// TestParseBodyRandom runs random and mangled bodies on every test run, not
// only under go test -fuzz.
func TestParseBodyRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	seeds := [][]byte{[]byte(`{"status":"error","error":{"code":"x","field":"y","message":"z"}}`),
		[]byte(`<?xml version="1.0"?><xml><status>error</status><error><code>x</code></error></xml>`)}
	for i := 0; i < 5000; i++ {
		b := bytes.Clone(seeds[i%2])
		for j := rng.Intn(5); j >= 0; j-- {
			b[rng.Intn(len(b))] = byte(rng.Intn(256))
		}
		if i%7 == 0 {
			b = b[:rng.Intn(len(b))]
		}
		for _, ct := range []string{"application/json", "application/xml", ""} {
			r := &Response{ContentType: ct, Body: b}
			r.parseBody()
		}
	}
}
