package simulator_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/simulator"
	"github.com/gwdmi/gwtools/simulator/simtest"
)

// raw is a request written byte by byte.
type raw struct {
	name        string
	method      string // POST when empty
	path        string // send command when empty
	contentType string
	body        func(c *simtest.Client) []byte
	format      device.Format // of the answer
	out         outcome
}

func runRaw(t *testing.T, c *simtest.Client, cases []raw) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method, path := tc.method, tc.path
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = device.SendCommand.Path()
			}
			var r *simtest.Response
			expect(t, c, tc.format, func() *simtest.Response {
				var body []byte
				if tc.body != nil {
					body = tc.body(c)
				}
				r = c.Do(method, path, tc.contentType, body)
				return r
			}, tc.out)
			if tc.out.status == http.StatusMethodNotAllowed && r.Header.Get("Allow") != http.MethodPost {
				t.Errorf("405 without Allow: POST (Allow: %q)", r.Header.Get("Allow"))
			}
		})
	}
}

// dimBody is a valid command that sets the dimmer to 42.
func dimBody(format device.Format) func(c *simtest.Client) []byte {
	return func(c *simtest.Client) []byte {
		return simtest.Body(format, c.Command(snOf(dimmer), dimmer, S("dimming", "42")))
	}
}

// edit rewrites a valid body.
func edit(format device.Format, fn func(string) string) func(c *simtest.Client) []byte {
	return func(c *simtest.Client) []byte { return []byte(fn(string(dimBody(format)(c)))) }
}

func literalBody(s string) func(*simtest.Client) []byte {
	return func(*simtest.Client) []byte { return []byte(s) }
}

// padTo pads a body with spaces (before its last byte) to n bytes.
func padTo(n int, body func(*simtest.Client) []byte) func(*simtest.Client) []byte {
	return func(c *simtest.Client) []byte {
		b := body(c)
		pad := bytes.Repeat([]byte(" "), n-len(b))
		return append(append(append([]byte{}, b[:len(b)-1]...), pad...), b[len(b)-1])
	}
}

const (
	ctJSON = "application/json"
	ctXML  = "application/xml"
)

func TestContentType(t *testing.T) {
	t.Parallel()
	_, c := start(t, simulator.Options{})
	set42 := ok(setState(dimmer, "dimming", 42.0))
	media := rejected(415, device.CodeUnsupportedMediaType, "Content-Type")
	runRaw(t, c, []raw{
		{name: "missing", body: dimBody(device.JSON), format: device.JSON, out: media},
		{name: "text/plain", contentType: "text/plain", body: dimBody(device.JSON), format: device.JSON, out: media},
		{name: "form", contentType: "application/x-www-form-urlencoded", body: dimBody(device.JSON), format: device.JSON, out: media},
		{name: "not a media type", contentType: "json", body: dimBody(device.JSON), format: device.JSON, out: media},
		{name: "latin-1 charset", contentType: ctJSON + "; charset=iso-8859-1", body: dimBody(device.JSON), format: device.JSON, out: media},
		{name: "XML body declared JSON", contentType: ctJSON, body: dimBody(device.XML), format: device.JSON,
			out: bad(device.CodeMalformedBody, "")},
		{name: "JSON body declared XML", contentType: ctXML, body: dimBody(device.JSON), format: device.XML,
			out: bad(device.CodeMalformedBody, "")},
		{name: "text/xml", contentType: "text/xml", body: dimBody(device.XML), format: device.XML, out: set42},
		{name: "json charset", contentType: "application/json; charset=utf-8", body: dimBody(device.JSON), format: device.JSON, out: set42},
		{name: "xml charset", contentType: "application/xml;charset=UTF-8", body: dimBody(device.XML), format: device.XML, out: set42},
		{name: "text/xml charset", contentType: `text/xml; charset="utf-8"`, body: dimBody(device.XML), format: device.XML, out: set42},
		{name: "upper case", contentType: "Application/JSON", body: dimBody(device.JSON), format: device.JSON, out: set42},
	})
}

