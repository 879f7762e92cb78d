package codec

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/gwdmi/gwtools/gatewayapi/device"
)

// The request encoder: the one writer of request bodies for every client of
// the interface (the conformance harness, its load generator, the tests'
// clients and the benchmarks), so that what they send is spelled alike and
// always reads back through Decode.

// Kind is how a Field's value is written.
type Kind uint8

const (
	// Text is a JSON string, and XML element text. The zero Kind.
	Text Kind = iota
	// Number is a JSON number literal (checked: "-1.5e1", not "01" or "");
	// in XML, element text.
	Number
	// JSONValue is any JSON value written as it is after a check (true,
	// null, an object); in XML, element text.
	JSONValue
	// Null is JSON null, and an empty XML element; Value is not read.
	Null
	// Raw is Value written as it is in either format, unchecked: the JSON
	// value or the XML element's content, markup included. It is for bodies
	// that are malformed on purpose; the body may not decode.
	Raw
)

// Field is one member of the control element, in send order. A slice of
// fields keeps the order and any duplicates, which a map or a struct would
// lose: the harness must also send what the domain would reject.
type Field struct {
	// Key is the wire name; the caller picks it for the format ("cooling
	// point" in JSON, "cooling_point" in XML).
	Key   string
	Value string
	Kind  Kind
}

// Head and tail of each format's envelope.
const (
	jsonHead = `{"control":{`
	jsonTail = `}}`
	xmlHead  = `<?xml version="1.0" encoding="UTF-8"?><xml><control>`
	xmlTail  = `</control></xml>`
)

// AppendRequest appends fields as a request body of format f to dst and
// returns the extended slice: JSON {"control":{...}} (also when f is zero),
// XML <?xml version="1.0" encoding="UTF-8"?><xml><control>...</control></xml>.
// Order and duplicates are kept. Strings are escaped as encoding/json does
// without HTML escaping (so that bodies in reports and curl lines read as
// typed) and as xml.EscapeText does; either way invalid UTF-8 becomes
// U+FFFD, and in XML so does every character XML cannot hold.
//
// It fails, having appended nothing, on a Number or JSONValue that is not
// one, or in XML on a key that is not an element name (then it allocates
// the error). Otherwise it allocates nothing but dst's growth, so that a
// caller reusing dst encodes for free.
func AppendRequest(dst []byte, f device.Format, fields []Field) ([]byte, error) {
	start := len(dst)
	var err error
	if f == device.XML {
		dst, err = appendXMLRequest(dst, fields)
	} else {
		dst, err = appendJSONRequest(dst, fields)
	}
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// AppendJSONControl appends the JSON control object alone, {...}, as
// AppendRequest writes it inside a JSON body: what a fleet's sign command
// reads on its stdin (CONTRACT section 5). It fails, having appended
// nothing, as AppendRequest does.
func AppendJSONControl(dst []byte, fields []Field) ([]byte, error) {
	start := len(dst)
	dst, err := appendJSONObject(append(dst, '{'), fields)
	if err != nil {
		return dst[:start], err
	}
	return append(dst, '}'), nil
}

func appendJSONRequest(b []byte, fields []Field) ([]byte, error) {
	b, err := appendJSONObject(append(b, jsonHead...), fields)
	if err != nil {
		return b, err
	}
	return append(b, jsonTail...), nil
}

// appendJSONObject appends the members of the control object.
func appendJSONObject(b []byte, fields []Field) ([]byte, error) {
	for i, fd := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		if err := checkValue(fd); err != nil {
			return b, err
		}
		b = appendJSONString(b, fd.Key)
		b = append(b, ':')
		switch fd.Kind {
		case Text:
			b = appendJSONString(b, fd.Value)
		case Null:
			b = append(b, "null"...)
		default: // Number, JSONValue and Raw as written
			b = append(b, fd.Value...)
		}
	}
	return b, nil
}

func appendXMLRequest(b []byte, fields []Field) ([]byte, error) {
	b = append(b, xmlHead...)
	for _, fd := range fields {
		if !isXMLName(fd.Key) {
			return b, fmt.Errorf("codec: %q cannot be an XML element name", fd.Key)
		}
		if err := checkValue(fd); err != nil {
			return b, err
		}
		b = append(b, '<')
		b = append(b, fd.Key...)
		b = append(b, '>')
		switch fd.Kind {
		case Null:
		case Raw:
			b = append(b, fd.Value...)
		default: // Text, Number and JSONValue as element text
			b = appendXMLText(b, fd.Value)
		}
		b = append(b, '<', '/')
		b = append(b, fd.Key...)
		b = append(b, '>')
	}
	return append(b, xmlTail...), nil
}

