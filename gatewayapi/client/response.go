package client

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"

	"github.com/gwdmi/gwtools/gatewayapi/device"
	"github.com/gwdmi/gwtools/gatewayapi/oracle"
)

// Response is what a target answered, read defensively: the body is cut at
// the client's limit and its fields are taken only where they can be read,
// because the target may be broken or hostile.
type Response struct {
	Status      int
	ContentType string
	// Header is every response header as received (Allow, Location...).
	Header http.Header
	// Body is at most Config.MaxResponseBytes long; Truncated says it was cut.
	Body      []byte
	Truncated bool
	// Format is what the body was read as: by its Content-Type, else by its
	// first character; zero when neither tells.
	Format device.Format
	// StatusField is the body's status ("success", "error"); empty when
	// absent, not a string, or the body could not be read.
	StatusField string
	// ErrorCode, ErrorField and ErrorMessage are the error payload of
	// CONTRACT section 4, where present.
	ErrorCode, ErrorField, ErrorMessage string
	// ParseError says why the body could not be read as Format; empty when
	// it could.
	ParseError string
}

// Success reports whether the target answered 200 with status success.
func (r *Response) Success() bool {
	return r != nil && r.Status == 200 && r.StatusField == "success"
}

// Answer is what an answer body says (CONTRACT 4): its status and its
// error payload, as far as they can be read.
type Answer struct {
	// Format is what the body was read as: by its Content-Type, else by
	// its first character; zero when neither tells.
	Format device.Format
	// Status is the body's status ("success", "error"); empty when absent,
	// not a string, or the body could not be read.
	Status string
	// ErrorCode, ErrorField and ErrorMessage are the error payload, where
	// present.
	ErrorCode, ErrorField, ErrorMessage string
	// ParseError says why the body could not be read as Format; empty
	// when it could.
	ParseError string
}

// ParseAnswer reads an answer body of either format: the one reader of
// answer bodies (status and error payload) for every client of the
// interface. It never fails and never panics; the caller bounds the body,
// and what cannot be read is said in ParseError.
func ParseAnswer(contentType string, body []byte) Answer {
	a := Answer{Format: formatOf(contentType, body)}
	switch {
	case len(bytes.TrimSpace(body)) == 0:
		a.ParseError = "empty body"
	case a.Format == device.JSON:
		a.ParseError = a.parseJSON(body)
	case a.Format == device.XML:
		a.ParseError = a.parseXML(body)
	default:
		a.ParseError = "body is neither JSON nor XML"
	}
	return a
}

// parseBody fills Format, StatusField, the error fields and ParseError from
// Body and ContentType (ParseAnswer).
func (r *Response) parseBody() {
	a := ParseAnswer(r.ContentType, r.Body)
	r.Format, r.StatusField, r.ParseError = a.Format, a.Status, a.ParseError
	r.ErrorCode, r.ErrorField, r.ErrorMessage = a.ErrorCode, a.ErrorField, a.ErrorMessage
	if r.ParseError != "" && r.Truncated {
		r.ParseError += " (body was cut at the response limit)"
	}
}

// formatOf decides a body's format by its declared media type, and sniffs
// only when the type says neither, so that a body that contradicts its
// Content-Type fails to parse rather than being quietly read the other way.
func formatOf(contentType string, body []byte) device.Format {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, _, _ = strings.Cut(contentType, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	switch {
	case mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json"):
		return device.JSON
	case mt == "application/xml" || mt == "text/xml" || strings.HasSuffix(mt, "+xml"):
		return device.XML
	}
	s := bytes.TrimLeft(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(s) > 0 {
		switch s[0] {
		case '{', '[':
			return device.JSON
		case '<':
			return device.XML
		}
	}
	return 0
}

// parseJSON reads the body as one JSON object. Members are matched by
// exact name (encoding/json would match struct fields in any case) and a
// member of the wrong type is left empty rather than failing the whole body.
func (r *Answer) parseJSON(body []byte) string {
	if !utf8.Valid(body) {
		// encoding/json would quietly replace the bad bytes.
		return "body is not valid UTF-8"
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return "not a JSON object: " + err.Error()
	}
	r.Status = jsonString(top["status"])
	if raw, ok := top["error"]; ok {
		var e map[string]json.RawMessage
		if json.Unmarshal(raw, &e) == nil {
			r.ErrorCode = jsonString(e["code"])
			r.ErrorField = jsonString(e["field"])
			r.ErrorMessage = jsonString(e["message"])
		}
	}
	return ""
}

func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// parseXML reads status and error under the root element, whatever the
// root is called: the first child element of each name, and the text
// directly inside it, without surrounding white space, which
// pretty-printed XML adds and which carries no meaning here. It reads the
// body's tokens once and keeps only those texts, so that a deeply nested
// hostile body costs no more than its tokens, and an answer no tree.
// It reads a body as github.com/antchfx/xmlquery's Parse does, in other
// words where it fails: the same decoder, encodings by their label, an
// element's namespace prefix no xmlns declared refused, at least one
// element (TestParseXMLAsXmlquery keeps it so).
func (r *Answer) parseXML(body []byte) string {
	d := xml.NewDecoder(bytes.NewReader(body))
	d.CharsetReader = charset.NewReaderLabel
	// open holds, for each element open, what it is to the answer; the
	// texts are kept in texts by the same names.
	const (
		other = iota
		root
		status
		errorPayload
		code
		field
		message
		kinds
	)
	var (
		open   []int
		texts  [kinds]strings.Builder
		seen   [kinds]bool
		spaces map[string]bool // the namespaces xmlns attributes declared, made at the first
	)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "not XML: " + err.Error()
		}
		switch t := tok.(type) {
		case xml.StartElement:
			for _, a := range t.Attr {
				if a.Name.Local == "xmlns" || a.Name.Space == "xmlns" {
					if spaces == nil {
						spaces = map[string]bool{}
					}
					spaces[a.Value] = true
				}
			}
			// The decoder writes the xml prefix as its namespace, declared or not.
			if t.Name.Space != "" && t.Name.Space != "http://www.w3.org/XML/1998/namespace" && !spaces[t.Name.Space] {
				return "not XML: the namespace prefix " + t.Name.Space + " is not declared"
			}
			kind := root
			if len(open) > 0 {
				kind = other
				switch parent := open[len(open)-1]; {
				case parent == root && t.Name.Local == "status":
					kind = status
				case parent == root && t.Name.Local == "error":
					kind = errorPayload
				case parent == errorPayload && t.Name.Local == "code":
					kind = code
				case parent == errorPayload && t.Name.Local == "field":
					kind = field
				case parent == errorPayload && t.Name.Local == "message":
					kind = message
				}
			}
			// Only the first element of a kind counts; an error payload's
			// fields count only under the first.
			if seen[kind] && kind != other {
				kind = other
			}
			seen[kind] = true
			open = append(open, kind)
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) > 0 {
				if k := open[len(open)-1]; k != other && k != root && k != errorPayload {
					texts[k].Write(t)
				}
			}
		}
	}
	if !seen[root] {
		return "not XML: no element"
	}
	if a := oracle.RepeatedAttribute(body); a != "" {
		return "not XML: the attribute " + a + " is given twice in one tag"
	}
	text := func(k int) string { return strings.TrimSpace(texts[k].String()) }
	r.Status = text(status)
	r.ErrorCode, r.ErrorField, r.ErrorMessage = text(code), text(field), text(message)
	return ""
}
