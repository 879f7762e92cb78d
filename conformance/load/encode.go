package load

import (
	"unicode/utf8"

	"github.com/gwdmi/gwtools/simulator/device"
)

// appendBody writes fields as a request body, in the form of
// client.Encode (the harness's encoder) but appended to b without
// allocating: JSON {"control":{...}}, XML <xml><control>...</control></xml>.
func appendBody(b []byte, format device.Format, fields []kv) []byte {
	if format == device.XML {
		b = append(b, `<?xml version="1.0" encoding="UTF-8"?><xml><control>`...)
		for _, f := range fields {
			b = append(b, '<')
			b = append(b, f.k...)
			b = append(b, '>')
			b = appendXMLText(b, f.v)
			b = append(b, '<', '/')
			b = append(b, f.k...)
			b = append(b, '>')
		}
		return append(b, `</control></xml>`...)
	}
	b = append(b, `{"control":{`...)
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, f.k)
		b = append(b, ':')
		b = appendJSONString(b, f.v)
	}
	return append(b, `}}`...)
}

const hexDigits = "0123456789abcdef"

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

// appendXMLText escapes as xml.EscapeText does, character for character.
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
