package client

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gwdmi/gwtools/gatewayapi/auth"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/fleet"
)

func TestEncodeJSONKeepsOrderDuplicatesAndEscapes(t *testing.T) {
	fields := []Field{
		{Key: "zeta", Value: "1"},
		{Key: "alpha", Value: `quote " backslash \ tags <b>&amp;</b>`},
		{Key: "cooling point", Value: "26.5"},
		{Key: "zeta", Value: "again"},
		{Key: "name", Value: "Küche\n\t☃"},
	}
	got, err := Encode(device.JSON, fields)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"control":{"zeta":"1","alpha":"quote \" backslash \\ tags <b>&amp;</b>","cooling point":"26.5","zeta":"again","name":"Küche\n\t☃"}}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// The order must survive a real JSON reader, not only a string compare.
	dec := json.NewDecoder(bytes.NewReader(got))
	var keys []string
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' {
				depth++
			} else if v == '}' {
				depth--
			}
		case string:
			// Inside control every value is a string, so keys and
			// values alternate.
			if depth == 2 {
				keys = append(keys, v)
			}
		}
	}
	var names []string
	for i := 0; i < len(keys); i += 2 {
		names = append(names, keys[i])
	}
	if strings.Join(names, ",") != "zeta,alpha,cooling point,zeta,name" {
		t.Fatalf("keys read back in order %v", names)
	}
}

func TestEncodeJSONNumberStringAndRaw(t *testing.T) {
	got, err := Encode(device.JSON, []Field{
		{Key: "dimming", Value: json.Number("50")},
		{Key: "code", Value: "2"},
		{Key: "heating point", Value: json.Number("-1.5e1")},
		{Key: "flag", Value: json.RawMessage(`true`)},
		{Key: "nothing", Value: nil},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"control":{"dimming":50,"code":"2","heating point":-1.5e1,"flag":true,"nothing":null}}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	for _, v := range []any{json.Number("fifty"), json.RawMessage(`{`), 50, true} {
		if b, err := Encode(device.JSON, []Field{{Key: "dimming", Value: v}}); err == nil {
			t.Errorf("value %#v: want an error, got body %s", v, b)
		}
	}
}

func TestEncodeZeroFormatIsJSON(t *testing.T) {
	got, err := Encode(0, []Field{{Key: "a", Value: "b"}})
	if err != nil || string(got) != `{"control":{"a":"b"}}` {
		t.Fatalf("got %s, %v", got, err)
	}
}

func TestEncodeXMLKeepsOrderAndEscapes(t *testing.T) {
	fields := []Field{
		{Key: "zeta", Value: "1"},
		{Key: "alpha", Value: `a<b & c>"d" 'e'`},
		{Key: "cooling_point", Value: json.Number("26.5")},
		{Key: "zeta", Value: "again"},
	}
	got, err := Encode(device.XML, fields)
	if err != nil {
		t.Fatal(err)
	}
	want := `<?xml version="1.0" encoding="UTF-8"?><xml><control><zeta>1</zeta>` +
		`<alpha>a&lt;b &amp; c&gt;&#34;d&#34; &#39;e&#39;</alpha><cooling_point>26.5</cooling_point>` +
		`<zeta>again</zeta></control></xml>`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// Read it back: well-formed, same order, same text.
	dec := xml.NewDecoder(bytes.NewReader(got))
	var read []string
	var name string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch v := tok.(type) {
		case xml.StartElement:
			name = v.Name.Local
		case xml.CharData:
			read = append(read, name+"="+string(v))
		}
	}
	wantRead := `zeta=1|alpha=a<b & c>"d" 'e'|cooling_point=26.5|zeta=again`
	if strings.Join(read, "|") != wantRead {
		t.Fatalf("read back %q", strings.Join(read, "|"))
	}
}

func TestEncodeXMLRejectsBadNames(t *testing.T) {
	for _, key := range []string{"cooling point", "", "1st", "a<b", "a/b", "a=b"} {
		if b, err := Encode(device.XML, []Field{{Key: key, Value: "1"}}); err == nil {
			t.Errorf("key %q: want an error, got %s", key, b)
		}
	}
	if _, err := Encode(device.XML, []Field{{Key: "Relay1", Value: "On"}, {Key: "ns:x-y.z", Value: ""}}); err != nil {
		t.Errorf("valid names rejected: %v", err)
	}
}

