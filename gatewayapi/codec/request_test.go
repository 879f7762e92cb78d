package codec

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

var formats = []device.Format{device.JSON, device.XML}

func mustAppend(t testing.TB, f device.Format, fields ...Field) []byte {
	t.Helper()
	b, err := AppendRequest(nil, f, fields)
	if err != nil {
		t.Fatalf("%s %+v: %v", f, fields, err)
	}
	return b
}

func TestAppendRequestBytes(t *testing.T) {
	fields := []Field{
		{Key: "zeta", Value: "1"},
		{Key: "alpha", Value: `quote " backslash \ tags <b>&amp;</b> 'x'`},
		{Key: "dimming", Value: "50", Kind: Number},
		{Key: "zeta", Value: "again"},
		{Key: "flag", Value: "true", Kind: JSONValue},
		{Key: "nothing", Kind: Null},
		{Key: "raw", Value: "-1.5e1", Kind: Raw},
		{Key: "name", Value: "Küche\n\t☃"},
	}
	for _, c := range []struct {
		f    device.Format
		want string
	}{
		{0, `{"control":{"zeta":"1","alpha":"quote \" backslash \\ tags <b>&amp;</b> 'x'","dimming":50,"zeta":"again",` +
			`"flag":true,"nothing":null,"raw":-1.5e1,"name":"Küche\n\t☃"}}`},
		{device.JSON, `{"control":{"zeta":"1","alpha":"quote \" backslash \\ tags <b>&amp;</b> 'x'","dimming":50,"zeta":"again",` +
			`"flag":true,"nothing":null,"raw":-1.5e1,"name":"Küche\n\t☃"}}`},
		{device.XML, `<?xml version="1.0" encoding="UTF-8"?><xml><control><zeta>1</zeta>` +
			`<alpha>quote &#34; backslash \ tags &lt;b&gt;&amp;amp;&lt;/b&gt; &#39;x&#39;</alpha><dimming>50</dimming>` +
			`<zeta>again</zeta><flag>true</flag><nothing></nothing><raw>-1.5e1</raw><name>Küche&#xA;&#x9;☃</name></control></xml>`},
	} {
		if got := string(mustAppend(t, c.f, fields...)); got != c.want {
			t.Errorf("format %d:\n got %s\nwant %s", c.f, got, c.want)
		}
	}
	// Raw XML content is written as it is.
	if got := string(mustAppend(t, device.XML, Field{Key: "a", Value: "<b>1</b>&x;", Kind: Raw})); !strings.Contains(got, "<a><b>1</b>&x;</a>") {
		t.Errorf("raw XML: %s", got)
	}
	// Appends to what dst holds.
	b, err := AppendRequest([]byte("POST\n"), device.JSON, nil)
	if err != nil || string(b) != `POST`+"\n"+`{"control":{}}` {
		t.Errorf("append: %q %v", b, err)
	}
	if got := string(mustAppend(t, device.XML)); got != xmlHead+xmlTail {
		t.Errorf("empty XML: %s", got)
	}
}

func TestAppendJSONControlIsTheBodysObject(t *testing.T) {
	fields := []Field{{Key: "a", Value: "<\"x\">"}, {Key: "n", Value: "1", Kind: Number}, {Key: "a", Kind: Null}}
	obj, err := AppendJSONControl([]byte("x"), fields)
	if want := `{"control":` + string(obj[1:]) + `}`; err != nil || string(obj[:1]) != "x" || string(mustAppend(t, device.JSON, fields...)) != want {
		t.Errorf("object %s (%v) is not the body's %s", obj, err, mustAppend(t, device.JSON, fields...))
	}
	if b, err := AppendJSONControl([]byte("x"), []Field{{Key: "n", Value: "x", Kind: Number}}); err == nil || string(b) != "x" {
		t.Errorf("bad number: %q %v", b, err)
	}
	if b, _ := AppendJSONControl(nil, nil); string(b) != "{}" {
		t.Errorf("no fields: %s", b)
	}
}

