package codec

import (
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

func TestFormatOf(t *testing.T) {
	for ct, want := range map[string]device.Format{
		"application/json":                  device.JSON,
		"application/json; charset=utf-8":   device.JSON,
		"Application/JSON;Charset=UTF-8":    device.JSON,
		"application/xml":                   device.XML,
		"text/xml":                          device.XML,
		`application/xml; charset="utf-8"`:  device.XML,
		"application/xml; charset=us-ascii": device.XML,
		"":                                  0,
		"  ":                                0,
		"text/plain":                        0,
		"application/json+xml":              0,
		"application/problem+json":          0,
		"application/json; charset=latin1":  0,
		"application/json;;":                0,
		"/":                                 0,
	} {
		got, err := FormatOf(ct)
		if got != want || (want == 0) != (err != nil) {
			t.Errorf("FormatOf(%q) = %v, %v; want %v", ct, got, err, want)
		}
		if err != nil && (err.Code != device.CodeUnsupportedMediaType || err.Field != "Content-Type") {
			t.Errorf("FormatOf(%q): %v", ct, err)
		}
	}
}

func pairsText(ps []device.Pair) string {
	var b strings.Builder
	for _, p := range ps {
		k := "s"
		switch p.Value.Kind {
		case device.Number:
			k = "n"
		case device.Other:
			k = "o"
		}
		b.WriteString(p.Key + "=" + k + ":" + p.Value.Text + ";")
	}
	return b.String()
}

func TestDecodeJSON(t *testing.T) {
	ok := []struct{ body, want string }{
		{`{"control":{"a":"x","cooling point":26.5,"n":-1e2,"t":true,"z":null}}`,
			`a=s:x;cooling point=n:26.5;n=n:-1e2;t=o:a boolean;z=o:null;`},
		{` {"control" : {} } `, ``},
		{`{"control":{"big":` + strings.Repeat("9", 1000) + `}}`, `big=n:` + strings.Repeat("9", 1000) + `;`},
		{`{"control":{"u":"\u00fc\n"}}`, "u=s:ü\n;"},
		{`{"control":{"a":"1","a":"2"}}`, `a=s:1;a=s:2;`}, // duplicates are the parser's to refuse
	}
	for _, tc := range ok {
		ps, err := Decode(device.JSON, []byte(tc.body))
		if err != nil || pairsText(ps) != tc.want {
			t.Errorf("Decode(%.60s) = %q, %v; want %q", tc.body, pairsText(ps), err, tc.want)
		}
	}
	bad := []struct{ body, code, field string }{
		{``, device.CodeMalformedBody, ""},
		{`{"control":{"a":NaN}}`, device.CodeMalformedBody, ""},
		{`{"control":{"a":Infinity}}`, device.CodeMalformedBody, ""},
		{`{"control":{"a":-Infinity}}`, device.CodeMalformedBody, ""},
		{`{"control":{"a":01}}`, device.CodeMalformedBody, ""},
		{`{"control":{"a":1.}}`, device.CodeMalformedBody, ""},
		{`{"control":{"a":"1"}`, device.CodeMalformedBody, ""},
		{`{"control":{"a":"1"}}}`, device.CodeMalformedBody, ""},
		{`{"control":{"a":"1"}}{}`, device.CodeMalformedBody, ""},
		{`{"control":{}, "control":{}}`, device.CodeMalformedBody, ""},
		{`{"control":[]}`, device.CodeMalformedBody, "control"},
		{`{"control":1}`, device.CodeMalformedBody, "control"},
		{`[{"control":{}}]`, device.CodeMalformedBody, ""},
		{`null`, device.CodeMalformedBody, ""},
		{`{}`, device.CodeMissingField, "control"},
		{`{"Control":{}}`, device.CodeUnexpectedField, "Control"},
		{`{"control":{"a":{"b":1}}}`, device.CodeInvalidField, "a"},
		{`{"control":{"a":["b"]}}`, device.CodeInvalidField, "a"},
		{"{\"control\":{\"a\":\"\xff\"}}", device.CodeMalformedBody, ""},
	}
	for _, tc := range bad {
		ps, err := Decode(device.JSON, []byte(tc.body))
		if err == nil || err.Code != tc.code || err.Field != tc.field || err.Message == "" {
			t.Errorf("Decode(%.60s) = %v, %v; want %s (%s)", tc.body, pairsText(ps), err, tc.code, tc.field)
		}
	}
}

// TestDecodeRefusesNestingEarly: a deeply nested value is refused at its
// first bracket, without walking the rest of it. (Walking it would end in
// encoding/json's depth limit, a malformed_body, not invalid_field.)
func TestDecodeRefusesNestingEarly(t *testing.T) {
	deep := strings.Repeat("[", 1<<20) // never closed
	for _, tc := range []struct {
		format     device.Format
		body, code string
	}{
		{device.JSON, `{"control":{"dimming":` + deep, device.CodeInvalidField},
		{device.JSON, `{"other":` + deep, device.CodeUnexpectedField},
		{device.JSON, deep, device.CodeMalformedBody},
		{device.XML, `<xml><control><dimming>` + strings.Repeat("<a>", 1<<18), device.CodeInvalidField},
		{device.XML, `<xml><other>` + strings.Repeat("<a>", 1<<18), device.CodeUnexpectedField},
	} {
		began := time.Now()
		_, err := Decode(tc.format, []byte(tc.body))
		if err == nil || err.Code != tc.code {
			t.Errorf("%s %.40s: %v, want %s", tc.format, tc.body, err, tc.code)
		}
		if d := time.Since(began); d > 3*time.Second {
			t.Errorf("%s %.40s took %s", tc.format, tc.body, d)
		}
	}
}

func TestDecodeXML(t *testing.T) {
	ok := []struct{ body, want string }{
		{`<?xml version="1.0" encoding="UTF-8"?>` + "\n<xml>\n <control>\n  <a>x</a>\n  <cooling_point> 26.5 </cooling_point>\n </control>\n</xml>\n",
			`a=s:x;cooling_point=s: 26.5 ;`},
		{`<xml><control><a/><b></b></control></xml>`, `a=s:;b=s:;`},
		{`<xml><control><a>&lt;&amp;&gt;&quot;&apos;&#65;</a></control></xml>`, `a=s:<&>"'A;`},
		{`<xml><control><a>x<!-- c -->y<![CDATA[<z>]]></a></control></xml>`, `a=s:xy<z>;`},
		{`<xml><!-- c --><control><?pi x?><a>1</a></control></xml>`, `a=s:1;`},
		{`<xml><control><a x="1">1</a></control></xml>`, `a=s:1;`},
	}
	for _, tc := range ok {
		ps, err := Decode(device.XML, []byte(tc.body))
		if err != nil || pairsText(ps) != tc.want {
			t.Errorf("Decode(%.60s) = %q, %v; want %q", tc.body, pairsText(ps), err, tc.want)
		}
	}
	bad := []struct{ body, code, field string }{
		{``, device.CodeMalformedBody, ""},
		{`<!-- only a comment -->`, device.CodeMalformedBody, ""},
		{`<xml><control><a>1</control></xml>`, device.CodeMalformedBody, ""},
		{`<xml><control><a>1</a></control>`, device.CodeMalformedBody, ""},
		{`<root><control/></root>`, device.CodeMalformedBody, ""},
		{`<xml><control/></xml><xml/>`, device.CodeMalformedBody, ""},
		{`<xml><control/><control/></xml>`, device.CodeMalformedBody, ""},
		{`<xml>x<control/></xml>`, device.CodeMalformedBody, ""},
		{`<xml><control>x<a>1</a></control></xml>`, device.CodeMalformedBody, ""},
		{`<!DOCTYPE xml><xml><control/></xml>`, device.CodeMalformedBody, ""},
		{`<!DOCTYPE xml [<!ENTITY e SYSTEM "file:///etc/passwd">]><xml><control><a>&e;</a></control></xml>`, device.CodeMalformedBody, ""},
		{`<xml><control><a>&e;</a></control></xml>`, device.CodeMalformedBody, ""},
		{`<?xml version="1.0" encoding="ISO-8859-1"?><xml><control/></xml>`, device.CodeMalformedBody, ""},
		{"<xml><control><a>\x01</a></control></xml>", device.CodeMalformedBody, ""},
		{`<xml></xml>`, device.CodeMissingField, "control"},
		{`<xml><status/></xml>`, device.CodeUnexpectedField, "status"},
		{`<xml><control><a><b>1</b></a></control></xml>`, device.CodeInvalidField, "a"},
	}
	for _, tc := range bad {
		ps, err := Decode(device.XML, []byte(tc.body))
		if err == nil || err.Code != tc.code || err.Field != tc.field || err.Message == "" {
			t.Errorf("Decode(%.60s) = %v, %v; want %s (%s)", tc.body, pairsText(ps), err, tc.code, tc.field)
		}
	}
}

func TestResponses(t *testing.T) {
	if got := string(Success(device.JSON)); got != `{"status":"success"}` {
		t.Errorf("JSON success %s", got)
	}
	if got := string(Success(device.XML)); got != `<?xml version="1.0" encoding="UTF-8"?><xml><status>success</status></xml>` {
		t.Errorf("XML success %s", got)
	}
	e := device.Errorf(device.CodeInvalidField, "dimming", "dimming must be an integer from 1 to 100, not %q", "<&>")
	var j struct {
		Status string            `json:"status"`
		Error  map[string]string `json:"error"`
	}
	if err := json.Unmarshal(Error(device.JSON, e), &j); err != nil || j.Status != "error" ||
		j.Error["code"] != e.Code || j.Error["field"] != e.Field || j.Error["message"] != e.Message || len(j.Error) != 3 {
		t.Errorf("JSON error %s: %v", Error(device.JSON, e), err)
	}
	b := string(Error(device.XML, e))
	if !strings.HasPrefix(b, `<?xml version="1.0" encoding="UTF-8"?><xml><status>error</status><error><code>invalid_field</code><field>dimming</field><message>`) {
		t.Errorf("XML error %s", b)
	}
	var x struct {
		XMLName xml.Name `xml:"xml"`
		Status  string   `xml:"status"`
		Code    string   `xml:"error>code"`
		Field   string   `xml:"error>field"`
		Message string   `xml:"error>message"`
	}
	if err := xml.Unmarshal([]byte(b), &x); err != nil || x.Status != "error" || x.Code != e.Code || x.Field != e.Field || x.Message != e.Message {
		t.Errorf("XML error %s: %v %+v", b, err, x)
	}
	if ContentType(device.XML) != "application/xml; charset=utf-8" || ContentType(device.JSON) != "application/json; charset=utf-8" {
		t.Error("ContentType")
	}
}
