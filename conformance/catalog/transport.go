package catalog

import (
	"context"
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/client"
	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Encoded is the valid body of a call, to be broken on purpose.
func Encoded(e *Bench, c Call, f device.Format) []byte {
	req := c.Request(f)
	// Sign as the client would, so the only fault is the one the case adds.
	for i := range req.Fields {
		if req.Fields[i].Key == device.FieldSign {
			fields := append([]client.Field(nil), req.Fields[:i]...)
			fields = append(fields, req.Fields[i+1:]...)
			if s, err := e.Signer.Sign(context.Background(), fields); err == nil {
				req.Fields[i].Value = s
			}
		}
	}
	b, _ := client.Encode(f, req.Fields)
	return b
}

// rawCase builds a body from the valid one of the operation.
func rawCase(op device.Operation, body func(e *Bench, valid []byte, f device.Format) []byte) func(*Bench, device.Format, string) (Call, string) {
	return OnOp(op, rawBody(body))
}

// rawBody sends, in place of the call's valid encoded body, the one body
// makes of it.
func rawBody(body func(e *Bench, valid []byte, f device.Format) []byte) func(*Bench, *Call, device.Format, string) string {
	return func(e *Bench, c *Call, f device.Format, _ string) string {
		valid := Encoded(e, *c, f)
		c.Raw = func(device.Format) []byte { return body(e, valid, f) }
		return ""
	}
}

// transportCases change the HTTP side of each operation: Content-Type,
// method, path, and the body's form (published 4; CONTRACT 2). Each is a
// row of transportTable.
func transportCases() []Case {
	var cs []Case
	for _, op := range device.Operations {
		cs = append(cs, opCases(op, transportTable(), op.Name()+".", "a "+op.Name()+" request ", "2", "transport")...)
	}
	return cs
}

// transportTable are the transport cases of an operation: ID after
// "<operation>.", title after "a <operation> request ", published
// section, change, expectation.
func transportTable() []opRow {
	media := Expectation{Must: true, Status: 415, Codes: []string{device.CodeUnsupportedMediaType}, JSONError: true}
	contractOK := Expectation{ContractOK: true, Status: 200}
	malformed := Expectation{Must: true, Status: 400, Codes: []string{device.CodeMalformedBody}}
	tooLarge := Expectation{Status: 413, Codes: []string{device.CodeBodyTooLarge}}
	rows := []opRow{
		{id: "content-type.missing", title: "without Content-Type", section: "4",
			change: contentType(client.NoContentType, client.NoContentType), want: media},
		{id: "content-type.text-plain", title: "with Content-Type text/plain", section: "4",
			change: contentType("text/plain", "text/plain"), want: media},
		{id: "content-type.mismatched", title: "whose Content-Type names the other format", section: "4",
			change: contentType("application/xml", "application/json"),
			want:   Expectation{Must: true, Status: 400, Codes: []string{device.CodeMalformedBody}, OtherFormat: true}},
		{id: "content-type.charset", title: "with Content-Type carrying ; charset=utf-8", section: "4",
			change: contentType("application/json; charset=utf-8", "application/xml; charset=utf-8"), want: contractOK},
		{id: "content-type.text-xml", title: "with Content-Type text/xml", section: "4",
			change: contentType("text/xml", "text/xml"), want: contractOK, formats: []device.Format{device.XML}},
		// The media type's grammar (RFC 9110 8.3.1: type/subtype, case
		// insensitive, then parameters): each way to write it right, and
		// each near miss.
		{id: "content-type.upper-case", title: "whose Content-Type is in capitals", section: "4",
			change: contentType("APPLICATION/JSON", "APPLICATION/XML"), want: contractOK},
		{id: "content-type.param-without-space", title: "whose Content-Type carries ;charset=UTF-8 with no space", section: "4",
			change: contentType("application/json;charset=UTF-8", "application/xml;charset=UTF-8"), want: contractOK},
		{id: "content-type.longer-subtype", title: "whose Content-Type has a letter more than json or xml", section: "4",
			change: contentType("application/jsonx", "application/xmlx"), want: media},
		{id: "content-type.wildcard", title: "whose Content-Type is application/*", section: "4",
			change: contentType("application/*", "application/*"), want: media},
		{id: "content-type.form", title: "whose Content-Type is application/x-www-form-urlencoded", section: "4",
			change: contentType("application/x-www-form-urlencoded", "application/x-www-form-urlencoded"), want: media},
		{id: "content-type.text-json", title: "whose Content-Type is text/json", section: "4",
			change: contentType("text/json", "text/json"),
			want:   Expectation{Status: 415, Codes: []string{device.CodeUnsupportedMediaType}, JSONError: true}},
		// A trailing / is open (oracle.PathNearMisses): grammarProbes
		// sends it.
		{id: "path.upper-case", title: "sent to its path in capitals", section: "9",
			change: toPath(strings.ToUpper), want: Expectation{Status: 404, Codes: []string{device.CodeNotFound}}},
	}
	rows = append(rows, methodRows()...)
	return append(rows, []opRow{
		{id: "path.unknown", title: "sent to the path with a trailing s", section: "9",
			change: toPath(func(p string) string { return p + "s" }), want: Expectation{Status: 404, Codes: []string{device.CodeNotFound}}},
		{id: "path.v2", title: "sent to /v2 instead of /v1", section: "9",
			change: toPath(func(p string) string { return strings.Replace(p, "/v1/", "/v2/", 1) }),
			want:   Expectation{Must: true, Status: 404, Codes: []string{device.CodeNotFound}}},
		{id: "body.truncated", title: "whose body is cut off in the middle", section: "4", change: rawBody(halfBody), want: malformed},
		{id: "body.empty", title: "with an empty body", section: "4", change: rawBody(emptyBody), want: malformed},
		{id: "body.no-control", title: "whose fields are not inside control", section: "2.1", change: rawBody(controlLeftOut),
			want: Expectation{Must: true, Status: 400, Codes: []string{device.CodeMissingField, device.CodeMalformedBody, device.CodeUnexpectedField}}},
		{id: "body.control-twice", title: "whose body holds control twice", section: "2.1", change: rawBody(controlTwice),
			want: Expectation{Status: 400, Codes: []string{device.CodeMalformedBody}}},
		{id: "body.wrong-root", title: "whose XML root is not xml", section: "2.1", change: rawBody(rootRenamed),
			want: Expectation{Must: true, Status: 400, Codes: []string{device.CodeMalformedBody}}, formats: []device.Format{device.XML}},
		{id: "body.doctype", title: "with a DOCTYPE declaring an entity", section: "2.1", change: rawBody(entityDeclared),
			want: Expectation{Status: 400, Codes: []string{device.CodeMalformedBody}}, formats: []device.Format{device.XML}},
		// CONTRACT 2's body limit at its edge: exactly 64 KiB, and one
		// byte more, padded with white space between tokens.
		{id: "body.largest", title: "whose body is 64 KiB exactly", section: "8", change: rawBody(paddedToLimit(0)),
			want: contractOK, tags: []string{"boundary"}, on: onMessage},
		{id: "body.one-byte-too-large", title: "whose body is 64 KiB and one byte", section: "8", change: rawBody(paddedToLimit(1)),
			want: tooLarge, tags: []string{"boundary"}, on: onMessage},
		{id: "body.too-large", title: "whose body is padded past 64 KiB", section: "8", change: rawBody(paddedPastLimit), want: tooLarge},
	}...)
}

// methodRows send the request with each method but POST: refused with
// 405 and Allow: POST, or where the HTTP grammar's near misses judge the
// method (oracle.MethodNearMisses), as they do.
func methodRows() []opRow {
	var rows []opRow
	for _, m := range []string{"GET", "PUT", "DELETE", "PATCH"} {
		w := methodRefused(Expectation{Must: true, Status: 405, Codes: []string{device.CodeMethodNotAllowed}})
		for _, nm := range oracle.MethodNearMisses() {
			if nm.Text == m {
				w = methodRefused(wantNearMiss(nm, ""))
			}
		}
		rows = append(rows, opRow{id: "method." + strings.ToLower(m), title: "sent with " + m, section: "4",
			change: sentWith(m), want: w, tags: []string{GenTag + "http-method"}})
	}
	return rows
}

// contentType sends the Content-Type j in JSON and x in XML.
func contentType(j, x string) func(*Bench, *Call, device.Format, string) string {
	return func(_ *Bench, c *Call, f device.Format, _ string) string {
		c.ContentType = map[device.Format]string{device.JSON: j, device.XML: x}[f]
		return ""
	}
}

// toPath sends the request to the path edit makes of its operation's.
func toPath(edit func(path string) string) func(*Bench, *Call, device.Format, string) string {
	return func(_ *Bench, c *Call, _ device.Format, _ string) string {
		c.Path = edit(c.Op.Path())
		return ""
	}
}

// sentWith sends the request with another method than POST.
func sentWith(method string) func(*Bench, *Call, device.Format, string) string {
	return func(_ *Bench, c *Call, _ device.Format, _ string) string {
		c.Method = method
		return ""
	}
}

// halfBody is the body cut off in the middle.
func halfBody(_ *Bench, b []byte, _ device.Format) []byte { return b[:len(b)/2] }

// emptyBody is no body at all.
func emptyBody(*Bench, []byte, device.Format) []byte { return []byte{} }

// controlLeftOut is the body with the fields straight in the object or
// root, without control around them.
func controlLeftOut(_ *Bench, b []byte, f device.Format) []byte {
	s := string(b)
	if f == device.JSON {
		s = strings.Replace(s, `{"control":`, "", 1)
		return []byte(s[:len(s)-1])
	}
	return []byte(strings.NewReplacer("<control>", "", "</control>", "").Replace(s))
}

// controlTwice is the body with its control written twice.
func controlTwice(_ *Bench, b []byte, f device.Format) []byte {
	s := string(b)
	if f == device.JSON {
		inner := strings.TrimSuffix(strings.TrimPrefix(s, `{"control":`), "}")
		return []byte(`{"control":` + inner + `,"control":` + inner + `}`)
	}
	i, j := strings.Index(s, "<control>"), strings.LastIndex(s, "</control>")+len("</control>")
	return []byte(s[:j] + s[i:j] + s[j:])
}

// rootRenamed is the XML body with the root request in place of xml.
func rootRenamed(_ *Bench, b []byte, _ device.Format) []byte {
	return []byte(strings.NewReplacer("<xml>", "<request>", "</xml>", "</request>").Replace(string(b)))
}

// entityDeclared is the XML body with a DOCTYPE declaring an entity after
// its declaration.
func entityDeclared(_ *Bench, b []byte, _ device.Format) []byte {
	s := string(b)
	i := strings.Index(s, "?>") + 2
	return []byte(s[:i] + `<!DOCTYPE xml [<!ENTITY x "y">]>` + s[i:])
}

// paddedToLimit pads the body to extra bytes past CONTRACT 2's limit
// (oracle.MaxBody); a body already longer is left as it is.
func paddedToLimit(extra int) func(*Bench, []byte, device.Format) []byte {
	return func(_ *Bench, b []byte, f device.Format) []byte {
		n := oracle.MaxBody + extra - len(b)
		if n < 0 {
			return b
		}
		return spacedOut(b, f, n)
	}
}

// paddedPastLimit pads the body with 70 KiB, past CONTRACT 2's limit
// whatever its length.
func paddedPastLimit(_ *Bench, b []byte, f device.Format) []byte { return spacedOut(b, f, 70<<10) }

// spacedOut is the body with n spaces between two of its tokens: after
// the JSON object's brace, before the XML control.
func spacedOut(b []byte, f device.Format, n int) []byte {
	pad := strings.Repeat(" ", n)
	if f == device.JSON {
		return []byte(`{` + pad + string(b[1:]))
	}
	s := string(b)
	i := strings.Index(s, "<control>")
	return []byte(s[:i] + pad + s[i:])
}