func TestAppendRequestErrors(t *testing.T) {
	bad := []struct {
		f     device.Format
		field Field
	}{
		{device.JSON, Field{Key: "n", Value: "fifty", Kind: Number}},
		{device.JSON, Field{Key: "n", Value: "", Kind: Number}},
		{device.XML, Field{Key: "n", Value: "01", Kind: Number}},
		{device.JSON, Field{Key: "v", Value: "{", Kind: JSONValue}},
		{device.JSON, Field{Key: "v", Value: "", Kind: JSONValue}},
		{device.JSON, Field{Key: "v", Value: "NaN", Kind: JSONValue}},
		{device.XML, Field{Key: "v", Value: "tru", Kind: JSONValue}},
		{device.JSON, Field{Key: "k", Value: "x", Kind: Raw + 1}},
		{device.XML, Field{Key: "k", Value: "x", Kind: Raw + 1}},
	}
	for _, key := range []string{"", "cooling point", "1st", "-a", ".a", "a<b", "a/b", "a=b", "a>", "a&b", "a\x00",
		"a:b:c", "é ", "é x", "é/", "é>", "a\xff", "\xff", "☃", "a☃", "é\n"} {
		bad = append(bad, struct {
			f     device.Format
			field Field
		}{device.XML, Field{Key: key, Value: "1"}})
	}
	for _, c := range bad {
		dst := []byte("kept")
		got, err := AppendRequest(dst, c.f, []Field{{Key: "ok", Value: "1"}, c.field})
		if err == nil {
			t.Errorf("%s %+v: want an error, got %s", c.f, c.field, got)
		} else if string(got) != "kept" {
			t.Errorf("%s %+v: dst after the error is %q", c.f, c.field, got)
		}
	}
	for _, key := range []string{"a", "Relay1", "cooling_point", "_x", "x-y.z", "ns:x-y.z", ":a", "a:", "é", "aé", "Küche", "a·b", "日本"} {
		if _, err := AppendRequest(nil, device.XML, []Field{{Key: key, Value: "1"}}); err != nil {
			t.Errorf("XML name %q refused: %v", key, err)
		}
	}
	// JSON keys are strings: anything goes.
	for _, key := range []string{"", "cooling point", "a<b", "1st", "\xff"} {
		if _, err := AppendRequest(nil, device.JSON, []Field{{Key: key, Value: "1"}}); err != nil {
			t.Errorf("JSON key %q refused: %v", key, err)
		}
	}
}

// oddStrings are the escaping edge cases of both formats.
var oddStrings = []string{
	"", " ", "  x  ", "plain", `quo"te`, `back\slash`, `\"`, "'apos'", "<tag>", "a&b", "&amp;", "&#65;", "]]>", "<![CDATA[x]]>",
	"<!-- c -->", "tab\tnew\nline\rcr", "\r\n", "\n", "\x00", "\x01\x1f", "\x7f", "\b\f", "Zoë ☃ 𝄞", "日本語",
	"\u2028\u2029", "a\u2028b", "bad\xffutf8", "\xff", "\xc0\xb4", "\xed\xa0\x80", "\xe2\x82", "\ufffd", "\ufffe\uffff",
	"\U0010ffff", "\u0085", "\u00a0", "{\"a\":1}", "null", "true", "-0", strings.Repeat("x", 1000), strings.Repeat("<&>", 100),
}

