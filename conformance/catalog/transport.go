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
	return OnOp(op, func(e *Bench, c *Call, f device.Format, _ string) string {
		valid := Encoded(e, *c, f)
		c.Raw = func(device.Format) []byte { return body(e, valid, f) }
		return ""
	})
}

// transportCases change the HTTP side of each operation: Content-Type,
// method, path, and the body's form (published 4; CONTRACT 2).
func transportCases() []Case {
	var cs []Case
	for _, op := range device.Operations {
		p := op.Name() + "."
		add := func(id, title, section string, build func(*Bench, device.Format, string) (Call, string), w Expectation, formats ...device.Format) {
			cs = append(cs, Case{ID: p + id, Op: op, Title: "a " + op.Name() + " request " + title, Section: section,
				Contract: "2", Build: build, Want: w, Formats: formats, Tags: []string{"transport"}})
		}
		with := func(change func(c *Call, f device.Format)) func(*Bench, device.Format, string) (Call, string) {
			return OnOp(op, func(_ *Bench, c *Call, f device.Format, _ string) string { change(c, f); return "" })
		}
		media := Expectation{Must: true, Status: 415, Codes: []string{device.CodeUnsupportedMediaType}, JSONError: true}
		add("content-type.missing", "without Content-Type", "4", with(func(c *Call, _ device.Format) {
			c.ContentType = client.NoContentType
		}), media)
		add("content-type.text-plain", "with Content-Type text/plain", "4", with(func(c *Call, _ device.Format) {
			c.ContentType = "text/plain"
		}), media)
		add("content-type.mismatched", "whose Content-Type names the other format", "4", with(func(c *Call, f device.Format) {
			c.ContentType = map[device.Format]string{device.JSON: "application/xml", device.XML: "application/json"}[f]
		}), Expectation{Must: true, Status: 400, Codes: []string{device.CodeMalformedBody}, OtherFormat: true})
		add("content-type.charset", "with Content-Type carrying ; charset=utf-8", "4", with(func(c *Call, f device.Format) {
			c.ContentType = map[device.Format]string{device.JSON: "application/json; charset=utf-8", device.XML: "application/xml; charset=utf-8"}[f]
		}), Expectation{ContractOK: true, Status: 200})
		add("content-type.text-xml", "with Content-Type text/xml", "4", with(func(c *Call, _ device.Format) {
			c.ContentType = "text/xml"
		}), Expectation{ContractOK: true, Status: 200}, device.XML)
		// The media type's grammar (RFC 9110 8.3.1: type/subtype, case
		// insensitive, then parameters): each way to write it right, and
		// each near miss.
		both := func(j, x string) func(c *Call, f device.Format) {
			return func(c *Call, f device.Format) {
				c.ContentType = map[device.Format]string{device.JSON: j, device.XML: x}[f]
			}
		}
		add("content-type.upper-case", "whose Content-Type is in capitals", "4",
			with(both("APPLICATION/JSON", "APPLICATION/XML")), Expectation{ContractOK: true, Status: 200})
		add("content-type.param-without-space", "whose Content-Type carries ;charset=UTF-8 with no space", "4",
			with(both("application/json;charset=UTF-8", "application/xml;charset=UTF-8")), Expectation{ContractOK: true, Status: 200})
		add("content-type.longer-subtype", "whose Content-Type has a letter more than json or xml", "4",
			with(both("application/jsonx", "application/xmlx")), media)
		add("content-type.wildcard", "whose Content-Type is application/*", "4",
			with(both("application/*", "application/*")), media)
		add("content-type.form", "whose Content-Type is application/x-www-form-urlencoded", "4",
			with(both("application/x-www-form-urlencoded", "application/x-www-form-urlencoded")), media)
		add("content-type.text-json", "whose Content-Type is text/json", "4",
			with(both("text/json", "text/json")), Expectation{Status: 415, Codes: []string{device.CodeUnsupportedMediaType}, JSONError: true})
		// A trailing / is open (oracle.PathNearMisses): grammarProbes
		// sends it.
		add("path.upper-case", "sent to its path in capitals", "9", with(func(c *Call, _ device.Format) {
			c.Path = strings.ToUpper(op.Path())
		}), Expectation{Status: 404, Codes: []string{device.CodeNotFound}})
		for _, m := range []string{"GET", "PUT", "DELETE", "PATCH"} {
			method := m
			w := methodRefused(Expectation{Must: true, Status: 405, Codes: []string{device.CodeMethodNotAllowed}})
			for _, nm := range oracle.MethodNearMisses() {
				if nm.Text == m {
					w = methodRefused(wantNearMiss(nm, ""))
				}
			}
			add("method."+strings.ToLower(m), "sent with "+m, "4", with(func(c *Call, _ device.Format) {
				c.Method = method
			}), w)
			cs[len(cs)-1].Tags = append(cs[len(cs)-1].Tags, GenTag+"http-method")
		}
		add("path.unknown", "sent to the path with a trailing s", "9", with(func(c *Call, _ device.Format) {
			c.Path = op.Path() + "s"
		}), Expectation{Status: 404, Codes: []string{device.CodeNotFound}})
		add("path.v2", "sent to /v2 instead of /v1", "9", with(func(c *Call, _ device.Format) {
			c.Path = strings.Replace(op.Path(), "/v1/", "/v2/", 1)
		}), Expectation{Must: true, Status: 404, Codes: []string{device.CodeNotFound}})
		malformed := Expectation{Must: true, Status: 400, Codes: []string{device.CodeMalformedBody}}
		add("body.truncated", "whose body is cut off in the middle", "4", rawCase(op, func(_ *Bench, b []byte, _ device.Format) []byte {
			return b[:len(b)/2]
		}), malformed)
		add("body.empty", "with an empty body", "4", rawCase(op, func(_ *Bench, _ []byte, _ device.Format) []byte {
			return []byte{}
		}), malformed)
		add("body.no-control", "whose fields are not inside control", "2.1", rawCase(op, func(_ *Bench, b []byte, f device.Format) []byte {
			s := string(b)
			if f == device.JSON {
				s = strings.Replace(s, `{"control":`, "", 1)
				return []byte(s[:len(s)-1])
			}
			return []byte(strings.NewReplacer("<control>", "", "</control>", "").Replace(s))
		}), Expectation{Must: true, Status: 400, Codes: []string{device.CodeMissingField, device.CodeMalformedBody, device.CodeUnexpectedField}})
		add("body.control-twice", "whose body holds control twice", "2.1", rawCase(op, func(_ *Bench, b []byte, f device.Format) []byte {
			s := string(b)
			if f == device.JSON {
				inner := strings.TrimSuffix(strings.TrimPrefix(s, `{"control":`), "}")
				return []byte(`{"control":` + inner + `,"control":` + inner + `}`)
			}
			i, j := strings.Index(s, "<control>"), strings.LastIndex(s, "</control>")+len("</control>")
			return []byte(s[:j] + s[i:j] + s[j:])
		}), Expectation{Status: 400, Codes: []string{device.CodeMalformedBody}})
		add("body.wrong-root", "whose XML root is not xml", "2.1", rawCase(op, func(_ *Bench, b []byte, _ device.Format) []byte {
			return []byte(strings.NewReplacer("<xml>", "<request>", "</xml>", "</request>").Replace(string(b)))
		}), Expectation{Must: true, Status: 400, Codes: []string{device.CodeMalformedBody}}, device.XML)
		add("body.doctype", "with a DOCTYPE declaring an entity", "2.1", rawCase(op, func(_ *Bench, b []byte, _ device.Format) []byte {
			s := string(b)
			i := strings.Index(s, "?>") + 2
			return []byte(s[:i] + `<!DOCTYPE xml [<!ENTITY x "y">]>` + s[i:])
		}), Expectation{Status: 400, Codes: []string{device.CodeMalformedBody}}, device.XML)
		if op == device.SendMessage {
			// CONTRACT 2's body limit at its edge: exactly 64 KiB, and one
			// byte more, padded with white space between tokens.
			pad := func(extra int) func(*Bench, []byte, device.Format) []byte {
				return func(_ *Bench, b []byte, f device.Format) []byte {
					n := oracle.MaxBody + extra - len(b)
					if n < 0 {
						return b
					}
					if f == device.JSON {
						return []byte(`{` + strings.Repeat(" ", n) + string(b[1:]))
					}
					s := string(b)
					i := strings.Index(s, "<control>")
					return []byte(s[:i] + strings.Repeat(" ", n) + s[i:])
				}
			}
			cs = append(cs, Case{ID: p + "body.largest", Op: op, Title: "a " + op.Name() + " request whose body is 64 KiB exactly", Section: "8",
				Contract: "2", Build: rawCase(op, pad(0)), Want: Expectation{ContractOK: true, Status: 200}, Tags: []string{"transport", "boundary"}},
				Case{ID: p + "body.one-byte-too-large", Op: op, Title: "a " + op.Name() + " request whose body is 64 KiB and one byte", Section: "8",
					Contract: "2", Build: rawCase(op, pad(1)), Want: Expectation{Status: 413, Codes: []string{device.CodeBodyTooLarge}},
					Tags: []string{"transport", "boundary"}})
		}
		add("body.too-large", "whose body is padded past 64 KiB", "8", rawCase(op, func(_ *Bench, b []byte, f device.Format) []byte {
			pad := strings.Repeat(" ", 70<<10)
			if f == device.JSON {
				return []byte(`{` + pad + string(b[1:]))
			}
			s := string(b)
			i := strings.Index(s, "<control>")
			return []byte(s[:i] + pad + s[i:])
		}), Expectation{Status: 413, Codes: []string{device.CodeBodyTooLarge}})
	}
	return cs
}