func TestEnvelopeOrderAndTimestamp(t *testing.T) {
	loc := time.FixedZone("X", 2*3600)
	now := time.Date(2024, 2, 29, 23, 30, 5, 0, time.UTC)
	f := (*Client)(nil).Envelope(fleet.APIKey{Key: "k", Secret: "s"}, "acc", "mac", now, loc)
	var keys []string
	for _, x := range f {
		keys = append(keys, x.Key)
	}
	if strings.Join(keys, ",") != strings.Join(device.EnvelopeFields, ",") {
		t.Fatalf("keys %v", keys)
	}
	if f[0].Value != "k" || f[3].Value != "acc" || f[4].Value != "mac" {
		t.Fatalf("values %v", f)
	}
	if f[1].Value != "20240301013005" || f[1].Value != auth.Timestamp(now, loc) {
		t.Fatalf("timestamp %v", f[1].Value)
	}
	if f[2].Value != SignPlaceholder || len(SignPlaceholder) != 32 {
		t.Fatalf("sign %v", f[2].Value)
	}
}

// oldEncode is the client's encoder before codec.AppendRequest replaced it,
// on encoding/json and encoding/xml: the bytes on the wire (and so signed
// bodies, curl lines and reports) must not change.
func oldEncode(format device.Format, fields []Field) []byte {
	str := func(v any) string {
		var tmp bytes.Buffer
		enc := json.NewEncoder(&tmp)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			panic(err)
		}
		return strings.TrimSuffix(tmp.String(), "\n")
	}
	var b bytes.Buffer
	if format == device.XML {
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><xml><control>`)
		for _, f := range fields {
			text, _ := valueText(f.Value)
			b.WriteString("<" + f.Key + ">")
			xml.EscapeText(&b, []byte(text))
			b.WriteString("</" + f.Key + ">")
		}
		b.WriteString(`</control></xml>`)
		return b.Bytes()
	}
	b.WriteString(`{"control":{`)
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(str(f.Key) + ":")
		switch v := f.Value.(type) {
		case json.RawMessage:
			b.Write(v)
		case nil:
			b.WriteString("null")
		default:
			b.WriteString(str(v))
		}
	}
	b.WriteString(`}}`)
	return b.Bytes()
}

func TestEncodeWritesWhatItAlwaysWrote(t *testing.T) {
	odd := []string{"", "plain", `quo"te`, `back\slash`, "tab\tnew\nline\rcr", "\x00\x01\x1f\x7f", "<&>'", "&amp;", "Zoë ☃ 𝄞",
		"\u2028\u2029", "bad\xffutf8", "\ufffd\ufffe", "\b\f", "]]>"}
	for _, format := range []device.Format{device.JSON, device.XML} {
		for _, v := range odd {
			fields := []Field{{Key: "name", Value: v}, {Key: "sn", Value: "0123"}, {Key: "name", Value: v + v}}
			if format == device.JSON {
				fields = append(fields, Field{Key: v, Value: "k"})
			}
			got, err := Encode(format, fields)
			if err != nil {
				t.Fatal(err)
			}
			if want := oldEncode(format, fields); !bytes.Equal(got, want) {
				t.Errorf("%s %q:\n got %s\nwant %s", format, v, got, want)
			}
		}
		other := []Field{{Key: "dimming", Value: json.Number("50")}, {Key: "e", Value: json.Number("")},
			{Key: "t", Value: json.RawMessage(` true `)}, {Key: "o", Value: json.RawMessage(`{"a":"<b>"}`)}, {Key: "z", Value: nil}}
		got, err := Encode(format, other)
		if err != nil {
			t.Fatal(err)
		}
		if want := oldEncode(format, other); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", format, got, want)
		}
		obj, err := jsonObject(other)
		if want := oldEncode(device.JSON, other); err != nil || `{"control":`+string(obj)+`}` != string(want) {
			t.Errorf("the signers' object %s, want the body's %s (%v)", obj, want, err)
		}
	}
}
