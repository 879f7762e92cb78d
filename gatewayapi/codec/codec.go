// Package codec turns request bodies into the control fields of the domain
// and domain answers into response bodies, in JSON and XML; and, for every
// client of the interface, control fields into request bodies
// (AppendRequest). It reads streams token by token and stops at the first
// thing that is not the published envelope, so that hostile nesting or
// entities cost nothing.
package codec

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// ContentType is the response Content-Type of each format.
func ContentType(f device.Format) string {
	if f == device.XML {
		return "application/xml; charset=utf-8"
	}
	return "application/json; charset=utf-8"
}

// FormatOf reads a request Content-Type: application/json, application/xml
// or text/xml, with parameters allowed (a charset must be UTF-8).
func FormatOf(contentType string) (device.Format, *device.Error) {
	switch contentType { // what nearly every client sends, without parsing
	case "application/json", "application/json; charset=utf-8":
		return device.JSON, nil
	case "application/xml", "application/xml; charset=utf-8", "text/xml":
		return device.XML, nil
	}
	if strings.TrimSpace(contentType) == "" {
		return 0, device.Errorf(device.CodeUnsupportedMediaType, "Content-Type",
			"Content-Type is required: application/json or application/xml")
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return 0, device.Errorf(device.CodeUnsupportedMediaType, "Content-Type",
			"Content-Type %q cannot be read; use application/json or application/xml", contentType)
	}
	var f device.Format
	switch mt {
	case "application/json":
		f = device.JSON
	case "application/xml", "text/xml":
		f = device.XML
	default:
		return 0, device.Errorf(device.CodeUnsupportedMediaType, "Content-Type",
			"Content-Type %s is not supported; use application/json or application/xml", mt)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") && !strings.EqualFold(cs, "us-ascii") {
		return 0, device.Errorf(device.CodeUnsupportedMediaType, "Content-Type", "charset %s is not supported; use utf-8", cs)
	}
	return f, nil
}

func malformed(format string, args ...any) *device.Error {
	return device.Errorf(device.CodeMalformedBody, "", format, args...)
}

// Decode reads the control fields of a body in the given format.
func Decode(f device.Format, body []byte) ([]device.Pair, *device.Error) {
	return DecodeInto(f, body, nil)
}

// DecodeInto is Decode reusing dst's storage for the pairs where it can
// (the pairs' strings never alias body or dst), so that a server can keep
// one slice per request in a pool: the result may be dst's storage or a
// new slice.
func DecodeInto(f device.Format, body []byte, dst []device.Pair) ([]device.Pair, *device.Error) {
	return DecodeOpen(f, body, dst, device.RefuseOpen)
}

// DecodeOpen is DecodeInto reading the body forms neither text decides
// as open says (device.OpenForms): text beside control in the XML root,
// or beside the fields in control, is refused or passed over.
func DecodeOpen(f device.Format, body []byte, dst []device.Pair, open device.OpenForms) ([]device.Pair, *device.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, malformed("the body is empty; it must hold a control element")
	}
	if !utf8.Valid(body) {
		return nil, malformed("the body is not valid UTF-8")
	}
	if f == device.XML {
		if pairs, ok := fastXMLInto(body, dst); ok {
			return pairs, nil
		}
		return decodeXML(body, open)
	}
	if pairs, ok := fastJSONInto(body, dst); ok {
		return pairs, nil
	}
	return decodeJSON(body)
}