func TestMalformedBodies(t *testing.T) {
	t.Parallel()
	_, c := start(t, simulator.Options{})
	malformed := bad(device.CodeMalformedBody, "")
	controlJSON := func(c *simtest.Client) string {
		s := string(dimBody(device.JSON)(c))
		return strings.TrimSuffix(strings.TrimPrefix(s, `{"control":`), "}")
	}
	controlXML := func(c *simtest.Client) string {
		s := string(dimBody(device.XML)(c))
		return s[strings.Index(s, "<control>") : strings.Index(s, "</control>")+len("</control>")]
	}
	deep := strings.Repeat("[", 60000)
	deepXML := strings.Repeat("<a>", 10000)
	var cases []raw
	js := func(name string, body func(*simtest.Client) []byte, o outcome) {
		cases = append(cases, raw{name: "json/" + name, contentType: ctJSON, body: body, format: device.JSON, out: o})
	}
	xs := func(name string, body func(*simtest.Client) []byte, o outcome) {
		cases = append(cases, raw{name: "xml/" + name, contentType: ctXML, body: body, format: device.XML, out: o})
	}
	js("empty", literalBody(""), malformed)
	js("spaces", literalBody("  \n"), malformed)
	js("not JSON", literalBody("dimming=42"), malformed)
	js("cut short", edit(device.JSON, func(s string) string { return s[:len(s)-2] }), malformed)
	js("trailing comma", edit(device.JSON, func(s string) string { return strings.Replace(s, `"42"`, `"42",`, 1) }), malformed)
	js("data after the object", edit(device.JSON, func(s string) string { return s + ` {}` }), malformed)
	js("array", func(c *simtest.Client) []byte { return []byte("[" + string(dimBody(device.JSON)(c)) + "]") }, malformed)
	js("string", literalBody(`"control"`), malformed)
	js("control a string", literalBody(`{"control":"dimming=42"}`), rejected(400, device.CodeMalformedBody, "control"))
	js("control null", literalBody(`{"control":null}`), rejected(400, device.CodeMalformedBody, "control"))
	js("NaN literal", edit(device.JSON, func(s string) string { return strings.Replace(s, `"42"`, `NaN`, 1) }), malformed)
	js("Infinity literal", edit(device.JSON, func(s string) string { return strings.Replace(s, `"42"`, `Infinity`, 1) }), malformed)
	js("invalid UTF-8", edit(device.JSON, func(s string) string { return strings.Replace(s, `"42"`, "\"4\xff2\"", 1) }), malformed)
	js("without control", literalBody(`{}`), bad(device.CodeMissingField, "control"))
	js("another member", literalBody(`{"command":{}}`), bad(device.CodeUnexpectedField, "command"))
	js("another member beside control", func(c *simtest.Client) []byte {
		return []byte(`{"control":` + controlJSON(c) + `,"extra":1}`)
	}, bad(device.CodeUnexpectedField, "extra"))
	js("control twice", func(c *simtest.Client) []byte {
		return []byte(`{"control":` + controlJSON(c) + `,"control":` + controlJSON(c) + `}`)
	}, malformed)
	js("deep nesting in a field", edit(device.JSON, func(s string) string { return strings.Replace(s, `"42"`, deep, 1) }),
		bad(device.CodeInvalidField, "dimming"))
	js("deep nesting at the top", literalBody(deep), malformed)
	js("deep nesting beside control", literalBody(`{"x":`+deep), bad(device.CodeUnexpectedField, "x"))
	xs("empty", literalBody(""), malformed)
	xs("not XML", literalBody("dimming=42"), malformed)
	xs("cut short", edit(device.XML, func(s string) string { return s[:len(s)-3] }), malformed)
	xs("unclosed field", edit(device.XML, func(s string) string { return strings.Replace(s, "</dimming>", "", 1) }), malformed)
	xs("root not xml", edit(device.XML, func(s string) string {
		return strings.Replace(strings.Replace(s, "<xml>", "<root>", 1), "</xml>", "</root>", 1)
	}), malformed)
	xs("two roots", edit(device.XML, func(s string) string { return s + "<xml></xml>" }), malformed)
	xs("text beside control", edit(device.XML, func(s string) string { return strings.Replace(s, "<control>", "hello<control>", 1) }), malformed)
	xs("without control", literalBody(`<xml></xml>`), bad(device.CodeMissingField, "control"))
	xs("another element", literalBody(`<xml><command/></xml>`), bad(device.CodeUnexpectedField, "command"))
	xs("control twice", func(c *simtest.Client) []byte {
		return []byte("<xml>" + controlXML(c) + controlXML(c) + "</xml>")
	}, malformed)
	xs("DOCTYPE", func(c *simtest.Client) []byte {
		return []byte(`<?xml version="1.0"?><!DOCTYPE xml [<!ENTITY x "42">]><xml>` + controlXML(c) + "</xml>")
	}, malformed)
	xs("entity expansion", func(c *simtest.Client) []byte {
		return []byte(`<!DOCTYPE xml [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><xml>` +
			strings.Replace(controlXML(c), ">42<", ">&b;<", 1) + "</xml>")
	}, malformed)
	xs("undeclared entity", edit(device.XML, func(s string) string { return strings.Replace(s, ">42<", ">&nbsp;42<", 1) }), malformed)
	xs("latin-1 declaration", edit(device.XML, func(s string) string { return strings.Replace(s, "UTF-8", "ISO-8859-1", 1) }), malformed)
	xs("deep nesting in a field", edit(device.XML, func(s string) string { return strings.Replace(s, ">42<", ">"+deepXML+"<", 1) }),
		bad(device.CodeInvalidField, "dimming"))
	xs("predefined entities and CDATA", func(c *simtest.Client) []byte {
		return []byte("<xml>" + strings.Replace(controlXML(c), ">42<", "><![CDATA[4]]>&#50;<!-- two --><", 1) + "</xml>")
	}, ok(setState(dimmer, "dimming", 42.0)))
	runRaw(t, c, cases)
}

