package codec

import (
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// The fuzz targets below hold the decoders to what the rest of the
// simulator relies on, for any body whatever:
//
//   - they never panic, and refuse with one of the codec's own error codes
//     and a message;
//   - what they accept is valid UTF-8 and reads back the same after being
//     written out again (so nothing depends on how a body was spelled);
//   - the fast readers (fast.go) give exactly the pairs of the standard ones
//     whenever they accept a body;
//   - the error answer for any rejection parses in its format.
//
// Seeds: testdata/fuzz/FuzzDecodeJSON and FuzzDecodeXML (the published
// examples with their placeholders filled in, hostile bodies, and every
// body that once broke a rule here). `go test` runs the seeds; `make fuzz`
// explores.

// decodeCodes are the codes Decode may refuse a body with.
var decodeCodes = map[string]bool{
	device.CodeMalformedBody:   true,
	device.CodeUnexpectedField: true,
	device.CodeMissingField:    true,
	device.CodeInvalidField:    true,
}

func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"control":{"a":"x","cooling point":26.5,"n":-1e2,"t":true,"z":null}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkDecode(t, device.JSON, body)
		if pairs, ok := fastJSON(body); ok && utf8.Valid(body) {
			slow, err := decodeJSON(body)
			if err != nil {
				t.Fatalf("fastJSON accepts %q, decodeJSON refuses it: %v", body, err)
			}
			if pairsText(pairs) != pairsText(slow) {
				t.Fatalf("fastJSON %q\n  = %s\n  decodeJSON = %s", body, pairsText(pairs), pairsText(slow))
			}
		}
	})
}

func FuzzDecodeXML(f *testing.F) {
	f.Add([]byte(`<xml><control><a>&lt;&amp;&gt;&quot;&apos;&#65;</a></control></xml>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkDecode(t, device.XML, body)
		if pairs, ok := fastXML(body); ok && utf8.Valid(body) {
			slow, err := decodeXML(body, device.RefuseOpen)
			if err != nil {
				t.Fatalf("fastXML accepts %q, decodeXML refuses it: %v", body, err)
			}
			if pairsText(pairs) != pairsText(slow) {
				t.Fatalf("fastXML %q\n  = %s\n  decodeXML = %s", body, pairsText(pairs), pairsText(slow))
			}
		}
	})
}

// checkDecode decodes body and checks the properties common to both
// formats.
func checkDecode(t *testing.T, f device.Format, body []byte) {
	t.Helper()
	pairs, err := Decode(f, body)
	if err != nil {
		if pairs != nil {
			t.Fatalf("Decode(%q) returned pairs and an error", body)
		}
		if !decodeCodes[err.Code] || err.Message == "" {
			t.Fatalf("Decode(%q): error %+v", body, err)
		}
		checkErrorBody(t, f, err)
		return
	}
	for _, p := range pairs {
		if !utf8.ValidString(p.Key) || !utf8.ValidString(p.Value.Text) {
			t.Fatalf("Decode(%q): pair %q=%q is not valid UTF-8", body, p.Key, p.Value.Text)
		}
		if p.Value.Kind < device.String || p.Value.Kind > device.Other {
			t.Fatalf("Decode(%q): pair %q has kind %d", body, p.Key, p.Value.Kind)
		}
	}
	// Written out again, the pairs read back the same.
	again := encodePairs(t, f, pairs)
	back, err := Decode(f, again)
	if err != nil {
		t.Fatalf("Decode(%q) = %s, but written out again as %q: %v", body, pairsText(pairs), again, err)
	}
	if pairsText(back) != pairsText(pairs) {
		t.Fatalf("Decode(%q) = %s, written out again %q reads %s", body, pairsText(pairs), again, pairsText(back))
	}
}

// encodePairs writes pairs as a body of format f with AppendRequest: a
// JSON number, true or null as the literal it was.
func encodePairs(t *testing.T, f device.Format, pairs []device.Pair) []byte {
	t.Helper()
	fields := make([]Field, len(pairs))
	for i, p := range pairs {
		switch {
		case p.Value.Kind == device.Number:
			fields[i] = Field{Key: p.Key, Value: p.Value.Text, Kind: Number}
		case p.Value.Kind == device.Other && p.Value.Text == "null":
			fields[i] = Field{Key: p.Key, Kind: Null}
		case p.Value.Kind == device.Other:
			fields[i] = Field{Key: p.Key, Value: "true", Kind: JSONValue}
		default:
			fields[i] = Field{Key: p.Key, Value: p.Value.Text}
		}
	}
	b, err := AppendRequest(nil, f, fields)
	if err != nil {
		t.Fatalf("pairs %s cannot be written out again: %v", pairsText(pairs), err)
	}
	return b
}

// checkErrorBody checks that the answer to a rejection parses in its
// format and carries the code and field.
func checkErrorBody(t *testing.T, f device.Format, e *device.Error) {
	t.Helper()
	body := Error(f, e)
	var status, code, field, message string
	if f == device.XML {
		var x struct {
			XMLName xml.Name `xml:"xml"`
			Status  string   `xml:"status"`
			Code    string   `xml:"error>code"`
			Field   string   `xml:"error>field"`
			Message string   `xml:"error>message"`
		}
		if err := xml.Unmarshal(body, &x); err != nil {
			t.Fatalf("the XML answer to %v does not parse: %v\n%s", e, err, body)
		}
		status, code, field, message = x.Status, x.Code, x.Field, x.Message
	} else {
		var j struct {
			Status string `json:"status"`
			Error  struct {
				Code, Field, Message string
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &j); err != nil {
			t.Fatalf("the JSON answer to %v does not parse: %v\n%s", e, err, body)
		}
		status, code, field, message = j.Status, j.Error.Code, j.Error.Field, j.Error.Message
	}
	if status != "error" || code != e.Code || message == "" {
		t.Fatalf("the %s answer to %v reads status %q code %q message %q", f, e, status, code, message)
	}
	// The field comes back as sent, unless it holds characters the format
	// cannot carry (then they are replaced, not dropped).
	if field != e.Field && strings.Map(xmlSafe, e.Field) == e.Field && utf8.ValidString(e.Field) {
		t.Fatalf("the %s answer to %v reads field %q", f, e, field)
	}
}

// xmlSafe maps runes XML 1.0 cannot carry to -1 (dropped), so a field
// that changes under it is one the XML answer had to rewrite.
func xmlSafe(r rune) rune {
	if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF {
		return r
	}
	return -1
}