func decodeJSON(body []byte) ([]device.Pair, *device.Error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	bad := func(err error) *device.Error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return malformed("the body is not valid JSON at byte %d: %v", se.Offset, se)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return malformed("the body is not valid JSON: it ends too early")
		}
		return malformed("the body is not valid JSON: %v", err)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, bad(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, malformed("the body must be a JSON object with one member control")
	}
	var pairs []device.Pair
	seenControl := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, bad(err)
		}
		key, _ := tok.(string)
		if key != "control" {
			return nil, device.Errorf(device.CodeUnexpectedField, key, "the body must hold only control, not %q", key)
		}
		if seenControl {
			return nil, malformed("control appears more than once")
		}
		seenControl = true
		if pairs, err = readControlJSON(dec); err != nil {
			if de, ok := err.(*device.Error); ok {
				return nil, de
			}
			return nil, bad(err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, bad(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, malformed("the body has data after the JSON object")
	}
	if !seenControl {
		return nil, device.Errorf(device.CodeMissingField, "control", "the body must hold a control object")
	}
	return pairs, nil
}

func readControlJSON(dec *json.Decoder) ([]device.Pair, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, device.Errorf(device.CodeMalformedBody, "control", "control must be an object")
	}
	pairs := make([]device.Pair, 0, 12)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string)
		tok, err = dec.Token()
		if err != nil {
			return nil, err
		}
		var v device.Value
		switch x := tok.(type) {
		case string:
			v = device.Value{Text: x, Kind: device.String}
		case json.Number:
			v = device.Value{Text: string(x), Kind: device.Number}
		case bool:
			v = device.Value{Text: "a boolean", Kind: device.Other}
		case nil:
			v = device.Value{Text: "null", Kind: device.Other}
		case json.Delim:
			// Refuse nested values at once rather than walk them.
			what := "an object"
			if x == '[' {
				what = "an array"
			}
			return nil, device.Errorf(device.CodeInvalidField, key, "%s must be a string or a number, not %s", key, what)
		}
		pairs = append(pairs, device.Pair{Key: key, Value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return pairs, nil
}

func decodeXML(body []byte, open device.OpenForms) ([]device.Pair, *device.Error) {
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = true
	bad := func(err error) *device.Error {
		var se *xml.SyntaxError
		if errors.As(err, &se) {
			return malformed("the body is not well-formed XML at line %d: %s", se.Line, se.Msg)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return malformed("the body is not well-formed XML: it ends too early")
		}
		return malformed("the body is not well-formed XML: %v", err)
	}
	var (
		pairs       []device.Pair
		depth       int // 1 inside xml, 2 inside control, 3 inside a field
		seenRoot    bool
		seenControl bool
		field       string
		text        strings.Builder
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, bad(err)
		}
		switch t := tok.(type) {
		case xml.Directive:
			return nil, malformed("XML with a DOCTYPE or other declaration is not accepted")
		case xml.StartElement:
			name := t.Name.Local
			switch depth {
			case 0:
				if seenRoot {
					return nil, malformed("the XML has more than one root element")
				}
				if name != "xml" {
					return nil, malformed("the root element must be xml, not %s", name)
				}
				seenRoot = true
			case 1:
				if name != "control" {
					return nil, device.Errorf(device.CodeUnexpectedField, name, "xml must hold only control, not %s", name)
				}
				if seenControl {
					return nil, malformed("control appears more than once")
				}
				seenControl = true
				pairs = make([]device.Pair, 0, 12)
			case 2:
				field = name
				text.Reset()
			default:
				return nil, device.Errorf(device.CodeInvalidField, field, "%s must hold text, not the element %s", field, name)
			}
			depth++
		case xml.EndElement:
			if depth == 3 {
				pairs = append(pairs, device.Pair{Key: field, Value: device.Value{Text: text.String(), Kind: device.String}})
			}
			depth--
		case xml.CharData:
			if depth == 3 {
				text.Write(t)
			} else if len(bytes.TrimSpace(t)) > 0 && (depth == 0 || open == device.RefuseOpen) {
				return nil, malformed("text outside the field elements: %q", cut(string(t)))
			}
		}
	}
	if !seenRoot {
		return nil, malformed("the body has no XML root element")
	}
	if !seenControl {
		return nil, device.Errorf(device.CodeMissingField, "control", "the xml element must hold a control element")
	}
	return pairs, nil
}

func cut(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