func TestLimitsMethodsPaths(t *testing.T) {
	t.Parallel()
	_, c := start(t, simulator.Options{})
	const limit = 64 << 10
	tooLarge := rejected(413, device.CodeBodyTooLarge, "")
	var cases []raw
	for _, format := range formats {
		ct := simtest.ContentType(format)
		f := format.String()
		cases = append(cases,
			raw{name: f + "/exactly 64 KiB", contentType: ct, body: padTo(limit, dimBody(format)), format: format,
				out: ok(setState(dimmer, "dimming", 42.0))},
			raw{name: f + "/64 KiB and one byte", contentType: ct, body: padTo(limit+1, dimBody(format)), format: format, out: tooLarge},
			raw{name: f + "/1 MiB", contentType: ct, body: padTo(1<<20, dimBody(format)), format: format, out: tooLarge},
		)
	}
	for _, op := range device.Operations {
		for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodPatch} {
			cases = append(cases, raw{name: m + " " + op.Path(), method: m, path: op.Path(), contentType: ctJSON,
				body: dimBody(device.JSON), format: device.JSON, out: rejected(405, device.CodeMethodNotAllowed, "")})
		}
		cases = append(cases, raw{name: "GET " + op.Path() + " as XML", method: http.MethodGet, path: op.Path(), contentType: ctXML,
			format: device.XML, out: rejected(405, device.CodeMethodNotAllowed, "")})
	}
	for _, p := range []string{"/", "/v1/services/gateway/commands", "/v2/services/gateway/command",
		"/v1/services/gateway/command/", "/v1/services/device/update_name/x", "/V1/services/gateway/command"} {
		cases = append(cases, raw{name: "POST " + p, path: p, contentType: ctJSON, body: dimBody(device.JSON),
			format: device.JSON, out: rejected(404, device.CodeNotFound, "")})
	}
	cases = append(cases, raw{name: "unknown path as XML", path: "/v1/nothing", contentType: ctXML, body: dimBody(device.XML),
		format: device.XML, out: rejected(404, device.CodeNotFound, "")})
	runRaw(t, c, cases)
}