// wantRead is what the server reads for a string value s written in format
// f: invalid UTF-8 as U+FFFD, and in XML also every character outside
// XML's Char production (spelled out here from the specification).
func wantRead(f device.Format, s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if r == utf8.RuneError && n == 1 {
			r = utf8.RuneError
		}
		if f == device.XML && !(r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF ||
			r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}

// checkRoundTrip encodes fields in f and decodes the body with the
// server's decoder, which must read the same keys, kinds and values.
func checkRoundTrip(t *testing.T, f device.Format, fields []Field) {
	t.Helper()
	body, err := AppendRequest(nil, f, fields)
	if err != nil {
		t.Fatalf("%s %q: %v", f, fields, err)
	}
	pairs, derr := Decode(f, body)
	if derr != nil {
		t.Fatalf("%s %q: the server refuses\n%s\n%v", f, fields, body, derr)
	}
	if len(pairs) != len(fields) {
		t.Fatalf("%s: %d fields read as %d pairs from\n%s", f, len(fields), len(pairs), body)
	}
	for i, fd := range fields {
		p := pairs[i]
		wantKey, want := fd.Key, device.Value{Text: wantRead(f, fd.Value), Kind: device.String}
		if f == device.JSON {
			wantKey = wantRead(f, fd.Key)
			switch fd.Kind {
			case Number:
				want.Kind = device.Number
			case Null:
				want = device.Value{Text: "null", Kind: device.Other}
			}
		} else if fd.Kind == Null {
			want.Text = ""
		}
		if p.Key != wantKey || p.Value != want {
			t.Errorf("%s field %d %q=%q (kind %d) reads %q=%+v, want %q=%+v\nbody %s", f, i, fd.Key, fd.Value, fd.Kind,
				p.Key, p.Value, wantKey, want, body)
		}
	}
	// The standard library's readers agree with the fast ones.
	slow, serr := decodeJSON(body)
	if f == device.XML {
		slow, serr = decodeXML(body, device.RefuseOpen)
	}
	if serr != nil || pairsText(slow) != pairsText(pairs) {
		t.Errorf("%s: fast and slow decoders differ on %s: %v", f, body, serr)
	}
}

func TestAppendRequestDecodesToTheSameFields(t *testing.T) {
	for _, f := range formats {
		for _, s := range oddStrings {
			checkRoundTrip(t, f, []Field{{Key: "name", Value: s}, {Key: "sn", Value: "0123"}})
		}
		// Every odd string at once, with duplicates, in order.
		var all []Field
		for _, s := range oddStrings {
			all = append(all, Field{Key: "v", Value: s}, Field{Key: "w", Value: s})
		}
		checkRoundTrip(t, f, all)
		checkRoundTrip(t, f, []Field{{Key: "Küche", Value: "1"}, {Key: "a·b", Value: "2"}, {Key: "x-y.z", Value: "3"}})
		checkRoundTrip(t, f, []Field{{Key: "n", Value: "-1.5e+3", Kind: Number}, {Key: "z", Kind: Null}, {Key: "n", Value: "0", Kind: Number}})
		checkRoundTrip(t, f, nil)
	}
	checkRoundTrip(t, device.JSON, []Field{{Key: "cooling point", Value: "26.5"}, {Key: `k"\<&>` + "\x01\u2028\xff", Value: "1"}})
	// A JSON value reads as the server reads it.
	for _, c := range []struct{ v, json, xml string }{{"true", "a boolean", "true"}, {"null", "null", "null"}, {`"s<"`, "s<", `"s<"`}} {
		for _, f := range formats {
			pairs, err := Decode(f, mustAppend(t, f, Field{Key: "v", Value: c.v, Kind: JSONValue}))
			want := c.json
			if f == device.XML {
				want = c.xml
			}
			if err != nil || len(pairs) != 1 || pairs[0].Value.Text != want {
				t.Errorf("%s JSON value %s: %+v %v", f, c.v, pairs, err)
			}
		}
	}
	// A prefixed XML name reads as its local part.
	pairs, err := Decode(device.XML, mustAppend(t, device.XML, Field{Key: "ns:a", Value: "1"}))
	if err != nil || len(pairs) != 1 || pairs[0].Key != "a" {
		t.Errorf("ns:a: %+v %v", pairs, err)
	}
}

// stdJSON is encoding/json's spelling of s with HTML escaping off.
func stdJSON(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// stdXML is xml.EscapeText's spelling of s.
func stdXML(s string) string {
	var b bytes.Buffer
	if err := xml.EscapeText(&b, []byte(s)); err != nil {
		panic(err)
	}
	return b.String()
}

// checkAgainstStd holds the encoder's strings, numbers and names to the
// standard library's, and the body to the server's decoder.
func checkAgainstStd(t *testing.T, s string) {
	t.Helper()
	if got, want := string(appendJSONString(nil, s)), stdJSON(s); got != want {
		t.Fatalf("JSON %q: got %s, encoding/json %s", s, got, want)
	}
	if got, want := string(appendXMLText(nil, s)), stdXML(s); got != want {
		t.Fatalf("XML %q: got %s, xml.EscapeText %s", s, got, want)
	}
	_, err := json.Marshal(json.Number(s))
	if got, want := isJSONNumber(s), s != "" && err == nil; got != want {
		t.Fatalf("isJSONNumber(%q) = %v, encoding/json says %v", s, got, want)
	}
	if got, want := isXMLName(s), xmlReadsName(s); got != want {
		t.Fatalf("isXMLName(%q) = %v, encoding/xml says %v", s, got, want)
	}
	for _, f := range formats {
		checkRoundTrip(t, f, []Field{{Key: "a", Value: s}, {Key: "a", Value: s + s}})
	}
}

func FuzzAppendRequestString(f *testing.F) {
	for _, s := range oddStrings {
		f.Add(s)
	}
	for _, s := range []string{"0", "-0.5", "1e9", "1E+2", "01", "1.", ".5", "-", "1e", "1e+", "+1", "0x1", "a", "a-1", "_:b"} {
		f.Add(s)
	}
	f.Fuzz(checkAgainstStd)
}

// TestAppendRequestMatchesStd is the fuzz property over strings drawn from
// the pieces escaping cares about, so that plain go test explores too.
func TestAppendRequestMatchesStd(t *testing.T) {
	pieces := []string{"a", "Z", "0", "9", "-", ".", "_", ":", "e", "E", "+", " ", `"`, `\`, "'", "<", ">", "&", ";", "#", "\t", "\n", "\r",
		"\x00", "\x01", "\x1f", "\x7f", "\u0080", "é", "☃", "𝄞", "\u2028", "\u2029", "\ufffd", "\ufffe", "\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80", "]]>"}
	rng := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for range n {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		checkAgainstStd(t, b.String())
	}
}

func TestAppendRequestAllocatesNothing(t *testing.T) {
	fields := []Field{
		{Key: "api_key", Value: "key-a"}, {Key: "name", Value: `Hall "<&>" ☃ ` + "\t\u2028\xff"},
		{Key: "dimming", Value: "50", Kind: Number}, {Key: "z", Kind: Null}, {Key: "r", Value: "1", Kind: Raw},
		{Key: "o", Value: `{"a":[1,2,"` + strings.Repeat("x", 100) + `"]}`, Kind: JSONValue},
	}
	for _, f := range formats {
		buf := make([]byte, 0, 1024)
		// The fewest of three counts: the JSON value's check (json.Valid)
		// takes a scanner from encoding/json's sync.Pool, which under the
		// race detector (make test) drops a quarter of what is put back,
		// so that some calls make a new scanner: one count of 100 calls in
		// about 30 then averaged an allocation a body (19 of 600 counts,
		// -race -count=300; a fresh clone's make test failed on it). An
		// allocation of AppendRequest's own shows in every count.
		n := math.Inf(1)
		for range 3 {
			n = min(n, testing.AllocsPerRun(100, func() {
				var err error
				if buf, err = AppendRequest(buf[:0], f, fields); err != nil {
					t.Fatal(err)
				}
			}))
		}
		if n != 0 {
			t.Errorf("%s: %v allocations per body", f, n)
		}
	}
}

func BenchmarkAppendRequest(b *testing.B) {
	fields := []Field{
		{Key: "api_key", Value: "key-a"}, {Key: "timestamp", Value: "20240101000000"},
		{Key: "sign", Value: "0123456789abcdef0123456789abcdef"}, {Key: "myservice_id", Value: "a1a1a1a1a1a1a1a1a1a1a1a1"},
		{Key: "mac", Value: "a4c138f0e2b1"}, {Key: "sn", Value: "a00000000000000000000000000000000"},
		{Key: "type", Value: "Light Dimmer"}, {Key: "dimming", Value: "50"},
	}
	for _, f := range formats {
		b.Run(f.String(), func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = AppendRequest(buf[:0], f, fields)
			}
		})
	}
}
