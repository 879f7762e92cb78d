package conformance

import (
	"strings"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// structureCases are the structural rules of both body formats (published
// 2.1; CONTRACT 2), each one broken alone: JSON is one object with the
// single member control, itself an object; XML has the root xml with the
// one child control.
func structureCases() []Case {
	var cs []Case
	malformed := expect{must: true, status: 400, codes: []string{device.CodeMalformedBody}}
	for _, op := range device.Operations {
		p := op.Name() + ".structure."
		add := func(id, title string, f device.Format, body func(valid string) string, codes ...string) {
			w := malformed
			if len(codes) > 0 {
				w.codes = append(codes, device.CodeMalformedBody)
			}
			cs = append(cs, Case{ID: p + id, Op: op, Title: "a " + op.Name() + " request " + title, Section: "2.1",
				Contract: "2", Formats: []device.Format{f}, Want: w, Tags: []string{"structure"},
				Build: rawCase(op, func(_ *Env, b []byte, _ device.Format) []byte { return []byte(body(string(b))) })})
		}
		inner := func(s string) string { // the control object of a valid JSON body
			return strings.TrimSuffix(strings.TrimPrefix(s, `{"control":`), "}")
		}
		add("json.extra-member", "whose JSON object has a member beside control", device.JSON, func(s string) string {
			return `{"control":` + inner(s) + `,"extra":{}}`
		}, device.CodeUnexpectedField)
		add("json.control-is-string", "whose JSON control is a string", device.JSON, func(string) string {
			return `{"control":"api_key=x"}`
		})
		add("json.control-is-array", "whose JSON control is an array of the fields", device.JSON, func(s string) string {
			return `{"control":[` + inner(s) + `]}`
		})
		add("json.top-level-array", "whose JSON body is an array holding the object", device.JSON, func(s string) string {
			return `[` + s + `]`
		})
		add("json.two-objects", "whose JSON body is two objects in a row", device.JSON, func(s string) string {
			return s + s
		})
		add("xml.extra-child", "whose XML root has a child beside control", device.XML, func(s string) string {
			return strings.Replace(s, "</control>", "</control><extra>1</extra>", 1)
		}, device.CodeUnexpectedField)
		add("xml.two-roots", "whose XML body has a second root element", device.XML, func(s string) string {
			return s + "<xml/>"
		})
		add("xml.no-control", "whose XML root is empty", device.XML, func(s string) string {
			i, j := strings.Index(s, "<control>"), strings.LastIndex(s, "</control>")+len("</control>")
			return s[:i] + s[j:]
		}, device.CodeMissingField)
	}
	return cs
}