// checkValue refuses a Number or JSONValue that is not one, and an
// unknown Kind; both formats write only what it lets through.
func checkValue(fd Field) error {
	switch fd.Kind {
	case Text, Null, Raw:
		return nil
	case Number:
		if !isJSONNumber(fd.Value) {
			return fmt.Errorf("codec: field %q: %q is not a JSON number", fd.Key, fd.Value)
		}
		return nil
	case JSONValue:
		if !jsonValid(fd.Value) {
			return fmt.Errorf("codec: field %q: %q is not a JSON value", fd.Key, fd.Value)
		}
		return nil
	}
	return fmt.Errorf("codec: field %q: unknown kind %d", fd.Key, fd.Kind)
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string as encoding/json does with
// HTML escaping off: short escapes where JSON has them, \u00XX for other
// control characters, \u2028 and \u2029 (which JavaScript reads as line
// ends), and \ufffd for each byte of invalid UTF-8.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
				b = append(b, s[start:i]...)
				switch r {
				case utf8.RuneError:
					b = append(b, `\ufffd`...)
				case '\u2028':
					b = append(b, `\u2028`...)
				default:
					b = append(b, `\u2029`...)
				}
				start = i + n
			}
			i += n
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendXMLText escapes s as xml.EscapeText does, character for character:
// the five markup characters and tab, newline and carriage return as
// references, and U+FFFD for invalid UTF-8 and for what XML cannot hold.
func appendXMLText(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		var esc string
		n := 1
		switch c {
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case '\t':
			esc = "&#x9;"
		case '\n':
			esc = "&#xA;"
		case '\r':
			esc = "&#xD;"
		default:
			if c < 0x20 {
				esc = "\ufffd"
				break
			}
			if c >= utf8.RuneSelf {
				var r rune
				r, n = utf8.DecodeRuneInString(s[i:])
				if r == utf8.RuneError && n == 1 || !xmlChar(r) {
					esc = "\ufffd"
					break
				}
			}
			i += n
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, esc...)
		i += n
		start = i
	}
	return append(b, s[start:]...)
}

// xmlChar is XML's Char production above ASCII.
func xmlChar(r rune) bool {
	return r >= 0x80 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd || r >= 0x10000 && r <= 0x10ffff
}

// isXMLName reports whether s can be the name of a field element: one the
// server's XML reader (encoding/xml, strict) reads as an element name. Plain
// ASCII names are decided here; names with a colon or beyond ASCII are put
// to encoding/xml itself, which costs allocations but no real key has them.
// A prefixed name ("ns:a") is a valid name, which the server reads as its
// local part ("a").
func isXMLName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ':' || c >= utf8.RuneSelf {
			return xmlReadsName(s)
		}
		if !isNameByte(c, i == 0) { // fastXML's own rule for ASCII names
			return false
		}
	}
	return true
}

// xmlReadsName reports whether encoding/xml reads <s></s> as one element
// named s.
func xmlReadsName(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	d := xml.NewDecoder(bytes.NewReader([]byte("<" + s + "></" + s + ">")))
	d.Strict = true
	for i := 0; ; i++ {
		tok, err := d.RawToken()
		if err == io.EOF {
			return i == 2
		}
		if err != nil {
			return false
		}
		var n xml.Name
		switch t := tok.(type) {
		case xml.StartElement:
			if i != 0 {
				return false
			}
			n = t.Name
		case xml.EndElement:
			if i != 1 {
				return false
			}
			n = t.Name
		default:
			return false
		}
		if n.Space != "" {
			n.Local = n.Space + ":" + n.Local
		}
		if n.Local != s {
			return false
		}
	}
}

// jsonValid is json.Valid on a string.
func jsonValid(s string) bool { return json.Valid([]byte(s)) }

// isJSONNumber reports whether s is a JSON number literal (RFC 8259's
// number production), as encoding/json checks a json.Number: the fast
// reader's own number rule, over the whole of s.
func isJSONNumber(s string) bool {
	p := scanner{s: s}
	_, ok := p.jsonNumber()
	return ok && p.i == len(s)
}
